package io.nvmeof.initiator.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.NvmeofTimeoutException;
import io.nvmeof.initiator.transport.SlotQueue;
import io.nvmeof.netty.Allocators;
import io.nvmeof.netty.EventLoops;
import io.nvmeof.netty.tls.ExternalPsk;
import io.nvmeof.netty.tls.TlsPskHandler;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP queue (admin or I/O): one TCP connection, one Netty channel, a fixed array of request slots. This
 * class connects, submits, controls the flow of commands, completes and fails them; PDUs are framed in
 * {@link PduFramer} (cut from the byte stream by {@link PduDecoder}) and data moves in {@link DataMover}.
 *
 * <p>Threading: any thread may {@link #submit}. A submitter claims a free slot (lock-free MPMC free list), writes the
 * SQE into the slot's preallocated 64 bytes, and hands the slot to the event loop through an MPSC queue; a single
 * preallocated drain task (scheduled at most once at a time) encodes everything queued and flushes once. Everything
 * after that (PDU encode, R2T/H2CData, C2HData copy, completion, timeouts) runs on the channel's event loop, so the
 * slots need no locks. The steady-state path allocates nothing but pooled ByteBufs.
 *
 * <p>Flow control: at most {@code slots} commands are outstanding, and a slot is reused only after its completion
 * (CapsuleResp, or C2HData with SUCCESS) arrived. When all slots are busy, requests wait in a FIFO overflow queue
 * (bounded; beyond the bound they fail with {@link IoCallback#ERR_QUEUE_FULL}). This never blocks the caller, which
 * matters because callbacks run on the event loop and commonly resubmit.
 *
 * <p>A command that times out closes the connection before its caller is told, as the Linux host resets a queue on
 * a timeout: the controller can then no longer fetch its data (R2T) from a buffer the caller already reuses, nor can
 * the slot stay reserved for an answer that never comes. The controller above reconnects.
 */
public final class TcpQueue extends SlotQueue<Request> {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    /** NVMe/TCP: admin and Fabrics command capsules accept 8 KiB of in-capsule data (Linux: NVME_TCP_ADMIN_CCSZ). */
    public static final int FABRICS_IN_CAPSULE = 8192;

    private final String host;
    private final int port;
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drain;

    private volatile int inlineLimit;
    private volatile long maxPduLength;

    volatile Channel channel;
    private volatile EventLoop loop;
    private ScheduledFuture<?> scanTask;
    final CompletableFuture<Void> icFuture = new CompletableFuture<>();
    /** Event loop: a termination request is being written and closes the connection when it is out. */
    private boolean closeAfterTermReq;

    /** Where PDUs are framed, and what ICReq/ICResp negotiated. */
    final PduFramer pdus;
    /** Where command data moves. */
    final DataMover data;

    /**
     * @param slotCount           commands outstanding at most (queue depth minus the slot NVMe keeps empty)
     * @param inlineLimit         largest H2C data length sent in-capsule for non-Fabrics commands (0 = never)
     * @param maxPduLength        largest PLEN accepted from the controller
     */
    public TcpQueue(String host, int port, int qid, int slotCount, boolean headerDigest, boolean dataDigest,
                    Duration commandTimeout, int inlineLimit, long maxPduLength) {
        super(qid, "queue " + qid + " of " + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port,
                new Request[checkSlotCount(slotCount)], commandTimeout.toNanos());
        this.host = host;
        this.port = port;
        for (int i = 0; i < slotCount; i++) {
            slots[i] = new Request(i);
        }
        freeAllSlots();
        this.pdus = new PduFramer(this, headerDigest, dataDigest);
        this.data = new DataMover(this);
        this.inlineLimit = inlineLimit;
        this.maxPduLength = maxPduLength;
    }

    // ------------------------------------------------------------------------------------------------ connection

    /** TCP connect, then ICReq/ICResp. Blocks the caller (never call from an event loop). */
    public void connect(EventLoopGroup group, Duration connectTimeout) {
        connect(group, connectTimeout, null);
    }

    /**
     * TCP connect, a TLS 1.3 handshake with {@code tls} when given, then ICReq/ICResp. Blocks the caller (never call
     * from an event loop).
     */
    public void connect(EventLoopGroup group, Duration connectTimeout, ExternalPsk tls) {
        long timeoutMs = Math.max(1, connectTimeout.toMillis());
        TlsPskHandler tlsHandler = tls == null ? null : TlsPskHandler.client(tls);
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(EventLoops.clientChannelType())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.ALLOCATOR, Allocators.dataPath())
                .option(ChannelOption.SO_KEEPALIVE, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeoutMs))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        // Set here, before any inbound event can run, so error paths always see the channel.
                        channel = ch;
                        loop = ch.eventLoop();
                        if (tlsHandler != null) {
                            ch.pipeline().addLast("tls", tlsHandler);
                        }
                        ch.pipeline().addLast("nvme-tcp-framer", new PduDecoder(TcpQueue.this));
                        ch.pipeline().addLast("nvme-tcp-queue", new Handler());
                    }
                });
        ChannelFuture cf = b.connect(host, port);
        if (!cf.awaitUninterruptibly(timeoutMs + 1000)) {
            cf.cancel(false);
            throw new NvmeofTimeoutException("TCP connect to " + label + " timed out after " + timeoutMs
                    + " ms; check the address and that the target is reachable");
        }
        if (!cf.isSuccess()) {
            throw new NvmeofException("TCP connect for " + label + " failed: " + reason(cf.cause())
                    + "; check that an NVMe/TCP target listens on " + host + ":" + port, cf.cause());
        }
        channel = cf.channel();
        loop = channel.eventLoop();
        if (tlsHandler != null) {
            awaitTlsHandshake(tlsHandler, timeoutMs);
        }

        channel.writeAndFlush(pdus.icReq());
        try {
            icFuture.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            close();
            throw new NvmeofTimeoutException("no ICResp from " + label + " within " + timeoutMs
                    + " ms; is this an NVMe/TCP port (not NVMe/RDMA or another service)?");
        } catch (ExecutionException e) {
            close();
            Throwable c = e.getCause();
            throw c instanceof NvmeofException ne ? ne : new NvmeofException("connection setup on " + label + " failed", c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close();
            throw new NvmeofException("interrupted while connecting " + label, e);
        }
        long period = Math.max(TimeUnit.MILLISECONDS.toNanos(10), Math.min(TimeUnit.SECONDS.toNanos(1), commandTimeoutNanos / 4));
        scanTask = loop.scheduleAtFixedRate(this::scanTimeouts, period, period, TimeUnit.NANOSECONDS);
        LOG.debug("{}: connected, hdgst={} ddgst={} cpda-align={} maxh2cdata={}", label, pdus.hdgst, pdus.ddgst, pdus.cpdaAlign,
                pdus.maxh2cdata);
    }

    /** Waits for the connection's TLS handshake; a refusal says what to check. */
    private void awaitTlsHandshake(TlsPskHandler tls, long timeoutMs) {
        io.netty.util.concurrent.Future<ExternalPsk> h = tls.handshakeFuture();
        if (!h.awaitUninterruptibly(timeoutMs)) {
            close();
            throw new NvmeofTimeoutException("TLS handshake with " + label + " did not complete within " + timeoutMs
                    + " ms; does the port take TLS (nvmet addr_tsas tls1.3, or tls on our listener)?");
        }
        if (!h.isSuccess()) {
            close();
            throw new NvmeofException("TLS handshake with " + label + " failed: " + h.cause().getMessage()
                    + "; check that the target has this host's TLS key for the subsystem, derived the same way"
                    + " (tlsKeyDerivation standard or legacy), and that the port takes TLS", h.cause());
        }
    }

    /**
     * Exceptions other than I/O errors that reached this queue's pipeline: a bug of ours, never the target's doing (a
     * malformed PDU is a protocol error, answered with H2CTermReq). Fuzzing checks it stays 0.
     */
    public long internalErrors() { return internalErrors; }

    private volatile long internalErrors;

    public EventLoop eventLoop() { return loop; }
    @Override
    public boolean isOpen() { return state == OPEN && channel != null && channel.isActive(); }
    boolean icDone() { return pdus.icDone; }
    long maxPduLength() { return maxPduLength; }
    public void maxPduLength(long v) { maxPduLength = v; }
    /** Room for PDU headers, digests and padding on top of the data in one PDU. */
    public static final long PDU_OVERHEAD = 1024;
    @Override
    public void maxTransfer(long bytes) { maxPduLength = bytes + PDU_OVERHEAD; }
    public int inlineLimit() { return inlineLimit; }
    public void inlineLimit(int v) { inlineLimit = v; }
    public int maxh2cdata() { return pdus.maxh2cdata; }
    public boolean headerDigest() { return pdus.hdgst; }
    public boolean dataDigest() { return pdus.ddgst; }

    /**
     * Closes the connection; every outstanding and waiting request completes with {@link IoCallback#ERR_CLOSED}, or,
     * when the connection was lost before, goes back to the controller as the ones in flight did.
     */
    @Override
    public void close() {
        if (!markClosed()) {
            return;
        }
        if (failure == null) {
            failure = "closed by host";
        }
        if (channel == null) {
            failPending(closedCode());
            return;
        }
        channel.close();
        if (!runOnIoThread(() -> failAll(closedCode()))) {
            // The event loop is gone, so nothing else touches the slots any more.
            ioThreadStopped();
        }
    }

    @Override
    protected boolean runOnIoThread(Runnable task) {
        EventLoop l = loop;
        if (l == null) {
            return false;
        }
        try {
            l.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    // ------------------------------------------------------------------------------------------------ submission

    /** In-capsule data (Fabrics commands, or writes up to the limit) or a transport SGL for R2T/H2CData/C2HData. */
    @Override
    protected void prepare(Request r) {
        int limit = r.cmd.opcode() == Opcodes.FABRICS ? FABRICS_IN_CAPSULE : inlineLimit;
        r.inCapsule = r.dir == DIR_H2C && r.dataLength <= limit;
        if (r.inCapsule) {
            // Offset 0 from the start of in-capsule data: we refuse controllers with ICDOFF != 0 for in-capsule use.
            r.sgl.inCapsule(0, r.dataLength);
        } else {
            // Transport SGL; with length 0 it is the "null" descriptor the Linux host sends for data-less commands.
            r.sgl.transportBlock(r.dataLength);
        }
    }

    @Override
    protected void handOver() {
        if (drainScheduled.compareAndSet(false, true)) {
            try {
                loop.execute(drainTask);
            } catch (RejectedExecutionException e) {
                // The event loop is shutting down (the controller is closing): the close sweeps what is left.
                drainScheduled.set(false);
                if (state == OPEN) {
                    failure = "the queue's event loop stopped";
                    state = FAILED;
                }
            }
        }
    }

    /** Event loop: encode every handed-over slot, give freed slots to waiting requests, flush once. */
    private void drain() {
        drainScheduled.set(false);
        if (state != OPEN) {
            failAll(closedCode());
            return;
        }
        boolean wrote = false;
        Request r;
        while ((r = pollSubmitted()) != null) {
            writeCommand(r);
            wrote = true;
        }
        wrote |= startPending() > 0;
        if (wrote) {
            channel.flush();
        }
    }

    @Override
    protected void start(Request r) {
        writeCommand(r);
    }

    @Override
    protected boolean outstanding(Request r) {
        return r.state == Request.INFLIGHT;
    }

    /** Event loop: the command goes on the wire (its CapsuleCmd PDU, written by {@link PduFramer}). */
    private void writeCommand(Request r) {
        r.state = Request.INFLIGHT;
        r.received = 0;
        r.h2cNext = 0;
        r.dataStatus = 0;
        markStarted(r, System.nanoTime());
        pdus.writeCommand(r);
    }

    // ------------------------------------------------------------------------------------------------ receive

    private final class Handler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf pdu = (ByteBuf) msg;
            deliveries.begin();
            try {
                onPdu(pdu);
            } finally {
                pdu.release();
            }
        }

        /** The PDUs of one receive are in: the batched callbacks that had completions among them are told. */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            deliveries.end();
            ctx.fireChannelReadComplete();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            deliveries.end();
            if (state == OPEN) {
                closedByPeer = true;
                fail("connection closed by the controller", IoCallback.ERR_TRANSPORT);
            }
            if (!icFuture.isDone()) {
                icFuture.completeExceptionally(new NvmeofException(label + ": connection closed by the controller before"
                        + " ICResp; the target may not speak NVMe/TCP on this port or refused the connection"));
            }
            failAll(closedCode());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            boolean network = cause instanceof java.io.IOException;
            if (!network) {
                internalErrors++; // not the network's doing: what the target sent is refused before it gets here
            }
            if (state == OPEN) {
                if (network) {
                    // A connection reset or broken pipe is the network's ordinary way of ending: fail() logs it as
                    // one line ("failed: connection error: ..."); a stack trace would show only Netty's read loop.
                    // A reset (or a write into a connection the peer has ended: a broken pipe) is the peer's kernel
                    // ending it, the target closed or died; a timeout is not.
                    String why = String.valueOf(cause.getMessage()).toLowerCase(java.util.Locale.ROOT);
                    closedByPeer = why.contains("connection reset") || why.contains("broken pipe");
                    fail("connection error: " + cause, IoCallback.ERR_TRANSPORT);
                } else {
                    LOG.warn("{}: unexpected error on the queue's event loop", label, cause);
                    fail("transport error: " + cause, IoCallback.ERR_TRANSPORT);
                }
            }
            if (!icFuture.isDone()) {
                icFuture.completeExceptionally(new NvmeofException(label + ": transport error during ICReq/ICResp", cause));
            }
            ctx.close();
        }
    }

    /** Event loop: a PDU from {@link PduDecoder}; {@link PduFramer} checks it and passes it on. */
    private void onPdu(ByteBuf p) {
        if (state != OPEN) {
            return;
        }
        pdus.receive(p);
    }

    /** The outstanding command with this command id, or null (for {@link DataMover}). */
    Request lookupCommand(int cid) {
        return lookup(cid);
    }

    // ------------------------------------------------------------------------------------------------ completion

    /** Event loop: the controller is done with the slot. Frees it first, so the callback may resubmit. */
    void complete(Request r, int status, long result) {
        recordCompletion(r, status, System.nanoTime());
        releaseAndDeliver(r, status, result);
        if (hasPending() && startPending() > 0) {
            channel.flush();
        }
    }

    /**
     * Event loop, periodic: a command past its deadline closes the connection (then fails with ERR_TIMEOUT, and the
     * other commands are handed back to the controller to resend); requests waiting for a slot just time out.
     */
    private void scanTimeouts() {
        if (state != OPEN) {
            return;
        }
        long now = System.nanoTime();
        Request late = markTimedOut(now);
        if (late != null) {
            fail(String.format("command 0x%04x (opcode 0x%02x) timed out after %d ms; the connection was closed so it"
                            + " cannot execute later", late.cid, late.cmd.opcode(),
                    TimeUnit.NANOSECONDS.toMillis(commandTimeoutNanos)), IoCallback.ERR_TRANSPORT);
            return;
        }
        expirePending(now);
    }

    // ------------------------------------------------------------------------------------------------ failure

    /** The controller ends the connection itself (C2HTermReq): see {@link #closedByPeer()}. */
    void peerEnded() {
        closedByPeer = true;
    }

    /** A protocol error answering {@code r}: that command fails (it is not sent again after a reconnect). */
    void protocolError(Request r, int fes, long fei, ByteBuf offending, String message) {
        r.failCode = IoCallback.ERR_TRANSPORT;
        protocolError(fes, fei, offending, message);
    }

    /**
     * Event loop: a PDU broke the protocol. Sends H2CTermReq with the offending header as error data (as SPDK does),
     * closes the connection once it is written, and fails every command.
     */
    void protocolError(int fes, long fei, ByteBuf offending, String message) {
        if (state != OPEN) {
            return;
        }
        LOG.error("{}: NVMe/TCP protocol error: {}; sending H2CTermReq ({})", label, message, TermReqPdu.fesName(fes));
        if (!icFuture.isDone()) {
            icFuture.completeExceptionally(new NvmeofException(label + ": " + message));
        }
        if (channel.isActive()) {
            channel.writeAndFlush(pdus.termReq(fes, fei, offending)).addListener(ChannelFutureListener.CLOSE);
            closeAfterTermReq = true;
        }
        fail("protocol error: " + message, IoCallback.ERR_TRANSPORT);
    }

    /**
     * Event loop: the queue is unusable. The connection is closed first (on the event loop that closes it at once,
     * discarding unsent PDUs), so nothing more of the callers' data leaves, then every command fails.
     */
    @Override
    protected void fail(String reason, int code) {
        if (state == OPEN) {
            state = FAILED;
            failure = reason;
            LOG.warn("{}: failed: {}", label, reason);
            if (channel != null && !closeAfterTermReq) {
                channel.close();
            }
            // The controller learns first (state, lastFailure), so a caller told its command failed sees why.
            notifyFailure();
            failAll(code);
        } else {
            failAll(code);
        }
    }

    /** Event loop (or after the loop died): completes everything outstanding or waiting with {@code code}. */
    @Override
    protected void failAll(int code) {
        if (scanTask != null) {
            scanTask.cancel(false);
        }
        failSubmitted(code);
        for (Request s : slots) {
            if (s.state == Request.INFLIGHT) {
                releaseAndFail(s, code);
            }
        }
        failPending(code);
    }

    /**
     * Why a connect failed, in the system's words ("Connection refused", "No route to host"), without the class names
     * and native call Netty's exceptions carry.
     */
    static String reason(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root instanceof java.net.UnknownHostException) {
            return "unknown host " + root.getMessage();
        }
        String m = root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
        int errno = m.indexOf("): ");
        if (m.startsWith("finishConnect(") && errno > 0) {
            m = m.substring(errno + 3);
        }
        int addr = m.lastIndexOf(": /");
        return addr > 0 ? m.substring(0, addr) : m;
    }
}

package io.nvmeof.initiator.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
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
import io.netty.channel.socket.nio.NioSocketChannel;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.NvmeofTimeoutException;
import io.nvmeof.initiator.transport.SlotQueue;
import io.nvmeof.netty.Allocators;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32C;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP queue (admin or I/O): one TCP connection, one Netty channel, a fixed array of request slots.
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
    private final boolean wantHdgst;
    private final boolean wantDdgst;

    private volatile int inlineLimit;
    private volatile long maxPduLength;

    private volatile Channel channel;
    private volatile EventLoop loop;
    private ScheduledFuture<?> scanTask;
    private final CompletableFuture<Void> icFuture = new CompletableFuture<>();
    /** Event loop: a termination request is being written and closes the connection when it is out. */
    private boolean closeAfterTermReq;

    // Negotiated by ICReq/ICResp; written on the event loop before icFuture completes, read only on the event loop.
    private volatile boolean icDone;
    private boolean hdgst;
    private boolean ddgst;
    private int cpdaAlign = 4;
    private int maxh2cdata;

    // Event-loop confined scratch.
    private final CRC32C txCrc = new CRC32C();
    private final CRC32C rxCrc = new CRC32C();
    /** Flyweights for {@link #copyFromByteBuf} (event loop only). */
    private final UnsafeBuffer copySrc = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer copyDst = new UnsafeBuffer(0, 0);

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
        this.wantHdgst = headerDigest;
        this.wantDdgst = dataDigest;
        this.inlineLimit = inlineLimit;
        this.maxPduLength = maxPduLength;
    }

    // ------------------------------------------------------------------------------------------------ connection

    /** TCP connect, then ICReq/ICResp. Blocks the caller (never call from an event loop). */
    public void connect(EventLoopGroup group, Duration connectTimeout) {
        long timeoutMs = Math.max(1, connectTimeout.toMillis());
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
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
            throw new NvmeofException("TCP connect for " + label + " failed: " + cf.cause()
                    + "; check that an NVMe/TCP target listens on " + host + ":" + port, cf.cause());
        }
        channel = cf.channel();
        loop = channel.eventLoop();

        // ICReq: PFV 0, HPDA 0 (no alignment needed by us), MAXR2T 0 (one R2T in flight per command, as Linux).
        UnsafeBuffer icreq = new UnsafeBuffer(new byte[ICReqPdu.LENGTH]);
        ICReqPdu req = new ICReqPdu().<ICReqPdu>wrap(icreq, 0);
        req.init().pfv(ICReqPdu.PFV_1_0).hpda(0).maxr2t(0)
                .digest((wantHdgst ? ICReqPdu.DIGEST_HEADER : 0) | (wantDdgst ? ICReqPdu.DIGEST_DATA : 0));
        channel.writeAndFlush(Unpooled.wrappedBuffer(icreq.byteArray()));
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
        LOG.debug("{}: connected, hdgst={} ddgst={} cpda-align={} maxh2cdata={}", label, hdgst, ddgst, cpdaAlign, maxh2cdata);
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
    boolean icDone() { return icDone; }
    long maxPduLength() { return maxPduLength; }
    public void maxPduLength(long v) { maxPduLength = v; }
    /** Room for PDU headers, digests and padding on top of the data in one PDU. */
    public static final long PDU_OVERHEAD = 1024;
    @Override
    public void maxTransfer(long bytes) { maxPduLength = bytes + PDU_OVERHEAD; }
    public int inlineLimit() { return inlineLimit; }
    public void inlineLimit(int v) { inlineLimit = v; }
    public int maxh2cdata() { return maxh2cdata; }
    public boolean headerDigest() { return hdgst; }
    public boolean dataDigest() { return ddgst; }

    /** Closes the connection; every outstanding and waiting request completes with {@link IoCallback#ERR_CLOSED}. */
    @Override
    public void close() {
        if (state == CLOSED) {
            return;
        }
        state = CLOSED;
        if (failure == null) {
            failure = "closed by host";
        }
        if (channel == null) {
            failPending(IoCallback.ERR_CLOSED);
            return;
        }
        channel.close();
        if (!runOnIoThread(() -> failAll(IoCallback.ERR_CLOSED))) {
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

    /** Event loop: CapsuleCmd PDU = header, SQE, [HDGST], [pad to CPDA], [in-capsule data, [DDGST]]. */
    private void writeCommand(Request r) {
        r.state = Request.INFLIGHT;
        r.received = 0;
        r.h2cNext = 0;
        r.dataStatus = 0;
        markStarted(r, System.nanoTime());
        int hlen = CapsuleCommandPdu.HEADER_LENGTH;
        int hd = hdgst ? PduHeader.DIGEST_LENGTH : 0;
        int dlen = r.inCapsule ? r.dataLength : 0;
        int dd = dlen > 0 && ddgst ? PduHeader.DIGEST_LENGTH : 0;
        int pdo = dlen > 0 ? align(hlen + hd) : 0;
        int plen = (dlen > 0 ? pdo : hlen + hd) + dlen + dd;
        int flags = (hd != 0 ? PduHeader.FLAG_HDGST : 0) | (dd != 0 ? PduHeader.FLAG_DDGST : 0);
        ByteBuf b = channel.alloc().directBuffer(plen);
        b.writeByte(PduHeader.TYPE_CAPSULE_CMD).writeByte(flags).writeByte(hlen).writeByte(pdo).writeIntLE(plen);
        b.writeBytes(r.sqeBytes);
        if (hd != 0) {
            b.writeIntLE(crc(txCrc, b, 0, hlen));
        }
        if (dlen > 0) {
            b.writeZero(pdo - (hlen + hd));
            int at = b.writerIndex();
            copyIntoByteBuf(r.data, r.dataStart, b, dlen);
            if (dd != 0) {
                b.writeIntLE(crc(txCrc, b, at, dlen));
            }
        }
        channel.write(b, channel.voidPromise());
    }

    private int align(int n) {
        return (n + cpdaAlign - 1) / cpdaAlign * cpdaAlign;
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

    private void onPdu(ByteBuf p) {
        if (state != OPEN) {
            return;
        }
        int base = p.readerIndex();
        int type = p.getUnsignedByte(base + PduHeader.TYPE);
        int flags = p.getUnsignedByte(base + PduHeader.FLAGS);
        int hlen = p.getUnsignedByte(base + PduHeader.HLEN);
        int pdo = p.getUnsignedByte(base + PduHeader.PDO);
        long plen = p.getUnsignedIntLE(base + PduHeader.PLEN);
        if (type == PduHeader.TYPE_IC_RESP) {
            onICResp(p, base);
            return;
        }
        if (type == PduHeader.TYPE_C2H_TERM_REQ) {
            onTermReq(p, base, plen);
            return;
        }
        boolean hasHdgst = (flags & PduHeader.FLAG_HDGST) != 0;
        if (hasHdgst != hdgst) {
            protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p,
                    PduHeader.typeName(type) + " header digest flag is " + (hasHdgst ? "set" : "clear")
                            + " but header digests were " + (hdgst ? "" : "not ") + "negotiated");
            return;
        }
        if (hdgst) {
            int expected = crc(rxCrc, p, base, hlen);
            int got = p.getIntLE(base + hlen);
            if (expected != got) {
                protocolError(TermReqPdu.FES_HEADER_DIGEST_ERROR, 0, p, String.format(
                        "%s header digest error: received 0x%08x, computed 0x%08x", PduHeader.typeName(type), got, expected));
                return;
            }
        }
        switch (type) {
            case PduHeader.TYPE_CAPSULE_RESP:
                onResponse(p, base);
                break;
            case PduHeader.TYPE_C2H_DATA:
                onC2HData(p, base, flags, pdo, plen);
                break;
            case PduHeader.TYPE_R2T:
                onR2T(p, base);
                break;
            default:
                protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.TYPE, p, "unexpected " + PduHeader.typeName(type));
        }
    }

    private void onICResp(ByteBuf p, int base) {
        if (icDone) {
            protocolError(TermReqPdu.FES_PDU_SEQUENCE_ERROR, PduHeader.TYPE, p, "second ICResp");
            return;
        }
        int pfv = p.getUnsignedShortLE(base + ICRespPdu.PFV);
        int cpda = p.getUnsignedByte(base + ICRespPdu.CPDA);
        int digest = p.getUnsignedByte(base + ICRespPdu.DIGEST);
        long maxData = p.getUnsignedIntLE(base + ICRespPdu.MAXH2CDATA);
        String error = null;
        if (pfv != ICReqPdu.PFV_1_0) {
            error = "ICResp has PDU format version " + pfv + "; only version 0 (NVMe/TCP 1.0) is supported";
        } else if ((digest & ICReqPdu.DIGEST_HEADER) != 0 && !wantHdgst
                || (digest & ICReqPdu.DIGEST_DATA) != 0 && !wantDdgst) {
            error = "ICResp enables a digest the host did not ask for (digest 0x" + Integer.toHexString(digest) + ")";
        } else if (maxData < ICRespPdu.MIN_MAXH2CDATA || maxData % 4 != 0) {
            error = "ICResp MAXH2CDATA " + maxData + " is invalid (must be a multiple of 4 and at least "
                    + ICRespPdu.MIN_MAXH2CDATA + ")";
        } else if (cpda > 31) {
            error = "ICResp CPDA " + cpda + " is invalid (at most 31)";
        }
        if (error != null) {
            NvmeofException e = new NvmeofException(label + ": " + error);
            icFuture.completeExceptionally(e);
            fail(error, IoCallback.ERR_TRANSPORT);
            channel.close();
            return;
        }
        hdgst = (digest & ICReqPdu.DIGEST_HEADER) != 0;
        ddgst = (digest & ICReqPdu.DIGEST_DATA) != 0;
        if (wantHdgst != hdgst || wantDdgst != ddgst) {
            LOG.info("{}: controller declined digests (asked hdgst={} ddgst={}, got hdgst={} ddgst={})",
                    label, wantHdgst, wantDdgst, hdgst, ddgst);
        }
        // CPDA: alignment, in dwords minus one, the controller wants for data in PDUs we send it.
        cpdaAlign = (cpda + 1) * 4;
        maxh2cdata = (int) Math.min(maxData, 1 << 30);
        icDone = true;
        icFuture.complete(null);
    }

    private void onTermReq(ByteBuf p, int base, long plen) {
        int fes = p.getUnsignedShortLE(base + TermReqPdu.FES);
        long fei = p.getUnsignedIntLE(base + TermReqPdu.FEI);
        String msg = "controller terminated the connection (C2HTermReq: " + TermReqPdu.fesName(fes)
                + ", field error information 0x" + Long.toHexString(fei) + ")";
        LOG.error("{}: {}", label, msg);
        // The spec says the receiver of a TermReq closes the connection; we must not answer with one.
        fail(msg, IoCallback.ERR_TRANSPORT);
        channel.close();
    }

    private void onResponse(ByteBuf p, int base) {
        int cqe = base + CapsuleResponsePdu.CQE;
        int cid = p.getUnsignedShortLE(cqe + Completion.CID);
        Request r = lookup(cid);
        if (r == null) {
            protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, CapsuleResponsePdu.CQE + Completion.CID, p,
                    String.format("CapsuleResp for command id 0x%04x, which is not outstanding", cid));
            return;
        }
        int status = p.getUnsignedShortLE(cqe + Completion.STATUS) >>> 1;
        if (status == Status.SUCCESS && shortOfData(r, p)) {
            return;
        }
        if (status == Status.SUCCESS && r.dataStatus != 0) {
            status = r.dataStatus;
        }
        complete(r, status, p.getLongLE(cqe + Completion.DW0));
    }

    /**
     * A read reported successful must have received all its data: a controller that says SUCCESS after part of it
     * (or none) would leave the rest of the caller's buffer as it was, and the caller would take it for data. That
     * fails the command and, as a protocol error, the queue.
     */
    private boolean shortOfData(Request r, ByteBuf p) {
        if (r.dir != DIR_C2H || r.received == r.dataLength) {
            return false;
        }
        protocolError(r, TermReqPdu.FES_PDU_SEQUENCE_ERROR, 0, p, "success for command id 0x" + Integer.toHexString(r.cid)
                + " after " + r.received + " of its " + r.dataLength + " bytes of data");
        return true;
    }

    private void onC2HData(ByteBuf p, int base, int flags, int pdo, long plen) {
        int cid = p.getUnsignedShortLE(base + DataPdu.CCCID);
        long datao = p.getUnsignedIntLE(base + DataPdu.DATAO);
        long datal = p.getUnsignedIntLE(base + DataPdu.DATAL);
        Request r = lookup(cid);
        if (r == null) {
            protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.CCCID, p,
                    String.format("C2HData for command id 0x%04x, which is not outstanding", cid));
            return;
        }
        if (r.dir != DIR_C2H) {
            protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.CCCID, p,
                    String.format("C2HData for command id 0x%04x, which transfers no data to the host", cid));
            return;
        }
        boolean hasDdgst = (flags & PduHeader.FLAG_DDGST) != 0;
        if (datal > 0 && hasDdgst != ddgst) {
            protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p,
                    "C2HData data digest flag does not match the negotiated data digest setting");
            return;
        }
        int dd = hasDdgst ? PduHeader.DIGEST_LENGTH : 0;
        if (pdo + datal + dd != plen) {
            protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.DATAL, p,
                    "C2HData PLEN " + plen + " does not match PDO " + pdo + " + DATAL " + datal + " + digest " + dd);
            return;
        }
        if (datao + datal > r.dataLength) {
            protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, p, "C2HData offset " + datao + " + length "
                    + datal + " exceeds the command's " + r.dataLength + " bytes");
            return;
        }
        if (datao != r.received) {
            // C2HData PDUs of a command come in order and without gaps, so what arrived can be counted.
            protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, p, "C2HData for command id 0x"
                    + Integer.toHexString(cid) + " at offset " + datao + " where " + r.received + " was next");
            return;
        }
        boolean success = (flags & PduHeader.FLAG_DATA_SUCCESS) != 0;
        if (success && (flags & PduHeader.FLAG_DATA_LAST) == 0) {
            protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p, "C2HData has SUCCESS without LAST_PDU");
            return;
        }
        int len = (int) datal;
        if (dd != 0 && len > 0) {
            int expected = crc(rxCrc, p, base + pdo, len);
            int got = p.getIntLE(base + pdo + len);
            if (expected != got) {
                // As the Linux host: a data digest error fails the command, not the connection.
                LOG.warn("{}: C2HData data digest error for cid 0x{}: received 0x{}, computed 0x{}", label,
                        Integer.toHexString(cid), Integer.toHexString(got), Integer.toHexString(expected));
                r.dataStatus = Status.DATA_TRANSFER_ERROR;
            }
        }
        if (len > 0) {
            copyFromByteBuf(p, base + pdo, r.data, r.dataStart + (int) datao, len);
        }
        r.received += len;
        if (success) {
            // SUCCESS: the controller sends no CapsuleResp for this command.
            if (shortOfData(r, p)) {
                return;
            }
            complete(r, r.dataStatus, 0);
        }
    }

    private void onR2T(ByteBuf p, int base) {
        int cid = p.getUnsignedShortLE(base + R2TPdu.CCCID);
        int ttag = p.getUnsignedShortLE(base + R2TPdu.TTAG);
        long r2to = p.getUnsignedIntLE(base + R2TPdu.R2TO);
        long r2tl = p.getUnsignedIntLE(base + R2TPdu.R2TL);
        Request r = lookup(cid);
        if (r == null) {
            protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, R2TPdu.CCCID, p,
                    String.format("R2T for command id 0x%04x, which is not outstanding", cid));
            return;
        }
        if (r.dir != DIR_H2C || r.inCapsule) {
            protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, R2TPdu.CCCID, p,
                    String.format("R2T for command id 0x%04x, which has no data left to send", cid));
            return;
        }
        if (r2tl == 0 || r2to + r2tl > r.dataLength || r2to < r.h2cNext) {
            protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, R2TPdu.R2TO, p, "R2T offset " + r2to + " length " + r2tl
                    + " is outside the command's " + r.dataLength + " bytes (or goes backwards from " + r.h2cNext + ")");
            return;
        }
        long off = r2to;
        long left = r2tl;
        while (left > 0) {
            int n = (int) Math.min(left, maxh2cdata);
            left -= n;
            writeH2CData(r, ttag, (int) off, n, left == 0);
            off += n;
        }
        r.h2cNext = r2to + r2tl;
        channel.flush();
    }

    /** H2CData PDU: header [HDGST] [pad] data [DDGST]; the data is sent straight from the caller's buffer. */
    private void writeH2CData(Request r, int ttag, int offset, int length, boolean last) {
        int hlen = DataPdu.HEADER_LENGTH;
        int hd = hdgst ? PduHeader.DIGEST_LENGTH : 0;
        int dd = ddgst ? PduHeader.DIGEST_LENGTH : 0;
        int pdo = align(hlen + hd);
        int plen = pdo + length + dd;
        int flags = (last ? PduHeader.FLAG_DATA_LAST : 0) | (hd != 0 ? PduHeader.FLAG_HDGST : 0)
                | (dd != 0 ? PduHeader.FLAG_DDGST : 0);
        ByteBuf h = channel.alloc().directBuffer(pdo + dd);
        h.writeByte(PduHeader.TYPE_H2C_DATA).writeByte(flags).writeByte(hlen).writeByte(pdo).writeIntLE(plen);
        h.writeShortLE(r.cid).writeShortLE(ttag).writeIntLE(offset).writeIntLE(length).writeIntLE(0);
        if (hd != 0) {
            h.writeIntLE(crc(txCrc, h, 0, hlen));
        }
        h.writeZero(pdo - (hlen + hd));
        ByteBuffer slice = r.data.slice(r.dataStart + offset, length);
        channel.write(h, channel.voidPromise());
        if (dd != 0) {
            txCrc.reset();
            txCrc.update(slice.duplicate());
            ByteBuf d = channel.alloc().directBuffer(dd);
            d.writeIntLE((int) txCrc.getValue());
            channel.write(Unpooled.wrappedBuffer(slice), channel.voidPromise());
            channel.write(d, channel.voidPromise());
        } else {
            channel.write(Unpooled.wrappedBuffer(slice), channel.voidPromise());
        }
    }

    // ------------------------------------------------------------------------------------------------ completion

    /** Event loop: the controller is done with the slot. Frees it first, so the callback may resubmit. */
    private void complete(Request r, int status, long result) {
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

    /** A protocol error answering {@code r}: that command fails (it is not sent again after a reconnect). */
    private void protocolError(Request r, int fes, long fei, ByteBuf offending, String message) {
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
            int errLen = offending == null ? 0 : Math.min(offending.readableBytes(), TermReqPdu.MAX_ERROR_DATA);
            UnsafeBuffer t = new UnsafeBuffer(new byte[TermReqPdu.HEADER_LENGTH + errLen]);
            new TermReqPdu().<TermReqPdu>wrap(t, 0).init(PduHeader.TYPE_H2C_TERM_REQ, fes, fei, errLen);
            if (errLen > 0) {
                offending.getBytes(offending.readerIndex(), t.byteArray(), TermReqPdu.HEADER_LENGTH, errLen);
            }
            channel.writeAndFlush(Unpooled.wrappedBuffer(t.byteArray())).addListener(ChannelFutureListener.CLOSE);
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

    // ------------------------------------------------------------------------------------------------ helpers

    /** CRC32C of {@code len} bytes of {@code b} at absolute {@code index}, without moving its indices. */
    private static int crc(CRC32C crc, ByteBuf b, int index, int len) {
        crc.reset();
        if (b.nioBufferCount() == 1) {
            crc.update(b.internalNioBuffer(index, len));
        } else {
            for (ByteBuffer bb : b.nioBuffers(index, len)) {
                crc.update(bb);
            }
        }
        return (int) crc.getValue();
    }

    /** Appends {@code len} bytes of {@code src} from absolute index {@code srcIndex}; {@code src} is not modified. */
    private static void copyIntoByteBuf(ByteBuffer src, int srcIndex, ByteBuf dst, int len) {
        dst.ensureWritable(len);
        int at = dst.writerIndex();
        if (dst.nioBufferCount() == 1) {
            ByteBuffer d = dst.internalNioBuffer(at, len);
            d.put(d.position(), src, srcIndex, len);
        } else {
            dst.setBytes(at, src.slice(srcIndex, len));
        }
        dst.writerIndex(at + len);
    }

    /**
     * Event loop: copies into the caller's buffer at an absolute index; its position and limit are not touched. By
     * address where both sides have one (the data path: a pooled direct PDU and a direct caller buffer), since a NIO
     * view of the PDU's slice would be a new {@code ByteBuffer} per call.
     */
    private void copyFromByteBuf(ByteBuf src, int srcIndex, ByteBuffer dst, int dstIndex, int len) {
        if (src.hasMemoryAddress() && dst.isDirect()) {
            copySrc.wrap(src.memoryAddress() + srcIndex, len);
            copyDst.wrap(BufferUtil.address(dst), dst.capacity()); // bounds-checked against the caller's buffer
            copyDst.putBytes(dstIndex, copySrc, 0, len);
            return;
        }
        if (dst.hasArray()) {
            src.getBytes(srcIndex, dst.array(), dst.arrayOffset() + dstIndex, len);
            return;
        }
        if (src.nioBufferCount() == 1) {
            ByteBuffer s = src.internalNioBuffer(srcIndex, len);
            dst.put(dstIndex, s, s.position(), len);
        } else {
            for (ByteBuffer s : src.nioBuffers(srcIndex, len)) {
                int n = s.remaining();
                dst.put(dstIndex, s, s.position(), n);
                dstIndex += n;
            }
        }
    }
}

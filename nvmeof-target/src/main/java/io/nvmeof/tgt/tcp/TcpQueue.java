package io.nvmeof.tgt.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.transport.TransportQueue;
import java.net.SocketAddress;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP connection, which is one NVMe queue (Linux nvmet tcp.c): the Netty handler and the core's
 * {@link TransportQueue}. It frames PDUs and checks every header field before use ({@link PduFramer}), moves capsules
 * and data ({@link DataMover}), controls flushes, read pauses and waits for memory ({@link FlowControl}), and leaves
 * every command decision to {@link TargetCore}. Everything runs on the connection's event loop; responses produced
 * while a batch of reads is processed are flushed once at its end.
 */
public final class TcpQueue extends ByteToMessageDecoder implements TransportQueue {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    /** Requests a connection has before its Connect: the Connect itself, and room for a host that pipelines. */
    static final int PRE_CONNECT_REQUESTS = 4;

    final TargetCore core;
    final TcpOptions options;
    final SubmissionQueue sq;

    ChannelHandlerContext ctx;
    String peer = "?";
    /** The connection is ending: nothing more is read or sent (set by whichever part ends it). */
    boolean closing;
    private io.netty.util.concurrent.ScheduledFuture<?> handshakeDeadline;

    /** Where PDUs are framed and checked. */
    final PduFramer pdus;
    /** Where capsule and PDU data moves. */
    final DataMover data;
    /** Where flushes, read pauses and waits for data memory are decided. */
    final FlowControl flow;

    public TcpQueue(TargetCore core, TcpOptions options) {
        this.core = core;
        this.options = options;
        this.pdus = new PduFramer(this);
        this.data = new DataMover(this);
        this.flow = new FlowControl(this);
        // Up to twice the largest queue (a host may reuse a command slot as soon as it sees the completion), grown at
        // Connect to twice the queue's size; before that, only the Connect can arrive.
        this.sq = new SubmissionQueue(core, this, PRE_CONNECT_REQUESTS, 2 * core.limits().maxQueueSize());
    }

    // ---- Netty lifecycle ----

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        pdus.handlerAdded(ctx);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        SocketAddress remote = ctx.channel().remoteAddress();
        peer = String.valueOf(remote);
        core.queueOpened();
        handshakeDeadline = ctx.executor().schedule(this::handshakeDeadlinePassed, options.connectDeadlineMs(),
                java.util.concurrent.TimeUnit.MILLISECONDS);
        super.channelActive(ctx);
    }

    /** Connections anyone can open and leave silent: logged 20 a minute at most. */
    private static final io.nvmeof.netty.LogAllowance SILENT_CONNECTIONS_LOG = new io.nvmeof.netty.LogAllowance();

    /** A connection that has not sent ICReq and Connect in time is dropped: it holds a socket and a queue. */
    private void handshakeDeadlinePassed() {
        if (!sq.connected() && !closing) {
            long leftOut = SILENT_CONNECTIONS_LOG.admit();
            if (leftOut >= 0) {
                LOG.warn("NVMe/TCP connection from {}: no {} within {} ms; closing{}", peer,
                        pdus.icDone ? "Connect" : "ICReq", options.connectDeadlineMs(),
                        io.nvmeof.netty.LogAllowance.leftOut(leftOut, "such connections"));
            }
            closing = true;
            ctx.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        closing = true;
        flow.closed(); // the waiting requests are released with the rest below
        if (handshakeDeadline != null) {
            handshakeDeadline.cancel(false);
        }
        try {
            super.channelInactive(ctx);
        } finally {
            sq.closed();
            LOG.debug("queue {} from {} closed", sq.qid(), peer);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        flow.readStarted();
        Controller c = sq.controller();
        // Keep-alive counts bytes from the host, even before a whole command is parsed; bytes read after the deadline
        // are dropped unread (the controller is torn down: see Controller#trafficReceived). An I/O queue that has not
        // authenticated keeps nothing alive: anyone who knows the host NQN and controller ID can connect one (the
        // admin queue is the controller's own, and its authentication counts).
        if (c != null && !(sq.qid() != 0 && sq.awaitsAuthentication()) && !c.trafficReceived(System.nanoTime())) {
            io.netty.util.ReferenceCountUtil.release(msg);
            ctx.close();
            return;
        }
        super.channelRead(ctx, msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        flow.readCompleted(ctx);
        super.channelReadComplete(ctx);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        flow.writabilityChanged(ctx);
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof java.io.IOException) {
            LOG.warn("NVMe/TCP queue from {}: {}; closing", peer, cause.toString());
        } else {
            // Malformed input is answered with a C2HTermReq, never an exception: this is a bug of ours.
            LOG.error("NVMe/TCP queue from {}: internal error; closing", peer, cause);
            core.internalError();
        }
        ctx.close();
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf buf, List<Object> outList) {
        pdus.decode(ctx, buf);
    }

    // ---- TransportQueue ----

    @Override
    public int mapData(Request req) {
        return data.mapData(req);
    }

    /**
     * This queue's event loop's io_uring statistics, for tests and diagnostics: {parks (the loop stopped polling the
     * ring and slept), wake-ups only the waiter's safety net gave (a lost eventfd signal)}; zeros without a ring.
     */
    public long[] storageRingParks() {
        LoopStorageRing r = loopRing;
        return r == null ? new long[2] : new long[] {r.parks, r.safetyNetWakeups};
    }

    /** The event loop's io_uring, once a command of this queue needed it. */
    LoopStorageRing loopRing;

    @Override
    public io.nvmeof.tgt.core.StorageRing storageRing() {
        LoopStorageRing r = loopRing;
        if (r == null && ctx != null) {
            r = LoopStorageRing.of(ctx.channel().eventLoop());
            loopRing = r;
        }
        return r == null ? null : r.ring();
    }

    @Override
    public boolean allocateReadData(Request req) {
        return data.allocateReadData(req);
    }

    @Override
    public boolean withdrawWaiting(Request req) {
        return flow.withdrawWaiting(req);
    }

    @Override
    public void memoryFreed() {
        flow.memoryFreed();
    }

    @Override
    public void fetchData(Request req) {
        data.fetchData(req);
    }

    @Override
    public void queueResponse(Request req) {
        data.queueResponse(req);
    }

    @Override
    public long bufferedBytes() {
        // The receive buffer at its largest: one PDU with the most in-capsule or H2C data, header and digests.
        return Math.max(options.inlineDataSize(), options.maxH2CData()) + 256L;
    }

    @Override
    public boolean sendsFrom(Namespace ns) {
        return data.sendsFrom(ns);
    }

    /** Read responses sent straight from namespace memory so far, for tests and statistics. */
    public long zeroCopyReads() {
        return data.zeroCopyReads;
    }


    /** H2CData PDUs whose data went from the receive buffer straight into the namespace, for tests. */
    public long h2cDataIntoNamespace() {
        return data.h2cDataIntoNamespace;
    }

    /** Slots for small PDUs this queue has made (each 128 bytes, reused once sent), for tests and statistics. */
    public int smallPduSlots() {
        return pdus.smallPduSlots();
    }

    /** Writes whose in-capsule data went into the namespace straight from the receive buffer, for tests. */
    public long writesFromReceiveBuffer() {
        return data.writesFromReceiveBuffer;
    }

    @Override
    public void close(String reason) {
        if (ctx != null && ctx.channel().isOpen()) {
            LOG.debug("closing queue {} from {}: {}", sq.qid(), peer, reason);
            ctx.channel().close();
        }
    }

    @Override
    public void execute(Runnable task) {
        ctx.executor().execute(task);
    }

    @Override
    public ByteBufAllocator allocator() {
        return ctx.alloc();
    }

    @Override
    public int inlineDataSize() {
        return options.inlineDataSize();
    }

    @Override
    public io.nvmeof.protocol.tls.PskIdentity tlsIdentity() {
        io.nvmeof.netty.tls.TlsPskHandler tls = (io.nvmeof.netty.tls.TlsPskHandler) ctx.pipeline()
                .get(TcpTransport.TLS_HANDLER);
        io.nvmeof.netty.tls.ExternalPsk psk = tls == null ? null : tls.agreedPsk();
        return psk == null ? null : io.nvmeof.protocol.tls.PskIdentity.parse(psk.identity());
    }

    @Override
    public boolean keyedSgls() {
        return false;
    }

    private ListenerInfo listener;

    /**
     * Set once, before the connection's first event: the listener that accepted it (public for harnesses that run a
     * queue on a channel of their own, such as the in-memory fuzz test).
     */
    public void listener(ListenerInfo l) {
        listener = l;
    }

    @Override
    public ListenerInfo listener() {
        return listener;
    }

    @Override
    public int trtype() {
        return DiscoveryLogEntry.TRTYPE_TCP;
    }

    @Override
    public String peer() {
        return peer;
    }

    @Override
    public void requestFreed() {
        flow.requestFreed();
    }

    @Override
    public java.net.InetAddress peerAddress() {
        ChannelHandlerContext c = ctx;
        return c != null && c.channel().remoteAddress() instanceof java.net.InetSocketAddress a ? a.getAddress() : null;
    }

    @Override
    public java.net.InetAddress localAddress() {
        ChannelHandlerContext c = ctx;
        return c != null && c.channel().localAddress() instanceof java.net.InetSocketAddress a ? a.getAddress() : null;
    }

    /** The core's queue, for tests and statistics. */
    public SubmissionQueue submissionQueue() {
        return sq;
    }
}

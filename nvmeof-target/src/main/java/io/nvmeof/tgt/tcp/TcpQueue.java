package io.nvmeof.tgt.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.nvmeof.netty.BorrowedFileRegion;
import io.nvmeof.netty.BorrowedMemoryBuf;
import io.nvmeof.netty.SmallPduPool;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.Crc32c;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.transport.TransportQueue;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/TCP connection, which is one NVMe queue (Linux nvmet tcp.c). It frames PDUs, checks every header field
 * before use, moves capsules and data, and leaves every command decision to {@link TargetCore}. Everything runs on the
 * connection's event loop; responses produced while a batch of reads is processed are flushed once at its end.
 */
public final class TcpQueue extends ByteToMessageDecoder implements TransportQueue {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    /** Request states (Request.transportState). */
    private static final int STATE_NONE = 0;
    private static final int STATE_AWAIT_H2C = 1;
    /**
     * Reads of file namespaces at least this large are sent by sendfile from the page cache; smaller ones are read
     * into a buffer and sent with the PDUs around them in one gathering write (sendfile is a system call of its own).
     */
    static final int SENDFILE_MIN_BYTES = Integer.getInteger("nvmeof.tcp.sendfileMinBytes", 16 << 10);
    /** Requests a connection has before its Connect: the Connect itself, and room for a host that pipelines. */
    static final int PRE_CONNECT_REQUESTS = 4;

    private final TargetCore core;
    private final TcpOptions options;
    private final SubmissionQueue sq;

    private ChannelHandlerContext ctx;
    private String peer = "?";
    private boolean icDone;
    private boolean headerDigest;
    private boolean dataDigest;
    private int hostPduAlignment = 4;
    private boolean closing;
    private boolean inReadBatch;
    private boolean flushPending;
    private boolean pausedForWrites;
    private io.netty.util.concurrent.ScheduledFuture<?> handshakeDeadline;

    private final UnsafeBuffer in = new UnsafeBuffer(new byte[0]);
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[0]);
    private final PduHeader header = new PduHeader();
    private final ICReqPdu icReq = new ICReqPdu();
    private final ICRespPdu icResp = new ICRespPdu();
    private final DataPdu dataPdu = new DataPdu();
    private final R2TPdu r2t = new R2TPdu();
    private final TermReqPdu termReq = new TermReqPdu();
    private final CapsuleResponsePdu capsuleResp = new CapsuleResponsePdu();
    private final Crc32c crc = new Crc32c();
    /**
     * Views of memory owned elsewhere, reused once released; all made so far: RAM-namespace memory that read data is
     * sent from (zero copy), and the receive buffer that a Write's in-capsule data is copied from into the namespace.
     */
    private final List<BorrowedMemoryBuf> views = new ArrayList<>();
    /**
     * Free views, one list per kind of memory: a view keeps the NIO view it made for the first region it was given
     * and re-points it at regions of the same capacity (namespace chunks; receive-buffer chunks).
     */
    private final ArrayDeque<BorrowedMemoryBuf> freeReadViews = new ArrayDeque<>();
    private final ArrayDeque<BorrowedMemoryBuf> freeWriteViews = new ArrayDeque<>();
    private final Consumer<BorrowedMemoryBuf> recycleReadView = v -> recycleView(freeReadViews, v);
    private final Consumer<BorrowedMemoryBuf> recycleWriteView = v -> recycleView(freeWriteViews, v);
    /** Memory for capsule responses, R2Ts, C2HData headers and data digests, reused once each is sent. */
    private SmallPduPool smallPdus;
    /** File ranges that reads of file namespaces are sent from (sendfile), all made so far, and the free ones. */
    private final List<BorrowedFileRegion> fileRegions = new ArrayList<>();
    private final ArrayDeque<BorrowedFileRegion> freeFileRegions = new ArrayDeque<>();
    private final Consumer<BorrowedFileRegion> recycleFileRegion = r -> recycleView(freeFileRegions, r);
    private long zeroCopyReads;
    private long sendfileReads;
    private long writesFromReceiveBuffer;
    private long h2cDataIntoNamespace;
    /**
     * Commands waiting for data memory (over this queue's limit or the target's), oldest first: each resumes where it
     * stopped (its read buffer, or its R2T) once memory is given back. Later commands wait behind them.
     */
    private final ArrayDeque<Request> waitingForMemory = new ArrayDeque<>();
    /** Registered with the target's budget to be woken (only on this queue's thread). */
    private boolean awaitingTargetMemory;
    private boolean resumingWaiters;
    /** Runs here when the budget wakes this queue (made once: waking allocates nothing). */
    private final Runnable resumeWaiters = this::budgetWoke;
    private final Runnable wakeFromBudget = this::wakeFromBudget;
    /** Transport states of a command waiting for memory (apart from {@link #STATE_AWAIT_H2C}: no H2CData is taken). */
    private static final int WAIT_READ_BUFFER = 2;
    private static final int WAIT_WRITE_BUFFER = 3;

    public TcpQueue(TargetCore core, TcpOptions options) {
        this.core = core;
        this.options = options;
        // Up to twice the largest queue (a host may reuse a command slot as soon as it sees the completion), grown at
        // Connect to twice the queue's size; before that, only the Connect can arrive.
        this.sq = new SubmissionQueue(core, this, PRE_CONNECT_REQUESTS, 2 * core.limits().maxQueueSize());
    }

    // ---- Netty lifecycle ----

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.smallPdus = new SmallPduPool(ctx.executor());
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

    /** A connection that has not sent ICReq and Connect in time is dropped: it holds a socket and a queue. */
    private void handshakeDeadlinePassed() {
        if (!sq.connected() && !closing) {
            LOG.warn("NVMe/TCP connection from {}: no {} within {} ms; closing", peer, icDone ? "Connect" : "ICReq",
                    options.connectDeadlineMs());
            closing = true;
            ctx.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        closing = true;
        waitingForMemory.clear(); // released with the rest below
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
        inReadBatch = true;
        Controller c = sq.controller();
        if (c != null) {
            c.trafficReceived(); // keep-alive counts bytes from the host, even before a whole command is parsed
        }
        super.channelRead(ctx, msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
        inReadBatch = false;
        if (flushPending) {
            flushPending = false;
            ctx.flush();
        }
        super.channelReadComplete(ctx);
    }

    /**
     * Stops taking commands while the host does not take what was sent: a host that never reads would otherwise make
     * the target queue read data without bound (each command's data is allocated when it runs). Outbound data is then
     * bounded by the channel's high write watermark plus what the commands already running produce, at most the
     * queue's request slots times the largest transfer (nvmet holds a command until its data is sent, to the same end).
     */
    private void pauseForWrites() {
        if (!pausedForWrites) {
            pausedForWrites = true;
            ctx.channel().config().setAutoRead(false);
            ctx.flush();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        if (pausedForWrites && ctx.channel().isWritable() && !closing) {
            // Not from here: this event can fire inside a flush made while decoding (the socket took everything at
            // once), and a decode started from within decode would leave the commands after it stranded in the
            // cumulation until the host sent something more.
            ctx.executor().execute(this::resumeDecoding);
        }
        super.channelWritabilityChanged(ctx);
    }

    private void resumeDecoding() {
        if (!pausedForWrites || closing || !ctx.channel().isWritable()) {
            return;
        }
        pausedForWrites = false;
        ctx.channel().config().setAutoRead(true);
        try {
            // Decode what arrived while paused: an empty read runs the decoder over the kept cumulation.
            channelRead(ctx, Unpooled.EMPTY_BUFFER);
            channelReadComplete(ctx);
        } catch (Exception e) {
            exceptionCaught(ctx, e);
        }
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

    private void flushSoon() {
        if (inReadBatch) {
            flushPending = true;
        } else {
            ctx.flush();
        }
    }

    // ---- PDU framing ----

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf buf, List<Object> outList) {
        while (!closing && buf.readableBytes() >= PduHeader.LENGTH) {
            if (!ctx.channel().isWritable()) {
                pauseForWrites();
                return; // the rest stays in the cumulation until the host has taken what we sent
            }
            int start = buf.readerIndex();
            int type = buf.getUnsignedByte(start);
            int flags = buf.getUnsignedByte(start + PduHeader.FLAGS);
            int hlen = buf.getUnsignedByte(start + PduHeader.HLEN);
            int pdo = buf.getUnsignedByte(start + PduHeader.PDO);
            long plen = buf.getUnsignedIntLE(start + PduHeader.PLEN);
            long error = checkHeader(type, flags, hlen, pdo, plen);
            if (error != 0) {
                fatal((int) (error >>> 32), error & 0xFFFF_FFFFL, buf, start, "bad " + PduHeader.typeName(type) + " header");
                return;
            }
            if (buf.readableBytes() < plen) {
                return; // wait for the rest of the PDU
            }
            if (buf.hasMemoryAddress()) {
                in.wrap(buf.memoryAddress() + start, (int) plen);
            } else {
                in.wrap(buf.array(), buf.arrayOffset() + start, (int) plen);
            }
            header.wrap(in, 0);
            process(type, flags, hlen, pdo, (int) plen, buf, start);
            if (closing) {
                buf.skipBytes(buf.readableBytes());
                return;
            }
            buf.readerIndex(start + (int) plen);
        }
    }

    private static long err(int fes, int fei) {
        return (long) fes << 32 | fei;
    }

    /**
     * Checks a common header before waiting for or touching the rest of the PDU; returns 0 or (FES << 32 | FEI).
     * Bounds PLEN for every type so a peer cannot make us buffer more than one command's worth.
     */
    private long checkHeader(int type, int flags, int hlen, int pdo, long plen) {
        int expectedHlen = PduHeader.headerLength(type);
        boolean fromHost = type == PduHeader.TYPE_IC_REQ || type == PduHeader.TYPE_H2C_TERM_REQ
                || type == PduHeader.TYPE_CAPSULE_CMD || type == PduHeader.TYPE_H2C_DATA;
        if (expectedHlen < 0 || !fromHost) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.TYPE);
        }
        if (!icDone && type != PduHeader.TYPE_IC_REQ && type != PduHeader.TYPE_H2C_TERM_REQ) {
            return err(TermReqPdu.FES_PDU_SEQUENCE_ERROR, PduHeader.TYPE);
        }
        if (icDone && type == PduHeader.TYPE_IC_REQ) {
            return err(TermReqPdu.FES_PDU_SEQUENCE_ERROR, PduHeader.TYPE);
        }
        if (hlen != expectedHlen) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.HLEN);
        }
        switch (type) {
            case PduHeader.TYPE_IC_REQ:
                return plen == ICReqPdu.LENGTH ? 0 : err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN);
            case PduHeader.TYPE_H2C_TERM_REQ:
                return plen >= hlen && plen <= hlen + TermReqPdu.MAX_ERROR_DATA ? 0
                        : err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN);
            default:
                break;
        }
        boolean hd = (flags & PduHeader.FLAG_HDGST) != 0;
        if (hd != headerDigest) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS);
        }
        int headerEnd = hlen + (headerDigest ? PduHeader.DIGEST_LENGTH : 0);
        if (plen < headerEnd) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN);
        }
        if (plen == headerEnd) {
            if (type == PduHeader.TYPE_H2C_DATA) {
                return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN); // data PDU without data
            }
            return pdo == 0 || pdo == headerEnd ? 0 : err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PDO);
        }
        // The PDU carries data.
        if (pdo < headerEnd || pdo >= plen) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PDO);
        }
        boolean dd = (flags & PduHeader.FLAG_DDGST) != 0;
        if (dd != dataDigest) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS);
        }
        long dataLength = plen - pdo - (dataDigest ? PduHeader.DIGEST_LENGTH : 0);
        if (dataLength <= 0) {
            return err(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN);
        }
        if (type == PduHeader.TYPE_CAPSULE_CMD && dataLength > options.inlineDataSize()) {
            return err(TermReqPdu.FES_DATA_LIMIT_EXCEEDED, PduHeader.PLEN);
        }
        if (type == PduHeader.TYPE_H2C_DATA && dataLength > options.maxH2CData()) {
            return err(TermReqPdu.FES_DATA_LIMIT_EXCEEDED, PduHeader.PLEN);
        }
        return 0;
    }

    /** CRC32C over bytes of the cumulation buffer, read in place (the buffer's shared NIO view: no copy, no garbage). */
    private int digest(ByteBuf buf, int index, int length) {
        crc.reset();
        crc.update(buf.internalNioBuffer(index, length));
        return crc.value();
    }

    private boolean headerDigestOk(ByteBuf buf, int start, int hlen) {
        return !headerDigest || in.getInt(hlen, java.nio.ByteOrder.LITTLE_ENDIAN) == digest(buf, start, hlen);
    }

    private boolean dataDigestOk(ByteBuf buf, int start, int pdo, int dataLength) {
        return !dataDigest
                || in.getInt(pdo + dataLength, java.nio.ByteOrder.LITTLE_ENDIAN) == digest(buf, start + pdo, dataLength);
    }

    private void process(int type, int flags, int hlen, int pdo, int plen, ByteBuf buf, int start) {
        switch (type) {
            case PduHeader.TYPE_IC_REQ:
                handleICReq(buf, start);
                return;
            case PduHeader.TYPE_H2C_TERM_REQ:
                termReq.wrap(in, 0);
                LOG.warn("host {} terminated the connection: {} (FEI {})", peer, TermReqPdu.fesName(termReq.fes()), termReq.fei());
                closing = true;
                ctx.close();
                return;
            default:
                break;
        }
        if (!headerDigestOk(buf, start, hlen)) {
            fatal(TermReqPdu.FES_HEADER_DIGEST_ERROR, 0, buf, start, "header digest mismatch");
            return;
        }
        int dataLength = pdo == 0 || plen == pdo ? 0 : plen - pdo - (dataDigest ? PduHeader.DIGEST_LENGTH : 0);
        if (type == PduHeader.TYPE_CAPSULE_CMD) {
            handleCapsule(pdo, dataLength, buf, start);
        } else {
            handleH2CData(flags, pdo, dataLength, buf, start);
        }
    }

    private void handleICReq(ByteBuf buf, int start) {
        icReq.wrap(in, 0);
        if (icReq.pfv() != ICReqPdu.PFV_1_0) {
            fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, ICReqPdu.PFV, buf, start, "unsupported PDU format version " + icReq.pfv());
            return;
        }
        if (icReq.hpda() > 31) {
            fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, ICReqPdu.HPDA, buf, start, "HPDA " + icReq.hpda() + " out of range");
            return;
        }
        headerDigest = (icReq.digest() & ICReqPdu.DIGEST_HEADER) != 0;
        dataDigest = (icReq.digest() & ICReqPdu.DIGEST_DATA) != 0;
        hostPduAlignment = (icReq.hpda() + 1) * 4;
        ByteBuf resp = ctx.alloc().directBuffer(ICRespPdu.LENGTH);
        wrapOut(resp, ICRespPdu.LENGTH);
        icResp.<ICRespPdu>wrap(out, 0).init()
                .pfv(ICReqPdu.PFV_1_0)
                .cpda(0)
                .digest(icReq.digest() & (ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA))
                .maxh2cdata(options.maxH2CData());
        resp.writerIndex(ICRespPdu.LENGTH);
        icDone = true;
        ctx.write(resp, ctx.voidPromise());
        flushSoon();
    }

    private void handleCapsule(int pdo, int dataLength, ByteBuf buf, int start) {
        Request req = sq.acquire();
        if (req == null) {
            fatal(TermReqPdu.FES_PDU_SEQUENCE_ERROR, 0, buf, start,
                    "more commands outstanding than the queue holds (" + sq.poolSize() + ")");
            return;
        }
        req.sqeBuffer().putBytes(0, in, CapsuleCommandPdu.SQE, Command.LENGTH);
        ByteBuf lent = null;
        if (dataLength > 0) {
            lent = lendInCapsuleWrite(req, buf, start + pdo, dataLength);
            ByteBuf data = lent;
            if (data == null) {
                data = ctx.alloc().directBuffer(dataLength, dataLength);
                data.writeBytes(buf, start + pdo, dataLength);
                sq.chargeDataArrived(req, dataLength);
            }
            req.data = data;
            req.transportOffset = dataLength;
            if (!dataDigestOk(buf, start, pdo, dataLength)) {
                // Framing is intact, so the queue survives; the host may retry (SPDK's behaviour).
                req.complete(Status.TRANSIENT_TRANSPORT_ERROR);
                return;
            }
        }
        core.submit(req);
        if (lent != null && req.inUse && req.data == lent) {
            // Not done with its data yet (a write runs at once, so this is a safety net): give it a copy of its own
            // before the receive buffer moves on.
            ByteBuf own = ctx.alloc().directBuffer(dataLength, dataLength);
            own.writeBytes(lent, 0, dataLength);
            req.data = own;
            lent.release();
        }
    }

    /**
     * A view of an I/O queue Write's in-capsule data where it arrived (the receive buffer), or null to copy it as
     * for any other command: the write copies it into the namespace directly, one copy and no buffer allocated.
     * WHY only Write: it runs on this thread before {@link TargetCore#submit} returns, whatever the backend (writes
     * never go to a backend lane), so the view is never read after the receive buffer moves on; commands that
     * may be handed to another thread (Dataset Management's ranges, Connect's data) get a copy.
     */
    private ByteBuf lendInCapsuleWrite(Request req, ByteBuf buf, int index, int length) {
        if (sq.qid() == 0 || req.cmd.opcode() != Opcodes.IO_WRITE || !buf.isDirect()
                || buf.nioBufferCount() != 1) {
            return null;
        }
        ByteBuffer region = buf.internalNioBuffer(index, length);
        writesFromReceiveBuffer++;
        return takeView(freeWriteViews, recycleWriteView).borrow(this, region, region.position(), length);
    }

    /** One H2CData PDU's data of a write, straight from the receive buffer into the namespace at its place. */
    private void storeInNamespace(Request req, long datao, ByteBuf buf, int index, int length) {
        if (req.status != Status.SUCCESS) {
            return; // an earlier part failed: the write fails, the rest is not stored
        }
        try {
            long offset = (req.cmd.slba() << req.ns.blockShift()) + datao;
            if (buf.nioBufferCount() == 1) {
                req.ns.backend().write(offset, buf.internalNioBuffer(index, length)); // a view the buffer keeps
            } else {
                req.ns.backend().write(offset, buf.nioBuffer(index, length)); // a composite cumulation: rare
            }
            h2cDataIntoNamespace++;
        } catch (java.io.IOException e) {
            LOG.warn("write to namespace {} failed: {}", req.ns.nsid(), e.toString());
            req.status = Status.WRITE_FAULT;
        }
    }

    private void handleH2CData(int flags, int pdo, int dataLength, ByteBuf buf, int start) {
        dataPdu.wrap(in, 0);
        Request req = sq.request(dataPdu.ttag());
        if (req == null || !req.inUse || req.transportState != STATE_AWAIT_H2C || req.cmd.cid() != dataPdu.cccid()) {
            fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.TTAG, buf, start,
                    "H2CData for no outstanding R2T (ttag " + dataPdu.ttag() + ", cccid " + dataPdu.cccid() + ")");
            return;
        }
        long datao = dataPdu.datao();
        long datal = dataPdu.datal();
        if (datal != dataLength) {
            fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.DATAL, buf, start, "DATAL " + datal + " disagrees with PLEN");
            return;
        }
        if (datao != req.transportOffset || datao + datal > req.transferLength) {
            fatal(TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, buf, start, "H2CData at " + datao + "+" + datal
                    + " outside the R2T window (expected offset " + req.transportOffset + " of " + req.transferLength + ")");
            return;
        }
        if (req.dataInNamespace) {
            storeInNamespace(req, datao, buf, start + pdo, dataLength);
        } else {
            req.data.setBytes((int) datao, buf, start + pdo, dataLength);
        }
        if (!dataDigestOk(buf, start, pdo, dataLength)) {
            req.status = Status.TRANSIENT_TRANSPORT_ERROR;
        }
        req.transportOffset += datal;
        if (req.transportOffset == req.transferLength) {
            req.transportState = STATE_NONE;
            if (req.status != Status.SUCCESS) {
                req.complete(req.status);
            } else {
                req.dataReady();
            }
        }
    }

    /** Ends the connection: a C2HTermReq carrying the offending header, then close. */
    private void fatal(int fes, long fei, ByteBuf buf, int start, String why) {
        LOG.warn("NVMe/TCP queue from {}: {}; sending C2HTermReq ({}) and closing", peer, why, TermReqPdu.fesName(fes));
        closing = true;
        int copy = Math.min(Math.min(buf.writerIndex() - start, TermReqPdu.MAX_ERROR_DATA),
                Math.max(PduHeader.LENGTH, buf.getUnsignedByte(start + PduHeader.HLEN)));
        ByteBuf term = ctx.alloc().directBuffer(TermReqPdu.HEADER_LENGTH + copy);
        wrapOut(term, TermReqPdu.HEADER_LENGTH + copy);
        termReq.<TermReqPdu>wrap(out, 0).init(PduHeader.TYPE_C2H_TERM_REQ, fes, fei, copy);
        term.writerIndex(TermReqPdu.HEADER_LENGTH);
        term.writeBytes(buf, start, copy);
        ctx.writeAndFlush(term).addListener(ChannelFutureListener.CLOSE);
    }

    /** Points {@link #out} at a small PDU's slot, whose bytes are all readable already (see {@link SmallPduPool}). */
    private void wrapSlot(BorrowedMemoryBuf slot) {
        out.wrap(slot.memoryAddress(), slot.capacity());
    }

    private void wrapOut(ByteBuf b, int length) {
        if (b.hasMemoryAddress()) {
            out.wrap(b.memoryAddress() + b.writerIndex(), length);
        } else {
            out.wrap(b.array(), b.arrayOffset() + b.writerIndex(), length);
        }
    }

    // ---- TransportQueue ----

    @Override
    public int mapData(Request req) {
        SglDescriptor sgl = req.sgl;
        boolean capsuleData = req.data != null && req.transportOffset > 0;
        long length = sgl.dataLength();
        if (req.transferLength == 0) {
            // A command without data: a zero-length descriptor of any type (as Linux accepts) and no in-capsule data.
            return length == 0 && !capsuleData ? Status.SUCCESS : Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        int id = sgl.identifier();
        if (id != SglDescriptor.ID_IN_CAPSULE && id != SglDescriptor.ID_TCP_TRANSPORT) {
            return Status.SGL_INVALID_TYPE | Status.DNR;
        }
        if (length != req.transferLength) {
            return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        switch (sgl.identifier()) {
            case SglDescriptor.ID_IN_CAPSULE:
                if (req.direction != Request.DIR_HOST_TO_CONTROLLER) {
                    return Status.SGL_INVALID_TYPE | Status.DNR;
                }
                if (sgl.address() != 0) {
                    return Status.SGL_INVALID_OFFSET | Status.DNR; // ICDOFF is 0
                }
                if (!capsuleData || req.transportOffset != length) {
                    return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
                }
                req.dataInCapsule = true;
                return Status.SUCCESS;
            case SglDescriptor.ID_TCP_TRANSPORT:
                return capsuleData ? Status.SGL_INVALID_TYPE | Status.DNR : Status.SUCCESS;
            default:
                return Status.SGL_INVALID_TYPE | Status.DNR;
        }
    }

    @Override
    public boolean allocateReadData(Request req) {
        if (!dataDigest && req.ns != null && !req.isAdminQueue() && req.cmd.opcode() == Opcodes.IO_READ) {
            // A RAM namespace's own memory: the socket sends the data from there, with no copy into a buffer of ours.
            // Not under a data digest: it is taken before the socket copies the bytes, and a write landing in between
            // would make it wrong (the copy below is a consistent snapshot).
            long offset = req.cmd.slba() << req.ns.blockShift();
            ByteBuffer region = req.ns.backend().readableRegion(offset, req.transferLength);
            if (region != null) {
                req.sourceRegion = region;
                req.sourceAddress = BufferUtil.address(region) + req.ns.backend().pinnedRegionOffset(offset);
                return true;
            }
            if (req.transferLength >= SENDFILE_MIN_BYTES) {
                // A file namespace's page cache: the socket sends the data from there (sendfile), no copy of ours.
                req.sourceFile = req.ns.backend().fileHolding(offset, req.transferLength);
                if (req.sourceFile != null) {
                    return true;
                }
            }
        }
        if (!chargeOrWait(req, WAIT_READ_BUFFER, false)) {
            return false; // resumes through dataReady() once memory is given back
        }
        placeReadBuffer(req);
        return true;
    }

    private void placeReadBuffer(Request req) {
        req.data = ctx.alloc().directBuffer(req.transferLength, req.transferLength);
        req.data.writerIndex(req.transferLength);
    }

    /**
     * Charges the command's data buffer against the memory limits, or parks the command (true when charged). A new
     * command waits behind those already waiting, so none is passed over; a resumed one that still does not fit goes
     * back to the head.
     */
    private boolean chargeOrWait(Request req, int why, boolean resumed) {
        if (!resumed && !waitingForMemory.isEmpty()) {
            req.transportState = why;
            waitingForMemory.addLast(req);
            return false;
        }
        int r = sq.chargeData(req, req.transferLength);
        if (r == SubmissionQueue.OVER_TARGET_LIMIT) {
            if (!awaitingTargetMemory) {
                awaitingTargetMemory = true;
                core.memory().awaitMemory(wakeFromBudget);
            }
            r = sq.chargeData(req, req.transferLength); // memory given back before we were listed woke nobody
        }
        if (r == SubmissionQueue.CHARGED) {
            return true;
        }
        req.transportState = why;
        if (resumed) {
            waitingForMemory.addFirst(req);
        } else {
            waitingForMemory.addLast(req);
        }
        return false;
    }

    /** Any thread: the target's budget gave memory back and picked this queue. */
    private void wakeFromBudget() {
        try {
            execute(resumeWaiters);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // The target is shutting down: nothing waits any more.
        }
    }

    private void budgetWoke() {
        awaitingTargetMemory = false;
        if (!resumeWaitingCommands() && !awaitingTargetMemory) {
            // This queue had no use for the memory (nothing waits here now): let the next waiting queue try. One
            // that still does not fit is listed again and waits for the next memory given back.
            core.memory().wakeOne();
        }
    }

    @Override
    public boolean withdrawWaiting(Request req) {
        // Uncharged while it waits, without a buffer or an R2T: nothing to give back. A write whose R2T went out is not
        // withdrawn (its H2CData may be on the way), as SPDK leaves it.
        if (!waitingForMemory.remove(req)) {
            return false;
        }
        req.transportState = STATE_NONE;
        return true;
    }

    @Override
    public void memoryFreed() {
        if (!waitingForMemory.isEmpty()) {
            resumeWaitingCommands();
        }
    }

    /** Resumes waiting commands, oldest first, while memory lasts; true when at least one went on. */
    private boolean resumeWaitingCommands() {
        if (resumingWaiters || closing) {
            return false;
        }
        resumingWaiters = true;
        boolean progressed = false;
        try {
            while (!waitingForMemory.isEmpty()) {
                Request req = waitingForMemory.pollFirst();
                int why = req.transportState;
                if (!chargeOrWait(req, why, true)) {
                    break;
                }
                progressed = true;
                if (why == WAIT_READ_BUFFER) {
                    placeReadBuffer(req);
                    req.dataReady();
                } else {
                    req.allocateData(false);
                    sendR2T(req);
                }
            }
        } finally {
            resumingWaiters = false;
        }
        if (progressed) {
            // Memory may be left over for another waiting queue: pass the turn on. The chain ends at a queue that
            // makes no progress (listed again) or when none waits.
            core.memory().wakeOne();
        }
        return progressed;
    }

    @Override
    public long bufferedBytes() {
        // The receive buffer at its largest: one PDU with the most in-capsule or H2C data, header and digests.
        return Math.max(options.inlineDataSize(), options.maxH2CData()) + 256L;
    }

    @Override
    public void fetchData(Request req) {
        if (closing) {
            sq.release(req);
            return;
        }
        if (!dataDigest && sq.qid() != 0 && req.ns != null && req.cmd.opcode() == Opcodes.IO_WRITE) {
            // Each H2CData PDU's data goes from the receive buffer into the namespace as it arrives: no buffer for the
            // whole transfer, one copy fewer. Not under a data digest, which must be checked before the namespace
            // changes. A write the host does not finish leaves its blocks partly written, which NVMe allows for a
            // command that does not complete successfully (the host retries it or reports it failed).
            req.dataInNamespace = true;
        } else {
            if (!chargeOrWait(req, WAIT_WRITE_BUFFER, false)) {
                return; // its R2T goes once memory is given back
            }
            req.allocateData(false);
        }
        sendR2T(req);
    }

    private void sendR2T(Request req) {
        req.transportState = STATE_AWAIT_H2C;
        req.transportOffset = 0;
        int hd = headerDigest ? PduHeader.DIGEST_LENGTH : 0;
        int plen = R2TPdu.LENGTH + hd;
        BorrowedMemoryBuf b = smallPdus.take(plen);
        wrapSlot(b);
        r2t.<R2TPdu>wrap(out, 0).init(headerDigest ? PduHeader.FLAG_HDGST : 0, plen)
                .cccid(req.cmd.cid())
                .ttag(req.slot())
                .r2to(0)
                .r2tl(req.transferLength);
        if (headerDigest) {
            out.putInt(R2TPdu.LENGTH, crc.of(out, 0, R2TPdu.LENGTH), java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        ctx.write(b, ctx.voidPromise());
        flushSoon();
    }

    @Override
    public void queueResponse(Request req) {
        if (closing) {
            sq.release(req);
            return;
        }
        boolean hasData = Status.isSuccess(req.status) && req.direction == Request.DIR_CONTROLLER_TO_HOST
                && (req.data != null || req.sourceRegion != null || req.sourceFile != null) && req.transferLength > 0;
        if (hasData) {
            // With SQ flow control off, the C2HData SUCCESS flag replaces the response capsule (Linux does the same).
            boolean success = sq.flowControlDisabled() && !req.closeQueueAfterResponse;
            writeC2HData(req, success);
            if (success) {
                sq.release(req);
                flushSoon();
                return;
            }
        }
        writeCapsuleResponse(req);
        boolean close = req.closeQueueAfterResponse;
        sq.release(req);
        if (close) {
            closing = true;
            ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        flushSoon();
    }

    private void writeC2HData(Request req, boolean success) {
        int hd = headerDigest ? PduHeader.DIGEST_LENGTH : 0;
        int dd = dataDigest ? PduHeader.DIGEST_LENGTH : 0;
        int headerEnd = DataPdu.HEADER_LENGTH + hd;
        int pdo = (headerEnd + hostPduAlignment - 1) / hostPduAlignment * hostPduAlignment;
        int length = req.transferLength;
        int flags = PduHeader.FLAG_DATA_LAST | (success ? PduHeader.FLAG_DATA_SUCCESS : 0)
                | (headerDigest ? PduHeader.FLAG_HDGST : 0) | (dataDigest ? PduHeader.FLAG_DDGST : 0);
        BorrowedMemoryBuf h = smallPdus.take(pdo);
        wrapSlot(h);
        out.setMemory(0, pdo, (byte) 0); // the slot holds an earlier PDU's bytes; the padding must be zero
        dataPdu.<DataPdu>wrap(out, 0).init(PduHeader.TYPE_C2H_DATA, flags, pdo, (long) pdo + length + dd)
                .cccid(req.cmd.cid())
                .ttag(0)
                .datao(0)
                .datal(length);
        if (headerDigest) {
            out.putInt(DataPdu.HEADER_LENGTH, crc.of(out, 0, DataPdu.HEADER_LENGTH), java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        ctx.write(h, ctx.voidPromise());
        if (req.sourceFile != null) {
            ctx.write(lendFile(req), ctx.voidPromise()); // never under a data digest (allocateReadData)
            return;
        }
        ByteBuf data = req.sourceRegion != null ? borrowView(req) : req.data;
        int digest = 0;
        if (dataDigest) {
            crc.reset();
            crc.update(data.internalNioBuffer(data.readerIndex(), length));
            digest = crc.value();
        }
        req.data = null; // ownership passes to the channel, which releases it once written
        ctx.write(data, ctx.voidPromise());
        if (dataDigest) {
            BorrowedMemoryBuf d = smallPdus.take(PduHeader.DIGEST_LENGTH);
            wrapSlot(d);
            out.putInt(0, digest, java.nio.ByteOrder.LITTLE_ENDIAN);
            ctx.write(d, ctx.voidPromise());
        }
    }

    /** A view of the read's bytes in the namespace's memory; the channel releases it (back to us) once written. */
    private ByteBuf borrowView(Request req) {
        BorrowedMemoryBuf v = takeView(freeReadViews, recycleReadView);
        zeroCopyReads++;
        int offset = (int) (req.sourceAddress - BufferUtil.address(req.sourceRegion));
        return v.borrow(req.ns, req.sourceRegion, offset, req.transferLength);
    }

    /** The read's range of its file namespace, sent by sendfile; the channel releases it (back to us) once sent. */
    private BorrowedFileRegion lendFile(Request req) {
        BorrowedFileRegion r = freeFileRegions.pollFirst();
        if (r == null) {
            r = new BorrowedFileRegion(recycleFileRegion);
            fileRegions.add(r);
        }
        sendfileReads++;
        return r.borrow(req.ns, req.sourceFile, req.cmd.slba() << req.ns.blockShift(), req.transferLength);
    }

    private BorrowedMemoryBuf takeView(ArrayDeque<BorrowedMemoryBuf> free, Consumer<BorrowedMemoryBuf> recycler) {
        BorrowedMemoryBuf v = free.pollFirst();
        if (v == null) {
            v = new BorrowedMemoryBuf(recycler);
            views.add(v);
        }
        return v;
    }

    private <T> void recycleView(ArrayDeque<T> free, T v) {
        if (ctx == null || ctx.executor().inEventLoop()) {
            free.addFirst(v);
            return;
        }
        try {
            ctx.executor().execute(() -> free.addFirst(v)); // released off the loop (not by Netty's writes)
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the loop has ended: the queue with it
        }
    }

    @Override
    public boolean sendsFrom(Namespace ns) {
        for (BorrowedMemoryBuf v : views) {
            if (v.holder() == ns) {
                return true;
            }
        }
        for (BorrowedFileRegion r : fileRegions) {
            if (r.holder() == ns) {
                return true;
            }
        }
        return false;
    }

    /** Read responses sent straight from namespace memory so far, for tests and statistics. */
    public long zeroCopyReads() {
        return zeroCopyReads;
    }

    /** Reads of file namespaces sent from the page cache by sendfile so far, for tests and statistics. */
    public long sendfileReads() {
        return sendfileReads;
    }

    /** H2CData PDUs whose data went from the receive buffer straight into the namespace, for tests. */
    public long h2cDataIntoNamespace() {
        return h2cDataIntoNamespace;
    }

    /** Slots for small PDUs this queue has made (each 128 bytes, reused once sent), for tests and statistics. */
    public int smallPduSlots() {
        return smallPdus.slots();
    }

    /** Writes whose in-capsule data went into the namespace straight from the receive buffer, for tests. */
    public long writesFromReceiveBuffer() {
        return writesFromReceiveBuffer;
    }

    private void writeCapsuleResponse(Request req) {
        int hd = headerDigest ? PduHeader.DIGEST_LENGTH : 0;
        int plen = CapsuleResponsePdu.HEADER_LENGTH + hd;
        BorrowedMemoryBuf b = smallPdus.take(plen);
        wrapSlot(b);
        capsuleResp.wrap(out, 0);
        capsuleResp.header(PduHeader.TYPE_CAPSULE_RESP, headerDigest ? PduHeader.FLAG_HDGST : 0,
                CapsuleResponsePdu.HEADER_LENGTH, 0, plen);
        out.putBytes(CapsuleResponsePdu.CQE, req.cqeBuffer(), 0, Completion.LENGTH);
        if (headerDigest) {
            out.putInt(CapsuleResponsePdu.HEADER_LENGTH, crc.of(out, 0, CapsuleResponsePdu.HEADER_LENGTH),
                    java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        ctx.write(b, ctx.voidPromise());
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

    /** The core's queue, for tests and statistics. */
    public SubmissionQueue submissionQueue() {
        return sq;
    }
}

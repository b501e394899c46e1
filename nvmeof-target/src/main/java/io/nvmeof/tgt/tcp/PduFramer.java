package io.nvmeof.tgt.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.nvmeof.netty.BorrowedMemoryBuf;
import io.nvmeof.netty.SmallPduPool;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.Crc32c;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import io.nvmeof.tgt.core.Request;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a target queue's PDUs are framed: it cuts the host's byte stream into PDUs, checks every header field and
 * digest before use, answers ICReq, and writes the controller's PDUs (ICResp, CapsuleResp, R2T, C2HData headers and
 * data digests, C2HTermReq). What a PDU carries goes to {@link DataMover}; everything runs on the queue's event loop.
 */
final class PduFramer {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    private final TcpQueue q;
    /** ICReq answered: from here on only capsules, H2CData and H2CTermReq may come. */
    boolean icDone;
    boolean headerDigest;
    boolean dataDigest;
    private int hostPduAlignment = 4;

    /** The PDU being processed, in the cumulation buffer. */
    final UnsafeBuffer in = new UnsafeBuffer(new byte[0]);
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[0]);
    private final PduHeader header = new PduHeader();
    private final ICReqPdu icReq = new ICReqPdu();
    private final ICRespPdu icResp = new ICRespPdu();
    final DataPdu dataPdu = new DataPdu();
    private final R2TPdu r2t = new R2TPdu();
    private final TermReqPdu termReq = new TermReqPdu();
    private final CapsuleResponsePdu capsuleResp = new CapsuleResponsePdu();
    private final Crc32c crc = new Crc32c();
    /** Memory for capsule responses, R2Ts, C2HData headers and data digests, reused once each is sent. */
    private SmallPduPool smallPdus;

    PduFramer(TcpQueue q) {
        this.q = q;
    }

    void handlerAdded(ChannelHandlerContext ctx) {
        this.smallPdus = new SmallPduPool(ctx.executor());
    }

    /** Slots for small PDUs made so far. */
    int smallPduSlots() {
        return smallPdus.slots();
    }

    // ---- receiving ----

    /** Processes every whole PDU in {@code buf}, leaving a partial one (or all, while writes are paused) in it. */
    void decode(ChannelHandlerContext ctx, ByteBuf buf) {
        while (!q.closing && buf.readableBytes() >= PduHeader.LENGTH) {
            if (!ctx.channel().isWritable()) {
                q.flow.pauseForWrites();
                return; // the rest stays in the cumulation until the host has taken what we sent
            }
            int start = buf.readerIndex();
            int type = buf.getUnsignedByte(start);
            if (q.sq.untrusted() && type == PduHeader.TYPE_CAPSULE_CMD && q.sq.freeRequests() == 0) {
                // A queue whose host proved nothing has a few request slots, not its SQ size's (see MemoryBudget):
                // its next command waits in the cumulation until one is free, rather than ending the connection.
                q.flow.pauseForRequests();
                return;
            }
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
            if (q.closing) {
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
        if (type == PduHeader.TYPE_CAPSULE_CMD && dataLength > q.options.inlineDataSize()) {
            return err(TermReqPdu.FES_DATA_LIMIT_EXCEEDED, PduHeader.PLEN);
        }
        if (type == PduHeader.TYPE_H2C_DATA && dataLength > q.options.maxH2CData()) {
            return err(TermReqPdu.FES_DATA_LIMIT_EXCEEDED, PduHeader.PLEN);
        }
        return 0;
    }

    /** CRC32C over bytes of the cumulation buffer, read in place (the buffer's shared NIO view: no copy, no garbage). */
    int digest(ByteBuf buf, int index, int length) {
        crc.reset();
        crc.update(buf.internalNioBuffer(index, length));
        return crc.value();
    }

    private boolean headerDigestOk(ByteBuf buf, int start, int hlen) {
        return !headerDigest || in.getInt(hlen, java.nio.ByteOrder.LITTLE_ENDIAN) == digest(buf, start, hlen);
    }

    boolean dataDigestOk(ByteBuf buf, int start, int pdo, int dataLength) {
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
                LOG.warn("host {} terminated the connection: {} (FEI {})", q.peer, TermReqPdu.fesName(termReq.fes()), termReq.fei());
                q.closing = true;
                q.ctx.close();
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
            q.data.handleCapsule(pdo, dataLength, buf, start);
        } else {
            q.data.handleH2CData(flags, pdo, dataLength, buf, start);
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
        ChannelHandlerContext ctx = q.ctx;
        ByteBuf resp = ctx.alloc().directBuffer(ICRespPdu.LENGTH);
        wrapOut(resp, ICRespPdu.LENGTH);
        icResp.<ICRespPdu>wrap(out, 0).init()
                .pfv(ICReqPdu.PFV_1_0)
                .cpda(0)
                .digest(icReq.digest() & (ICReqPdu.DIGEST_HEADER | ICReqPdu.DIGEST_DATA))
                .maxh2cdata(q.options.maxH2CData());
        resp.writerIndex(ICRespPdu.LENGTH);
        icDone = true;
        ctx.write(resp, ctx.voidPromise());
        q.flow.flushSoon();
    }

    /** Ends the connection: a C2HTermReq carrying the offending header, then close. */
    void fatal(int fes, long fei, ByteBuf buf, int start, String why) {
        LOG.warn("NVMe/TCP queue from {}: {}; sending C2HTermReq ({}) and closing", q.peer, why, TermReqPdu.fesName(fes));
        q.closing = true;
        ChannelHandlerContext ctx = q.ctx;
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

    // ---- sending ----

    /** An R2T for all of the request's data (one per command). */
    void writeR2T(Request req) {
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
        q.ctx.write(b, q.ctx.voidPromise());
    }

    /** The header of the one C2HData PDU that carries a read's data; {@link DataMover} writes the data after it. */
    void writeC2HDataHeader(Request req, boolean success) {
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
        q.ctx.write(h, q.ctx.voidPromise());
    }

    /** The data digest that ends a C2HData PDU. */
    void writeDataDigest(int digest) {
        BorrowedMemoryBuf d = smallPdus.take(PduHeader.DIGEST_LENGTH);
        wrapSlot(d);
        out.putInt(0, digest, java.nio.ByteOrder.LITTLE_ENDIAN);
        q.ctx.write(d, q.ctx.voidPromise());
    }

    void writeCapsuleResponse(Request req) {
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
        q.ctx.write(b, q.ctx.voidPromise());
    }
}

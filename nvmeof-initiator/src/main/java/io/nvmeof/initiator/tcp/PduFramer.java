package io.nvmeof.initiator.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a host queue's PDUs are framed: it writes ICReq, CapsuleCmd, H2CData and H2CTermReq, takes ICResp and
 * C2HTermReq, and checks the header digest of every other PDU before handing it to {@link DataMover}. It holds what
 * ICReq/ICResp negotiated. {@link PduDecoder} cuts the byte stream into PDUs before they get here.
 */
final class PduFramer {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    private final TcpQueue q;
    private final boolean wantHdgst;
    private final boolean wantDdgst;

    // Negotiated by ICReq/ICResp; written on the event loop before icFuture completes, read only on the event loop.
    volatile boolean icDone;
    boolean hdgst;
    boolean ddgst;
    int cpdaAlign = 4;
    int maxh2cdata;

    // Event-loop confined scratch.
    private final CRC32C txCrc = new CRC32C();
    final CRC32C rxCrc = new CRC32C();

    PduFramer(TcpQueue q, boolean headerDigest, boolean dataDigest) {
        this.q = q;
        this.wantHdgst = headerDigest;
        this.wantDdgst = dataDigest;
    }

    /** ICReq: PFV 0, HPDA 0 (no alignment needed by us), MAXR2T 0 (one R2T in flight per command, as Linux). */
    ByteBuf icReq() {
        UnsafeBuffer icreq = new UnsafeBuffer(new byte[ICReqPdu.LENGTH]);
        ICReqPdu req = new ICReqPdu().<ICReqPdu>wrap(icreq, 0);
        req.init().pfv(ICReqPdu.PFV_1_0).hpda(0).maxr2t(0)
                .digest((wantHdgst ? ICReqPdu.DIGEST_HEADER : 0) | (wantDdgst ? ICReqPdu.DIGEST_DATA : 0));
        return Unpooled.wrappedBuffer(icreq.byteArray());
    }

    // ---- sending ----

    /** Event loop: CapsuleCmd PDU = header, SQE, [HDGST], [pad to CPDA], [in-capsule data, [DDGST]]. */
    void writeCommand(Request r) {
        Channel channel = q.channel;
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
            DataMover.copyIntoByteBuf(r.data, r.dataStart, b, dlen);
            if (dd != 0) {
                b.writeIntLE(crc(txCrc, b, at, dlen));
            }
        }
        channel.write(b, channel.voidPromise());
    }

    private int align(int n) {
        return (n + cpdaAlign - 1) / cpdaAlign * cpdaAlign;
    }

    /** H2CData PDU: header [HDGST] [pad] data [DDGST]; the data is sent straight from the caller's buffer. */
    void writeH2CData(Request r, int ttag, int offset, int length, boolean last) {
        Channel channel = q.channel;
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

    /** H2CTermReq with the offending PDU's header as error data (as SPDK does). */
    ByteBuf termReq(int fes, long fei, ByteBuf offending) {
        int errLen = offending == null ? 0 : Math.min(offending.readableBytes(), TermReqPdu.MAX_ERROR_DATA);
        UnsafeBuffer t = new UnsafeBuffer(new byte[TermReqPdu.HEADER_LENGTH + errLen]);
        new TermReqPdu().<TermReqPdu>wrap(t, 0).init(PduHeader.TYPE_H2C_TERM_REQ, fes, fei, errLen);
        if (errLen > 0) {
            offending.getBytes(offending.readerIndex(), t.byteArray(), TermReqPdu.HEADER_LENGTH, errLen);
        }
        return Unpooled.wrappedBuffer(t.byteArray());
    }

    // ---- receiving ----

    /** Event loop: one whole PDU from {@link PduDecoder}, on an open queue. */
    void receive(ByteBuf p) {
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
            q.protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p,
                    PduHeader.typeName(type) + " header digest flag is " + (hasHdgst ? "set" : "clear")
                            + " but header digests were " + (hdgst ? "" : "not ") + "negotiated");
            return;
        }
        if (hdgst) {
            int expected = crc(rxCrc, p, base, hlen);
            int got = p.getIntLE(base + hlen);
            if (expected != got) {
                q.protocolError(TermReqPdu.FES_HEADER_DIGEST_ERROR, 0, p, String.format(
                        "%s header digest error: received 0x%08x, computed 0x%08x", PduHeader.typeName(type), got, expected));
                return;
            }
        }
        switch (type) {
            case PduHeader.TYPE_CAPSULE_RESP:
                q.data.onResponse(p, base);
                break;
            case PduHeader.TYPE_C2H_DATA:
                q.data.onC2HData(p, base, flags, pdo, plen);
                break;
            case PduHeader.TYPE_R2T:
                q.data.onR2T(p, base);
                break;
            default:
                q.protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.TYPE, p, "unexpected " + PduHeader.typeName(type));
        }
    }

    private void onICResp(ByteBuf p, int base) {
        if (icDone) {
            q.protocolError(TermReqPdu.FES_PDU_SEQUENCE_ERROR, PduHeader.TYPE, p, "second ICResp");
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
            NvmeofException e = new NvmeofException(q.label() + ": " + error);
            q.icFuture.completeExceptionally(e);
            q.fail(error, IoCallback.ERR_TRANSPORT);
            q.channel.close();
            return;
        }
        hdgst = (digest & ICReqPdu.DIGEST_HEADER) != 0;
        ddgst = (digest & ICReqPdu.DIGEST_DATA) != 0;
        if (wantHdgst != hdgst || wantDdgst != ddgst) {
            LOG.info("{}: controller declined digests (asked hdgst={} ddgst={}, got hdgst={} ddgst={})",
                    q.label(), wantHdgst, wantDdgst, hdgst, ddgst);
        }
        // CPDA: alignment, in dwords minus one, the controller wants for data in PDUs we send it.
        cpdaAlign = (cpda + 1) * 4;
        maxh2cdata = (int) Math.min(maxData, 1 << 30);
        icDone = true;
        q.icFuture.complete(null);
    }

    private void onTermReq(ByteBuf p, int base, long plen) {
        int fes = p.getUnsignedShortLE(base + TermReqPdu.FES);
        long fei = p.getUnsignedIntLE(base + TermReqPdu.FEI);
        String msg = "controller terminated the connection (C2HTermReq: " + TermReqPdu.fesName(fes)
                + ", field error information 0x" + Long.toHexString(fei) + ")";
        LOG.error("{}: {}", q.label(), msg);
        // The spec says the receiver of a TermReq closes the connection; we must not answer with one.
        q.peerEnded();
        q.fail(msg, IoCallback.ERR_TRANSPORT);
        q.channel.close();
    }

    /** CRC32C of {@code len} bytes of {@code b} at absolute {@code index}, without moving its indices. */
    static int crc(CRC32C crc, ByteBuf b, int index, int len) {
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
}

package io.nvmeof.initiator.tcp;

import io.netty.buffer.ByteBuf;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.nio.ByteBuffer;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a host queue's data moves: C2HData into the caller's buffer, R2Ts answered with H2CData from it, in-capsule
 * data into the CapsuleCmd PDU, and CapsuleResp completing the command. Runs on the queue's event loop only.
 */
final class DataMover {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    private final TcpQueue q;
    /** Flyweights for {@link #copyFromByteBuf} (event loop only). */
    private final UnsafeBuffer copySrc = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer copyDst = new UnsafeBuffer(0, 0);

    DataMover(TcpQueue q) {
        this.q = q;
    }

    void onResponse(ByteBuf p, int base) {
        int cqe = base + CapsuleResponsePdu.CQE;
        int cid = p.getUnsignedShortLE(cqe + Completion.CID);
        Request r = q.lookupCommand(cid);
        if (r == null) {
            q.protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, CapsuleResponsePdu.CQE + Completion.CID, p,
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
        q.complete(r, status, p.getLongLE(cqe + Completion.DW0));
    }

    /**
     * A read reported successful must have received all its data: a controller that says SUCCESS after part of it
     * (or none) would leave the rest of the caller's buffer as it was, and the caller would take it for data. That
     * fails the command and, as a protocol error, the queue.
     */
    private boolean shortOfData(Request r, ByteBuf p) {
        if (r.dir != HostQueue.DIR_C2H || r.received == r.dataLength) {
            return false;
        }
        q.protocolError(r, TermReqPdu.FES_PDU_SEQUENCE_ERROR, 0, p, "success for command id 0x" + Integer.toHexString(r.cid)
                + " after " + r.received + " of its " + r.dataLength + " bytes of data");
        return true;
    }

    void onC2HData(ByteBuf p, int base, int flags, int pdo, long plen) {
        int cid = p.getUnsignedShortLE(base + DataPdu.CCCID);
        long datao = p.getUnsignedIntLE(base + DataPdu.DATAO);
        long datal = p.getUnsignedIntLE(base + DataPdu.DATAL);
        Request r = q.lookupCommand(cid);
        if (r == null) {
            q.protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.CCCID, p,
                    String.format("C2HData for command id 0x%04x, which is not outstanding", cid));
            return;
        }
        if (r.dir != HostQueue.DIR_C2H) {
            q.protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.CCCID, p,
                    String.format("C2HData for command id 0x%04x, which transfers no data to the host", cid));
            return;
        }
        boolean hasDdgst = (flags & PduHeader.FLAG_DDGST) != 0;
        if (datal > 0 && hasDdgst != q.pdus.ddgst) {
            q.protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p,
                    "C2HData data digest flag does not match the negotiated data digest setting");
            return;
        }
        int dd = hasDdgst ? PduHeader.DIGEST_LENGTH : 0;
        if (pdo + datal + dd != plen) {
            q.protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.DATAL, p,
                    "C2HData PLEN " + plen + " does not match PDO " + pdo + " + DATAL " + datal + " + digest " + dd);
            return;
        }
        if (datao + datal > r.dataLength) {
            q.protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, p, "C2HData offset " + datao + " + length "
                    + datal + " exceeds the command's " + r.dataLength + " bytes");
            return;
        }
        if (datao != r.received) {
            // C2HData PDUs of a command come in order and without gaps, so what arrived can be counted.
            q.protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, p, "C2HData for command id 0x"
                    + Integer.toHexString(cid) + " at offset " + datao + " where " + r.received + " was next");
            return;
        }
        boolean success = (flags & PduHeader.FLAG_DATA_SUCCESS) != 0;
        if (success && (flags & PduHeader.FLAG_DATA_LAST) == 0) {
            q.protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS, p, "C2HData has SUCCESS without LAST_PDU");
            return;
        }
        int len = (int) datal;
        if (dd != 0 && len > 0) {
            int expected = PduFramer.crc(q.pdus.rxCrc, p, base + pdo, len);
            int got = p.getIntLE(base + pdo + len);
            if (expected != got) {
                // As the Linux host: a data digest error fails the command, not the connection.
                LOG.warn("{}: C2HData data digest error for cid 0x{}: received 0x{}, computed 0x{}", q.label(),
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
            q.complete(r, r.dataStatus, 0);
        }
    }

    void onR2T(ByteBuf p, int base) {
        int cid = p.getUnsignedShortLE(base + R2TPdu.CCCID);
        int ttag = p.getUnsignedShortLE(base + R2TPdu.TTAG);
        long r2to = p.getUnsignedIntLE(base + R2TPdu.R2TO);
        long r2tl = p.getUnsignedIntLE(base + R2TPdu.R2TL);
        Request r = q.lookupCommand(cid);
        if (r == null) {
            q.protocolError(TermReqPdu.FES_INVALID_HEADER_FIELD, R2TPdu.CCCID, p,
                    String.format("R2T for command id 0x%04x, which is not outstanding", cid));
            return;
        }
        if (r.dir != HostQueue.DIR_H2C || r.inCapsule) {
            q.protocolError(r, TermReqPdu.FES_INVALID_HEADER_FIELD, R2TPdu.CCCID, p,
                    String.format("R2T for command id 0x%04x, which has no data left to send", cid));
            return;
        }
        if (r2tl == 0 || r2to + r2tl > r.dataLength || r2to < r.h2cNext) {
            q.protocolError(r, TermReqPdu.FES_DATA_OUT_OF_RANGE, R2TPdu.R2TO, p, "R2T offset " + r2to + " length " + r2tl
                    + " is outside the command's " + r.dataLength + " bytes (or goes backwards from " + r.h2cNext + ")");
            return;
        }
        long off = r2to;
        long left = r2tl;
        while (left > 0) {
            int n = (int) Math.min(left, q.pdus.maxh2cdata);
            left -= n;
            q.pdus.writeH2CData(r, ttag, (int) off, n, left == 0);
            off += n;
        }
        r.h2cNext = r2to + r2tl;
        q.channel.flush();
    }

    /** Appends {@code len} bytes of {@code src} from absolute index {@code srcIndex}; {@code src} is not modified. */
    static void copyIntoByteBuf(ByteBuffer src, int srcIndex, ByteBuf dst, int len) {
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

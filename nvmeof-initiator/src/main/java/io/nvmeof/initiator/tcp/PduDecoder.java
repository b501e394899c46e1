package io.nvmeof.initiator.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.util.List;

/**
 * Frames the controller-to-host byte stream into whole PDUs. It reads the 8-byte common header, validates type, HLEN,
 * PDO and PLEN (PLEN bounded so a corrupt length cannot make us buffer gigabytes), and emits a retained slice of
 * exactly PLEN bytes. Digests and PDU-specific fields are checked by {@link TcpQueue}, which knows the commands.
 */
final class PduDecoder extends ByteToMessageDecoder {
    private final TcpQueue queue;
    private boolean broken;

    PduDecoder(TcpQueue queue) {
        this.queue = queue;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (broken) {
            // After a fatal framing error the stream has no PDU boundaries any more: drop everything.
            in.skipBytes(in.readableBytes());
            return;
        }
        if (in.readableBytes() < PduHeader.LENGTH) {
            return;
        }
        int at = in.readerIndex();
        int type = in.getUnsignedByte(at + PduHeader.TYPE);
        int flags = in.getUnsignedByte(at + PduHeader.FLAGS);
        int hlen = in.getUnsignedByte(at + PduHeader.HLEN);
        int pdo = in.getUnsignedByte(at + PduHeader.PDO);
        long plen = in.getUnsignedIntLE(at + PduHeader.PLEN);

        int fei = check(type, flags, hlen, pdo, plen);
        if (fei >= 0) {
            broken = true;
            int fes = fei == PduHeader.PLEN && plen > queue.maxPduLength()
                    ? TermReqPdu.FES_DATA_LIMIT_EXCEEDED : TermReqPdu.FES_INVALID_HEADER_FIELD;
            ByteBuf offending = in.retainedSlice(at, Math.min(in.readableBytes(), Math.max(hlen, PduHeader.LENGTH)));
            in.skipBytes(in.readableBytes());
            try {
                queue.protocolError(fes, fei, offending, String.format(
                        "malformed %s PDU header (type 0x%02x flags 0x%02x hlen %d pdo %d plen %d, bad field at byte %d)",
                        PduHeader.typeName(type), type, flags, hlen, pdo, plen, fei));
            } finally {
                offending.release();
            }
            return;
        }
        if (in.readableBytes() < plen) {
            return;
        }
        out.add(in.readRetainedSlice((int) plen));
    }

    /** Returns the byte offset of the first invalid common-header field, or -1 when the header is acceptable. */
    private int check(int type, int flags, int hlen, int pdo, long plen) {
        if (!queue.icDone()) {
            if (type != PduHeader.TYPE_IC_RESP) {
                return PduHeader.TYPE;
            }
        } else if (type != PduHeader.TYPE_CAPSULE_RESP && type != PduHeader.TYPE_C2H_DATA
                && type != PduHeader.TYPE_R2T && type != PduHeader.TYPE_C2H_TERM_REQ) {
            return PduHeader.TYPE;
        }
        if (hlen != PduHeader.headerLength(type)) {
            return PduHeader.HLEN;
        }
        int hdgst = (flags & PduHeader.FLAG_HDGST) != 0 ? PduHeader.DIGEST_LENGTH : 0;
        switch (type) {
            case PduHeader.TYPE_IC_RESP:
                return plen == hlen ? -1 : PduHeader.PLEN;
            case PduHeader.TYPE_C2H_TERM_REQ:
                // Term requests never carry digests; the error data is the offending header, at most 128 bytes.
                return plen >= hlen && plen <= hlen + TermReqPdu.MAX_ERROR_DATA ? -1 : PduHeader.PLEN;
            case PduHeader.TYPE_CAPSULE_RESP:
            case PduHeader.TYPE_R2T:
                return plen == hlen + hdgst ? -1 : PduHeader.PLEN;
            case PduHeader.TYPE_C2H_DATA:
                if (pdo < hlen + hdgst) {
                    return PduHeader.PDO;
                }
                return plen >= pdo && plen <= queue.maxPduLength() ? -1 : PduHeader.PLEN;
            default:
                return PduHeader.TYPE;
        }
    }
}

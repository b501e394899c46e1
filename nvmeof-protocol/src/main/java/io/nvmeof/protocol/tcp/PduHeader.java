package io.nvmeof.protocol.tcp;

import io.nvmeof.protocol.Flyweight;

/**
 * NVMe/TCP PDU common header, 8 bytes (NVMe/TCP Transport, "PDU Common Header"): type, flags, HLEN (header length
 * without digest), PDO (offset of data in the PDU, 0 when none) and PLEN (whole PDU length with digests and padding).
 * The PDU-specific classes extend this one because every PDU starts with it.
 */
public class PduHeader extends Flyweight {
    public static final int LENGTH = 8;

    public static final int TYPE = 0;
    public static final int FLAGS = 1;
    public static final int HLEN = 2;
    public static final int PDO = 3;
    public static final int PLEN = 4;

    public static final int TYPE_IC_REQ = 0x00;
    public static final int TYPE_IC_RESP = 0x01;
    public static final int TYPE_H2C_TERM_REQ = 0x02;
    public static final int TYPE_C2H_TERM_REQ = 0x03;
    public static final int TYPE_CAPSULE_CMD = 0x04;
    public static final int TYPE_CAPSULE_RESP = 0x05;
    public static final int TYPE_H2C_DATA = 0x06;
    public static final int TYPE_C2H_DATA = 0x07;
    public static final int TYPE_R2T = 0x09;

    /** Header digest present. */
    public static final int FLAG_HDGST = 0x01;
    /** Data digest present. */
    public static final int FLAG_DDGST = 0x02;
    /** Last data PDU of a transfer (H2CData, C2HData). */
    public static final int FLAG_DATA_LAST = 0x04;
    /** C2HData: the command succeeded and no response capsule follows. */
    public static final int FLAG_DATA_SUCCESS = 0x08;

    public static final int DIGEST_LENGTH = 4;

    /** HLEN of each PDU type, or -1 for an unknown type. */
    public static int headerLength(int type) {
        switch (type) {
            case TYPE_IC_REQ:
            case TYPE_IC_RESP:
                return 128;
            case TYPE_H2C_TERM_REQ:
            case TYPE_C2H_TERM_REQ:
            case TYPE_CAPSULE_RESP:
            case TYPE_H2C_DATA:
            case TYPE_C2H_DATA:
            case TYPE_R2T:
                return 24;
            case TYPE_CAPSULE_CMD:
                return 72;
            default:
                return -1;
        }
    }

    public static String typeName(int type) {
        switch (type) {
            case TYPE_IC_REQ: return "ICReq";
            case TYPE_IC_RESP: return "ICResp";
            case TYPE_H2C_TERM_REQ: return "H2CTermReq";
            case TYPE_C2H_TERM_REQ: return "C2HTermReq";
            case TYPE_CAPSULE_CMD: return "CapsuleCmd";
            case TYPE_CAPSULE_RESP: return "CapsuleResp";
            case TYPE_H2C_DATA: return "H2CData";
            case TYPE_C2H_DATA: return "C2HData";
            case TYPE_R2T: return "R2T";
            default: return String.format("PDU type 0x%02x", type);
        }
    }

    @Override
    public int length() {
        return LENGTH;
    }

    public int type() { return u8(TYPE); }
    public int pduFlags() { return u8(FLAGS); }
    public PduHeader pduFlags(int v) { u8(FLAGS, v); return this; }
    public int hlen() { return u8(HLEN); }
    public int pdo() { return u8(PDO); }
    public PduHeader pdo(int v) { u8(PDO, v); return this; }
    public long plen() { return u32(PLEN); }
    public PduHeader plen(long v) { u32(PLEN, v); return this; }

    public boolean hasHeaderDigest() { return (pduFlags() & FLAG_HDGST) != 0; }
    public boolean hasDataDigest() { return (pduFlags() & FLAG_DDGST) != 0; }

    /** Writes the common header. */
    public PduHeader header(int type, int flags, int hlen, int pdo, long plen) {
        u8(TYPE, type);
        u8(FLAGS, flags);
        u8(HLEN, hlen);
        u8(PDO, pdo);
        u32(PLEN, plen);
        return this;
    }
}

package io.nvmeof.protocol.rdma;

import io.nvmeof.protocol.Flyweight;

/** RDMA CM reject private data, 4 bytes: RECFMT and a status saying why the connection was refused. */
public final class RdmaCmReject extends Flyweight {
    public static final int LENGTH = 4;
    public static final int RECFMT = 0;
    public static final int STS = 2;

    public static final int STS_INVALID_LENGTH = 0x01;
    public static final int STS_INVALID_RECFMT = 0x02;
    public static final int STS_INVALID_QID = 0x03;
    public static final int STS_INVALID_HSQSIZE = 0x04;
    public static final int STS_INVALID_HRQSIZE = 0x05;
    public static final int STS_NO_RESOURCES = 0x06;
    public static final int STS_INVALID_IRD = 0x07;
    public static final int STS_INVALID_ORD = 0x08;

    @Override
    public int length() { return LENGTH; }

    public int recfmt() { return u16(RECFMT); }
    public RdmaCmReject recfmt(int v) { u16(RECFMT, v); return this; }
    public int sts() { return u16(STS); }
    public RdmaCmReject sts(int v) { u16(STS, v); return this; }

    public static String stsName(int sts) {
        switch (sts) {
            case STS_INVALID_LENGTH: return "invalid private data length";
            case STS_INVALID_RECFMT: return "invalid RECFMT";
            case STS_INVALID_QID: return "invalid QID";
            case STS_INVALID_HSQSIZE: return "invalid HSQSIZE";
            case STS_INVALID_HRQSIZE: return "invalid HRQSIZE";
            case STS_NO_RESOURCES: return "no resources";
            case STS_INVALID_IRD: return "invalid IRD";
            case STS_INVALID_ORD: return "invalid ORD";
            default: return "status " + sts;
        }
    }
}

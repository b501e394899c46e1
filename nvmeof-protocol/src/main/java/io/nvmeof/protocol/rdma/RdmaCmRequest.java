package io.nvmeof.protocol.rdma;

import io.nvmeof.protocol.Flyweight;

/**
 * RDMA CM connect request private data, 32 bytes (NVMe/RDMA transport, "RDMA_CM_REQUEST Private Data"): RECFMT, QID,
 * HRQSIZE (host receive queue size), HSQSIZE (host send queue size, 0-based) and CNTLID.
 */
public final class RdmaCmRequest extends Flyweight {
    public static final int LENGTH = 32;
    public static final int RECFMT = 0;
    public static final int QID = 2;
    public static final int HRQSIZE = 4;
    public static final int HSQSIZE = 6;
    public static final int CNTLID = 8;

    @Override
    public int length() { return LENGTH; }

    public int recfmt() { return u16(RECFMT); }
    public RdmaCmRequest recfmt(int v) { u16(RECFMT, v); return this; }
    public int qid() { return u16(QID); }
    public RdmaCmRequest qid(int v) { u16(QID, v); return this; }
    public int hrqsize() { return u16(HRQSIZE); }
    public RdmaCmRequest hrqsize(int v) { u16(HRQSIZE, v); return this; }
    public int hsqsize() { return u16(HSQSIZE); }
    public RdmaCmRequest hsqsize(int v) { u16(HSQSIZE, v); return this; }
    public int cntlid() { return u16(CNTLID); }
    public RdmaCmRequest cntlid(int v) { u16(CNTLID, v); return this; }
}

package io.nvmeof.protocol.rdma;

import io.nvmeof.protocol.Flyweight;

/** RDMA CM accept (reply) private data, 32 bytes: RECFMT and CRQSIZE (controller receive queue size). */
public final class RdmaCmAccept extends Flyweight {
    public static final int LENGTH = 32;
    public static final int RECFMT = 0;
    public static final int CRQSIZE = 2;

    @Override
    public int length() { return LENGTH; }

    public int recfmt() { return u16(RECFMT); }
    public RdmaCmAccept recfmt(int v) { u16(RECFMT, v); return this; }
    public int crqsize() { return u16(CRQSIZE); }
    public RdmaCmAccept crqsize(int v) { u16(CRQSIZE, v); return this; }
}

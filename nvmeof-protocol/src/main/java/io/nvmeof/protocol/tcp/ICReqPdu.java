package io.nvmeof.protocol.tcp;

/** Initialize Connection Request, 128 bytes, host to controller. */
public final class ICReqPdu extends PduHeader {
    public static final int LENGTH = 128;
    public static final int PFV = 8;
    public static final int HPDA = 10;
    public static final int DIGEST = 11;
    public static final int MAXR2T = 12;

    /** Digest bits shared by ICReq and ICResp. */
    public static final int DIGEST_HEADER = 0x1;
    public static final int DIGEST_DATA = 0x2;

    public static final int PFV_1_0 = 0;

    @Override
    public int length() { return LENGTH; }

    public int pfv() { return u16(PFV); }
    public ICReqPdu pfv(int v) { u16(PFV, v); return this; }
    /** Host PDU data alignment, in dwords minus one. */
    public int hpda() { return u8(HPDA); }
    public ICReqPdu hpda(int v) { u8(HPDA, v); return this; }
    public int digest() { return u8(DIGEST); }
    public ICReqPdu digest(int v) { u8(DIGEST, v); return this; }
    /** Maximum outstanding R2Ts per command, 0-based. */
    public long maxr2t() { return u32(MAXR2T); }
    public ICReqPdu maxr2t(long v) { u32(MAXR2T, v); return this; }

    public ICReqPdu init() {
        buffer.setMemory(offset, LENGTH, (byte) 0);
        header(TYPE_IC_REQ, 0, LENGTH, 0, LENGTH);
        return this;
    }
}

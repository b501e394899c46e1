package io.nvmeof.protocol.tcp;

/** Initialize Connection Response, 128 bytes, controller to host. */
public final class ICRespPdu extends PduHeader {
    public static final int LENGTH = 128;
    public static final int PFV = 8;
    public static final int CPDA = 10;
    public static final int DIGEST = 11;
    public static final int MAXH2CDATA = 12;

    /** Hosts refuse a controller that offers less than this much H2C data per PDU. */
    public static final int MIN_MAXH2CDATA = 4096;

    @Override
    public int length() { return LENGTH; }

    public int pfv() { return u16(PFV); }
    public ICRespPdu pfv(int v) { u16(PFV, v); return this; }
    /** Controller PDU data alignment, in dwords minus one. */
    public int cpda() { return u8(CPDA); }
    public ICRespPdu cpda(int v) { u8(CPDA, v); return this; }
    public int digest() { return u8(DIGEST); }
    public ICRespPdu digest(int v) { u8(DIGEST, v); return this; }
    /** Maximum data bytes per H2CData PDU. */
    public long maxh2cdata() { return u32(MAXH2CDATA); }
    public ICRespPdu maxh2cdata(long v) { u32(MAXH2CDATA, v); return this; }

    public ICRespPdu init() {
        buffer.setMemory(offset, LENGTH, (byte) 0);
        header(TYPE_IC_RESP, 0, LENGTH, 0, LENGTH);
        return this;
    }
}

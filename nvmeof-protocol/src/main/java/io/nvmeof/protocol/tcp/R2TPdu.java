package io.nvmeof.protocol.tcp;

/** Ready to Transfer PDU, 24 bytes: the controller asks for R2TL bytes of the command's data from offset R2TO. */
public final class R2TPdu extends PduHeader {
    public static final int LENGTH = 24;
    public static final int CCCID = 8;
    public static final int TTAG = 10;
    public static final int R2TO = 12;
    public static final int R2TL = 16;

    @Override
    public int length() { return LENGTH; }

    public int cccid() { return u16(CCCID); }
    public R2TPdu cccid(int v) { u16(CCCID, v); return this; }
    public int ttag() { return u16(TTAG); }
    public R2TPdu ttag(int v) { u16(TTAG, v); return this; }
    public long r2to() { return u32(R2TO); }
    public R2TPdu r2to(long v) { u32(R2TO, v); return this; }
    public long r2tl() { return u32(R2TL); }
    public R2TPdu r2tl(long v) { u32(R2TL, v); return this; }

    public R2TPdu init(int flags, int plen) {
        header(TYPE_R2T, flags, LENGTH, 0, plen);
        u32(20, 0);
        return this;
    }
}

package io.nvmeof.protocol.tcp;

/**
 * H2CData and C2HData PDUs share one 24-byte header: CCCID (the command's CID), TTAG (transfer tag from the R2T;
 * reserved in C2HData), DATAO (offset of this data in the command's buffer) and DATAL (bytes of data in this PDU).
 */
public final class DataPdu extends PduHeader {
    public static final int HEADER_LENGTH = 24;
    public static final int CCCID = 8;
    public static final int TTAG = 10;
    public static final int DATAO = 12;
    public static final int DATAL = 16;

    @Override
    public int length() { return HEADER_LENGTH; }

    public int cccid() { return u16(CCCID); }
    public DataPdu cccid(int v) { u16(CCCID, v); return this; }
    public int ttag() { return u16(TTAG); }
    public DataPdu ttag(int v) { u16(TTAG, v); return this; }
    public long datao() { return u32(DATAO); }
    public DataPdu datao(long v) { u32(DATAO, v); return this; }
    public long datal() { return u32(DATAL); }
    public DataPdu datal(long v) { u32(DATAL, v); return this; }

    public DataPdu init(int type, int flags, int pdo, long plen) {
        header(type, flags, HEADER_LENGTH, pdo, plen);
        u32(20, 0);
        return this;
    }
}

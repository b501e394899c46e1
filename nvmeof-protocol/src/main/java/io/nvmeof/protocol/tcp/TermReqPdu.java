package io.nvmeof.protocol.tcp;

/**
 * H2CTermReq and C2HTermReq share one layout: a 24-byte header with the Fatal Error Status and Field Error
 * Information, followed by (part of) the PDU header that caused the error.
 */
public final class TermReqPdu extends PduHeader {
    public static final int HEADER_LENGTH = 24;
    public static final int FES = 8;
    public static final int FEI = 10;
    /** The offending PDU header is copied after the term header, up to this many bytes (C2H: 152 - 24 = 128). */
    public static final int MAX_ERROR_DATA = 128;

    public static final int FES_INVALID_HEADER_FIELD = 0x01;
    public static final int FES_PDU_SEQUENCE_ERROR = 0x02;
    public static final int FES_HEADER_DIGEST_ERROR = 0x03;
    public static final int FES_DATA_OUT_OF_RANGE = 0x04;
    public static final int FES_R2T_LIMIT_EXCEEDED = 0x05;
    public static final int FES_DATA_LIMIT_EXCEEDED = 0x05;
    public static final int FES_UNSUPPORTED_PARAMETER = 0x06;

    @Override
    public int length() { return HEADER_LENGTH; }

    public int fes() { return u16(FES); }
    public TermReqPdu fes(int v) { u16(FES, v); return this; }
    /** Field Error Information: for an invalid header field, the byte offset of the field in error. */
    public long fei() { return u32(FEI); }
    public TermReqPdu fei(long v) { u32(FEI, v); return this; }

    /** Writes a term request header for {@code errorDataLength} bytes of offending header that follow it. */
    public TermReqPdu init(int type, int fes, long fei, int errorDataLength) {
        buffer.setMemory(offset, HEADER_LENGTH, (byte) 0);
        // PDO is reserved in term requests (SPDK leaves it 0); the offending header simply follows at byte 24.
        header(type, 0, HEADER_LENGTH, 0, HEADER_LENGTH + errorDataLength);
        fes(fes);
        fei(fei);
        return this;
    }

    public static String fesName(int fes) {
        switch (fes) {
            case FES_INVALID_HEADER_FIELD: return "invalid PDU header field";
            case FES_PDU_SEQUENCE_ERROR: return "PDU sequence error";
            case FES_HEADER_DIGEST_ERROR: return "header digest error";
            case FES_DATA_OUT_OF_RANGE: return "data transfer out of range";
            case FES_DATA_LIMIT_EXCEEDED: return "data transfer limit exceeded";
            case FES_UNSUPPORTED_PARAMETER: return "unsupported parameter";
            default: return String.format("fatal error status 0x%x", fes);
        }
    }
}

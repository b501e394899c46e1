package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/** Error Information log entry (LID 01h), 64 bytes. */
public final class ErrorLogEntry extends Flyweight {
    public static final int LENGTH = 64;
    public static final int ERROR_COUNT = 0;
    public static final int SQID = 8;
    public static final int CID = 10;
    public static final int STATUS = 12;
    public static final int PARAM_ERROR_LOCATION = 14;
    public static final int LBA = 16;
    public static final int NSID = 24;
    public static final int TRTYPE = 29;

    @Override
    public int length() { return LENGTH; }

    /** Unique, increasing error count; 0 marks an empty entry. */
    public long errorCount() { return u64(ERROR_COUNT); }
    public ErrorLogEntry errorCount(long v) { u64(ERROR_COUNT, v); return this; }
    public int sqid() { return u16(SQID); }
    public ErrorLogEntry sqid(int v) { u16(SQID, v); return this; }
    public int cid() { return u16(CID); }
    public ErrorLogEntry cid(int v) { u16(CID, v); return this; }
    /** Status field as in a CQE: bit 0 phase, bits 15:1 status. */
    public int statusField() { return u16(STATUS); }
    public ErrorLogEntry status(int status) { u16(STATUS, (status & 0x7FFF) << 1); return this; }
    public int parameterErrorLocation() { return u16(PARAM_ERROR_LOCATION); }
    public ErrorLogEntry parameterErrorLocation(int v) { u16(PARAM_ERROR_LOCATION, v); return this; }
    public long lba() { return u64(LBA); }
    public ErrorLogEntry lba(long v) { u64(LBA, v); return this; }
    public long nsid() { return u32(NSID); }
    public ErrorLogEntry nsid(long v) { u32(NSID, v); return this; }
    public int trtype() { return u8(TRTYPE); }
    public ErrorLogEntry trtype(int v) { u8(TRTYPE, v); return this; }
}

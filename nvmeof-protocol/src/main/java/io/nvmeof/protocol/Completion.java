package io.nvmeof.protocol;

/** Completion queue entry: 16 bytes (NVMe Base, "Common Completion Queue Entry"). */
public final class Completion extends Flyweight {
    public static final int LENGTH = 16;

    public static final int DW0 = 0;
    public static final int DW1 = 4;
    public static final int SQHD = 8;
    public static final int SQID = 10;
    public static final int CID = 12;
    public static final int STATUS = 14;

    /** SQHD value that says SQ flow control is disabled (Connect CATTR bit 2). */
    public static final int SQHD_FLOW_CONTROL_DISABLED = 0xFFFF;

    @Override
    public int length() {
        return LENGTH;
    }

    public int dw0() { return i32(DW0); }
    public Completion dw0(int v) { u32(DW0, v); return this; }
    public int dw1() { return i32(DW1); }
    public Completion dw1(int v) { u32(DW1, v); return this; }
    /** DW0 and DW1 as one 64-bit result (Property Get returns an 8-byte value here). */
    public long result64() { return u64(DW0); }
    public Completion result64(long v) { u64(DW0, v); return this; }

    public int sqhd() { return u16(SQHD); }
    public Completion sqhd(int v) { u16(SQHD, v); return this; }
    public int sqid() { return u16(SQID); }
    public Completion sqid(int v) { u16(SQID, v); return this; }
    public int cid() { return u16(CID); }
    public Completion cid(int v) { u16(CID, v); return this; }

    /** Status as used across the project ({@link Status}): the wire field bits 15:1. */
    public int status() { return u16(STATUS) >>> 1; }
    public Completion status(int status) { u16(STATUS, (status & 0x7FFF) << 1 | phase()); return this; }

    /** Phase tag, bit 0 of the status field (meaningless over fabrics, always 0 there). */
    public int phase() { return u16(STATUS) & 1; }

    /** Raw 16-bit status field. */
    public int statusField() { return u16(STATUS); }
}

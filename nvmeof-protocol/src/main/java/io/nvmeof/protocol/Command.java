package io.nvmeof.protocol;

/**
 * Submission queue entry: the 64-byte command (NVMe Base, "Common Command Format"). Fabrics commands use the same
 * 64 bytes; {@link FabricsCommand} gives the fctype-specific fields.
 */
public class Command extends Flyweight {
    public static final int LENGTH = 64;

    public static final int OPCODE = 0;
    public static final int FLAGS = 1;
    public static final int CID = 2;
    public static final int NSID = 4;
    public static final int CDW2 = 8;
    public static final int CDW3 = 12;
    public static final int MPTR = 16;
    public static final int DPTR = 24;
    public static final int CDW10 = 40;
    public static final int CDW11 = 44;
    public static final int CDW12 = 48;
    public static final int CDW13 = 52;
    public static final int CDW14 = 56;
    public static final int CDW15 = 60;

    /** PSDT value for "SGLs are used for this transfer" (metadata pointer is a contiguous buffer). */
    public static final int PSDT_SGL = 0x1;

    @Override
    public int length() {
        return LENGTH;
    }

    public int opcode() { return u8(OPCODE); }
    public Command opcode(int v) { u8(OPCODE, v); return this; }

    /** Fused operation, bits 1:0 of byte 1. */
    public int fuse() { return u8(FLAGS) & 0x3; }

    /** PRP or SGL for Data Transfer, bits 7:6 of byte 1. Fabrics require SGLs (01b). */
    public int psdt() { return (u8(FLAGS) >> 6) & 0x3; }
    public Command psdt(int v) { u8(FLAGS, (u8(FLAGS) & 0x3F) | (v & 0x3) << 6); return this; }

    public int flags() { return u8(FLAGS); }
    public Command flags(int v) { u8(FLAGS, v); return this; }

    public int cid() { return u16(CID); }
    public Command cid(int v) { u16(CID, v); return this; }

    public long nsid() { return u32(NSID); }
    public Command nsid(long v) { u32(NSID, v); return this; }

    public long mptr() { return u64(MPTR); }

    /** Offset of SGL1 (the data pointer) within the buffer, for wrapping an {@link SglDescriptor}. */
    public int dptrOffset() { return offset + DPTR; }

    public int cdw(int index) { return i32(CDW10 + (index - 10) * 4); }
    public Command cdw(int index, int v) { u32(CDW10 + (index - 10) * 4, v); return this; }

    public int cdw10() { return i32(CDW10); }
    public Command cdw10(int v) { u32(CDW10, v); return this; }
    public int cdw11() { return i32(CDW11); }
    public Command cdw11(int v) { u32(CDW11, v); return this; }
    public int cdw12() { return i32(CDW12); }
    public Command cdw12(int v) { u32(CDW12, v); return this; }
    public int cdw13() { return i32(CDW13); }
    public Command cdw13(int v) { u32(CDW13, v); return this; }

    // NVM command set: Read, Write, Compare, Write Zeroes share SLBA (CDW10-11) and NLB (CDW12 15:0, 0-based).

    public long slba() { return u64(CDW10); }
    public Command slba(long v) { u64(CDW10, v); return this; }

    /** Number of logical blocks, 1-based (the wire field is 0-based). */
    public int blockCount() { return (i32(CDW12) & 0xFFFF) + 1; }
    public Command blockCount(int blocks) { u32(CDW12, (i32(CDW12) & 0xFFFF0000) | ((blocks - 1) & 0xFFFF)); return this; }

    /** Force Unit Access, CDW12 bit 30. */
    public boolean fua() { return (i32(CDW12) & (1 << 30)) != 0; }

    /** Write Zeroes: Deallocate, CDW12 bit 25. */
    public boolean deallocateHint() { return (i32(CDW12) & (1 << 25)) != 0; }

    // Identify: CNS in CDW10 7:0, CNTID in CDW10 31:16, CSI in CDW11 31:24.
    public int cns() { return cdw10() & 0xFF; }
    /** Identify: the Command Set Identifier (CDW11 bits 31:24). */
    public int identifyCsi() { return cdw11() >>> 24; }

    // Get Log Page: LID CDW10 7:0, LSP 11:8, RAE bit 15, NUMDL 31:16, NUMDU CDW11 15:0, LPO CDW12-13.
    public int logPageId() { return cdw10() & 0xFF; }
    public boolean retainAsyncEvent() { return (cdw10() & 0x8000) != 0; }
    /** Get Log Page LSP: CDW10 bits 14:8 (log specific, e.g. the ANA log's Return Groups Only). */
    public int logSpecificField() { return (cdw10() >>> 8) & 0x7F; }
    /** Number of bytes asked for by Get Log Page (NUMD is 0-based dwords). */
    public long logPageLength() {
        long numd = ((cdw10() >>> 16) & 0xFFFFL) | ((long) (cdw11() & 0xFFFF) << 16);
        return (numd + 1) * 4;
    }
    public long logPageOffset() { return u64(CDW12); }
    /** Get Log Page: the Command Set Identifier (CDW14 bits 31:24), for command-set specific logs. */
    public int logPageCsi() { return i32(CDW14) >>> 24; }
    public Command logPage(int lid, long bytes, long logOffset) {
        long numd = bytes / 4 - 1;
        cdw10((int) ((lid & 0xFF) | (numd & 0xFFFF) << 16));
        cdw11((int) ((numd >>> 16) & 0xFFFF));
        u64(CDW12, logOffset);
        return this;
    }

    // Get/Set Features: FID CDW10 7:0, SEL (get) 10:8, SV (set) bit 31.
    public int featureId() { return cdw10() & 0xFF; }
    public int featureSelect() { return (cdw10() >> 8) & 0x7; }
    public boolean saveFeature() { return (cdw10() & 0x8000_0000) != 0; }

    // Dataset Management: NR (0-based) in CDW10 7:0, AD (deallocate) CDW11 bit 2.
    public int rangeCount() { return (cdw10() & 0xFF) + 1; }
    public boolean deallocateAttribute() { return (cdw11() & 0x4) != 0; }

    // Abort: SQID CDW10 15:0, CID CDW10 31:16.
}

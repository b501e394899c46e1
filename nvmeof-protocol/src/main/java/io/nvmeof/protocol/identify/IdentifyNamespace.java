package io.nvmeof.protocol.identify;

import io.nvmeof.protocol.Flyweight;

/** Identify Namespace data structure for the NVM command set, 4096 bytes (CNS 00h). */
public final class IdentifyNamespace extends Flyweight {
    public static final int LENGTH = 4096;

    public static final int NSZE = 0;
    public static final int NCAP = 8;
    public static final int NUSE = 16;
    public static final int NSFEAT = 24;
    public static final int NLBAF = 25;
    public static final int FLBAS = 26;
    public static final int DLFEAT = 33;
    /** Namespace Multi-path I/O and Namespace Sharing Capabilities: bit 0, may be attached to several controllers. */
    public static final int NMIC = 30;
    /** Namespace Atomic Write Unit Normal, Power Fail, Compare and Write: in blocks, 0-based (NSFEAT bit 1). */
    public static final int NAWUN = 34;
    public static final int NAWUPF = 36;
    public static final int NACWU = 38;
    public static final int NMIC_SHARED = 1;
    /**
     * Reservation Capabilities: bit 0 Persist Through Power Loss, bits 6:1 the reservation types 1..6 (bit n for type
     * n), bit 7 IEKEY as NVMe 1.3 and later define it (only Register heeds it).
     */
    public static final int RESCAP = 31;
    public static final int RESCAP_PTPL = 1;
    public static final int RESCAP_ALL_TYPES = 0x7E;
    public static final int RESCAP_IEKEY_1_3 = 0x80;
    /** Preferred write granularity and alignment, deallocate granularity and alignment, optimal write size (NVMe 1.4). */
    public static final int NPWG = 64;
    public static final int NPWA = 66;
    public static final int NPDG = 68;
    public static final int NPDA = 70;
    public static final int NOWS = 72;
    /** ANA Group Identifier (NVMe Base 2.0, Identify Namespace bytes 95:92). */
    public static final int ANAGRPID = 92;
    public static final int NGUID = 104;
    public static final int EUI64 = 120;
    public static final int LBAF0 = 128;

    /** NSFEAT bit 2: deallocated blocks read as zeroes... (DLFEAT says what they read as). */
    public static final int NSFEAT_THIN = 1;
    /** NSFEAT bit 1 (NSABP): NAWUN, NAWUPF and NACWU are defined and replace Identify Controller's AWUN, AWUPF, ACWU. */
    public static final int NSFEAT_ATOMICS = 0x2;
    /** NSFEAT bit 4 (OPTPERF): NPWG, NPWA, NPDG, NPDA and NOWS are defined. */
    public static final int NSFEAT_OPTPERF = 0x10;
    /** DLFEAT: bits 2:0 = 001b deallocated blocks read as zeroes; bit 3: Write Zeroes may deallocate. */
    public static final int DLFEAT_READ_ZEROES = 0x1 | 0x8;

    @Override
    public int length() { return LENGTH; }

    /** Namespace size in logical blocks. */
    public long nsze() { return u64(NSZE); }
    public IdentifyNamespace nsze(long v) { u64(NSZE, v); return this; }
    public long ncap() { return u64(NCAP); }
    public IdentifyNamespace ncap(long v) { u64(NCAP, v); return this; }
    public long nuse() { return u64(NUSE); }
    public IdentifyNamespace nuse(long v) { u64(NUSE, v); return this; }
    public int nsfeat() { return u8(NSFEAT); }
    public IdentifyNamespace nsfeat(int v) { u8(NSFEAT, v); return this; }
    /** Number of LBA formats, 0-based. */
    public int nlbaf() { return u8(NLBAF); }
    public IdentifyNamespace nlbaf(int v) { u8(NLBAF, v); return this; }
    /** Formatted LBA size: bits 3:0 index of the LBA format in use. */
    public int flbas() { return u8(FLBAS); }
    public IdentifyNamespace flbas(int v) { u8(FLBAS, v); return this; }
    public int dlfeat() { return u8(DLFEAT); }
    public IdentifyNamespace dlfeat(int v) { u8(DLFEAT, v); return this; }
    public int nmic() { return u8(NMIC); }
    public int rescap() { return u8(RESCAP); }
    public IdentifyNamespace rescap(int v) { u8(RESCAP, v); return this; }
    public IdentifyNamespace nmic(int v) { u8(NMIC, v); return this; }
    /** NPWG, NPWA, NPDG, NPDA: 0-based numbers of logical blocks. */
    public int nawun() { return u16(NAWUN); }
    public IdentifyNamespace nawun(int v) { u16(NAWUN, v); return this; }
    public int nawupf() { return u16(NAWUPF); }
    public IdentifyNamespace nawupf(int v) { u16(NAWUPF, v); return this; }
    public int nacwu() { return u16(NACWU); }
    public IdentifyNamespace nacwu(int v) { u16(NACWU, v); return this; }
    public int npwg() { return u16(NPWG); }
    public IdentifyNamespace npwg(int v) { u16(NPWG, v); return this; }
    public int npwa() { return u16(NPWA); }
    public IdentifyNamespace npwa(int v) { u16(NPWA, v); return this; }
    public int npdg() { return u16(NPDG); }
    public IdentifyNamespace npdg(int v) { u16(NPDG, v); return this; }
    public int npda() { return u16(NPDA); }
    public IdentifyNamespace npda(int v) { u16(NPDA, v); return this; }
    public long anagrpid() { return u32(ANAGRPID); }
    public IdentifyNamespace anagrpid(long v) { u32(ANAGRPID, v); return this; }
    public void readNguid(byte[] dst16) { buffer.getBytes(offset + NGUID, dst16, 0, 16); }
    public IdentifyNamespace nguid(byte[] src16) { buffer.putBytes(offset + NGUID, src16, 0, 16); return this; }
    public void readEui64(byte[] dst8) { buffer.getBytes(offset + EUI64, dst8, 0, 8); }
    public IdentifyNamespace eui64(byte[] src8) { buffer.putBytes(offset + EUI64, src8, 0, 8); return this; }

    /** LBA format {@code index}: metadata size (bytes 1:0), LBA data size as log2 (byte 2), relative performance (byte 3). */
    public int lbafMetadataSize(int index) { return u16(LBAF0 + index * 4); }
    public int lbafDataSizeShift(int index) { return u8(LBAF0 + index * 4 + 2); }
    public IdentifyNamespace lbaf(int index, int metadataSize, int dataSizeShift, int relativePerformance) {
        u16(LBAF0 + index * 4, metadataSize);
        u8(LBAF0 + index * 4 + 2, dataSizeShift);
        u8(LBAF0 + index * 4 + 3, relativePerformance & 0x3);
        return this;
    }

    /**
     * Index of the LBA format in use: FLBAS bits 3:0, with bits 6:5 as its two high bits (NVMe 2.0 allows 64
     * formats), as Linux's nvme_lbaf_index reads it.
     */
    public int formatIndex() {
        int flbas = flbas();
        return (flbas & 0xF) | (flbas & 0x60) >>> 1;
    }

    /** Block size in bytes of the LBA format in use. */
    public int blockSize() { return 1 << lbafDataSizeShift(formatIndex()); }
}

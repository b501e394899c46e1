package io.nvmeof.protocol;

/** One Dataset Management range, 16 bytes: context attributes, length in logical blocks, starting LBA. */
public final class DatasetRange extends Flyweight {
    public static final int LENGTH = 16;
    public static final int CONTEXT_ATTRIBUTES = 0;
    public static final int BLOCKS = 4;
    public static final int SLBA = 8;
    /** Dataset Management carries at most 256 ranges (NR is 8 bits, 0-based). */
    public static final int MAX_RANGES = 256;

    @Override
    public int length() { return LENGTH; }

    public long contextAttributes() { return u32(CONTEXT_ATTRIBUTES); }
    public long blocks() { return u32(BLOCKS); }
    public DatasetRange blocks(long v) { u32(BLOCKS, v); return this; }
    public long slba() { return u64(SLBA); }
    public DatasetRange slba(long v) { u64(SLBA, v); return this; }
    public DatasetRange set(long slba, long blocks) { u32(CONTEXT_ATTRIBUTES, 0); blocks(blocks); slba(slba); return this; }
}

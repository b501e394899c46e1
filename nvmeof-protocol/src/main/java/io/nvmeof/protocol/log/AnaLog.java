package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/**
 * Asymmetric Namespace Access log (LID 0Ch; NVMe Base 2.0, 5.16.1.13): a 16-byte header (change count, number of
 * group descriptors), then one descriptor per ANA group: 32 bytes (group ID, number of NSIDs, change count, state),
 * then its NSIDs, 4 bytes each (none when the host asked for groups only, LSP bit 0).
 */
public final class AnaLog extends Flyweight {
    public static final int HEADER_LENGTH = 16;
    public static final int DESCRIPTOR_LENGTH = 32;
    /** Get Log Page LSP bit 0 (Return Groups Only): descriptors without their NSID lists. */
    public static final int LSP_GROUPS_ONLY = 1;

    private static final int CHGCNT = 0;
    private static final int NGRPS = 8;
    private static final int DESC_GRPID = 0;
    private static final int DESC_NNSIDS = 4;
    private static final int DESC_CHGCNT = 8;
    private static final int DESC_STATE = 16;

    /** The log's length with {@code groups} descriptors listing {@code nsids} NSIDs in all. */
    public static int length(int groups, int nsids) {
        return HEADER_LENGTH + groups * DESCRIPTOR_LENGTH + nsids * 4;
    }

    @Override
    public int length() { return HEADER_LENGTH; }

    public long changeCount() { return u64(CHGCNT); }
    public AnaLog changeCount(long v) { u64(CHGCNT, v); return this; }
    public int groupCount() { return u16(NGRPS); }
    public AnaLog groupCount(int v) { u16(NGRPS, v); return this; }

    /** Writes a descriptor at {@code at} (a byte offset into the log) with its NSIDs; returns the offset after it. */
    public int descriptor(int at, long groupId, long changeCount, AnaState state, long[] nsids, int nsidCount) {
        u32(at + DESC_GRPID, groupId);
        u32(at + DESC_NNSIDS, nsidCount);
        u64(at + DESC_CHGCNT, changeCount);
        u8(at + DESC_STATE, state.code());
        int p = at + DESCRIPTOR_LENGTH;
        for (int i = 0; i < nsidCount; i++) {
            u32(p, nsids[i]);
            p += 4;
        }
        return p;
    }

    public long descriptorGroupId(int at) { return u32(at + DESC_GRPID); }
    public int descriptorNsidCount(int at) { return (int) u32(at + DESC_NNSIDS); }
    public long descriptorChangeCount(int at) { return u64(at + DESC_CHGCNT); }
    public AnaState descriptorState(int at) { return AnaState.ofCode(u8(at + DESC_STATE) & 0xF); }
    public long descriptorNsid(int at, int index) { return u32(at + DESCRIPTOR_LENGTH + index * 4); }
}

package io.nvmeof.protocol.reservation;

import io.nvmeof.protocol.Flyweight;

/**
 * Reservation Report's extended data structure (EDS = 1; NVM Command Set 1.0, "Reservation Status Extended Data
 * Structure"): a 64-byte header, then one 64-byte Registered Controller Extended Data Structure per registrant, each
 * with the registrant's 128-bit host identifier. Fabrics hosts have 128-bit identifiers only, so this is the layout a
 * fabrics controller reports.
 */
public final class ReservationStatusExtended extends Flyweight {
    public static final int HEADER_LENGTH = 64;
    public static final int ENTRY_LENGTH = 64;

    // Header
    public static final int GEN = 0;
    public static final int RTYPE = 4;
    public static final int REGCTL = 5;
    public static final int PTPLS = 9;

    // Registered Controller Extended Data Structure, from the entry's start
    public static final int CNTLID = 0;
    public static final int RCSTS = 2;
    public static final int RKEY = 8;
    public static final int HOSTID = 16;
    public static final int HOSTID_LENGTH = 16;
    /** RCSTS bit 0: the registrant holds the reservation. */
    public static final int RCSTS_HOLDS = 1;
    /** CNTLID of a registrant of the dynamic controller model: registrations belong to hosts, not controllers. */
    public static final int CNTLID_DYNAMIC = 0xFFFF;

    @Override
    public int length() { return HEADER_LENGTH; }

    public static int entryOffset(int index) {
        return HEADER_LENGTH + index * ENTRY_LENGTH;
    }

    public long generation() { return u32(GEN); }
    public ReservationStatusExtended generation(long v) { u32(GEN, v); return this; }
    public int type() { return u8(RTYPE); }
    public ReservationStatusExtended type(int v) { u8(RTYPE, v); return this; }
    /** Number of registrants, even those the transfer was too short to hold. */
    public int registrants() { return u16(REGCTL); }
    public ReservationStatusExtended registrants(int v) { u16(REGCTL, v); return this; }
    /** Persist Through Power Loss State. */
    public boolean persistThroughPowerLoss() { return (u8(PTPLS) & 1) != 0; }
    public ReservationStatusExtended persistThroughPowerLoss(boolean v) { u8(PTPLS, v ? 1 : 0); return this; }

    public int cntlid(int index) { return u16(entryOffset(index) + CNTLID); }
    public boolean holds(int index) { return (u8(entryOffset(index) + RCSTS) & RCSTS_HOLDS) != 0; }
    public long key(int index) { return u64(entryOffset(index) + RKEY); }

    /** The registrant's host identifier, its 16 bytes as Connect carried them. */
    public byte[] hostId(int index) {
        byte[] id = new byte[HOSTID_LENGTH];
        buffer.getBytes(offset + entryOffset(index) + HOSTID, id);
        return id;
    }

    /** Writes entry {@code index}; it must lie within the buffer (the caller stops where the transfer ends). */
    public ReservationStatusExtended entry(int index, int cntlid, boolean holds, long key, byte[] hostId) {
        int at = entryOffset(index);
        u16(at + CNTLID, cntlid);
        u8(at + RCSTS, holds ? RCSTS_HOLDS : 0);
        u64(at + RKEY, key);
        buffer.putBytes(offset + at + HOSTID, hostId, 0, HOSTID_LENGTH);
        return this;
    }
}

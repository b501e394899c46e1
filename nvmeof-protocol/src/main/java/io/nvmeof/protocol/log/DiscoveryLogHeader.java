package io.nvmeof.protocol.log;

import io.nvmeof.protocol.Flyweight;

/** Discovery log page (LID 70h) header, 1024 bytes; entries of {@link DiscoveryLogEntry#LENGTH} bytes follow it. */
public final class DiscoveryLogHeader extends Flyweight {
    public static final int LENGTH = 1024;
    public static final int GENCTR = 0;
    public static final int NUMREC = 8;
    public static final int RECFMT = 16;

    @Override
    public int length() { return LENGTH; }

    /** Generation counter: changes whenever the log's contents change, so a host can re-read a torn log. */
    public long genctr() { return u64(GENCTR); }
    public DiscoveryLogHeader genctr(long v) { u64(GENCTR, v); return this; }
    public long numrec() { return u64(NUMREC); }
    public DiscoveryLogHeader numrec(long v) { u64(NUMREC, v); return this; }
    public int recfmt() { return u16(RECFMT); }
    public DiscoveryLogHeader recfmt(int v) { u16(RECFMT, v); return this; }

    public static int entryOffset(int index) {
        return LENGTH + index * DiscoveryLogEntry.LENGTH;
    }
}

package io.nvmeof.protocol.reservation;

import io.nvmeof.protocol.Flyweight;

/**
 * Reservation Notification log page (LID 80h, NVMe Base 2.0), 64 bytes: one notice per read. Log Page Count is an
 * incrementing 64-bit count (0: the log is empty; after FFFFFFFFFFFFFFFFh comes 1) that also counts notices the
 * controller had to drop, so a gap tells the host some were lost.
 */
public final class ReservationNotificationLog extends Flyweight {
    public static final int LENGTH = 64;
    public static final int COUNT = 0;
    public static final int TYPE = 8;
    /** Number of Available Log Pages: how many more notices are queued after this one (at most 255). */
    public static final int AVAILABLE = 9;
    public static final int NSID = 12;

    @Override
    public int length() { return LENGTH; }

    public long count() { return u64(COUNT); }
    public ReservationNotificationLog count(long v) { u64(COUNT, v); return this; }
    public int type() { return u8(TYPE); }
    public ReservationNotificationLog type(int v) { u8(TYPE, v); return this; }
    public int available() { return u8(AVAILABLE); }
    public ReservationNotificationLog available(int v) { u8(AVAILABLE, Math.min(v, 255)); return this; }
    public long nsid() { return u32(NSID); }
    public ReservationNotificationLog nsid(long v) { u32(NSID, v); return this; }
}

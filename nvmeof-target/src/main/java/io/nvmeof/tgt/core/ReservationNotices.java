package io.nvmeof.tgt.core;

import io.nvmeof.protocol.reservation.ReservationNotificationLog;
import io.nvmeof.protocol.reservation.Reservations;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One controller's Reservation Notification log (LID 80h) and Reservation Notification Mask feature (82h): the
 * notices its host has not read yet, oldest first, and which types each namespace masks. Admin-queue thread only.
 *
 * <p>Each notice gets the next Log Page Count. Past {@link #CAPACITY} unread notices a new one is lost, but counted:
 * the newest queued notice is reported with the count of the last one lost, so the host sees the gap (as the spec
 * asks, and as nvmet reports its lost entries). One Asynchronous Event tells the host the log has something; the next
 * waits until the host reads the log without Retain Asynchronous Event.
 */
public final class ReservationNotices {
    /** Unread notices kept (nvmet keeps 64 too). */
    public static final int CAPACITY = 64;

    private static final class Entry {
        final long count;
        final int type;
        final long nsid;
        long lostAfter;

        Entry(long count, int type, long nsid) {
            this.count = count;
            this.type = type;
            this.nsid = nsid;
        }
    }

    private final ArrayDeque<Entry> unread = new ArrayDeque<>();
    private final Map<Long, Integer> masks = new HashMap<>();
    private long counter;
    private boolean eventPending;
    private boolean eventMasked;

    /** The Reservation Notification Mask of a namespace (bits 1..3 mask notice types 1..3). */
    public int mask(long nsid) {
        return masks.getOrDefault(nsid, 0);
    }

    public void mask(long nsid, int mask) {
        if (mask == 0) {
            masks.remove(nsid);
        } else {
            masks.put(nsid, mask);
        }
    }

    /** Queues a notice unless the namespace masks its type; returns whether an event is now due. */
    boolean add(long nsid, int type) {
        if ((mask(nsid) & 1 << type) != 0) {
            return false;
        }
        counter = counter == -1L ? 1 : counter + 1; // 0 means "empty"
        if (unread.size() >= CAPACITY) {
            unread.peekLast().lostAfter++;
        } else {
            unread.add(new Entry(counter, type, nsid));
        }
        eventPending = true;
        return !eventMasked;
    }

    /** Whether to complete an Asynchronous Event Request now; if so, further events wait for the log to be read. */
    boolean takeEvent() {
        if (!eventPending || eventMasked) {
            return false;
        }
        eventPending = false;
        eventMasked = true;
        return true;
    }

    /**
     * Get Log Page 80h: the oldest unread notice (all zero when none), which is then gone. Unless {@code retain}, the
     * next notice raises an event again.
     */
    public byte[] read(boolean retain) {
        byte[] log = new byte[ReservationNotificationLog.LENGTH];
        Entry e = unread.poll();
        if (e != null) {
            new ReservationNotificationLog().<ReservationNotificationLog>wrap(new UnsafeBuffer(log), 0)
                    .count(reportedCount(e))
                    .type(e.type)
                    .available(unread.size())
                    .nsid(e.nsid);
        }
        if (!retain) {
            eventMasked = false;
            eventPending = !unread.isEmpty();
        }
        return log;
    }

    /** The entry's count, moved past the notices lost after it; the count skips 0 when it wraps. */
    private static long reportedCount(Entry e) {
        long c = e.count + e.lostAfter;
        if (Long.compareUnsigned(c, e.count) < 0) {
            c++;
        }
        return c == 0 ? 1 : c;
    }

    /** Notices queued and not read (tests). */
    public int unreadCount() {
        return unread.size();
    }

    static boolean validMask(int mask) {
        return (mask & ~Reservations.MASK_ALL) == 0;
    }
}

package io.nvmeof.tgt.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.reservation.ReservationNotificationLog;
import io.nvmeof.protocol.reservation.Reservations;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** The Reservation Notification log (LID 80h) of one controller: order, counts, lost notices, masks, events. */
class ReservationNoticesTest {
    final ReservationNotices notices = new ReservationNotices();

    static ReservationNotificationLog log(byte[] page) {
        assertEquals(ReservationNotificationLog.LENGTH, page.length);
        return new ReservationNotificationLog().wrap(new UnsafeBuffer(page), 0);
    }

    @Test
    void oneNoticePerReadOldestFirst() {
        assertTrue(notices.add(1, Reservations.NOTICE_REGISTRATION_PREEMPTED));
        assertTrue(notices.takeEvent());
        assertFalse(notices.add(2, Reservations.NOTICE_RESERVATION_RELEASED), "one event until the log is read");
        assertFalse(notices.takeEvent());
        ReservationNotificationLog first = log(notices.read(false));
        assertEquals(1, first.count());
        assertEquals(Reservations.NOTICE_REGISTRATION_PREEMPTED, first.type());
        assertEquals(1, first.nsid());
        assertEquals(1, first.available(), "one more waits");
        ReservationNotificationLog second = log(notices.read(false));
        assertEquals(2, second.count());
        assertEquals(Reservations.NOTICE_RESERVATION_RELEASED, second.type());
        assertEquals(2, second.nsid());
        assertEquals(0, second.available());
        ReservationNotificationLog empty = log(notices.read(false));
        assertEquals(0, empty.count(), "an empty log reads as zeroes");
        assertEquals(0, empty.type());
    }

    @Test
    void lostNoticesShowAsAGapInTheCount() {
        for (int i = 0; i < ReservationNotices.CAPACITY + 3; i++) {
            notices.add(1, Reservations.NOTICE_RESERVATION_PREEMPTED);
        }
        assertEquals(ReservationNotices.CAPACITY, notices.unreadCount());
        for (int i = 1; i < ReservationNotices.CAPACITY; i++) {
            assertEquals(i, log(notices.read(true)).count());
        }
        assertEquals(ReservationNotices.CAPACITY + 3, log(notices.read(true)).count(),
                "the last one kept carries the count of the last one lost");
        notices.add(1, Reservations.NOTICE_RESERVATION_PREEMPTED);
        assertEquals(ReservationNotices.CAPACITY + 4, log(notices.read(true)).count());
    }

    @Test
    void aMaskedTypeIsNotLogged() {
        notices.mask(1, 1 << Reservations.NOTICE_RESERVATION_RELEASED);
        assertFalse(notices.add(1, Reservations.NOTICE_RESERVATION_RELEASED));
        assertEquals(0, notices.unreadCount());
        assertTrue(notices.add(2, Reservations.NOTICE_RESERVATION_RELEASED), "another namespace's mask");
        assertTrue(notices.add(1, Reservations.NOTICE_REGISTRATION_PREEMPTED) || notices.unreadCount() == 2);
        assertEquals(1 << Reservations.NOTICE_RESERVATION_RELEASED, notices.mask(1));
        assertFalse(ReservationNotices.validMask(1));
        assertTrue(ReservationNotices.validMask(Reservations.MASK_ALL));
    }

    @Test
    void retainingTheEventKeepsItMasked() {
        notices.add(1, Reservations.NOTICE_RESERVATION_PREEMPTED);
        assertTrue(notices.takeEvent());
        notices.add(1, Reservations.NOTICE_RESERVATION_PREEMPTED);
        notices.read(true);
        assertFalse(notices.takeEvent(), "read with Retain Asynchronous Event");
        notices.read(false);
        notices.add(1, Reservations.NOTICE_RESERVATION_RELEASED);
        assertTrue(notices.takeEvent(), "read without it: the next notice raises an event");
    }
}

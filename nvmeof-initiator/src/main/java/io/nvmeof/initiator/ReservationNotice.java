package io.nvmeof.initiator;

/**
 * A notice from the target's Reservation Notification log (LID 80h), read when its Asynchronous Event came: on
 * namespace {@code nsid}, this host's registration was preempted (type 1), a reservation was released (2) or preempted
 * (3). {@code count} is the target's Log Page Count: a gap between two notices means some were lost.
 */
public record ReservationNotice(long count, int type, long nsid) {
}

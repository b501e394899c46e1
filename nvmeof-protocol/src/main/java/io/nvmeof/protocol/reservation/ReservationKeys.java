package io.nvmeof.protocol.reservation;

import io.nvmeof.protocol.Flyweight;

/**
 * The host data of Reservation Register (CRKEY, NRKEY), Acquire (CRKEY, PRKEY) and Release (CRKEY): 64-bit keys,
 * little endian, the current key first.
 */
public final class ReservationKeys extends Flyweight {
    public static final int CURRENT_KEY = 0;
    /** NRKEY of Register, PRKEY of Acquire. */
    public static final int SECOND_KEY = 8;

    @Override
    public int length() { return Reservations.TWO_KEYS_LENGTH; }

    public long currentKey() { return u64(CURRENT_KEY); }
    public ReservationKeys currentKey(long v) { u64(CURRENT_KEY, v); return this; }
    /** Register: the new reservation key. */
    public long newKey() { return u64(SECOND_KEY); }
    public ReservationKeys newKey(long v) { u64(SECOND_KEY, v); return this; }
    /** Acquire: the key of the registrants to preempt. */
    public long preemptKey() { return u64(SECOND_KEY); }
    public ReservationKeys preemptKey(long v) { u64(SECOND_KEY, v); return this; }
}

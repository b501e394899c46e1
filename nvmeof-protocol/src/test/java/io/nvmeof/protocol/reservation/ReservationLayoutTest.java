package io.nvmeof.protocol.reservation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Byte offsets of the reservation structures, as the NVM Command Set and NVMe Base 2.0 lay them out. */
class ReservationLayoutTest {
    @Test
    void extendedReportHeaderAndRegistrant() {
        byte[] b = new byte[128];
        byte[] host = new byte[16];
        for (int i = 0; i < 16; i++) {
            host[i] = (byte) (i + 1);
        }
        new ReservationStatusExtended().<ReservationStatusExtended>wrap(new UnsafeBuffer(b), 0)
                .generation(0x01020304).type(3).registrants(0x0102).persistThroughPowerLoss(true)
                .entry(0, 0xFFFF, true, 0x1122334455667788L, host);
        ByteBuffer r = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x01020304, r.getInt(0), "GEN");
        assertEquals(3, r.get(4), "RTYPE");
        assertEquals(0x0102, r.getShort(5), "REGCTL");
        assertEquals(1, r.get(9), "PTPLS");
        assertEquals((short) 0xFFFF, r.getShort(64), "CNTLID");
        assertEquals(1, r.get(66), "RCSTS");
        assertEquals(0x1122334455667788L, r.getLong(72), "RKEY");
        assertEquals(1, r.get(80), "HOSTID first byte");
        assertEquals(16, r.get(95), "HOSTID last byte");
    }

    @Test
    void notificationLogAndKeys() {
        byte[] b = new byte[64];
        new ReservationNotificationLog().<ReservationNotificationLog>wrap(new UnsafeBuffer(b), 0)
                .count(0x0102030405060708L).type(2).available(300).nsid(7);
        ByteBuffer r = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x0102030405060708L, r.getLong(0), "Log Page Count");
        assertEquals(2, r.get(8), "Reservation Notification Log Page Type");
        assertEquals((byte) 255, r.get(9), "Number of Available Log Pages, at most 255");
        assertEquals(7, r.getInt(12), "NSID");

        byte[] k = new byte[16];
        new ReservationKeys().<ReservationKeys>wrap(new UnsafeBuffer(k), 0).currentKey(1).newKey(2);
        ByteBuffer kb = ByteBuffer.wrap(k).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(1, kb.getLong(0), "CRKEY");
        assertEquals(2, kb.getLong(8), "NRKEY / PRKEY");
    }

    @Test
    void commandFields() {
        int cdw10 = 3 << 30 | 1 << 8 | 1 << 3 | 2;
        assertEquals(2, Reservations.action(cdw10));
        assertEquals(true, Reservations.ignoreExistingKey(cdw10));
        assertEquals(1, Reservations.type(cdw10));
        assertEquals(3, Reservations.changePersistThroughPowerLoss(cdw10));
        assertEquals(4096, Reservations.reportLength(1023));
        assertEquals(0x0E, Reservations.MASK_ALL);
    }
}

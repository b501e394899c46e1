package io.nvmeof.fio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** The ring's layout at the byte offsets the engine (io_path.c) uses, and its wake-up rule. */
class SharedRingTest {
    private static final int RING = 8;
    private static final int SUBMIT = 4;

    private static ByteBuffer memory() {
        ByteBuffer b = ByteBuffer.allocateDirect(192 + RING * 16 + SUBMIT * 32).order(ByteOrder.nativeOrder());
        b.putInt(128, RING).putInt(132, SUBMIT);
        return b;
    }

    @Test
    void completionsAreWrittenWhereTheEngineReadsThem() {
        ByteBuffer b = memory();
        SharedRing ring = new SharedRing(b);
        for (int i = 0; i < RING + 3; i++) {
            ring.complete(100 + i, i == 2 ? -1 : 0);
            int e = 192 + (i % RING) * 16;
            assertEquals(i + 1, b.getLong(e), "seq of completion " + i);
            assertEquals(100 + i, b.getInt(e + 8), "io_u index of completion " + i);
            assertEquals(i == 2 ? -1 : 0, b.getInt(e + 12), "status of completion " + i);
        }
        assertEquals(RING + 3, b.getLong(0), "tail");
    }

    @Test
    void submissionsAreReadFromTheirOffsets() {
        ByteBuffer b = memory();
        int s = 192 + RING * 16 + 32;  // the second submission
        b.put(s, (byte) SharedRing.OP_WRITE).putInt(s + 4, 7).putLong(s + 8, 1L << 40).putInt(s + 16, 32)
                .putInt(s + 20, 3).putLong(s + 24, 262144);
        SharedRing ring = new SharedRing(b);
        assertEquals(SharedRing.OP_WRITE, ring.op(1));
        assertEquals(7, ring.index(1));
        assertEquals(1L << 40, ring.lba(1));
        assertEquals(32, ring.blocks(1));
        assertEquals(3, ring.file(1));
        assertEquals(262144, ring.offset(1));
    }

    @Test
    void ofTheCompletionsDeliveredWhileTheEngineSleepsOneWakeUpServesAll() {
        ByteBuffer b = memory();
        SharedRing ring = new SharedRing(b);
        ring.complete(1, 0);
        assertFalse(ring.takeWakeUp(), "the engine is awake: no wake-up");
        b.putInt(64, 1);  // the engine goes to sleep
        ring.complete(2, 0);
        ring.complete(3, 0);
        assertTrue(ring.takeWakeUp(), "the end of the batch wakes it");
        assertEquals(0, b.getInt(64), "and clears the flag");
        assertFalse(ring.takeWakeUp(), "a second caller does not wake it again");
        b.putInt(64, 1);  // asleep again
        assertTrue(ring.takeWakeUp());
    }

    @Test
    void aRingThatIsNotAPowerOfTwoOrLargerThanItsMemoryIsRefused() {
        ByteBuffer b = memory();
        b.putInt(128, 6);
        assertThrows(IllegalArgumentException.class, () -> new SharedRing(b));
        ByteBuffer c = memory();
        c.putInt(132, SUBMIT + 1);
        assertThrows(IllegalArgumentException.class, () -> new SharedRing(c));
        assertThrows(IllegalArgumentException.class, () -> new SharedRing(ByteBuffer.allocate(4096)));
    }
}

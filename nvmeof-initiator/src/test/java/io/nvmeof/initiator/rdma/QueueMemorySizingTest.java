package io.nvmeof.initiator.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * An RDMA queue's capsule memory is sized in {@code long} and bounded: a controller's large in-capsule size (IOCCSZ)
 * and a deep queue used to wrap an {@code int}, and capsules were then written outside the queue's buffer.
 */
class QueueMemorySizingTest {
    private static long memory(int slots, int inline) {
        return (long) RdmaHostQueue.capsuleStride(inline) * slots + (long) (slots + RdmaHostQueue.RECEIVE_SLACK) * 16;
    }

    @Test
    void theUsualSizesAreKept() {
        assertEquals(8192, RdmaHostQueue.inlineLimitThatFits(128, 8192));
        assertEquals(8192, RdmaHostQueue.inlineLimitThatFits(1024, 8192));
        assertEquals(0, RdmaHostQueue.inlineLimitThatFits(128, 0));
    }

    @Test
    void aLargeInCapsuleSizeOnADeepQueueIsLoweredToFit() {
        int ioccsz = 16 * 65535 - 64; // the largest in-capsule data a controller can advertise
        // What the old int arithmetic made of it: 65536 slots of ~1 MiB capsules wrap around.
        long real = memory(65536, ioccsz);
        assertTrue(real > Integer.MAX_VALUE, "68 GB of capsules");
        assertTrue((int) real != real, "an int cannot hold it");
        for (int slots : new int[] {2, 128, 1024, 65536}) {
            int inline = RdmaHostQueue.inlineLimitThatFits(slots, ioccsz);
            long bytes = memory(slots, inline);
            assertTrue(bytes <= RdmaHostQueue.MAX_QUEUE_MEMORY + 4096, slots + " slots: " + bytes + " bytes");
            assertTrue(inline <= ioccsz, "inline " + inline);
        }
        assertEquals(65408, RdmaHostQueue.inlineLimitThatFits(1024, ioccsz), "64 MiB / 1024 slots, less SQE and CQEs");
    }
}

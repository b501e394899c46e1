package io.nvmeof.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.DefaultEventLoop;
import io.netty.util.concurrent.ImmediateEventExecutor;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Slots for small PDUs: written through their address, sent read-only, and reused once released. */
class SmallPduPoolTest {
    @Test
    void aReleasedSlotIsTheNextOneTakenAndHoldsWhatWasWrittenIntoIt() {
        SmallPduPool pool = new SmallPduPool(ImmediateEventExecutor.INSTANCE);
        BorrowedMemoryBuf a = pool.take(24);
        assertEquals(24, a.readableBytes());
        new UnsafeBuffer(a.memoryAddress(), 24).putLong(0, 0x0102030405060708L, java.nio.ByteOrder.BIG_ENDIAN);
        assertEquals(0x0102030405060708L, a.getLong(0), "what the owner wrote is what the channel reads");
        assertThrows(ReadOnlyBufferException.class, () -> a.setByte(0, 1), "the channel cannot write it");
        long address = a.memoryAddress();
        assertTrue(a.release());
        BorrowedMemoryBuf b = pool.take(SmallPduPool.SLOT_BYTES);
        assertEquals(address, b.memoryAddress(), "the slot just freed, still in cache, comes back first");
        assertEquals(SmallPduPool.SLOT_BYTES, b.readableBytes());
        assertEquals(0x0102030405060708L, b.getLong(0), "a slot keeps the last PDU's bytes: the owner rewrites all");
        assertEquals(32, pool.slots());
    }

    @Test
    void slotsGrowASlabAtATimeWhileAllAreInUseAndNeverOverlap() {
        SmallPduPool pool = new SmallPduPool(ImmediateEventExecutor.INSTANCE);
        List<BorrowedMemoryBuf> held = new ArrayList<>();
        Set<Long> addresses = new HashSet<>();
        for (int i = 0; i < 3 * 32 + 1; i++) {
            BorrowedMemoryBuf b = pool.take(SmallPduPool.SLOT_BYTES);
            held.add(b);
            assertTrue(addresses.add(b.memoryAddress()), "slot " + i + " is another slot's memory");
        }
        assertEquals(4 * 32, pool.slots());
        assertEquals(31, pool.freeSlots());
        for (BorrowedMemoryBuf b : held) {
            b.release();
        }
        assertEquals(4 * 32, pool.freeSlots());
        for (int i = 0; i < 1000; i++) {
            pool.take(28).release(); // a steady stream of PDUs sent one at a time
        }
        assertEquals(4 * 32, pool.slots(), "no new slots for PDUs that are released as they go");
    }

    @Test
    void aSlotCannotBeTakenEmptyOrLargerThanASlot() {
        SmallPduPool pool = new SmallPduPool(ImmediateEventExecutor.INSTANCE);
        assertThrows(IllegalArgumentException.class, () -> pool.take(0));
        assertThrows(IllegalArgumentException.class, () -> pool.take(SmallPduPool.SLOT_BYTES + 1));
        assertEquals(0, pool.slots());
    }

    @Test
    void aReleaseOffTheLoopReturnsTheSlotOnTheLoop() throws Exception {
        DefaultEventLoop loop = new DefaultEventLoop();
        try {
            SmallPduPool pool = new SmallPduPool(loop);
            CompletableFuture<BorrowedMemoryBuf> taken = new CompletableFuture<>();
            loop.execute(() -> taken.complete(pool.take(24)));
            BorrowedMemoryBuf b = taken.get(5, TimeUnit.SECONDS);
            long address = b.memoryAddress();
            b.release(); // on this thread, as a channel closed from elsewhere might
            CompletableFuture<long[]> after = new CompletableFuture<>();
            loop.execute(() -> {
                int free = pool.freeSlots();
                after.complete(new long[] {free, pool.take(24).memoryAddress()});
            });
            long[] r = after.get(5, TimeUnit.SECONDS);
            assertEquals(32, r[0], "the slot was handed back to the loop");
            assertEquals(address, r[1]);
            assertNotEquals(0, address);
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}

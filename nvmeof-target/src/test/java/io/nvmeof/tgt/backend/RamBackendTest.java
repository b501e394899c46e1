package io.nvmeof.tgt.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The RAM backend in each of its forms: memory up front (the default) or sparse, mapped through mmap (Linux) or in
 * Java direct buffers (elsewhere; {@code mapped=false} runs that code here).
 */
class RamBackendTest {
    private static final long MIB = 1 << 20;

    private static RamBackend ram(long size, boolean sparse, boolean mapped) {
        if (mapped) {
            assumeTrue(AnonymousMemory.available(), "mmap through JNA is Linux-only");
        }
        return new RamBackend(size, sparse, mapped);
    }

    @ParameterizedTest(name = "mapped={0}")
    @ValueSource(booleans = {true, false})
    void upFrontMemoryIsAllCommittedAtCreationAndStaysSo(boolean mapped) throws Exception {
        RamBackend r = ram(8 * MIB, false, mapped);
        assertEquals(8 * MIB, r.allocatedBytes(), "all of it, before any write");
        new BackendTest().exercise(r);
        r.deallocate(0, 8 * MIB);
        assertEquals(8 * MIB, r.allocatedBytes(), "deallocation zeroes; the memory stays the namespace's");
        assertArrayEquals(new byte[4096], BackendTest.read(r, 2 * MIB, 4096));
        assertNotNull(r.pinnedRegion(4096, 4096), "every chunk can be sent from directly, written or not");
        assertArrayEquals(new byte[4096], region(r, 4096, 4096), "and reads as zeroes there");
        r.close();
        assertEquals(0, r.allocatedBytes());
    }

    @ParameterizedTest(name = "mapped={0}")
    @ValueSource(booleans = {true, false})
    void sparseMemoryIsCommittedOnFirstWriteAndGivenBackByDeallocation(boolean mapped) throws Exception {
        RamBackend r = ram(8 * MIB, true, mapped);
        assertEquals(0, r.allocatedBytes(), "nothing before the first write");
        new BackendTest().exercise(r);
        r.write(0, BackendTest.random((int) (4 * MIB), 2));
        assertEquals(4 * MIB, r.allocatedBytes());
        r.deallocate(0, 2 * MIB);
        assertEquals(2 * MIB, r.allocatedBytes(), "deallocating a whole chunk gives it back");
        assertArrayEquals(new byte[4096], BackendTest.read(r, 0, 4096), "and it reads as zeroes");
        assertArrayEquals(java.util.Arrays.copyOfRange(BackendTest.random((int) (4 * MIB), 2).array(), (int) (2 * MIB),
                (int) (4 * MIB)), BackendTest.read(r, 2 * MIB, (int) (2 * MIB)), "the other chunk is untouched");
        r.deallocate(2 * MIB + 4096, 4096);
        assertEquals(2 * MIB, r.allocatedBytes(), "part of a chunk is zeroed, not given back");
        r.write(0, ByteBuffer.wrap(new byte[] {7}));
        assertEquals(7, BackendTest.read(r, 0, 1)[0], "a given-back chunk takes writes again");
        assertThrows(IllegalArgumentException.class, () -> new RamBackend(0, true));
    }

    private static byte[] region(RamBackend r, long offset, int n) {
        ByteBuffer region = r.pinnedRegion(offset, n);
        byte[] seen = new byte[n];
        region.get(r.pinnedRegionOffset(offset), seen);
        return seen;
    }

    @ParameterizedTest(name = "mapped={0}")
    @ValueSource(booleans = {true, false})
    void sparseRegionsHandedOutForZeroCopyStayPinned(boolean mapped) throws Exception {
        RamBackend r = ram(8 * MIB, true, mapped);
        assertNull(r.pinnedRegion(4096, 4096), "never-written memory has no region");
        byte[] data = new byte[8192];
        new Random(9).nextBytes(data);
        r.write(2 * MIB + 4096, ByteBuffer.wrap(data));
        assertNull(r.pinnedRegion(4 * MIB - 4096, 8192), "a range across two chunks has no single region");
        ByteBuffer region = r.pinnedRegion(2 * MIB + 4096, 8192);
        assertNotNull(region);
        assertEquals(4096, r.pinnedRegionOffset(2 * MIB + 4096));
        assertArrayEquals(data, region(r, 2 * MIB + 4096, 8192), "the region holds the namespace's bytes");
        assertEquals(1, r.pinnedRegions().size());
        // Deallocating a pinned chunk zeroes it in place (the NIC may be registered on it) rather than freeing it.
        r.deallocate(2 * MIB, 2 * MIB);
        assertSame(region, r.pinnedRegion(2 * MIB + 4096, 8192));
        assertEquals(0, region.get(4096 + 100));
        assertArrayEquals(new byte[8192], BackendTest.read(r, 2 * MIB + 4096, 8192));
        assertEquals(2 * MIB, r.allocatedBytes(), "the pinned chunk keeps its memory");
        // An unpinned chunk is still given back.
        r.write(0, ByteBuffer.wrap(data));
        long before = r.allocatedBytes();
        r.deallocate(0, 2 * MIB);
        assertEquals(before - 2 * MIB, r.allocatedBytes());
    }

    /**
     * Issue 30, finding 18: a sparse namespace mapped a 1 GiB slab per GiB up front (and made a buffer per chunk):
     * 64 TiB ran into the kernel's limit of 65,530 mappings (vm.max_map_count) and the JVM died. However large, a
     * namespace is now one mapping, and a sparse one makes its chunks' buffers as they are first written.
     */
    @Test
    void aSparseNamespaceIsOneMappingHoweverLarge() throws Exception {
        assumeTrue(AnonymousMemory.available() && Files.exists(Path.of("/proc/self/maps")), "Linux mmap and /proc");
        long size = 64L << 30;
        long before = mappings();
        RamBackend r = new RamBackend(size, true);
        try {
            assertTrue(mappings() - before <= 8, "a 64 GiB sparse namespace added " + (mappings() - before)
                    + " mappings");
            long[] offsets = {0, 5L << 30, 33L << 30, size - 4096};
            for (int i = 0; i < offsets.length; i++) {
                r.write(offsets[i], BackendTest.random(4096, i));
            }
            for (int i = 0; i < offsets.length; i++) {
                assertArrayEquals(BackendTest.random(4096, i).array(), BackendTest.read(r, offsets[i], 4096));
            }
            assertArrayEquals(new byte[4096], BackendTest.read(r, 9L << 30, 4096), "never written: zeroes");
            assertEquals(4 * 2 * MIB, r.allocatedBytes());
            assertTrue(mappings() - before <= 8, "writes across the namespace added " + (mappings() - before)
                    + " mappings");
        } finally {
            r.close();
        }
    }

    /** Entries in this process's memory map. */
    private static long mappings() throws Exception {
        return Files.readAllLines(Path.of("/proc/self/maps")).size();
    }

    /** Resident memory of this process, from /proc (what the admin's memory budget is about). */
    private static long residentBytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D+", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS");
    }

    @Test
    void upFrontMemoryIsResidentBeforeTheFirstWriteAndSparseIsNot() throws Exception {
        assumeTrue(AnonymousMemory.available() && Files.exists(Path.of("/proc/self/status")), "Linux /proc");
        long before = residentBytes();
        RamBackend sparse = new RamBackend(1L << 30, true);
        long afterSparse = residentBytes();
        assertTrue(afterSparse - before < 64 * MIB, "a sparse 1 GiB namespace made the process "
                + ((afterSparse - before) >> 20) + " MiB larger");
        RamBackend upFront = new RamBackend(256 * MIB);
        long afterUpFront = residentBytes();
        assertTrue(afterUpFront - afterSparse >= 240 * MIB, "a 256 MiB namespace up front made the process only "
                + ((afterUpFront - afterSparse) >> 20) + " MiB larger: its memory was not committed");
        upFront.close();
        assertTrue(residentBytes() < afterUpFront - 200 * MIB, "close gives the memory back at once, not at a GC");
        sparse.close();
    }

    @Test
    void upFrontMemoryTheSystemDoesNotHaveIsRefusedSayingWhatToDo() {
        long available = AnonymousMemory.availableBytes();
        assumeTrue(available > 0, "MemAvailable is known");
        long tooMuch = (available + (64L << 30)) & -(2L << 20);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RamBackend(tooMuch));
        assertTrue(e.getMessage().contains("available") && e.getMessage().contains("sparse"), e.getMessage());
        if (AnonymousMemory.available()) {
            RamBackend sparse = new RamBackend(tooMuch, true); // sparse may promise more than there is, as files do
            assertEquals(0, sparse.allocatedBytes());
            sparse.close();
        }
    }

    /**
     * Issue 29, finding 3: a deallocation of a whole sparse chunk racing a write to part of it. Either may land last
     * (all zeroes, or the write's data), and afterwards the blocks must keep what a read returns until they are
     * written again. The chunk's memory was given back (madvise) while the writer was still copying into it, the
     * chunk was marked unwritten, and a later write elsewhere in the chunk made the rest of that copy appear in blocks
     * nobody wrote.
     */
    @Test
    void aDeallocationRacingAWriteNeverLeavesBlocksThatChangeUnwritten() throws Exception {
        RamBackend r = ram(4 * MIB, true, true);
        int half = (int) MIB;
        ByteBuffer data = ByteBuffer.allocateDirect(half);
        for (int i = 0; i < half; i++) {
            data.put(i, (byte) (i * 31 + 7 | 1)); // never zero
        }
        ByteBuffer other = ByteBuffer.allocateDirect(4096);
        java.util.concurrent.ExecutorService writer = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            for (int round = 0; round < 400; round++) {
                r.write(0, data.duplicate()); // the chunk holds data: a deallocation gives its memory back
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
                java.util.concurrent.Future<?> w = writer.submit(() -> {
                    start.await();
                    r.write(0, data.duplicate());
                    return null;
                });
                start.await();
                r.deallocate(0, 2 * MIB);
                w.get();
                byte[] before = BackendTest.read(r, 0, half);
                boolean zeroes = java.util.Arrays.equals(before, new byte[half]);
                boolean written = true;
                for (int i = 0; i < half && written; i++) {
                    written = before[i] == data.get(i);
                }
                assertTrue(zeroes || written, "round " + round + ": the deallocation and the write landed mixed");
                r.write(1536 * 1024, other.duplicate()); // a write elsewhere in the same chunk
                assertArrayEquals(before, BackendTest.read(r, 0, half), "round " + round
                        + ": blocks nobody wrote changed after a write elsewhere in their chunk");
            }
        } finally {
            writer.shutdownNow();
            r.close();
        }
    }
    /**
     * Writes (and Write Zeroes) of the same block from two poll groups at once: each block ends up wholly one of them,
     * as NVMe's atomic write unit (AWUN 0: one block) promises and as the integrity checker holds the target to. A
     * plain memory copy beside another left a block half of each, both acknowledged, for good.
     */
    @ParameterizedTest(name = "sparse={0}")
    @ValueSource(booleans = {true, false})
    void writesOfTheSameBlockAtOnceLeaveItWhollyOneOfThem(boolean sparse) throws Exception {
        RamBackend r = ram(4 * MIB, sparse, AnonymousMemory.available());
        int block = 4096;
        int blocks = 8;
        ByteBuffer a = ByteBuffer.allocateDirect(block * blocks);
        ByteBuffer b = ByteBuffer.allocateDirect(block * blocks);
        for (int i = 0; i < block * blocks; i++) {
            a.put(i, (byte) 0x5A);
            b.put(i, (byte) 0xA5);
        }
        java.util.concurrent.atomic.AtomicInteger go = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger done = new java.util.concurrent.atomic.AtomicInteger();
        int rounds = 20_000;
        Thread other = new Thread(() -> {
            for (int round = 1; round <= rounds; round++) {
                while (go.get() < round) {
                    Thread.onSpinWait();
                }
                if (round % 3 == 0) {
                    r.writeZeroes(block, (long) block * (blocks - 1));
                } else {
                    r.write(0, b.duplicate());
                }
                done.incrementAndGet();
            }
        });
        other.start();
        try {
            for (int round = 1; round <= rounds; round++) {
                go.set(round);
                r.write(0, a.duplicate());
                while (done.get() < round) {
                    Thread.onSpinWait();
                }
                byte[] got = BackendTest.read(r, 0, block * blocks);
                for (int k = 0; k < blocks; k++) {
                    byte first = got[k * block];
                    for (int i = 1; i < block; i++) {
                        if (got[k * block + i] != first) {
                            throw new AssertionError("round " + round + ": block " + k + " holds " + first + " up to byte "
                                    + i + " and " + got[k * block + i] + " from there: two writes landed mixed in it");
                        }
                    }
                }
            }
        } finally {
            go.set(Integer.MAX_VALUE);
            other.join();
            r.close();
        }
    }
}

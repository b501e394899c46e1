package io.nvmeof.uring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ring against the kernel: data written through it is what an independent read of the file finds, and what the
 * file holds is what a read through it returns; failures carry their errno; a full ring refuses and recovers; the
 * eventfd wakes a sleeper; close waits for what is in flight.
 */
class IoUringTest {
    private static final int BLOCK = 4096;
    private static final OpenFile.Mode DIRECT_RW = new OpenFile.Mode(true, true, false, true);

    @TempDir
    Path dir;

    @BeforeAll
    static void needsIoUring() {
        assumeTrue(UringLibrary.isAvailable(), () -> "io_uring unavailable here: " + UringLibrary.unavailableReason());
    }

    private static ByteBuffer aligned(int bytes) {
        return ByteBuffer.allocateDirect(bytes + BLOCK).alignedSlice(BLOCK).limit(bytes);
    }

    private static long address(ByteBuffer b) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(b));
    }

    private Path file(long size) throws IOException {
        Path p = Files.createTempFile(dir, "ns", ".img");
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
            ch.truncate(0);
            ch.write(ByteBuffer.allocate(1), size - 1);
        }
        return p;
    }

    /** Submits what is prepared and reaps until every request is done; the results by userData. */
    private static Map<Long, Integer> runAll(IoUring ring) throws UringException {
        Map<Long, Integer> results = new HashMap<>();
        while (ring.prepared() > 0 || ring.inFlight() > 0) {
            ring.submitAndWait(1);
            ring.reap((u, r) -> assertEquals(null, results.put(u, r), "completed twice: " + u));
        }
        return results;
    }

    @Test
    void directWritesLandInTheFileAndDirectReadsReturnIt() throws Exception {
        int blocks = 64;
        Path p = file((long) blocks * BLOCK);
        ByteBuffer out = aligned(blocks * BLOCK);
        for (int i = 0; i < blocks * BLOCK; i += 8) {
            out.putLong(i, 0x5EED_0000_0000_0000L | ((long) i << 8) | (i / BLOCK));
        }
        try (IoUring ring = IoUring.open(32); OpenFile f = OpenFile.open(p, DIRECT_RW)) {
            assertFalse(f.isBlockDevice());
            assertEquals((long) blocks * BLOCK, f.sizeBytes());
            // Backwards, more than the ring holds at once: the refused ones go in after a reap.
            int next = blocks - 1;
            Map<Long, Integer> results = new HashMap<>();
            while (next >= 0 || ring.inFlight() > 0 || ring.prepared() > 0) {
                while (next >= 0 && ring.write(f.fd(), address(out) + (long) next * BLOCK, BLOCK, (long) next * BLOCK,
                        0, 1000 + next)) {
                    next--;
                }
                ring.submitAndWait(1);
                ring.reap((u, r) -> results.put(u, r));
            }
            assertEquals(blocks, results.size());
            results.forEach((u, r) -> assertEquals(BLOCK, r, "write " + u));

            // Independent: the file through the JDK holds what the ring wrote.
            ByteBuffer check = ByteBuffer.allocate(blocks * BLOCK);
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                while (check.hasRemaining() && ch.read(check, check.position()) > 0) { }
            }
            byte[] expected = new byte[blocks * BLOCK];
            out.get(0, expected);
            assertArrayEquals(expected, check.array());

            // And a read through the ring returns what the JDK writes.
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(new byte[BLOCK]).putLong(0, 0xC0FFEEL).putLong(BLOCK - 8, 0xF00DL), 5L * BLOCK);
                ch.force(false);
            }
            ByteBuffer in = aligned(2 * BLOCK);
            assertTrue(ring.read(f.fd(), address(in), 2 * BLOCK, 5L * BLOCK, 7));
            assertEquals(Map.of(7L, 2 * BLOCK), runAll(ring));
            assertEquals(0xC0FFEEL, in.getLong(0));
            assertEquals(0xF00DL, in.getLong(BLOCK - 8));
            assertEquals(out.getLong(6 * BLOCK + 16), in.getLong(BLOCK + 16), "the next block is the ring's write");
        }
    }

    @Test
    void aFullRingRefusesAndTakesMoreOnceItIsReaped() throws Exception {
        try (IoUring ring = IoUring.open(8)) {
            assertEquals(8, ring.submissionEntries());
            int accepted = 0;
            while (ring.nop(accepted)) {
                accepted++;
            }
            assertEquals(8, accepted, "the submission ring holds 8 prepared");
            ring.submit();
            while (ring.nop(accepted)) {
                accepted++;
            }
            // Submitted ones still count until reaped: the completion ring (16) must never overflow.
            assertEquals(16, accepted);
            assertEquals(0, ring.capacity());
            BitSet done = new BitSet();
            int total = 100;
            while (done.cardinality() < total) {
                ring.submitAndWait(1);
                ring.reap((u, r) -> {
                    assertEquals(0, r);
                    assertFalse(done.get((int) u), "twice: " + u);
                    done.set((int) u);
                });
                while (accepted < total && ring.nop(accepted)) {
                    accepted++;
                }
            }
            assertEquals(total, done.cardinality());
            assertEquals(0, ring.inFlight());
        }
    }

    @Test
    void aFailedRequestCompletesWithItsErrno() throws Exception {
        Path p = file(BLOCK);
        try (IoUring ring = IoUring.open(4); OpenFile f = OpenFile.open(p, DIRECT_RW)) {
            ByteBuffer b = aligned(BLOCK);
            assertTrue(ring.read(1 << 30, address(b), BLOCK, 0, 1)); // no such descriptor
            assertTrue(ring.read(f.fd(), address(b), BLOCK, 10L * BLOCK, 2)); // past the end: nothing to read
            assertEquals(Map.of(1L, -9, 2L, 0), runAll(ring)); // EBADF; a read at EOF returns 0 bytes
        }
        UringException e = assertThrows(UringException.class,
                () -> OpenFile.open(dir.resolve("absent.img"), DIRECT_RW));
        assertEquals(2, e.errno());
        assertTrue(e.getMessage().contains("absent.img") && e.getMessage().contains("ENOENT"), e.getMessage());
        Path fifo = dir.resolve("not-a-file");
        Files.createDirectory(fifo);
        assertEquals(22, assertThrows(UringException.class,
                () -> OpenFile.open(fifo, new OpenFile.Mode(false, false, false, true))).errno(), "a directory");
    }

    @Test
    void durableWritesFlushesAndSpaceOperationsOnAFile() throws Exception {
        Path p = file(16L * BLOCK);
        ByteBuffer ones = aligned(16 * BLOCK);
        for (int i = 0; i < 16 * BLOCK; i++) {
            ones.put(i, (byte) 0x11);
        }
        try (IoUring ring = IoUring.open(16); OpenFile f = OpenFile.open(p, DIRECT_RW)) {
            assertTrue(ring.write(f.fd(), address(ones), 16 * BLOCK, 0, IoUring.RWF_DSYNC, 1));
            assertEquals(Map.of(1L, 16 * BLOCK), runAll(ring));
            assertTrue(ring.fdatasync(f.fd(), 2));
            assertTrue(ring.fallocate(f.fd(), IoUring.FALLOC_PUNCH_HOLE, 2L * BLOCK, 2L * BLOCK, 3));
            assertTrue(ring.fallocate(f.fd(), IoUring.FALLOC_ZERO_RANGE, 8L * BLOCK, BLOCK, 4));
            assertEquals(Map.of(2L, 0, 3L, 0, 4L, 0), runAll(ring));
            f.deallocate(12L * BLOCK, BLOCK);
            f.zeroRange(14L * BLOCK, BLOCK);
            byte[] now = Files.readAllBytes(p);
            for (int blk = 0; blk < 16; blk++) {
                boolean zero = blk == 2 || blk == 3 || blk == 8 || blk == 12 || blk == 14;
                for (int i = blk * BLOCK; i < (blk + 1) * BLOCK; i++) {
                    assertEquals(zero ? 0 : 0x11, now[i], "block " + blk);
                }
            }
            assertEquals(16L * BLOCK, Files.size(p), "the size is kept");
            assertThrows(IllegalArgumentException.class, () -> f.deallocate(-1, BLOCK));
        }
    }

    @Test
    void theEventFdWakesASleeperOnACompletionOrAWake() throws Exception {
        try (IoUring ring = IoUring.open(4)) {
            ring.eventFd();
            assertFalse(ring.awaitCompletion(20), "nothing posted");
            assertTrue(ring.nop(1));
            ring.submit();
            assertTrue(ring.awaitCompletion(5000));
            assertTrue(ring.hasCompletions());
            assertEquals(1, ring.reap((u, r) -> { }));
            assertFalse(ring.hasCompletions());
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
                ring.wake();
            });
            long start = System.nanoTime();
            t.start();
            assertTrue(ring.awaitCompletion(10_000));
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
            t.join();
        }
    }

    @Test
    void closeWaitsForWhatIsInFlight() throws Exception {
        Path p = file(256L * BLOCK);
        ByteBuffer b = aligned(256 * BLOCK);
        IoUring ring = IoUring.open(64);
        try (OpenFile f = OpenFile.open(p, DIRECT_RW)) {
            for (int i = 0; i < 64; i++) {
                assertTrue(ring.read(f.fd(), address(b) + (long) i * 4 * BLOCK, 4 * BLOCK, (long) i * 4 * BLOCK, i));
            }
            ring.submit();
            ring.close(); // returns only once the kernel is done with b
            assertEquals(0, ring.inFlight());
            assertThrows(IllegalStateException.class, () -> ring.nop(1));
        }
    }

    /** A loop device as a real block device: exclusive open, its sizes, I/O, discard and zeroing. Needs root. */
    @Test
    void aLoopDeviceIsOpenedExclusivelyAndServed() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/loop-control")), "needs root and /dev/loop-control for losetup");
        Path img = file(8L << 20);
        Process attach = new ProcessBuilder("losetup", "-f", "--show", img.toString()).redirectErrorStream(true).start();
        String dev = new String(attach.getInputStream().readAllBytes()).strip();
        assumeTrue(attach.waitFor(30, TimeUnit.SECONDS) && attach.exitValue() == 0 && dev.startsWith("/dev/loop"),
                "losetup could not attach a loop device here: " + dev);
        try {
            try (IoUring ring = IoUring.open(8); OpenFile f = OpenFile.open(Path.of(dev),
                    new OpenFile.Mode(true, true, true, false))) {
                assertTrue(f.isBlockDevice(), f.toString());
                assertEquals(8L << 20, f.sizeBytes());
                assertEquals(512, f.logicalBlockSize());
                assertFalse(f.isReadOnly());
                UringException busy = assertThrows(UringException.class,
                        () -> OpenFile.open(Path.of(dev), new OpenFile.Mode(true, true, true, false)));
                assertEquals(16, busy.errno(), "a second exclusive open is EBUSY");
                ByteBuffer b = aligned(2 * BLOCK);
                for (int i = 0; i < 2 * BLOCK; i++) {
                    b.put(i, (byte) (i * 7));
                }
                assertTrue(ring.write(f.fd(), address(b), 2 * BLOCK, 3L * BLOCK, IoUring.RWF_DSYNC, 1));
                assertEquals(Map.of(1L, 2 * BLOCK), runAll(ring));
                byte[] onImage = new byte[2 * BLOCK];
                try (FileChannel ch = FileChannel.open(img, StandardOpenOption.READ)) {
                    ch.read(ByteBuffer.wrap(onImage), 3L * BLOCK);
                }
                byte[] written = new byte[2 * BLOCK];
                b.get(0, written);
                assertArrayEquals(written, onImage, "the loop device's backing file holds the write");
                f.zeroRange(3L * BLOCK, BLOCK);
                ByteBuffer in = aligned(2 * BLOCK);
                assertTrue(ring.read(f.fd(), address(in), 2 * BLOCK, 3L * BLOCK, 2));
                assertEquals(Map.of(2L, 2 * BLOCK), runAll(ring));
                for (int i = 0; i < BLOCK; i++) {
                    assertEquals(0, in.get(i));
                    assertEquals((byte) ((BLOCK + i) * 7), in.get(BLOCK + i));
                }
            }
            // Closed: another exclusive open succeeds.
            OpenFile.open(Path.of(dev), new OpenFile.Mode(false, true, true, false)).close();
        } finally {
            run("losetup", "-d", dev);
        }
    }

    private static String run(String... cmd) throws Exception {
        Process pr = new ProcessBuilder(List.of(cmd)).redirectErrorStream(true).start();
        String out = new String(pr.getInputStream().readAllBytes());
        assertTrue(pr.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, pr.exitValue(), String.join(" ", cmd) + ": " + out);
        return out;
    }
}

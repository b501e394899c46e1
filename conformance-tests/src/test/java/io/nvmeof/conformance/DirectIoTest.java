package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Status;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.FileBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.StorageRing;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.tcp.TcpQueue;
import io.nvmeof.uring.OpenFile;
import io.nvmeof.uring.UringLibrary;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 32: file and block namespaces served with direct I/O through the poll groups' io_uring. What the host writes
 * is in the file (read back independently, through the JDK) and on the device (read from the loop device's backing
 * file); many writes in flight at once, more than a ring holds, land and read back; FUA and Flush complete; the page
 * cache is left to namespaces that ask for buffered I/O, whose reads and writes go through the
 * ring too; a device held by someone else and a block size the device cannot do are refused saying why.
 */
class DirectIoTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:direct-io";

    @TempDir
    Path dir;

    @BeforeAll
    static void needsIoUring() {
        assumeTrue(UringLibrary.isAvailable(), () -> "io_uring unavailable here: " + UringLibrary.unavailableReason());
    }

    private static NvmeTarget start(NamespaceConfig... namespaces) throws Exception {
        return NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SN-DIO-1", "direct io", 8, true, null, List.of(namespaces))),
                null, null, null, null));
    }

    private static NvmeofController connect(NvmeTarget target) throws Exception {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NQN),
                ConnectOptions.builder().ioQueues(1).queueDepth(128).build());
    }

    private static byte[] readFile(Path p, long offset, int length) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(length);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) { }
        }
        return b.array();
    }

    @Test
    void writesInFlightTogetherLandInTheFileAndReadBack() throws Exception {
        Path file = dir.resolve("ns1.img");
        int blocks = 4096; // 16 MiB of 4 KiB blocks
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "16MiB", 4096, file.toString(), null))) {
            FileBackend backend = (FileBackend) target.core().subsystem(NQN).namespace(1).backend();
            assertTrue(backend.ringFile().direct(), "served direct by default");
            Random random = new Random(32);
            byte[][] model = new byte[blocks][];
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                // 600 writes of 1 to 8 blocks at random places, up to 200 in flight (more than one ring's 128).
                List<Future<?>> inFlight = new ArrayList<>();
                List<long[]> spans = new ArrayList<>();
                for (int i = 0; i < 600; i++) {
                    int n = 1 + random.nextInt(8);
                    long lba = random.nextInt(blocks - n);
                    ByteBuffer b = ByteBuffer.allocateDirect(n * 4096);
                    byte[] bytes = new byte[n * 4096];
                    random.nextBytes(bytes);
                    b.put(bytes).flip();
                    // Overlapping writes in flight together may land in either order: keep them apart.
                    boolean overlaps = spans.stream().anyMatch(s -> lba < s[0] + s[1] && s[0] < lba + n);
                    if (overlaps || inFlight.size() >= 200) {
                        for (Future<?> f : inFlight) {
                            f.get(10, TimeUnit.SECONDS);
                        }
                        inFlight.clear();
                        spans.clear();
                    }
                    boolean fua = i % 7 == 0;
                    inFlight.add(fua ? ns.writeFua(lba, n, b) : ns.write(lba, n, b));
                    spans.add(new long[] {lba, n});
                    for (int k = 0; k < n; k++) {
                        model[(int) lba + k] = java.util.Arrays.copyOfRange(bytes, k * 4096, (k + 1) * 4096);
                    }
                }
                for (Future<?> f : inFlight) {
                    f.get(10, TimeUnit.SECONDS);
                }
                ns.flush().get(10, TimeUnit.SECONDS);
                // Read back through the target, 64 KiB at a time, all in flight at once.
                List<Future<?>> reads = new ArrayList<>();
                List<ByteBuffer> got = new ArrayList<>();
                for (int lba = 0; lba < blocks; lba += 16) {
                    ByteBuffer b = ByteBuffer.allocateDirect(16 * 4096);
                    got.add(b);
                    reads.add(ns.read(lba, 16, b));
                }
                for (Future<?> f : reads) {
                    f.get(10, TimeUnit.SECONDS);
                }
                byte[] zero = new byte[4096];
                for (int lba = 0; lba < blocks; lba++) {
                    byte[] expected = model[lba] != null ? model[lba] : zero;
                    byte[] actual = new byte[4096];
                    got.get(lba / 16).get((lba % 16) * 4096, actual);
                    assertArrayEquals(expected, actual, "block " + lba + " read through the target");
                }
                assertTrue(TestTargets.ringCompletions(target) >= 600 + 256, "the ring carried the I/O: " + TestTargets.ringCompletions(target));
            }
            // Independently: the file holds what the host wrote.
            for (int lba = 0; lba < blocks; lba++) {
                if (model[lba] != null) {
                    assertArrayEquals(model[lba], readFile(file, lba * 4096L, 4096), "block " + lba + " in the file");
                }
            }
        }
    }

    /**
     * A backend that hands the poll groups a descriptor and says its own read and write are cheap (the SPI's default)
     * is still written only through that descriptor. Before, NVMe/TCP stored each H2CData PDU of a large write
     * straight into the namespace through {@code write()}, a buffered write, while the ring wrote the same file with
     * O_DIRECT: the kernel then fails to invalidate the page cache ("Possible data corruption due to collision with
     * buffered I/O"), records EIO on the file, and the next Flush or FUA write fails with Write Fault.
     */
    @Test
    void aFileServedThroughTheRingIsNeverWrittenAroundIt() throws Exception {
        Path file = dir.resolve("ns1.img");
        FileBackend direct = FileBackend.openFile(file, 4L << 20, false);
        java.util.concurrent.atomic.AtomicInteger around = new java.util.concurrent.atomic.AtomicInteger();
        io.nvmeof.tgt.backend.BlockBackend cheapLooking = new io.nvmeof.tgt.backend.BlockBackend() {
            @Override public long sizeBytes() { return direct.sizeBytes(); }
            @Override public io.nvmeof.tgt.backend.RingFile ringFile() { return direct.ringFile(); }
            @Override public void read(long offset, ByteBuffer dst) throws java.io.IOException {
                around.incrementAndGet();
                direct.read(offset, dst);
            }
            @Override public void write(long offset, ByteBuffer src) throws java.io.IOException {
                around.incrementAndGet();
                direct.write(offset, src);
            }
            @Override public void flush() throws java.io.IOException { direct.flush(); }
            @Override public void writeZeroes(long offset, long length) throws java.io.IOException {
                direct.writeZeroes(offset, length);
            }
            @Override public void deallocate(long offset, long length) throws java.io.IOException {
                direct.deallocate(offset, length);
            }
            @Override public String describe() { return direct.describe(); }
            @Override public void close() throws java.io.IOException { direct.close(); }
        };
        assertTrue(direct.ringFile().direct(), "served direct");
        try (NvmeTarget target = start()) {
            target.core().subsystem(NQN).addNamespace(
                    new io.nvmeof.tgt.core.Namespace(1, cheapLooking, 4096, java.util.UUID.randomUUID()));
            Random random = new Random(3232);
            byte[] written = new byte[64 * 1024];
            random.nextBytes(written);
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                // 64 KiB: more than the 8 KiB of in-capsule data, so it comes in H2CData PDUs after an R2T.
                List<Future<?>> writes = new ArrayList<>();
                for (int lba = 0; lba < 1024; lba += 16) {
                    ByteBuffer b = ByteBuffer.allocateDirect(written.length);
                    b.put(written).flip();
                    writes.add(lba % 64 == 0 ? ns.writeFua(lba, 16, b) : ns.write(lba, 16, b));
                }
                for (Future<?> f : writes) {
                    f.get(10, TimeUnit.SECONDS);
                }
                ns.flush().get(10, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(written.length);
                ns.read(512, 16, back).get(10, TimeUnit.SECONDS);
                byte[] got = new byte[written.length];
                back.get(got);
                assertArrayEquals(written, got, "read back through the target");
            }
            assertEquals(0, around.get(), "reads and writes around the ring's O_DIRECT descriptor (buffered)");
            assertArrayEquals(written, readFile(file, 992L * 4096, written.length), "in the file");
        }
    }

    /** Pages of {@code file} in the page cache, as util-linux's fincore counts them. */
    private static long residentPages(Path file) throws Exception {
        Process p = new ProcessBuilder("fincore", "--noheadings", "--output", "PAGES", file.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && out.matches("\\d+"),
                () -> "fincore (util-linux) is needed to see the page cache: " + out);
        return Long.parseLong(out);
    }

    /**
     * Where io_uring is refused (here: {@code -Dnvmeof.uring.disabled}, as a seccomp profile or io_uring_disabled
     * would), a file namespace is still served with direct I/O: backend threads pread and pwrite its O_DIRECT
     * descriptor, and the page cache is left alone. Before, it was served buffered.
     */
    @Test
    void withoutIoUringAFileIsStillServedDirectByBackendThreads() throws Exception {
        Path file = dir.resolve("no-ring.img");
        byte[] big = new byte[64 << 10];
        byte[] small = new byte[4096];
        new Random(6).nextBytes(big);
        new Random(7).nextBytes(small);
        try (FileChannel probe = FileChannel.open(dir.resolve("probe"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
            assertTrue(probe.isOpen());
        } catch (java.io.IOException | UnsupportedOperationException e) {
            assumeTrue(false, "the temporary directory's file system refuses O_DIRECT: " + e);
        }
        System.setProperty(UringLibrary.DISABLED_PROPERTY, "true");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "4MiB", 4096, file.toString(), null))) {
            assertFalse(UringLibrary.isAvailable());
            FileBackend backend = (FileBackend) target.core().subsystem(NQN).namespace(1).backend();
            assertTrue(backend.ringFile() != null && backend.ringFile().direct(), "served direct all the same");
            long cached = residentPages(file);
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                ns.write(16, 16, ByteBuffer.allocateDirect(big.length).put(big).flip()).get(10, TimeUnit.SECONDS);
                ns.writeFua(40, 1, ByteBuffer.allocateDirect(small.length).put(small).flip()).get(10, TimeUnit.SECONDS);
                ns.flush().get(10, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(big.length);
                ns.read(16, 16, back).get(10, TimeUnit.SECONDS);
                byte[] got = new byte[big.length];
                back.get(got);
                assertArrayEquals(big, got, "read back");
                for (Controller ctrl : target.core().controllers()) {
                    if (ctrl.queue(1) != null && ctrl.queue(1).transport() instanceof TcpQueue t) {
                        CompletableFuture<Boolean> hasRing = new CompletableFuture<>();
                        t.execute(() -> hasRing.complete(t.storageRing() != null));
                        assertFalse(hasRing.get(5, TimeUnit.SECONDS), "no poll group has a ring");
                    }
                }
            }
            assertEquals(cached, residentPages(file), "the page cache was left alone");
        } finally {
            System.clearProperty(UringLibrary.DISABLED_PROPERTY);
        }
        assertArrayEquals(big, readFile(file, 16 * 4096L, big.length), "in the file");
        assertArrayEquals(small, readFile(file, 40 * 4096L, small.length), "in the file");
    }

    @Test
    void smallAndUnalignedInCapsuleWritesAndOddSizesReadBack() throws Exception {
        Path file = dir.resolve("ns2.img");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "4MiB", 512, file.toString(), null))) {
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                Random random = new Random(7);
                int[] counts = {1, 3, 7, 8, 9, 255};
                long lba = 1;
                for (int n : counts) {
                    byte[] bytes = new byte[n * 512];
                    random.nextBytes(bytes);
                    // A heap-copied slice at an odd address: the in-capsule data lands wherever the receive buffer has it.
                    ns.write(lba, n, ByteBuffer.allocateDirect(bytes.length).put(bytes).flip()).get(10, TimeUnit.SECONDS);
                    ByteBuffer back = ByteBuffer.allocateDirect(bytes.length);
                    ns.read(lba, n, back).get(10, TimeUnit.SECONDS);
                    byte[] actual = new byte[bytes.length];
                    back.get(0, actual);
                    assertArrayEquals(bytes, actual, n + " blocks at " + lba);
                    assertArrayEquals(bytes, readFile(file, lba * 512, bytes.length), n + " blocks in the file");
                    // Compare reads what the namespace holds through the ring: equal, then one byte off.
                    ns.compare(lba, n, ByteBuffer.allocateDirect(bytes.length).put(bytes).flip()).get(10, TimeUnit.SECONDS);
                    bytes[bytes.length / 2] ^= 1;
                    ByteBuffer other = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
                    long at = lba;
                    java.util.concurrent.ExecutionException ce = assertThrows(java.util.concurrent.ExecutionException.class,
                            () -> ns.compare(at, n, other).get(10, TimeUnit.SECONDS));
                    assertTrue(String.valueOf(ce.getCause()).toLowerCase().contains("compare"), String.valueOf(ce.getCause()));
                    lba += n + 1;
                }
            }
        }
    }

    /**
     * A poll group that stops polling its ring between completions (spin time 0: it sleeps at once) and is woken by
     * the ring's eventfd: every command completes, none waits for the waiter's one-second safety net.
     */
    @Test
    void aPollGroupThatSleepsBetweenCompletionsMissesNone() throws Exception {
        System.setProperty("nvmeof.uring.spinUs", "0");
        Path file = dir.resolve("parks.img");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "8MiB", 4096, file.toString(), null))) {
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                Random random = new Random(5);
                ByteBuffer out = ByteBuffer.allocateDirect(4096);
                ByteBuffer in = ByteBuffer.allocateDirect(4096);
                for (int i = 0; i < 300; i++) { // one at a time: every completion finds the loop asleep
                    long lba = random.nextInt(2048);
                    out.putLong(0, i).putLong(4088, lba);
                    ns.write(lba, 1, out.clear()).get(10, TimeUnit.SECONDS);
                    ns.read(lba, 1, in.clear()).get(10, TimeUnit.SECONDS);
                    assertEquals(i, in.getLong(0));
                    assertEquals(lba, in.getLong(4088));
                }
                List<Future<?>> burst = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    burst.add(ns.read(i * 16, 16, ByteBuffer.allocateDirect(16 * 4096)));
                }
                for (Future<?> f : burst) {
                    f.get(10, TimeUnit.SECONDS);
                }
                long[] parks = new long[2];
                for (Controller ctrl : target.core().controllers()) {
                    SubmissionQueue q = ctrl.queue(1);
                    if (q != null && q.transport() instanceof TcpQueue t) {
                        CompletableFuture<long[]> v = new CompletableFuture<>();
                        t.execute(() -> v.complete(t.storageRingParks()));
                        parks = v.get(5, TimeUnit.SECONDS);
                    }
                }
                assertTrue(parks[0] >= 300, "the loop slept between completions: " + parks[0]);
                assertEquals(0, parks[1], "no wake-up was left to the safety net");
            }
        } finally {
            System.clearProperty("nvmeof.uring.spinUs");
        }
    }

    /**
     * A file cut short behind the target's back inside a block: that block is gone with the rest (a read across it fails
     * with LBA Out of Range; it read as zeroes with success before issue 50), the namespace keeps the whole blocks left,
     * and they read back.
     */
    @Test
    void aFileCutInsideABlockKeepsOnlyTheWholeBlocksLeft() throws Exception {
        Path file = dir.resolve("short.img");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "1MiB", 4096, file.toString(), null))) {
            try (NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                byte[] ones = new byte[8 * 4096];
                java.util.Arrays.fill(ones, (byte) 1);
                ns.write(0, 8, ByteBuffer.allocateDirect(ones.length).put(ones).flip()).get(10, TimeUnit.SECONDS);
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    ch.truncate(3 * 4096 + 512); // someone else cuts it inside block 3
                }
                assertShortOrRefused(ns, 0, 8, "a read across the cut");
                awaitBlockCount(ns, 3);
                ByteBuffer back = ByteBuffer.allocateDirect(3 * 4096);
                ns.read(0, 3, back).get(10, TimeUnit.SECONDS);
                for (int i = 0; i < 3 * 4096; i++) {
                    assertEquals(1, back.get(i), "byte " + i);
                }
            }
        }
    }

    /**
     * {@code bufferedIo}: the page cache, through the poll group's ring on a descriptor without O_DIRECT (as nvmet's
     * buffered_io goes through its work queue), reads of every size and writes, so a page the cache lacks never holds
     * up the poll group. Before, they were system calls on it, and reads of 16 KiB and more were sent by sendfile
     * from the page cache on the poll group's thread.
     */
    @Test
    void bufferedIoKeepsThePageCacheAndGoesThroughTheRing() throws Exception {
        Path file = dir.resolve("ns3.img");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "4MiB", 512, file.toString(), null, null,
                null, true))) {
            FileBackend backend = (FileBackend) target.core().subsystem(NQN).namespace(1).backend();
            assertNotNull(backend.ringFile(), "a descriptor for the ring");
            assertFalse(backend.ringFile().direct(), "through the page cache");
            assertTrue(target.live().export().subsystems().get(0).namespaces().get(0).bufferedIo(), "kept in the document");
            try (NvmeofController c = connect(target)) {
                byte[] bytes = new byte[32 << 10];
                new Random(3).nextBytes(bytes);
                NamespaceHandle ns = c.namespace(1);
                ns.write(0, 64, ByteBuffer.allocateDirect(bytes.length).put(bytes).flip()).get(10, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(bytes.length);
                ns.read(0, 64, back).get(10, TimeUnit.SECONDS);
                byte[] actual = new byte[bytes.length];
                back.get(0, actual);
                assertArrayEquals(bytes, actual);
                assertTrue(TestTargets.ringCompletions(target) >= 1, "the write went through the ring");
                long before = TestTargets.ringCompletions(target);
                ByteBuffer small = ByteBuffer.allocateDirect(4096);
                ns.read(8, 8, small).get(10, TimeUnit.SECONDS);
                byte[] part = new byte[4096];
                small.get(0, part);
                assertArrayEquals(java.util.Arrays.copyOfRange(bytes, 4096, 8192), part);
                assertEquals(before + 1, TestTargets.ringCompletions(target), "the small read went through the ring");
                // A large one too: never sent by sendfile from the page cache, which would read a page that is not
                // there on the poll group's thread.
                ns.read(0, 64, back.clear()).get(10, TimeUnit.SECONDS);
                back.get(0, actual);
                assertArrayEquals(bytes, actual);
                assertEquals(before + 2, TestTargets.ringCompletions(target), "the 32 KiB read went through the ring");
            }
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> start(
                new NamespaceConfig(1L, "ram", "4MiB", 512, null, null, null, null, true)));
        assertTrue(e.getMessage().contains("bufferedIo is for file and block"), e.getMessage());
    }

    /** A loop device (needs root): served direct and exclusively; a held one and a too small block size are refused. */
    @Test
    void aLoopDeviceIsServedDirectAndExclusively() throws Exception {
        Path img = dir.resolve("loop.img");
        String dev = attachLoop(img, 8 << 20);
        try {
            IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                    () -> start(new NamespaceConfig(1L, "block", null, 512, dev, null)));
            assertTrue(small.getMessage().contains("block size 512") && small.getMessage().contains("4096"),
                    small.getMessage());
            try (NvmeTarget target = start(new NamespaceConfig(1L, "block", null, 4096, dev, null))) {
                // Exported: another exporter's exclusive open is refused while the target holds it.
                assertEquals(16, assertThrows(io.nvmeof.uring.UringException.class, () -> OpenFile.open(Path.of(dev),
                        new OpenFile.Mode(true, true, true, false))).errno());
                try (NvmeofController c = connect(target)) {
                    NamespaceHandle ns = c.namespace(1);
                    assertEquals(2048, ns.blockCount());
                    byte[] bytes = new byte[3 * 4096];
                    new Random(11).nextBytes(bytes);
                    ns.writeFua(5, 3, ByteBuffer.allocateDirect(bytes.length).put(bytes).flip())
                            .get(10, TimeUnit.SECONDS);
                    assertArrayEquals(bytes, readFile(img, 5 * 4096L, bytes.length), "on the device's backing file");
                    ByteBuffer back = ByteBuffer.allocateDirect(bytes.length);
                    ns.read(5, 3, back).get(10, TimeUnit.SECONDS);
                    byte[] actual = new byte[bytes.length];
                    back.get(0, actual);
                    assertArrayEquals(bytes, actual);
                    // Deallocate and Write Zeroes reach the device: the blocks read back as zeroes, the one between not.
                    ns.deallocate(5, 1).get(10, TimeUnit.SECONDS);
                    ns.writeZeroes(7, 1).get(10, TimeUnit.SECONDS);
                    ns.read(5, 3, back.clear()).get(10, TimeUnit.SECONDS);
                    for (int i = 0; i < bytes.length; i++) {
                        boolean zeroed = i < 4096 || i >= 2 * 4096;
                        assertEquals(zeroed ? 0 : bytes[i], back.get(i), "byte " + i);
                    }
                    assertArrayEquals(new byte[4096], readFile(img, 5 * 4096L, 4096), "deallocated on the device");
                }
            }
            // Held by someone else: the namespace is refused, saying so.
            try (OpenFile holder = OpenFile.open(Path.of(dev), new OpenFile.Mode(false, false, true, false))) {
                Exception held = assertThrows(Exception.class,
                        () -> start(new NamespaceConfig(1L, "block", null, 4096, dev, null)));
                assertTrue(String.valueOf(held.getMessage()).contains("in use"), String.valueOf(held.getMessage()));
            }
        } finally {
            new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
        }
        // A read-only device is refused, saying so and what to do.
        Process ro = new ProcessBuilder("losetup", "-f", "--show", "-r", img.toString()).redirectErrorStream(true).start();
        String roDev = new String(ro.getInputStream().readAllBytes()).strip();
        assumeTrue(ro.waitFor(30, TimeUnit.SECONDS) && ro.exitValue() == 0 && roDev.startsWith("/dev/loop"), roDev);
        try {
            Exception e = assertThrows(Exception.class,
                    () -> start(new NamespaceConfig(1L, "block", null, 4096, roDev, null)));
            assertTrue(String.valueOf(e.getMessage()).contains("read-only")
                    && String.valueOf(e.getMessage()).contains("blockdev --setrw"), String.valueOf(e.getMessage()));
        } finally {
            new ProcessBuilder("losetup", "-d", roDev).start().waitFor(30, TimeUnit.SECONDS);
        }
    }
    /**
     * A device that starts failing under load (a loop device over a file in a 4 MiB tmpfs: once the tmpfs is full the
     * kernel fails the loop's writes with ENOSPC): each failed write completes with the status nvmet gives it
     * (Capacity Exceeded, or a write fault for other errors), the data written before reads back, and the target goes
     * on serving the same controller and another namespace.
     */
    @Test
    void aDeviceThatFailsUnderLoadTurnsIntoErrorStatusesAndTheTargetGoesOn() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/loop-control")), "needs root and /dev/loop-control for losetup");
        Path mnt = Files.createDirectories(dir.resolve("small-tmpfs"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=4m", "nvmeof-test", mnt.toString())
                .redirectErrorStream(true).start();
        String mounted = new String(mount.getInputStream().readAllBytes()).strip();
        assumeTrue(mount.waitFor(30, TimeUnit.SECONDS) && mount.exitValue() == 0, "cannot mount a tmpfs here: " + mounted);
        String dev = null;
        try {
            Path img = mnt.resolve("device.img");
            try (FileChannel ch = FileChannel.open(img, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(1), (64 << 20) - 1); // 64 MiB on 4 MiB of memory
            }
            Process attach = new ProcessBuilder("losetup", "-f", "--show", "-b", "4096", img.toString())
                    .redirectErrorStream(true).start();
            String out = new String(attach.getInputStream().readAllBytes()).strip();
            assumeTrue(attach.waitFor(30, TimeUnit.SECONDS) && attach.exitValue() == 0 && out.startsWith("/dev/loop"),
                    "losetup could not attach a loop device here: " + out);
            dev = out;
            try (NvmeTarget target = start(new NamespaceConfig(1L, "block", null, 4096, dev, null),
                    new NamespaceConfig(2L, "ram", "16MiB", 4096, null, null));
                    NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                byte[] first = new byte[8 * 4096];
                new Random(17).nextBytes(first);
                ns.writeFua(0, 8, ByteBuffer.allocateDirect(first.length).put(first).flip()).get(10, TimeUnit.SECONDS);
                ByteBuffer chunk = ByteBuffer.allocateDirect(32 * 4096);
                int written = 0;
                int failed = 0;
                for (long lba = 8; lba + 32 <= ns.blockCount() && failed < 8; lba += 32) {
                    try {
                        ns.writeFua(lba, 32, chunk.clear()).get(10, TimeUnit.SECONDS);
                        written++;
                    } catch (java.util.concurrent.ExecutionException e) {
                        io.nvmeof.initiator.NvmeStatusException status =
                                assertInstanceOf(io.nvmeof.initiator.NvmeStatusException.class, e.getCause());
                        assertTrue(status.statusCode() == Status.CAPACITY_EXCEEDED
                                || status.statusCode() == Status.WRITE_FAULT, status.getMessage());
                        failed++;
                    }
                }
                assertTrue(written > 0 && failed == 8, written + " writes landed, " + failed + " failed");
                ByteBuffer back = ByteBuffer.allocateDirect(first.length);
                ns.read(0, 8, back).get(10, TimeUnit.SECONDS);
                byte[] actual = new byte[first.length];
                back.get(0, actual);
                assertArrayEquals(first, actual, "what landed before the device filled up");
                NamespaceHandle ram = c.namespace(2);
                byte[] other = new byte[4096];
                new Random(18).nextBytes(other);
                ram.write(3, 1, ByteBuffer.allocateDirect(4096).put(other).flip()).get(10, TimeUnit.SECONDS);
                ByteBuffer otherBack = ByteBuffer.allocateDirect(4096);
                ram.read(3, 1, otherBack).get(10, TimeUnit.SECONDS);
                byte[] o = new byte[4096];
                otherBack.get(0, o);
                assertArrayEquals(other, o, "another namespace of the same controller is unaffected");
            }
        } finally {
            if (dev != null) {
                new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
            }
            new ProcessBuilder("umount", mnt.toString()).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Issue 50: a file cut short under the target (truncate) read as zeroes with success past its new end, and a write
     * there grew it back. Now a read past the end fails with LBA Out of Range, the namespace shrinks to the file, its
     * host is told (Namespace Attribute Changed) and sees the new size, and what is left reads back intact.
     */
    @Test
    void aFileCutShortUnderTheTargetFailsReadsPastItsEndAndTheNamespaceFollowsIt() throws Exception {
        Path file = dir.resolve("cut.img");
        try (NvmeTarget target = start(new NamespaceConfig(1L, "file", "8MiB", 4096, file.toString(), null));
             NvmeofController c = connect(target)) {
            NamespaceHandle ns = c.namespace(1);
            assertEquals(2048, ns.blockCount());
            byte[] early = pattern(8 * 4096, 1);
            byte[] late = pattern(8 * 4096, 2);
            ns.writeFua(16, 8, ByteBuffer.allocateDirect(early.length).put(early).flip()).get(10, TimeUnit.SECONDS);
            ns.writeFua(1500, 8, ByteBuffer.allocateDirect(late.length).put(late).flip()).get(10, TimeUnit.SECONDS);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.truncate(4 << 20); // as `truncate -s 4M`: blocks 1024 and on are gone
            }
            assertShortOrRefused(ns, 1500, 8, "a read wholly past the new end");
            assertShortOrRefused(ns, 1020, 8, "a read across the new end");
            awaitBlockCount(ns, 1024);
            assertEquals(4 << 20, Files.size(file), "the file was not grown back");
            ByteBuffer back = ByteBuffer.allocateDirect(early.length);
            ns.read(16, 8, back).get(10, TimeUnit.SECONDS);
            byte[] actual = new byte[early.length];
            back.get(0, actual);
            assertArrayEquals(early, actual, "what is left reads back");
            assertEquals(1024, target.core().subsystem(NQN).namespace(1).blockCount());
        }
    }

    /**
     * Issue 50: a block device shrunk under the target (its loop device's backing file cut, then {@code losetup -c}):
     * reads past the new end fail with LBA Out of Range instead of zeroes, writes there too, and the namespace and its
     * host follow the device's new size.
     */
    @Test
    void aLoopDeviceShrunkUnderTheTargetFailsIoPastItsEndAndTheNamespaceFollowsIt() throws Exception {
        Path img = dir.resolve("shrink.img");
        String dev = attachLoop(img, 16 << 20);
        try (NvmeTarget target = start(new NamespaceConfig(1L, "block", null, 4096, dev, null));
             NvmeofController c = connect(target)) {
            NamespaceHandle ns = c.namespace(1);
            assertEquals(4096, ns.blockCount());
            byte[] early = pattern(4 * 4096, 3);
            ns.writeFua(8, 4, ByteBuffer.allocateDirect(early.length).put(early).flip()).get(10, TimeUnit.SECONDS);
            try (FileChannel ch = FileChannel.open(img, StandardOpenOption.WRITE)) {
                ch.truncate(8 << 20);
            }
            Process capacity = new ProcessBuilder("losetup", "-c", dev).redirectErrorStream(true).start();
            assertTrue(capacity.waitFor(30, TimeUnit.SECONDS) && capacity.exitValue() == 0,
                    new String(capacity.getInputStream().readAllBytes()));
            assertShortOrRefused(ns, 3000, 4, "a read past the device's new end");
            byte[] late = pattern(4 * 4096, 4);
            try {
                ns.write(3000, 4, ByteBuffer.allocateDirect(late.length).put(late).flip()).get(10, TimeUnit.SECONDS);
                throw new AssertionError("a write past the device's new end succeeded");
            } catch (java.util.concurrent.ExecutionException e) {
                assertEquals(Status.LBA_RANGE, Status.code(((io.nvmeof.initiator.NvmeStatusException) e.getCause())
                        .status()), e.toString());
            } catch (IllegalArgumentException e) {
                // the host knew the new size already: refused before it was sent
            }
            awaitBlockCount(ns, 2048);
            ByteBuffer back = ByteBuffer.allocateDirect(early.length);
            ns.read(8, 4, back).get(10, TimeUnit.SECONDS);
            byte[] actual = new byte[early.length];
            back.get(0, actual);
            assertArrayEquals(early, actual, "what is left reads back");
        } finally {
            new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Issue 50, finding 6: {@code bufferedIo} on a block device. Deallocate and Write Zeroes beside writes in flight
     * failed with a write fault (fallocate on a second descriptor of a device the target holds exclusively can only
     * invalidate the page cache, EBUSY while writes are in it); they go through the exclusive descriptor now, and every
     * operation succeeds. A block size below the device's logical block is refused buffered too (it was taken, and
     * each space change off a 4 KiB boundary then failed with EINVAL).
     */
    @Test
    void bufferedIoOnABlockDeviceTakesSpaceChangesBesideWritesAndItsLogicalBlockSize() throws Exception {
        Path img = dir.resolve("buffered-dev.img");
        String dev = attachLoop(img, 16 << 20);
        try {
            IllegalArgumentException small = assertThrows(IllegalArgumentException.class, () -> start(
                    new NamespaceConfig(1L, "block", null, 512, dev, null, null, null, true)));
            assertTrue(small.getMessage().contains("block size 512") && small.getMessage().contains("4096"),
                    small.getMessage());
            try (NvmeTarget target = start(new NamespaceConfig(1L, "block", null, 4096, dev, null, null, null, true));
                 NvmeofController c = connect(target)) {
                NamespaceHandle ns = c.namespace(1);
                Random random = new Random(50);
                java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
                java.util.concurrent.atomic.AtomicReference<Throwable> first = new java.util.concurrent.atomic.AtomicReference<>();
                java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(16);
                ByteBuffer data = ByteBuffer.allocateDirect(8 * 4096);
                int operations = 0;
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (System.nanoTime() < until) {
                    slots.acquire();
                    long lba = random.nextInt(248);
                    int blocks = 1 + random.nextInt(8);
                    int kind = random.nextInt(10);
                    CompletableFuture<Void> f = kind < 6 ? ns.write(lba, blocks, data.duplicate().limit(blocks * 4096))
                            : kind < 8 ? ns.writeZeroes(lba, blocks) : ns.deallocate(lba, blocks);
                    operations++;
                    f.whenComplete((v, e) -> {
                        if (e != null) {
                            failed.incrementAndGet();
                            first.compareAndSet(null, e);
                        }
                        slots.release();
                    });
                }
                slots.acquire(16);
                assertEquals(0, failed.get(), failed.get() + " of " + operations + " operations failed; first: "
                        + first.get());
                ns.deallocate(0, 256).get(10, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(256 * 4096);
                ns.read(0, 256, back).get(10, TimeUnit.SECONDS);
                for (int i = 0; i < back.capacity(); i++) {
                    assertEquals(0, back.get(i), "byte " + i + " after the last Deallocate");
                }
            }
        } finally {
            new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Issue 50, finding 6: a device path under {@code "backend": "file"} skipped every block-device check (a mounted
     * file system's device was written over, a device another process held was taken). It is a block namespace now:
     * held exclusively, one namespace per device whatever the backend says; a character device is refused.
     */
    @Test
    void aDevicePathUnderTheFileBackendIsServedAsABlockDevice() throws Exception {
        Path img = dir.resolve("file-backend-dev.img");
        String dev = attachLoop(img, 8 << 20);
        try {
            try (NvmeTarget target = start(new NamespaceConfig(1L, "file", null, 4096, dev, null))) {
                assertTrue(((FileBackend) target.core().subsystem(NQN).namespace(1).backend()).isBlockDevice());
                assertEquals(16, assertThrows(io.nvmeof.uring.UringException.class, () -> OpenFile.open(Path.of(dev),
                        new OpenFile.Mode(true, true, true, false))).errno(), "held exclusively");
                Exception twice = assertThrows(Exception.class, () -> target.live().addNamespace(NQN,
                        new NamespaceConfig(2L, "block", null, 4096, dev, null)));
                assertNotNull(twice.getMessage());
            }
            Exception chr = assertThrows(Exception.class, () -> start(
                    new NamespaceConfig(1L, "file", "1MiB", 4096, "/dev/null", null)));
            assertTrue(String.valueOf(chr.getMessage()).contains("neither a regular file nor a block device"),
                    String.valueOf(chr.getMessage()));
        } finally {
            new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Issue 50, finding 6: what a block device writes atomically. Identify Namespace says it (NSFEAT bit 1 with NAWUN,
     * NAWUPF and NACWU in blocks, as nvmet's bdev backend); a namespace whose block is larger than the device's
     * physical block (a 4 KiB block on a 512-byte device, which reported one block atomic on power loss) is refused.
     */
    @Test
    void aBlockDevicesAtomicWriteUnitIsReportedAndNeverOverpromised() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/loop-control")), "needs root and /dev/loop-control for losetup");
        Path img = dir.resolve("atomic.img");
        try (FileChannel ch = FileChannel.open(img, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), (8 << 20) - 1);
        }
        Process attach = new ProcessBuilder("losetup", "-f", "--show", img.toString()).redirectErrorStream(true).start();
        String dev = new String(attach.getInputStream().readAllBytes()).strip(); // 512-byte blocks
        assumeTrue(attach.waitFor(30, TimeUnit.SECONDS) && attach.exitValue() == 0 && dev.startsWith("/dev/loop"), dev);
        try {
            IllegalArgumentException big = assertThrows(IllegalArgumentException.class,
                    () -> start(new NamespaceConfig(1L, "block", null, 4096, dev, null)));
            assertTrue(big.getMessage().contains("writes atomically") && big.getMessage().contains("512"),
                    big.getMessage());
            try (NvmeTarget target = start(new NamespaceConfig(1L, "block", null, 512, dev, null));
                 NvmeofController c = connect(target)) {
                byte[] id = c.identify(0, 1);
                assertEquals(0x2, id[24] & 0x2, "NSFEAT bit 1: NAWUN, NAWUPF and NACWU are defined");
                assertEquals(0, ByteBuffer.wrap(id, 36, 2).order(java.nio.ByteOrder.LITTLE_ENDIAN).getShort(),
                        "NAWUPF: one 512-byte block, the device's physical block");
            }
        } finally {
            new ProcessBuilder("losetup", "-d", dev).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * A new sparse file {@code img} of {@code bytes}, attached to a loop device of 4 KiB blocks; the test is skipped
     * where that cannot be done (not root, no loop devices). The caller detaches it ({@code losetup -d}).
     */
    private static String attachLoop(Path img, long bytes) throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/loop-control")), "needs root and /dev/loop-control for losetup");
        try (FileChannel ch = FileChannel.open(img, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), bytes - 1);
        }
        Process attach = new ProcessBuilder("losetup", "-f", "--show", "-b", "4096", img.toString())
                .redirectErrorStream(true).start();
        String dev = new String(attach.getInputStream().readAllBytes()).strip();
        assumeTrue(attach.waitFor(30, TimeUnit.SECONDS) && attach.exitValue() == 0 && dev.startsWith("/dev/loop"),
                "losetup could not attach a loop device here: " + dev);
        return dev;
    }

    private static byte[] pattern(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    /**
     * A read of {@code blocks} at {@code lba} must not succeed: the target answers LBA Out of Range (a read cut short, or
     * refused once it measured the storage again), or the host refuses it itself when it knows the new size already.
     */
    private static void assertShortOrRefused(NamespaceHandle ns, long lba, int blocks, String what) throws Exception {
        ByteBuffer buf = ByteBuffer.allocateDirect(blocks * 4096);
        try {
            ns.read(lba, blocks, buf).get(10, TimeUnit.SECONDS);
            throw new AssertionError(what + " succeeded (zeroes where the storage ended)");
        } catch (java.util.concurrent.ExecutionException e) {
            assertInstanceOf(io.nvmeof.initiator.NvmeStatusException.class, e.getCause(), what);
            assertEquals(Status.LBA_RANGE, Status.code(((io.nvmeof.initiator.NvmeStatusException) e.getCause())
                    .status()), what + ": " + e.getCause());
        } catch (IllegalArgumentException e) {
            // the host had the new size already
        }
    }

    /** The host's handle reports {@code blocks} within 10 s (Namespace Attribute Changed, then a rescan). */
    private static void awaitBlockCount(NamespaceHandle ns, long blocks) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ns.blockCount() != blocks && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(blocks, ns.blockCount(), "the host sees the namespace's new size");
    }
}

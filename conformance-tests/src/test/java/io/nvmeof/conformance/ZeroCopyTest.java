package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.tcp.TcpQueue;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NVMe/TCP data with a copy fewer (issue 14). Read responses of a RAM namespace are sent from the namespace's own
 * memory, not copied into a buffer first: the data is right, the copy is gone, and a namespace removed while such data
 * still waits in the socket is not closed (its memory given back) under it. A Write's in-capsule data goes into the
 * namespace straight from the receive buffer.
 */
class ZeroCopyTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:zero-copy";
    private static final int CHUNK = 2 << 20; // the RAM namespace's chunk: a read across two is copied

    @TempDir
    static Path dir;

    /** Namespaces: 1 RAM up front, 2 RAM sparse, 3 a file (a new one for each target). */
    private static NvmeTarget start() throws Exception {
        Path file = Files.createTempFile(dir, "ns3-", ".img");
        Files.delete(file);
        return NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SN-ZC-1", "zero copy", 8, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null),
                                new NamespaceConfig(2L, "ram", "16MiB", 512, null, null, null, true),
                                // Buffered: what these tests are about is sending from the page cache.
                                new NamespaceConfig(3L, "file", "16MiB", 512, file.toString(), null, null, null,
                                        true))))));
    }

    /**
     * Reads of a file namespace served through the page cache, of every size, are read through the poll group's ring
     * into a buffer and sent from there, with or without a data digest; all read back what was written. Before, those
     * of 16 KiB and more were sent by sendfile from the page cache, which reads a page the cache lacks on the poll
     * group's own thread (every queue of the poll group waits for the disk).
     */
    @Test
    void readsOfABufferedFileNamespaceGoThroughTheRingNotSendfile() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.nvmeof.uring.UringLibrary.isAvailable(),
                () -> "io_uring unavailable here: " + io.nvmeof.uring.UringLibrary.unavailableReason());
        try (NvmeTarget target = start()) {
            int port = target.tcpPort(0);
            int[] sizes = {4 << 10, 16 << 10, 100 << 10, 1 << 20};
            long[] lbas = {0, 64, 1000, 9000};
            Random random = new Random(19);
            byte[][] data = new byte[sizes.length][];
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    ConnectOptions.builder().build())) {
                NamespaceHandle ns = c.namespace(3);
                for (int i = 0; i < sizes.length; i++) {
                    data[i] = new byte[sizes[i]];
                    random.nextBytes(data[i]);
                    ns.write(lbas[i], sizes[i] / 512, ByteBuffer.allocateDirect(sizes[i]).put(data[i]).flip())
                            .get(10, TimeUnit.SECONDS);
                }
                long before = TestTargets.ringCompletions(target);
                for (int round = 0; round < 2; round++) {
                    for (int i = 0; i < sizes.length; i++) {
                        ByteBuffer dst = ByteBuffer.allocateDirect(sizes[i]);
                        ns.read(lbas[i], sizes[i] / 512, dst).get(10, TimeUnit.SECONDS);
                        assertArrayEquals(data[i], bytesOf(dst), "read of " + sizes[i] + " bytes, round " + round);
                    }
                }
                assertEquals(2 * sizes.length, TestTargets.ringCompletions(target) - before,
                        "every read through the ring, 16 KiB and more too");
                assertEquals(0, sumOverIoQueues(target, TcpQueue::zeroCopyReads));
            }
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    ConnectOptions.builder().dataDigest(true).build())) {
                assertTrue(TestTargets.eventually(() -> target.core().controllers().size() == 1, 10_000));
                long before = TestTargets.ringCompletions(target);
                ByteBuffer dst = ByteBuffer.allocateDirect(sizes[3]);
                c.namespace(3).read(lbas[3], sizes[3] / 512, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(data[3], bytesOf(dst));
                assertEquals(before + 1, TestTargets.ringCompletions(target), "under a data digest"
                        + " too");
            }
        }
    }

    /**
     * Issue 29, finding 10: a file namespace's file cut short behind the target's back. A read of 16 KiB and more ended
     * the connection (and the host's reconnects failed the same way); it stays now. Issue 50: what is past the new end
     * is gone, so a read across or past it fails with LBA Out of Range (it read zeroes with success), whatever its
     * size; what is within reads back.
     */
    @Test
    void readsPastTheEndOfAFileCutShortBehindTheTargetFailAndKeepTheConnection() throws Exception {
        try (NvmeTarget target = start(); RawTcpHost admin = new RawTcpHost(target.tcpPort(0));
                RawTcpHost io = new RawTcpHost(target.tcpPort(0))) {
            int cntlid = admin.bringUpAdmin(NQN);
            io.initialize(0);
            assertEquals(Status.SUCCESS, io.connect(1, 31, cntlid, NQN, RawTcpHost.HOSTNQN, 0).status());
            byte[] block = new byte[4096];
            java.util.Arrays.fill(block, (byte) 0x6B);
            for (int lba = 0; lba < 1024; lba += 8) {
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 3, lba, 8, 4096, true), block)
                        .status());
            }
            Path file = ((io.nvmeof.tgt.backend.FileBackend) target.core().subsystem(NQN).namespace(3).backend()).path();
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                    java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(64 << 10); // someone else cuts the file to 64 KiB
            }
            int[] sizes = {4 << 10, 16 << 10, 128 << 10, 512 << 10};
            for (int size : sizes) {
                for (long lba : new long[] {0, 96, 1000}) { // within, across and past the new end
                    String what = size + " bytes at LBA " + lba;
                    if (lba * 512 + size > 64 << 10) {
                        Completion c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 3, lba, size / 512, size, false),
                                null);
                        assertEquals(Status.LBA_RANGE | Status.DNR, c.status(), what);
                        continue;
                    }
                    RawTcpHost.Reply r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 3, lba, size / 512, size,
                            false), size);
                    assertEquals(Status.SUCCESS, r.cqe().status(), what);
                    for (int i = 0; i < size; i++) {
                        if (r.data()[i] != (byte) 0x6B) {
                            throw new AssertionError(what + ": byte " + i + " is " + r.data()[i]);
                        }
                    }
                }
            }
            assertEquals(128, target.core().subsystem(NQN).namespace(3).blockCount(), "the namespace follows the file");
            assertEquals(Status.SUCCESS, admin.propertyGet(ControllerRegisters.CSTS, 4).status(), "still connected");
        }
    }

    /** Runs {@code f} on each I/O queue's own thread and sums what it returns. */
    private static long sumOverIoQueues(NvmeTarget target, Function<TcpQueue, Long> f) throws Exception {
        long sum = 0;
        for (Controller c : target.core().controllers()) {
            for (int qid = 1; qid <= c.maxIoQueues(); qid++) {
                SubmissionQueue q = c.queue(qid);
                if (q != null && q.transport() instanceof TcpQueue t) {
                    CompletableFuture<Long> v = new CompletableFuture<>();
                    t.execute(() -> v.complete(f.apply(t)));
                    sum += v.get(5, TimeUnit.SECONDS);
                }
            }
        }
        return sum;
    }

    @Test
    void readsOfARamNamespaceAreSentFromItsMemoryAndReadBackWhatWasWritten() throws Exception {
        try (NvmeTarget target = start()) {
            int port = target.tcpPort(0);
            Random random = new Random(14);
            long[] lbas = {0, 8, 3000, (CHUNK / 512) - 4, 20_000}; // the fourth crosses a chunk boundary
            int blocks = 8;
            byte[][] written = new byte[lbas.length][blocks * 512];
            ConnectOptions plain = ConnectOptions.builder().build();
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN), plain)) {
                NamespaceHandle ns = c.namespace(1);
                for (int i = 0; i < lbas.length; i++) {
                    random.nextBytes(written[i]);
                    ns.write(lbas[i], blocks, ByteBuffer.allocateDirect(blocks * 512).put(written[i]).flip())
                            .get(10, TimeUnit.SECONDS);
                }
                long before = sumOverIoQueues(target, TcpQueue::zeroCopyReads);
                for (int round = 0; round < 3; round++) {
                    for (int i = 0; i < lbas.length; i++) {
                        ByteBuffer dst = ByteBuffer.allocateDirect(blocks * 512);
                        ns.read(lbas[i], blocks, dst).get(10, TimeUnit.SECONDS);
                        byte[] got = new byte[blocks * 512];
                        dst.get(0, got);
                        assertArrayEquals(written[i], got, "LBA " + lbas[i] + ", round " + round);
                    }
                }
                long sent = sumOverIoQueues(target, TcpQueue::zeroCopyReads) - before;
                assertEquals(3 * (lbas.length - 1), sent, "every read within one chunk sent from the namespace's "
                        + "memory; the one across chunks copied");
                // A sparse namespace's never-written range has no memory to send from: zeroes, through the copy.
                ByteBuffer dst = ByteBuffer.allocateDirect(4096);
                c.namespace(2).read(100, 8, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(new byte[4096], bytesOf(dst));
                assertEquals(sent + before, sumOverIoQueues(target, TcpQueue::zeroCopyReads));
            }
            // Under a data digest the data is copied (a consistent snapshot for the digest) and still right.
            ConnectOptions digests = ConnectOptions.builder().headerDigest(true).dataDigest(true).build();
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    digests)) {
                assertTrue(TestTargets.eventually(() -> target.core().controllers().size() == 1, 10_000));
                ByteBuffer dst = ByteBuffer.allocateDirect(blocks * 512);
                c.namespace(1).read(lbas[1], blocks, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(written[1], bytesOf(dst));
                assertEquals(0, sumOverIoQueues(target, TcpQueue::zeroCopyReads), "no zero-copy read under a digest");
            }
        }
    }

    /**
     * Writes whose data travels in the capsule (up to the listener's 8 KiB) are copied into the namespace from the
     * receive buffer, many capsules per read of the socket at QD 32; larger ones (by R2T) and other commands with
     * in-capsule data (Dataset Management's ranges) as before. Every block reads back as written.
     */
    @Test
    void inCapsuleWritesGoIntoTheNamespaceStraightFromTheReceiveBuffer() throws Exception {
        try (NvmeTarget target = start();
             NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NQN),
                     ConnectOptions.builder().queueDepth(64).build())) {
            NamespaceHandle ns = c.namespace(1);
            Random random = new Random(16);
            int writes = 512;
            byte[][] data = new byte[writes][];
            List<CompletableFuture<Void>> inFlight = new java.util.ArrayList<>();
            long before = sumOverIoQueues(target, TcpQueue::writesFromReceiveBuffer);
            for (int i = 0; i < writes; i++) {
                int blocks = i % 3 == 2 ? 32 : 1 + i % 16; // 512 B to 8 KiB in the capsule; 16 KiB by R2T
                data[i] = new byte[blocks * 512];
                random.nextBytes(data[i]);
                ByteBuffer src = ByteBuffer.allocateDirect(data[i].length).put(data[i]).flip();
                inFlight.add(ns.write((long) i * 32, blocks, src));
                if (inFlight.size() == 32) {
                    for (CompletableFuture<Void> f : inFlight) {
                        f.get(10, TimeUnit.SECONDS);
                    }
                    inFlight.clear();
                }
            }
            for (CompletableFuture<Void> f : inFlight) {
                f.get(10, TimeUnit.SECONDS);
            }
            long lent = sumOverIoQueues(target, TcpQueue::writesFromReceiveBuffer) - before;
            long inCapsule = java.util.stream.IntStream.range(0, writes).filter(i -> i % 3 != 2).count();
            assertEquals(inCapsule, lent, "every in-capsule write from the receive buffer, the R2T ones not");
            for (int i = 0; i < writes; i++) {
                ByteBuffer dst = ByteBuffer.allocateDirect(data[i].length);
                ns.read((long) i * 32, data[i].length / 512, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(data[i], bytesOf(dst), "write " + i);
            }
            ns.deallocate(0, 64).get(10, TimeUnit.SECONDS); // its ranges travel in the capsule, copied
            assertEquals(lent, sumOverIoQueues(target, TcpQueue::writesFromReceiveBuffer) - before);
            ByteBuffer dst = ByteBuffer.allocateDirect(512);
            ns.read(0, 1, dst).get(10, TimeUnit.SECONDS);
            assertArrayEquals(new byte[512], bytesOf(dst), "deallocated blocks read as zeroes");
        }
    }

    /**
     * Writes larger than the capsule take their data by R2T, in H2CData PDUs of up to the listener's 128 KiB: each
     * PDU's data goes from the receive buffer into the namespace as it arrives (no buffer for the whole write), among
     * them writes across the namespace's 2 MiB chunks. Every block reads back as written; under a data digest, which
     * must be checked first, the data goes through a buffer as before.
     */
    @Test
    void dataByR2tGoesIntoTheNamespaceAsItArrives() throws Exception {
        try (NvmeTarget target = start()) {
            int port = target.tcpPort(0);
            int[] sizes = {16 << 10, 64 << 10, 200 << 10, 512 << 10, 1 << 20, 24 << 10};
            long[] lbas = {0, 100, 2000, (CHUNK / 512) - 300, 6000, 20_000}; // the fourth crosses a chunk boundary
            Random random = new Random(18);
            byte[][] data = new byte[sizes.length][];
            long pdus = 0;
            for (int i = 0; i < sizes.length; i++) {
                data[i] = new byte[sizes[i]];
                random.nextBytes(data[i]);
                pdus += (sizes[i] + (128 << 10) - 1) / (128 << 10);
            }
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    ConnectOptions.builder().build())) {
                NamespaceHandle ns = c.namespace(1);
                List<CompletableFuture<Void>> writes = new java.util.ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    writes.add(ns.write(lbas[i], sizes[i] / 512,
                            ByteBuffer.allocateDirect(sizes[i]).put(data[i]).flip()));
                }
                for (CompletableFuture<Void> f : writes) {
                    f.get(10, TimeUnit.SECONDS);
                }
                assertEquals(pdus, sumOverIoQueues(target, TcpQueue::h2cDataIntoNamespace),
                        "every H2CData PDU's data straight into the namespace");
                for (int i = 0; i < sizes.length; i++) {
                    ByteBuffer dst = ByteBuffer.allocateDirect(sizes[i]);
                    ns.read(lbas[i], sizes[i] / 512, dst).get(10, TimeUnit.SECONDS);
                    assertArrayEquals(data[i], bytesOf(dst), "write " + i + " of " + sizes[i] + " bytes");
                }
            }
            ConnectOptions digests = ConnectOptions.builder().dataDigest(true).build();
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    digests)) {
                assertTrue(TestTargets.eventually(() -> target.core().controllers().size() == 1, 10_000));
                NamespaceHandle ns = c.namespace(1);
                byte[] d = new byte[300 << 10];
                random.nextBytes(d);
                ns.write(30_000, d.length / 512, ByteBuffer.allocateDirect(d.length).put(d).flip())
                        .get(10, TimeUnit.SECONDS);
                ByteBuffer dst = ByteBuffer.allocateDirect(d.length);
                ns.read(30_000, d.length / 512, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(d, bytesOf(dst));
                assertEquals(0, sumOverIoQueues(target, TcpQueue::h2cDataIntoNamespace),
                        "under a data digest, through a buffer");
            }
        }
    }

    /**
     * A host that stops reading while 128 KiB read responses wait in the target's socket to be sent from a RAM
     * namespace's memory; the namespace is removed meanwhile. It must stay open until they are sent: every successful
     * read returns what was written (RAM given back early reads as zeroes), and the backend closes after.
     */
    @ParameterizedTest(name = "namespace {0}")
    @ValueSource(longs = {1}) // RAM (its memory); file namespaces' reads are sent from buffers of their own
    void aRemovedNamespaceIsNotClosedUnderReadDataStillWaitingToBeSent(long nsid) throws Exception {
        try (NvmeTarget target = start()) {
            Namespace ns = target.core().subsystem(NQN).namespace(nsid);
            io.nvmeof.tgt.backend.BlockBackend backend = ns.backend();
            int length = 128 << 10;
            byte[] pattern = new byte[length];
            new Random(15).nextBytes(pattern);
            for (int i = 0; i < 16; i++) {
                backend.write((long) i * length, ByteBuffer.wrap(pattern));
            }
            int reads = 96;
            try (RawTcpHost admin = new RawTcpHost(target.tcpPort(0));
                 RawTcpHost io = new RawTcpHost(target.tcpPort(0), 16 << 10)) {
                admin.initialize(0);
                Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(Status.SUCCESS, c.status());
                assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC,
                        ControllerRegisters.CC_ENABLE_DEFAULT).status());
                io.initialize(0);
                assertEquals(Status.SUCCESS, io.connect(1, 127, c.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
                for (int i = 0; i < reads; i++) {
                    byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_READ, nsid, (long) (i % 16) * (length / 512), length / 512,
                            length, false);
                    RawTcpHost.cmd(sqe).cid(100 + i);
                    io.send(io.capsule(sqe, null));
                }
                assertTrue(TestTargets.eventually(() -> waiting(target, ns), 10_000),
                        "read data waits in the target to be sent from the namespace's memory");
                target.live().removeNamespace(NQN, nsid);
                Thread.sleep(600); // the drain asks every 50 ms: without a hold it would have closed by now
                if (backend instanceof RamBackend ram) {
                    assertTrue(ram.allocatedBytes() > 0, "the namespace was closed under data still to be sent");
                }
                int succeeded = 0;
                for (int i = 0; i < reads; i++) {
                    RawTcpHost.Reply r = io.readReply(length);
                    assertEquals(100 + i, r.cqe().cid());
                    if (Status.isSuccess(r.cqe().status())) {
                        assertArrayEquals(pattern, r.data(), "read " + i + " after the removal");
                        succeeded++;
                    } else {
                        // Commands the target had not taken before the removal find no namespace.
                        assertEquals(Status.INVALID_NAMESPACE, Status.code(r.cqe().status()), "read " + i);
                    }
                }
                assertTrue(succeeded > 0, "some reads were in flight at the removal");
                assertTrue(TestTargets.eventually(() -> !waiting(target, ns), 10_000), "everything was sent");
                if (backend instanceof RamBackend ram) {
                    assertTrue(TestTargets.eventually(() -> ram.allocatedBytes() == 0, 10_000),
                            "closed once everything was sent");
                }
            }
        }
    }

    private static boolean waiting(NvmeTarget target, Namespace ns) {
        try {
            return sumOverIoQueues(target, t -> t.sendsFrom(ns) ? 1L : 0L) > 0;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static byte[] bytesOf(ByteBuffer b) {
        byte[] out = new byte[b.capacity()];
        b.get(0, out);
        return out;
    }
}

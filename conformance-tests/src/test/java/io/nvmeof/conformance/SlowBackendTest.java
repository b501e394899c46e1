package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Slow backend work (deallocate, zeroing, flush) never stalls a poll group, and file namespaces deallocate by
 * punching holes instead of writing zeroes (Linux nvmet's file backend does both the same way).
 */
class SlowBackendTest {
    static final String NQN = "nqn.2026-11.io.nvmeof:slow";

    /** A backend whose deallocate waits at a gate, as a file system stuck in a long operation would. */
    static final class GatedBackend implements BlockBackend {
        final RamBackend ram = new RamBackend(64 << 20);
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch gate = new CountDownLatch(1);

        @Override public long sizeBytes() { return ram.sizeBytes(); }
        /** While set, a read waits at {@link #readGate}: a stall of the poll group that runs it. */
        volatile boolean stallReads;
        final CountDownLatch readEntered = new CountDownLatch(1);
        final CountDownLatch readGate = new CountDownLatch(1);

        @Override
        public void read(long offset, ByteBuffer dst) throws IOException {
            if (stallReads) {
                readEntered.countDown();
                try {
                    readGate.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            }
            ram.read(offset, dst);
        }
        /** While set, a write waits at {@link #writeGate}. */
        volatile boolean stallWrites;
        final CountDownLatch writeEntered = new CountDownLatch(1);
        final CountDownLatch writeGate = new CountDownLatch(1);
        /** What reached the media, in order: "write" (a write returned) and "flush". */
        final List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            if (stallWrites) {
                writeEntered.countDown();
                try {
                    writeGate.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            }
            ram.write(offset, src);
            events.add("write");
        }

        @Override
        public void flush() {
            events.add("flush");
        }
        @Override public void writeZeroes(long offset, long length) { ram.writeZeroes(offset, length); }
        @Override public boolean mayBlock(long bytes) { return true; }
        /** Set: reads and writes are a file's system calls (with no io_uring to take them), which may wait. */
        volatile boolean ioMayBlock;
        @Override public boolean ioMayBlock() { return ioMayBlock; }
        @Override public String describe() { return "gated"; }
        final CountDownLatch closed = new CountDownLatch(1);

        @Override public void close() {
            ram.close();
            closed.countDown();
        }

        @Override
        public void deallocate(long offset, long length) throws IOException {
            entered.countDown();
            try {
                if (!gate.await(60, TimeUnit.SECONDS)) {
                    throw new IOException("gate never opened");
                }
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            ram.deallocate(offset, length);
        }
    }

    private static TargetConfig oneGroup(List<NamespaceConfig> namespaces) {
        return groups(1, namespaces);
    }

    private static TargetConfig groups(int pollGroups, List<NamespaceConfig> namespaces) {
        return new TargetConfig(pollGroups, 4, 128, 1 << 20, List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 16, true, null, namespaces)));
    }

    private static byte[] deallocateSqe(long nsid, int ranges) {
        return RawTcpHost.deallocateSqe(nsid, ranges);
    }

    private static byte[] ranges(long... slbaAndBlocks) {
        return RawTcpHost.ranges(slbaAndBlocks);
    }

    /** Admin queue (KATO {@code katoMs}) and I/O queue 1 of a new controller. */
    private static RawTcpHost[] controller(int port, long katoMs) throws IOException {
        RawTcpHost admin = new RawTcpHost(port);
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, katoMs);
        assertEquals(Status.SUCCESS, c.status());
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC,
                ControllerRegisters.CC_ENABLE_DEFAULT).status());
        RawTcpHost io = new RawTcpHost(port);
        io.initialize(0);
        assertEquals(Status.SUCCESS, io.connect(1, 31, c.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
        return new RawTcpHost[] {admin, io};
    }

    @Test
    void aDeallocateStuckInTheBackendLeavesThePollGroupServing() throws Exception {
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        GatedBackend gated = new GatedBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(2, gated, 512, UUID.randomUUID()));
        RawTcpHost[] slow = controller(target.tcpPort(0), 0);
        RawTcpHost[] bystander = controller(target.tcpPort(0), 1000);
        try {
            // One poll group serves all four queues; the deallocate is stuck in the backend.
            byte[] dsm = deallocateSqe(2, 1);
            RawTcpHost.cmd(dsm).cid(501);
            slow[1].send(slow[1].capsule(dsm, ranges(0, 2048)));
            assertTrue(gated.entered.await(10, TimeUnit.SECONDS), "the deallocate reached the backend");
            // The bystander keeps going: keep-alives past its 1 s KATO, and I/O on the same poll group.
            for (int i = 0; i < 6; i++) {
                byte[] ka = RawTcpHost.sqe();
                RawTcpHost.cmd(ka).opcode(Opcodes.ADMIN_KEEP_ALIVE);
                assertEquals(Status.SUCCESS, bystander[0].execute(ka, null).status(), "keep alive " + i);
                Completion read = bystander[1].execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 8, 4096, false), null);
                assertEquals(Status.SUCCESS, read.status(), "a read while another queue's deallocate is stuck");
                Thread.sleep(250);
            }
            assertEquals(2, target.core().subsystem(NQN).controllers().size(), "no controller was torn down");
            gated.gate.countDown();
            Completion done = slow[1].awaitResponse();
            assertEquals(501, done.cid());
            assertEquals(Status.SUCCESS, done.status(), "the deallocate completes once the backend returns");
        } finally {
            gated.gate.countDown();
            for (RawTcpHost h : new RawTcpHost[] {slow[0], slow[1], bystander[0], bystander[1]}) {
                h.close();
            }
            target.close();
        }
    }

    /**
     * A namespace removed while a command on it is still in its backend: that command finishes normally, and only
     * then is the backend closed (before, it stayed open until the target stopped).
     */
    @Test
    void aRemovedNamespaceIsClosedOnceItsInFlightCommandsFinish() throws Exception {
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        GatedBackend gated = new GatedBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(2, gated, 512, UUID.randomUUID()));
        RawTcpHost[] host = controller(target.tcpPort(0), 0);
        try {
            byte[] dsm = deallocateSqe(2, 1);
            RawTcpHost.cmd(dsm).cid(701);
            host[1].send(host[1].capsule(dsm, ranges(0, 2048)));
            assertTrue(gated.entered.await(10, TimeUnit.SECONDS), "the deallocate reached the backend");
            target.live().removeNamespace(NQN, 2);
            Completion refused = host[1].execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 2, 0, 1, 512, false), null);
            assertEquals(Status.INVALID_NAMESPACE, Status.code(refused.status()), "new commands are refused");
            assertTrue(!gated.closed.await(500, TimeUnit.MILLISECONDS), "not closed under the command in flight");
            gated.gate.countDown();
            Completion done = host[1].awaitResponse();
            assertEquals(701, done.cid());
            assertEquals(Status.SUCCESS, done.status(), "the command in flight finishes normally");
            assertTrue(gated.closed.await(10, TimeUnit.SECONDS), "closed once drained");
            Completion other = host[1].execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), null);
            assertEquals(Status.SUCCESS, other.status(), "the other namespace goes on");
        } finally {
            gated.gate.countDown();
            host[0].close();
            host[1].close();
            target.close();
        }
    }

    /**
     * Issue 32: a file's read or write with no io_uring to take it (io_uring unavailable, a ring that failed to start)
     * waits for the device on a backend thread, never on the poll group: a RAM namespace's reads on the same poll
     * group go on meanwhile, and the stuck commands complete, with the right data, once the device answers.
     */
    @Test
    void aFileReadOrWriteWithNoRingLeavesThePollGroupServing() throws Exception {
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        GatedBackend gated = new GatedBackend();
        gated.ioMayBlock = true;
        target.core().subsystem(NQN).addNamespace(new Namespace(2, gated, 512, UUID.randomUUID()));
        RawTcpHost[] slow = controller(target.tcpPort(0), 0);
        RawTcpHost[] bystander = controller(target.tcpPort(0), 1000);
        try {
            byte[] block = new byte[512];
            java.util.Arrays.fill(block, (byte) 0x5a);
            gated.stallWrites = true;
            byte[] write = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 2, 7, 1, 512, true);
            RawTcpHost.cmd(write).cid(801);
            slow[1].send(slow[1].capsule(write, block)); // in-capsule data: must outlive the receive buffer
            assertTrue(gated.writeEntered.await(10, TimeUnit.SECONDS), "the write reached the device");
            gated.stallReads = true;
            byte[] read = RawTcpHost.rwSqe(Opcodes.IO_READ, 2, 0, 1, 512, false);
            RawTcpHost.cmd(read).cid(802);
            slow[1].send(slow[1].capsule(read, null));
            assertTrue(gated.readEntered.await(10, TimeUnit.SECONDS), "the read reached the device");
            for (int i = 0; i < 6; i++) { // past the bystander's 1 s KATO
                byte[] ka = RawTcpHost.sqe();
                RawTcpHost.cmd(ka).opcode(Opcodes.ADMIN_KEEP_ALIVE);
                assertEquals(Status.SUCCESS, bystander[0].execute(ka, null).status(), "keep alive " + i);
                Completion r = bystander[1].execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 8, 4096, false), null);
                assertEquals(Status.SUCCESS, r.status(), "a RAM read while a file's read and write wait for it");
                Thread.sleep(250);
            }
            gated.stallWrites = false;
            gated.writeGate.countDown();
            Completion w = slow[1].awaitResponse();
            assertEquals(801, w.cid());
            assertEquals(Status.SUCCESS, w.status(), "the write completes once the device answers");
            gated.stallReads = false;
            gated.readGate.countDown();
            Completion r = slow[1].awaitResponse();
            assertEquals(802, r.cid());
            assertEquals(Status.SUCCESS, r.status(), "the read completes once the device answers");
            RawTcpHost.Reply back = slow[1].executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 2, 7, 1, 512, false), 512);
            assertEquals(Status.SUCCESS, back.cqe().status());
            assertArrayEquals(block, back.data(), "the in-capsule data reached the device intact");
        } finally {
            gated.writeGate.countDown();
            gated.readGate.countDown();
            for (RawTcpHost h : new RawTcpHost[] {slow[0], slow[1], bystander[0], bystander[1]}) {
                h.close();
            }
            target.close();
        }
    }

    /**
     * A poll group stalled (a read stuck in a backend that should not block; the same as the whole target paused)
     * within a bystander's keep-alive deadline (twice its 1 s KATO): the keep-alives and the write that waited unread
     * in its socket meanwhile run once it goes on, and its controller survives.
     */
    @Test
    void aPollGroupStalledWithinTheKeepAliveDeadlineKeepsItsControllers() throws Exception {
        StalledBystander run = stallPollGroup(1200);
        assertEquals(Status.SUCCESS, run.write.status(), "the write sent during the stall ran");
        for (Completion ka : run.keepAlives) {
            assertEquals(Status.SUCCESS, ka.status(), "keep alive " + ka.cid());
        }
        assertArrayEquals(run.data, run.landed, "the write landed");
        assertTrue(run.bystanderControllerLived, "the bystander's controller is still there");
    }

    /**
     * Issue 50: a poll group stalled past a bystander's keep-alive deadline. Its host, unanswered as long, has given the
     * association up and may have written the same blocks through another path since: the write that waited unread in
     * its socket must never run (it did: traffic read after the stall renewed the keep-alive), and the controller ends.
     */
    @Test
    void aPollGroupStalledPastTheKeepAliveDeadlineRunsNothingThatWaitedInTheSocket() throws Exception {
        StalledBystander run = stallPollGroup(3000);
        assertTrue(run.write == null || run.write.status() != Status.SUCCESS, "the write was not answered as done");
        assertArrayEquals(new byte[512], run.landed, "the write that waited in the socket never reached the media");
        assertTrue(!run.bystanderControllerLived, "the bystander's controller was torn down");
        assertTrue(run.bystanderClosed, "the bystander's connection was closed");
    }

    /** What {@link #stallPollGroup} saw of the bystander. */
    private record StalledBystander(Completion write, List<Completion> keepAlives, byte[] data, byte[] landed,
            boolean bystanderControllerLived, boolean bystanderClosed) {
    }

    /**
     * Stalls the only poll group for {@code stallMs} with a read stuck in a backend; meanwhile a bystander (KATO 1 s)
     * sends a write of one block to its RAM namespace and keep-alives every 200 ms, all left unread in its sockets.
     */
    private static StalledBystander stallPollGroup(long stallMs) throws Exception {
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        GatedBackend gated = new GatedBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(2, gated, 512, UUID.randomUUID()));
        RawTcpHost[] staller = controller(target.tcpPort(0), 0);
        RawTcpHost[] bystander = controller(target.tcpPort(0), 1000);
        try {
            gated.stallReads = true;
            byte[] read = RawTcpHost.rwSqe(Opcodes.IO_READ, 2, 0, 1, 512, false);
            RawTcpHost.cmd(read).cid(601);
            staller[1].send(staller[1].capsule(read, null));
            assertTrue(gated.readEntered.await(10, TimeUnit.SECONDS), "the poll group is stuck in the read");
            long stalled = System.nanoTime();
            byte[] data = new byte[512];
            java.util.Arrays.fill(data, (byte) 0x77);
            byte[] write = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 9, 1, 512, true);
            RawTcpHost.cmd(write).cid(650);
            bystander[1].send(bystander[1].capsule(write, data));
            byte[] ka = RawTcpHost.sqe();
            RawTcpHost.cmd(ka).opcode(Opcodes.ADMIN_KEEP_ALIVE);
            int sent = 0;
            while (System.nanoTime() - stalled < TimeUnit.MILLISECONDS.toNanos(stallMs)) {
                RawTcpHost.cmd(ka).cid(700 + sent++);
                bystander[0].send(bystander[0].capsule(ka, null));
                Thread.sleep(200);
            }
            gated.stallReads = false;
            gated.readGate.countDown();
            assertEquals(Status.SUCCESS, staller[1].awaitResponse().status(), "the stuck read completes");
            Completion w = null;
            List<Completion> kas = new java.util.ArrayList<>();
            boolean closed = false;
            try {
                w = bystander[1].awaitResponse();
                for (int i = 0; i < sent; i++) {
                    kas.add(bystander[0].awaitResponse());
                }
            } catch (IOException e) {
                closed = true; // the target closed the connection instead of answering
            }
            if (!closed) {
                bystander[0].soTimeout(500);
                closed = bystander[0].closedByTarget();
            }
            Thread.sleep(300); // a few more keep-alive checks
            boolean lived = target.core().subsystem(NQN).controllers().size() == 2;
            ByteBuffer landed = ByteBuffer.allocate(512);
            target.core().subsystem(NQN).namespace(1).backend().read(9 * 512L, landed);
            return new StalledBystander(w, kas, data, landed.array(), lived, closed);
        } finally {
            gated.readGate.countDown();
            for (RawTcpHost h : new RawTcpHost[] {staller[0], staller[1], bystander[0], bystander[1]}) {
                h.close();
            }
            target.close();
        }
    }

    private static int shst(RawTcpHost admin) throws IOException {
        return (admin.propertyGet(ControllerRegisters.CSTS, 4).dw0() >> 2) & 3;
    }

    /**
     * A shutdown (CC.SHN) reports complete only after a write still running on another poll group has finished and
     * the flush after it has run; it used to flush at once and report complete while the write was still under way.
     */
    @Test
    void shutdownCompletesOnlyAfterWritesOnOtherPollGroupsAndTheFlush() throws Exception {
        NvmeTarget target = NvmeTarget.start(groups(2, List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        GatedBackend gated = new GatedBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(2, gated, 512, UUID.randomUUID()));
        RawTcpHost[] c = controller(target.tcpPort(0), 0); // admin and I/O queue on the two poll groups in turn
        try {
            gated.stallWrites = true;
            byte[] write = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 2, 0, 1, 512, true);
            RawTcpHost.cmd(write).cid(801);
            c[1].send(c[1].capsule(write, new byte[512]));
            assertTrue(gated.writeEntered.await(10, TimeUnit.SECONDS), "the write is in the backend");
            assertEquals(Status.SUCCESS, c[0].propertySet(ControllerRegisters.CC,
                    ControllerRegisters.CC_ENABLE_DEFAULT | 1 << 14).status(), "CC.SHN = normal");
            assertEquals(1, shst(c[0]), "shutdown processing occurring while a write is still running");
            gated.writeGate.countDown();
            assertTrue(TestTargets.eventually(() -> {
                try {
                    return shst(c[0]) == 2;
                } catch (IOException e) {
                    return false;
                }
            }, 10_000), "shutdown processing complete");
            assertEquals(List.of("write", "flush"), gated.events, "the flush came after the write");
        } finally {
            gated.writeGate.countDown();
            c[0].close();
            c[1].close();
            target.close();
        }
    }

    /** Silence is allowed for up to twice KATO (rounded up to seconds), as nvmet's period timer allows. */
    @Test
    void keepAliveAllowsNvmetsSlack() throws Exception {
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))));
        RawTcpHost[] c = controller(target.tcpPort(0), 1000);
        try {
            Thread.sleep(1300); // past KATO, within nvmet's slack
            assertEquals(Status.SUCCESS, c[0].propertyGet(ControllerRegisters.CSTS, 4).status(),
                    "1.3 s of silence with KATO 1 s: still connected");
            assertTrue(c[0].closedByTarget(), "then silence: the controller goes (after at most 2 s)");
        } finally {
            c[0].close();
            c[1].close();
            target.close();
        }
    }

    /** Allocated bytes of a file, from stat(1) (512-byte blocks). */
    private static long allocated(Path file) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assertEquals(0, p.waitFor(), out);
        return Long.parseLong(out) * 512;
    }

    @Test
    void deallocatingAWholeFileNamespacePunchesHolesInsteadOfWritingZeroes(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ns.img");
        NvmeTarget target = NvmeTarget.start(oneGroup(List.of(
                new NamespaceConfig(1L, "file", "2GiB", 4096, file.toString(), null))));
        try (RawTcpHost admin = new RawTcpHost(target.tcpPort(0)); RawTcpHost io = new RawTcpHost(target.tcpPort(0))) {
            admin.initialize(0);
            Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
            admin.propertySet(ControllerRegisters.CC,
                    ControllerRegisters.CC_ENABLE_DEFAULT);
            io.initialize(0);
            assertEquals(Status.SUCCESS, io.connect(1, 31, c.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
            byte[] block = new byte[4096];
            java.util.Arrays.fill(block, (byte) 0x77);
            assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 1000, 1, 4096, true), block).status());
            long blocks = (2L << 30) / 4096;
            // Two ranges covering the whole namespace, as blkdiscard or mkfs send.
            Completion dsm = io.execute(deallocateSqe(1, 2), ranges(0, blocks / 2, blocks / 2, blocks / 2));
            assertEquals(Status.SUCCESS, dsm.status());
            assertTrue(allocated(file) < 1 << 20, "the file holds " + (allocated(file) >> 20)
                    + " MiB after deallocating all of it: zeroes were written instead of holes punched");
            RawTcpHost.Reply r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 1000, 1, 4096, false), 4096);
            assertEquals(Status.SUCCESS, r.cqe().status());
            assertTrue(java.util.Arrays.equals(new byte[4096], r.data()), "deallocated blocks read as zeroes (DLFEAT)");
            // Write Zeroes over the written block: zeroes without writing them.
            assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 7, 1, 4096, true), block).status());
            byte[] wz = RawTcpHost.sqe();
            RawTcpHost.cmd(wz).opcode(Opcodes.IO_WRITE_ZEROES).nsid(1).slba(0).blockCount(16);
            assertEquals(Status.SUCCESS, io.execute(wz, null).status());
            r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 7, 1, 4096, false), 4096);
            assertTrue(java.util.Arrays.equals(new byte[4096], r.data()), "Write Zeroes reads back as zeroes");
        } finally {
            target.close();
        }
        assertTrue(Files.size(file) == 2L << 30, "the file keeps its size");
    }
}

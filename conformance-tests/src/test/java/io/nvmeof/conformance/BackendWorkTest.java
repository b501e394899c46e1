package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Backend work that runs off the poll groups (Write Zeroes, Deallocate and Flush on backends that may block): a
 * command whose queue closed before it ran never runs, one already running finishes before the host's next
 * association is accepted or a reset completes, a closed queue's work does not pile up, one namespace's slow work
 * holds up no other namespace, an Abort never claims a FUA write that landed, and removal and shutdown wait for the
 * work and flush every namespace (issue 29, findings 1, 4, 5, 6, 8 and 9).
 */
@Timeout(120)
class BackendWorkTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:backend-work";
    private static final String OTHER_HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-1111-2222-3333-555555555555";
    private static final int BLOCK = 512;

    /** A backend whose space changes (and, when asked, flushes) wait at gates; it records what reached it. */
    static final class GatedBackend implements BlockBackend {
        final RamBackend ram = new RamBackend(4 << 20);
        final CountDownLatch spaceGate = new CountDownLatch(1);
        final AtomicInteger spaceEntered = new AtomicInteger();
        /** How many flushes, counted from the first, wait at {@link #flushGate}. */
        volatile int flushesToGate;
        final CountDownLatch flushGate = new CountDownLatch(1);
        final AtomicInteger flushEntered = new AtomicInteger();
        final AtomicInteger flushes = new AtomicInteger();
        volatile IOException flushFailure;
        /** "zeroes OFFSET" and "deallocate OFFSET" as each returned, in order. */
        final List<String> done = new CopyOnWriteArrayList<>();
        final CountDownLatch closed = new CountDownLatch(1);

        @Override public long sizeBytes() { return ram.sizeBytes(); }
        @Override public void read(long offset, ByteBuffer dst) { ram.read(offset, dst); }
        @Override public void write(long offset, ByteBuffer src) { ram.write(offset, src); }
        @Override public boolean mayBlock(long bytes) { return true; }
        @Override public String describe() { return "gated"; }

        @Override
        public void close() {
            closed.countDown();
        }

        private void await(CountDownLatch gate) throws IOException {
            try {
                if (!gate.await(60, TimeUnit.SECONDS)) {
                    throw new IOException("gate never opened");
                }
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
        }

        @Override
        public void flush() throws IOException {
            if (flushEntered.incrementAndGet() <= flushesToGate) {
                await(flushGate);
            }
            if (flushFailure != null) {
                throw flushFailure;
            }
            flushes.incrementAndGet();
        }

        @Override
        public void writeZeroes(long offset, long length) throws IOException {
            spaceChange("zeroes", offset, length);
        }

        @Override
        public void deallocate(long offset, long length) throws IOException {
            spaceChange("deallocate", offset, length);
        }

        private void spaceChange(String what, long offset, long length) throws IOException {
            spaceEntered.incrementAndGet();
            await(spaceGate);
            ram.writeZeroes(offset, length); // both read as zeroes afterwards
            done.add(what + " " + offset);
        }

        void openGates() {
            spaceGate.countDown();
            flushGate.countDown();
        }
    }

    private NvmeTarget target;
    private final List<GatedBackend> backends = new ArrayList<>();
    private final List<RawTcpHost> hosts = new ArrayList<>();

    /** A target (one poll group, as the reviews' probes ran) with RAM namespace 1 and gated namespaces 2, 3... */
    private void start(int gatedNamespaces) throws IOException {
        target = NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 16, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "4MiB", BLOCK, null, null))))));
        for (int i = 0; i < gatedNamespaces; i++) {
            GatedBackend b = new GatedBackend();
            backends.add(b);
            target.core().subsystem(NQN).addNamespace(new Namespace(2 + i, b, BLOCK, UUID.randomUUID()));
        }
    }

    @AfterEach
    void stop() throws IOException {
        backends.forEach(GatedBackend::openGates);
        for (RawTcpHost h : hosts) {
            h.close();
        }
        if (target != null) {
            target.close();
        }
    }

    /** Admin queue and I/O queue 1 (SQSIZE 127) of a new controller of {@code hostNqn}. */
    private RawTcpHost[] controller(String hostNqn) throws IOException {
        RawTcpHost admin = host();
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NQN, hostNqn, 0);
        assertEquals(Status.SUCCESS, c.status(), "admin Connect");
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        admin.cntlid = c.dw0() & 0xFFFF;
        RawTcpHost io = host();
        io.initialize(0);
        assertEquals(Status.SUCCESS, io.connect(1, 127, admin.cntlid, NQN, hostNqn, 0).status(), "I/O Connect");
        return new RawTcpHost[] {admin, io};
    }

    private RawTcpHost host() throws IOException {
        RawTcpHost h = new RawTcpHost(target.tcpPort(0));
        hosts.add(h);
        return h;
    }

    private static void send(RawTcpHost h, byte[] sqe, int cid, byte[] data) throws IOException {
        RawTcpHost.cmd(sqe).cid(cid);
        h.send(h.capsule(sqe, data));
    }

    private static byte[] deallocate(long nsid) {
        return RawTcpHost.deallocateSqe(nsid, 1);
    }

    private static byte[] range(long slba, long blocks) {
        return RawTcpHost.ranges(slba, blocks);
    }

    private static byte[] writeZeroes(long nsid, long slba, int blocks) {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.IO_WRITE_ZEROES).nsid(nsid).slba(slba).blockCount(blocks);
        return sqe;
    }

    private static byte[] flush(long nsid) {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.IO_FLUSH).nsid(nsid);
        return sqe;
    }

    private static byte[] filled(int value) {
        byte[] b = new byte[BLOCK];
        Arrays.fill(b, (byte) value);
        return b;
    }

    private static void write(RawTcpHost io, long nsid, long lba, byte[] block) throws IOException {
        assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, nsid, lba, 1, BLOCK, true), block)
                .status(), "write of LBA " + lba);
    }

    private static byte[] read(RawTcpHost io, long nsid, long lba) throws IOException {
        RawTcpHost.Reply r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, nsid, lba, 1, BLOCK, false), BLOCK);
        assertEquals(Status.SUCCESS, r.cqe().status(), "read of LBA " + lba);
        return r.data();
    }

    private static Map<Integer, Completion> responses(RawTcpHost h, int n) throws IOException {
        return h.responses(n);
    }

    /** Whether a PDU arrives on {@code h} within {@code ms} (it is consumed). */
    private static boolean anythingWithin(RawTcpHost h, int ms) throws IOException {
        h.soTimeout(ms);
        try {
            h.readPdu();
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } finally {
            h.soTimeout(5000);
        }
    }

    /** Work waiting in the target's lanes for a backend thread (every thread serving them busy). */
    private long waiting() {
        return io.nvmeof.tgt.core.TargetCore.backendWorkWaiting(target.core().subsystem(NQN).namespaces());
    }

    /**
     * Sends deallocations of namespace {@code nsid} (CIDs from {@code firstCid}) until one waits for a thread, so every
     * backend thread that would serve it is busy at the gate; returns how many were sent (the last one waits).
     */
    private int saturateSpace(RawTcpHost io, long nsid, GatedBackend b, int firstCid) throws Exception {
        long before = waiting();
        for (int i = 0; i < 64; i++) {
            int entered = b.spaceEntered.get();
            send(io, deallocate(nsid), firstCid + i, range(1024 + i, 1));
            assertTrue(TestTargets.eventually(() -> b.spaceEntered.get() > entered || waiting() > before, 10_000),
                    "the deallocation started or waits");
            if (waiting() > before) {
                return i + 1;
            }
        }
        throw new AssertionError("64 deallocations all started: nothing waits");
    }

    /**
     * Finding 1: a host's Write Zeroes waits behind another host's slow work; the host gives up on it (a timeout) and
     * closes its connections, reconnects, writes the block and is acknowledged. The Write Zeroes must never run: it
     * erased the acknowledged write about a second later.
     */
    @Test
    void aCommandWhoseQueueClosedBeforeItRanNeverRuns() throws Exception {
        start(1);
        GatedBackend b = backends.get(0);
        RawTcpHost[] busy = controller(OTHER_HOST);
        int sent = saturateSpace(busy[1], 2, b, 100);

        RawTcpHost[] timedOut = controller(RawTcpHost.HOSTNQN);
        write(timedOut[1], 2, 0, filled(0x11));
        send(timedOut[1], writeZeroes(2, 0, 8), 7, null);
        assertFalse(anythingWithin(timedOut[1], 300), "the Write Zeroes waits behind the other host's work");
        timedOut[1].close();
        timedOut[0].close();

        RawTcpHost[] again = controller(RawTcpHost.HOSTNQN);
        write(again[1], 2, 0, filled(0xA5));
        assertArrayEquals(filled(0xA5), read(again[1], 2, 0));

        b.spaceGate.countDown();
        assertEquals(sent, responses(busy[1], sent).size(), "the other host's work completes");
        Thread.sleep(300); // time for a late Write Zeroes to land, had it been kept
        assertArrayEquals(filled(0xA5), read(again[1], 2, 0), "the acknowledged write is still there");
        assertEquals(sent, b.done.size(), "only the other host's work ran: " + b.done);
    }

    /**
     * Finding 1, the other half: a command already running when its host ended the association finishes before the
     * host's next association is accepted, so nothing the host writes through it can be overwritten by the old one.
     * Another host is not held.
     */
    @Test
    void aRunningCommandOfAnEndedAssociationFinishesBeforeTheHostConnectsAgain() throws Exception {
        start(1);
        GatedBackend b = backends.get(0);
        RawTcpHost[] first = controller(RawTcpHost.HOSTNQN);
        write(first[1], 2, 0, filled(0x11));
        send(first[1], writeZeroes(2, 0, 8), 7, null);
        assertTrue(TestTargets.eventually(() -> b.spaceEntered.get() == 1, 10_000), "the Write Zeroes is running");
        first[1].close();
        first[0].close();

        RawTcpHost[] other = controller(OTHER_HOST); // another host's Connect is answered at once
        RawTcpHost admin = host();
        admin.initialize(0);
        send(admin, RawTcpHost.connectSqe(0, 31, 0), 1, RawTcpHost.connectData(0xFFFF, NQN, RawTcpHost.HOSTNQN));
        assertFalse(anythingWithin(admin, 700), "the host's next Connect waits for its running Write Zeroes");
        assertTrue(b.done.isEmpty());

        b.spaceGate.countDown();
        Completion connected = admin.awaitResponse();
        assertEquals(Status.SUCCESS, connected.status(), "then it is accepted");
        assertEquals(List.of("zeroes 0"), b.done, "after the Write Zeroes finished");
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        RawTcpHost io = host();
        io.initialize(0);
        assertEquals(Status.SUCCESS, io.connect(1, 31, connected.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
        write(io, 2, 0, filled(0xA5));
        Thread.sleep(200);
        assertArrayEquals(filled(0xA5), read(io, 2, 0));
        assertArrayEquals(filled(0xA5), read(other[1], 2, 0));
    }

    /** A reset (CC.EN 1 -> 0) completes, CSTS.RDY reading 0, only once the work its I/O queues handed off is done. */
    @Test
    void aResetCompletesOnlyOnceItsWorkIsDone() throws Exception {
        start(1);
        GatedBackend b = backends.get(0);
        RawTcpHost[] c = controller(RawTcpHost.HOSTNQN);
        send(c[1], deallocate(2), 7, range(0, 8));
        assertTrue(TestTargets.eventually(() -> b.spaceEntered.get() == 1, 10_000), "the deallocation is running");
        assertEquals(Status.SUCCESS, c[0].propertySet(ControllerRegisters.CC, 0).status(), "CC.EN = 0");
        for (int i = 0; i < 5; i++) {
            assertEquals(1, c[0].propertyGet(ControllerRegisters.CSTS, 4).dw0() & 1,
                    "CSTS.RDY stays 1 while the deallocation runs");
            Thread.sleep(60);
        }
        b.spaceGate.countDown();
        assertTrue(TestTargets.eventually(() -> {
            try {
                return (c[0].propertyGet(ControllerRegisters.CSTS, 4).dw0() & 1) == 0;
            } catch (IOException e) {
                return false;
            }
        }, 10_000), "CSTS.RDY 0 once it finished");
        assertEquals(1, b.done.size());
    }

    /**
     * Finding 4: hosts that queue much slow work and disconnect leave none of it behind: what had not started never
     * runs, so the work queued stays bounded by the slots of live queues.
     */
    @Test
    void workOfAClosedQueueThatHadNotStartedIsDropped() throws Exception {
        start(1);
        GatedBackend b = backends.get(0);
        for (int round = 0; round < 4; round++) { // four hosts, one after the other
            RawTcpHost[] h = controller("nqn.2014-08.org.nvmexpress:uuid:00000000-1111-2222-3333-00000000000" + round);
            for (int i = 0; i < 100; i++) {
                send(h[1], deallocate(2), 200 + i, range(i, 1));
            }
            h[0].propertyGet(ControllerRegisters.CSTS, 4); // an admin round trip
            assertTrue(TestTargets.eventually(() -> b.spaceEntered.get() >= 1, 10_000));
            h[1].close();
            h[0].close();
        }
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == 0, 10_000), "the target saw the closes");
        int started = b.spaceEntered.get();
        assertTrue(started < 100, started + " deallocations started");
        b.spaceGate.countDown();
        Thread.sleep(500);
        assertEquals(started, b.done.size(), "only those that had started when their queues closed ran");
        RawTcpHost[] fresh = controller(RawTcpHost.HOSTNQN);
        assertEquals(Status.SUCCESS, fresh[1].execute(flush(2), null).status());
        assertEquals(started, b.done.size(), "and nothing more ran later");
    }

    /**
     * Finding 5: one namespace's slow work holds up no other namespace's Flush or Write Zeroes, and no Flush of its
     * own: a flush covers the writes completed before it, not space changes still queued.
     */
    @Test
    void slowWorkOnOneNamespaceDelaysNoOtherWork() throws Exception {
        start(2);
        GatedBackend slow = backends.get(0);
        backends.get(1).spaceGate.countDown(); // the other namespace is not slow
        RawTcpHost[] busy = controller(OTHER_HOST);
        saturateSpace(busy[1], 2, slow, 100);
        for (int i = 0; i < 8; i++) {
            send(busy[1], writeZeroes(2, 16 * i, 16), 300 + i, null); // more waiting work
        }
        RawTcpHost[] c = controller(RawTcpHost.HOSTNQN);
        assertEquals(Status.SUCCESS, c[1].execute(flush(3), null).status(), "Flush of another namespace");
        assertEquals(Status.SUCCESS, c[1].execute(writeZeroes(3, 0, 8), null).status(), "and its Write Zeroes");
        assertEquals(1, backends.get(1).done.size());
        assertEquals(Status.SUCCESS, c[1].execute(flush(2), null).status(), "Flush of the busy namespace itself");
    }

    /**
     * Finding 9: the flush that follows a FUA write whose data is stored is not withdrawn by an Abort (the write
     * landed and cannot be taken back); a plain Flush waiting in the same line is.
     */
    @Test
    void anAbortNeverClaimsAFuaWriteThatLanded() throws Exception {
        start(1);
        GatedBackend b = backends.get(0);
        b.flushesToGate = Integer.MAX_VALUE;
        RawTcpHost[] c = controller(RawTcpHost.HOSTNQN);
        int sent = 0;
        for (; sent < 64; sent++) { // Flushes until one waits: every thread serving the namespace's flushes is busy
            int entered = b.flushEntered.get();
            send(c[1], flush(2), 100 + sent, null);
            assertTrue(TestTargets.eventually(() -> b.flushEntered.get() > entered || waiting() > 0, 10_000));
            if (waiting() > 0) {
                break;
            }
        }
        int waitingFlush = 100 + sent;
        byte[] fua = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 2, 5, 1, BLOCK, true);
        RawTcpHost.cmd(fua).cdw12(RawTcpHost.cmd(fua).cdw12() | 1 << 30);
        send(c[1], fua, 88, filled(0x5F));
        assertFalse(anythingWithin(c[1], 300), "the FUA write waits for its flush");

        byte[] abort = RawTcpHost.sqe();
        RawTcpHost.cmd(abort).opcode(Opcodes.ADMIN_ABORT).cdw10(1 | 88 << 16);
        Completion a = c[0].execute(abort, null);
        assertEquals(Status.SUCCESS, a.status());
        assertEquals(1, a.dw0() & 1, "the FUA write is not aborted: its data is stored");
        RawTcpHost.cmd(abort).cdw10(1 | waitingFlush << 16);
        assertEquals(0, c[0].execute(abort, null).dw0() & 1, "the Flush waiting in line is");

        b.flushGate.countDown();
        Map<Integer, Completion> r = responses(c[1], sent + 2);
        assertEquals(Status.SUCCESS, r.get(88).status(), "the FUA write completes as written");
        assertEquals(Status.ABORT_REQUESTED, r.get(waitingFlush).status());
        assertArrayEquals(filled(0x5F), read(c[1], 2, 5));
    }

    /**
     * Finding 8: deleting a subsystem closes its namespaces' backends only after the commands in flight on them, a
     * running deallocation and a Flush of all namespaces among them, have finished.
     */
    @Test
    void removalClosesABackendOnlyAfterItsWorkAndAFlushOfAllNamespaces() throws Exception {
        start(2);
        GatedBackend dealloc = backends.get(0);
        GatedBackend flushed = backends.get(1);
        flushed.flushesToGate = 1; // the Flush of all namespaces; not the one that closes the removed namespace
        RawTcpHost[] c = controller(RawTcpHost.HOSTNQN);
        send(c[1], flush(0xFFFF_FFFFL), 9, null);
        assertTrue(TestTargets.eventually(() -> flushed.flushEntered.get() == 1, 10_000), "the Flush of all is running");
        target.live().removeNamespace(NQN, 3);
        assertFalse(flushed.closed.await(500, TimeUnit.MILLISECONDS), "not closed under the Flush of all namespaces");
        flushed.flushGate.countDown();
        assertEquals(Status.SUCCESS, c[1].awaitResponse().status(), "the Flush of all namespaces completes");
        assertTrue(flushed.closed.await(10, TimeUnit.SECONDS), "then the removed namespace closes");

        send(c[1], deallocate(2), 10, range(0, 8));
        assertTrue(TestTargets.eventually(() -> dealloc.spaceEntered.get() == 1, 10_000), "a deallocation is running");
        target.live().deleteSubsystem(NQN);
        assertFalse(dealloc.closed.await(500, TimeUnit.MILLISECONDS), "not closed under the running deallocation");
        dealloc.spaceGate.countDown();
        assertTrue(dealloc.closed.await(10, TimeUnit.SECONDS), "closed once it finished");
        assertEquals(List.of("deallocate 0"), dealloc.done);
    }

    /**
     * Finding 6: a shutdown flushes every namespace even when one fails, and says so: CSTS.CFS with SHST complete
     * (before, it stopped at the first failure and reported a clean shutdown).
     */
    @Test
    void aShutdownFlushesEveryNamespaceAndReportsOneThatFailed() throws Exception {
        start(2);
        backends.get(0).flushFailure = new IOException("EIO (test)");
        RawTcpHost[] c = controller(RawTcpHost.HOSTNQN);
        assertEquals(Status.SUCCESS, c[0].propertySet(ControllerRegisters.CC,
                ControllerRegisters.CC_ENABLE_DEFAULT | 1 << 14).status(), "CC.SHN = normal");
        assertTrue(TestTargets.eventually(() -> {
            try {
                return ((c[0].propertyGet(ControllerRegisters.CSTS, 4).dw0() >> 2) & 3) == 2;
            } catch (IOException e) {
                return false;
            }
        }, 10_000), "shutdown processing complete");
        assertEquals(1, backends.get(1).flushes.get(), "the namespace after the failing one was flushed");
        assertEquals(ControllerRegisters.CSTS_CFS, c[0].propertyGet(ControllerRegisters.CSTS, 4).dw0()
                & ControllerRegisters.CSTS_CFS, "the failure is reported: CSTS.CFS");
    }
}

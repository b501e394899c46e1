package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.nvmeof.netty.Allocators;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.File;
import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Many hosts at once, and hosts that come and go: a thousand connections with I/O on every controller, within bounded
 * memory (stated per queue), and connect/disconnect cycles that leave no file descriptor, thread, direct memory, Netty
 * buffer, queue or controller behind (SPDK's {@code connect_stress} and {@code connect_disconnect}).
 *
 * <p>{@code -Dscale.cycles=N} (default 10,000) and {@code -Dscale.controllers=N} (default 500: 1,000 connections) size
 * the runs; the figures are printed for docs/reliability.md.
 */
class ScaleTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:scale";
    private static final int MDTS = 1 << 20;
    private static final long PER_CONNECTION_LIMIT = 2L << 20;
    private static final long TOTAL_LIMIT = 320L << 20;
    private NvmeTarget target;
    private int port;

    @BeforeEach
    void start() throws Exception {
        // Memory limits as a deployment would set them: room for every connection of these tests, and a per-connection
        // limit that holds a queue of the largest size to one 1 MiB transfer besides its reservation.
        target = NvmeTarget.start(new TargetConfig(2, 4, 128, MDTS,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "64MiB", 512, null, null)))))
                .withMemoryLimits(PER_CONNECTION_LIMIT + "", TOTAL_LIMIT + ""));
        port = target.tcpPort(0);
    }

    @AfterEach
    void stop() {
        target.close();
    }

    /** Resources of this JVM (target and hosts both) that a leak would grow. */
    record Usage(int fds, int threads, long directBytes, long nettyDirectBytes, long heapBytes, int queues,
                 int controllers) {
        @Override
        public String toString() {
            return String.format("%d fds, %d threads, %.1f MiB JDK direct, %.1f MiB Netty direct, %.1f MiB heap,"
                            + " %d queues, %d controllers", fds, threads, directBytes / 1048576.0,
                    nettyDirectBytes / 1048576.0, heapBytes / 1048576.0, queues, controllers);
        }
    }

    private Usage usage() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        long direct = 0;
        for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) {
                direct = b.getMemoryUsed();
            }
        }
        String[] fds = new File("/proc/self/fd").list();
        long netty = ((ByteBufAllocatorMetricProvider) Allocators.dataPath()).metric().usedDirectMemory();
        return new Usage(fds == null ? -1 : fds.length, ManagementFactory.getThreadMXBean().getThreadCount(), direct,
                netty, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(),
                target.core().liveQueues(), target.core().liveControllers());
    }

    /** A controller with its admin queue and one I/O queue of {@code ioEntries} entries. */
    private RawTcpHost[] controller(int ioEntries) throws IOException {
        return controller(30_000, ioEntries);
    }

    /** A controller with keep-alive timeout {@code katoMs} (its timers run), and one I/O queue. */
    private RawTcpHost[] controller(long katoMs, int ioEntries) throws IOException {
        RawTcpHost admin = enabledAdminQueue(katoMs);
        return new RawTcpHost[] {admin, ioQueue(admin, 1, ioEntries, 0, 0)};
    }

    private RawTcpHost enabledAdminQueue(long katoMs) throws IOException {
        RawTcpHost admin = new RawTcpHost(port);
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, katoMs);
        assertEquals(Status.SUCCESS, c.status());
        admin.cntlid = c.dw0() & 0xFFFF;
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        return admin;
    }

    /** I/O queue {@code qid} of the admin queue's controller; {@code receiveBuffer} > 0 makes a host slow to read. */
    private RawTcpHost ioQueue(RawTcpHost admin, int qid, int entries, int digest, int receiveBuffer) throws IOException {
        RawTcpHost io = new RawTcpHost(port, receiveBuffer);
        io.initialize(digest);
        assertEquals(Status.SUCCESS, io.connect(qid, entries - 1, admin.cntlid, NQN, RawTcpHost.HOSTNQN, 0).status());
        return io;
    }

    private static void writeAndReadBack(RawTcpHost io, long lba, int seed) throws IOException {
        byte[] data = new byte[512];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (seed + i);
        }
        assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, lba, 1, 512, true), data).status());
        RawTcpHost.Reply r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, lba, 1, 512, false), 512);
        assertEquals(Status.SUCCESS, r.cqe().status());
        assertArrayEquals(data, r.data(), "block " + lba);
    }

    private void settle(Usage base) throws InterruptedException {
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == base.queues()
                && target.core().liveControllers() == base.controllers(), 20_000), "queues and controllers gone");
        assertTrue(TestTargets.eventually(() -> target.core().memory().used() == 0, 10_000),
                "memory reservations given back: " + target.core().memory().used() + " B still counted");
    }

    @Test
    void aThousandConnectionsWithIoOnEveryController() throws Exception {
        int controllers = Math.min(Integer.getInteger("scale.controllers", 500), controllersTheFdLimitAllows());
        Usage base = usage();
        List<RawTcpHost[]> hosts = new ArrayList<>();
        try {
            for (int i = 0; i < controllers; i++) {
                hosts.add(controller(32));
            }
            Usage idle = usage();
            // What the target's memory limits count for these queues (their reservations) is at least what they
            // were measured to cost, both ends of each connection together: the limits bound real memory.
            long reservedPerQueue = target.core().memory().used() / (2L * controllers);
            long idlePerQueue = (idle.heapBytes() + idle.directBytes() + idle.nettyDirectBytes()
                    - base.heapBytes() - base.directBytes() - base.nettyDirectBytes()) / (2L * controllers);
            System.out.printf("scale: reserved against maxMemory per queue %.1f KiB; measured idle %.1f KiB%n",
                    reservedPerQueue / 1024.0, idlePerQueue / 1024.0);
            assertTrue(idlePerQueue <= reservedPerQueue, "measured " + idlePerQueue + " B per queue, reserved "
                    + reservedPerQueue + " B");
            assertEquals(base.queues() + 2 * controllers, idle.queues());
            assertEquals(base.controllers() + controllers, idle.controllers());
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < controllers; i++) {
                    writeAndReadBack(hosts.get(i)[1], i, round * 7 + i);
                }
                for (int i = 0; i < controllers; i += 50) {
                    assertEquals(Status.SUCCESS, hosts.get(i)[0].execute(keepAlive(), null).status());
                }
            }
            Usage active = usage();
            int queues = 2 * controllers;
            System.out.printf("scale: %d controllers, %d connections; base %s; idle %s; after I/O %s;"
                            + " per queue idle: %.1f KiB heap + %.1f KiB direct; after I/O: %.1f KiB heap + %.1f KiB direct%n",
                    controllers, queues, base, idle, active,
                    (idle.heapBytes() - base.heapBytes()) / 1024.0 / queues,
                    (idle.directBytes() + idle.nettyDirectBytes() - base.directBytes() - base.nettyDirectBytes()) / 1024.0 / queues,
                    (active.heapBytes() - base.heapBytes()) / 1024.0 / queues,
                    (active.directBytes() + active.nettyDirectBytes() - base.directBytes() - base.nettyDirectBytes()) / 1024.0 / queues);
            long perQueue = (active.heapBytes() + active.directBytes() + active.nettyDirectBytes()
                    - base.heapBytes() - base.directBytes() - base.nettyDirectBytes()) / queues;
            assertTrue(perQueue < 256 << 10, "memory per queue, both sides of the connection: " + perQueue + " B");
        } finally {
            for (RawTcpHost[] h : hosts) {
                h[1].close();
                h[0].close();
            }
        }
        settle(base);
    }

    /**
     * Each controller here holds four file descriptors (two connections, both ends in this JVM): on a machine whose
     * {@code ulimit -n} is lower than the run needs, it runs as many as fit, and says so.
     */
    private static int controllersTheFdLimitAllows() throws IOException {
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                String soft = line.substring("Max open files".length()).trim().split("\\s+")[0];
                if (!soft.equals("unlimited")) {
                    int fit = (Integer.parseInt(soft) - 256) / 4;
                    if (fit < 500) {
                        System.out.println("scale: ulimit -n " + soft + " allows " + fit + " controllers here");
                    }
                    return Math.max(1, fit);
                }
            }
        }
        return Integer.MAX_VALUE;
    }

    private static byte[] keepAlive() {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_KEEP_ALIVE);
        return sqe;
    }

    /**
     * Hostile and broken hosts among a thousand connections (issue 15, item 3), each kind ten times over, while the
     * good controllers write and read back on every I/O queue: H2CData for a transfer never asked for, and beyond the
     * R2T's window, end that connection with the FES the specification names; queues of the largest size filled with
     * the largest writes whose data never comes hold one transfer each (the per-connection limit); hosts that ask for
     * 1 MiB reads and never read them hold at most their limit, so the target's memory stays bounded; controllers
     * that fall silent are torn down at keep-alive expiry with their I/O queues; connections that never send ICReq or
     * Connect are dropped at the deadline (10 s). Afterwards every hostile queue and its memory is gone and the good
     * controllers' data is intact.
     */
    @Test
    void hostileHostsAmongAThousandConnectionsHurtOnlyThemselves() throws Exception {
        int kind = 10; // hosts of each hostile kind: 100 connections in all
        int goodControllers = Math.min(Integer.getInteger("scale.controllers", 500), controllersTheFdLimitAllows()) - 50;
        Usage base = usage();
        List<RawTcpHost[]> good = new ArrayList<>();
        List<RawTcpHost> hostile = new ArrayList<>();
        try {
            for (int i = 0; i < goodControllers; i++) {
                good.add(controller(32));
            }
            long goodReserved = target.core().memory().used();
            List<RawTcpHost> neverConnect = new ArrayList<>();
            for (int i = 0; i < 3 * kind; i++) {
                RawTcpHost h = new RawTcpHost(port);
                if (i % 3 == 0) {
                    h.initialize(0); // ICReq, then nothing
                }
                neverConnect.add(h);
            }
            hostile.addAll(neverConnect);
            List<RawTcpHost[]> expiring = new ArrayList<>();
            for (int i = 0; i < kind; i++) {
                RawTcpHost[] c = controller(1000, 32); // KATO 1 s, then silence
                expiring.add(c);
                hostile.addAll(List.of(c));
            }
            // Hostile controllers, one queue of each kind per controller.
            List<RawTcpHost> unsolicited = new ArrayList<>();
            List<RawTcpHost> outOfWindow = new ArrayList<>();
            List<RawTcpHost> largest = new ArrayList<>();
            List<RawTcpHost> neverReads = new ArrayList<>();
            for (int i = 0; i < kind; i++) {
                RawTcpHost admin = enabledAdminQueue(30_000);
                hostile.add(admin);
                unsolicited.add(ioQueue(admin, 1, 32, 0, 0));
                outOfWindow.add(ioQueue(admin, 2, 32, 0, 0));
                // Data digests: the data goes through the target's buffers, which the limits count.
                largest.add(ioQueue(admin, 3, 128, 2, 0));
                neverReads.add(ioQueue(admin, 4, 32, 2, 16 << 10));
            }
            hostile.addAll(unsolicited);
            hostile.addAll(outOfWindow);
            hostile.addAll(largest);
            hostile.addAll(neverReads);
            long directBefore = usage().directBytes() + usage().nettyDirectBytes();

            for (RawTcpHost h : unsolicited) {
                h.send(h.h2cData(1, 77, 0, new byte[512], true));
            }
            for (RawTcpHost h : outOfWindow) {
                byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 32, 16384, false);
                RawTcpHost.cmd(sqe).cid(42);
                h.send(h.capsule(sqe, null));
            }
            for (RawTcpHost h : largest) {
                for (int i = 0; i < 128; i++) {
                    byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, (long) i * 2048, 2048, MDTS, false);
                    RawTcpHost.cmd(sqe).cid(i);
                    h.send(h.capsule(sqe, null));
                }
            }
            for (RawTcpHost h : neverReads) {
                for (int i = 0; i < 64; i++) {
                    byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_READ, 1, (long) i * 2048, 2048, MDTS, false);
                    RawTcpHost.cmd(sqe).cid(i);
                    h.send(h.capsule(sqe, null));
                }
            }
            // The good controllers meanwhile: every one writes and reads back, and keeps its controller alive.
            for (int i = 0; i < good.size(); i++) {
                writeAndReadBack(good.get(i)[1], i, 11 + i);
                assertEquals(Status.SUCCESS, good.get(i)[0].execute(keepAlive(), null).status());
            }

            for (RawTcpHost h : unsolicited) {
                assertEquals(TermReqPdu.FES_INVALID_HEADER_FIELD, termination(h), "H2CData with a tag never sent");
            }
            for (RawTcpHost h : outOfWindow) {
                byte[] pdu = h.readPdu();
                assertEquals(PduHeader.TYPE_R2T, pdu[0]);
                R2TPdu r2t = new R2TPdu().wrap(new UnsafeBuffer(pdu), 0);
                h.send(h.h2cData(42, r2t.ttag(), 12288, new byte[8192], true));
                assertEquals(TermReqPdu.FES_DATA_OUT_OF_RANGE, termination(h), "H2CData beyond the R2T");
            }
            for (RawTcpHost h : largest) {
                assertEquals(1, h.countR2Ts(300), "R2Ts to a queue whose limit holds one 1 MiB transfer");
            }
            long used = target.core().memory().used();
            assertTrue(used <= TOTAL_LIMIT, "the target's memory: " + used + " of " + TOTAL_LIMIT);
            long grown = usage().directBytes() + usage().nettyDirectBytes() - directBefore;
            System.out.printf("scale, hostile: %d good controllers; %d MiB of unread reads and %d MiB of writes"
                            + " without data asked for; memory counted %.1f MiB (limit %d MiB, good reservations"
                            + " %.1f MiB); direct memory grew %.1f MiB%n", good.size(), kind * 64, kind * 128,
                    used / 1048576.0, TOTAL_LIMIT >> 20, goodReserved / 1048576.0, grown / 1048576.0);
            assertTrue(grown < 64L << 20, "direct memory grew by " + (grown >> 20) + " MiB");
            for (RawTcpHost[] c : expiring) {
                assertTrue(c[0].closedByTarget(), "admin queue closed at keep-alive expiry");
                assertTrue(c[1].closedByTarget(), "its I/O queue with it");
            }
            for (RawTcpHost h : neverConnect) {
                h.soTimeout(15_000);
                assertTrue(h.closedByTarget(), "a connection that never connects is dropped at the deadline");
            }
            // The good controllers again, their earlier data intact; then the hostile ones leave and take their
            // queues, controllers and memory with them.
            for (int i = 0; i < good.size(); i++) {
                RawTcpHost.Reply r = good.get(i)[1].executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, i, 1, 512, false), 512);
                assertEquals(Status.SUCCESS, r.cqe().status());
                assertEquals((byte) (11 + i), r.data()[0], "block " + i);
                assertEquals(Status.SUCCESS, good.get(i)[0].execute(keepAlive(), null).status());
            }
            for (RawTcpHost h : hostile) {
                h.close();
            }
            assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == base.queues() + 2 * good.size()
                    && target.core().liveControllers() == base.controllers() + good.size(), 20_000),
                    "hostile queues and controllers gone");
            assertTrue(TestTargets.eventually(() -> target.core().memory().used() == goodReserved, 10_000),
                    "hostile memory given back: " + target.core().memory().used() + " vs " + goodReserved);
            for (int i = 0; i < good.size(); i++) {
                writeAndReadBack(good.get(i)[1], i, 23 + i);
            }
            assertEquals(0, target.core().internalErrors());
        } finally {
            for (RawTcpHost h : hostile) {
                h.close();
            }
            for (RawTcpHost[] h : good) {
                h[1].close();
                h[0].close();
            }
        }
        settle(base);
        assertEquals(List.of(), LeakTracker.collect(), "Netty buffers never released");
    }

    /** The FES of the C2HTermReq the target ends this connection with; the connection must then close. */
    private static int termination(RawTcpHost h) throws IOException {
        byte[] pdu = h.readPdu();
        assertEquals(PduHeader.TYPE_C2H_TERM_REQ, pdu[0], "expected C2HTermReq, got " + PduHeader.typeName(pdu[0]));
        assertTrue(h.closedByTarget(), "closed after C2HTermReq");
        return new TermReqPdu().<TermReqPdu>wrap(new UnsafeBuffer(pdu), 0).fes();
    }

    @Test
    void connectDisconnectCyclesLeaveNothingBehind() throws Exception {
        int cycles = Integer.getInteger("scale.cycles", 10_000);
        // A first round warms the pools, loads the classes and starts the loops: leaks are growth from here on.
        for (int i = 0; i < 20; i++) {
            cycle(i);
        }
        Usage base = usage();
        int half = cycles / 2;
        Usage middle = null;
        long start = System.nanoTime();
        for (int i = 0; i < cycles; i++) {
            cycle(i);
            if (i + 1 == half) {
                settle(base);
                middle = usage();
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        settle(base);
        assertTrue(TestTargets.eventually(() -> {
            try {
                return usage().fds() <= base.fds();
            } catch (InterruptedException e) {
                return false;
            }
        }, 10_000), "file descriptors back to " + base.fds() + ": " + usage().fds());
        Usage after = usage();
        System.out.printf("scale: %d connect/disconnect cycles (admin + I/O queue, a write and a read each) in %.1f s;"
                + " before %s; halfway %s; after %s%n", cycles, seconds, base, middle, after);
        // A helper thread the JDK or Netty starts on demand (and stops when idle) may be running at the end: wait.
        assertTrue(TestTargets.eventually(() -> ManagementFactory.getThreadMXBean().getThreadCount() <= base.threads(),
                10_000), "threads: " + base.threads() + " -> " + ManagementFactory.getThreadMXBean().getThreadCount());
        assertEquals(base.queues(), after.queues());
        assertEquals(base.controllers(), after.controllers());
        // Pools keep what they grew to; a leak grows with the cycles, so the second half must not add to the first.
        long slack = 4 << 20;
        assertTrue(after.directBytes() <= middle.directBytes() + slack, "JDK direct memory grows: " + middle + " -> " + after);
        assertTrue(after.nettyDirectBytes() <= middle.nettyDirectBytes() + slack,
                "Netty direct memory grows: " + middle + " -> " + after);
        assertEquals(List.of(), LeakTracker.collect(), "Netty buffers never released");
    }

    private void cycle(int i) throws IOException {
        RawTcpHost[] c = controller(32);
        try {
            writeAndReadBack(c[1], i % 4096, i);
        } finally {
            c[1].close();
            c[0].close();
        }
    }
}

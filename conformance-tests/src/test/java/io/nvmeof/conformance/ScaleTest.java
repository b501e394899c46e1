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
import io.nvmeof.target.NvmeTarget;
import io.nvmeof.target.config.TargetConfig;
import io.nvmeof.target.config.TargetConfig.ListenerConfig;
import io.nvmeof.target.config.TargetConfig.NamespaceConfig;
import io.nvmeof.target.config.TargetConfig.SubsystemConfig;
import java.io.File;
import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
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
    private NvmeTarget target;
    private int port;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(new TargetConfig(2, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "64MiB", 512, null, null))))));
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
        RawTcpHost admin = new RawTcpHost(port);
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 30_000); // keep-alive timers run
        assertEquals(Status.SUCCESS, c.status());
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        RawTcpHost io = new RawTcpHost(port);
        io.initialize(0);
        assertEquals(Status.SUCCESS, io.connect(1, ioEntries - 1, c.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
        return new RawTcpHost[] {admin, io};
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

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.MemoryBudget;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The per-connection and total memory limits (maxConnectionMemory, maxMemory): a Connect that asks for more is refused
 * with the status a host acts on, and commands beyond them wait, complete intact, and never take the target past them.
 *
 * <p>The sizes here: transfers of at most 128 KiB; H2CData PDUs of at most 32 KiB, so each queue reserves
 * 16 KiB + 1 KiB per request slot (two per entry) + 32.25 KiB of receive buffer (see {@link MemoryBudget}).
 */
class MemoryLimitTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:memory";
    private static final int MDTS = 128 << 10;
    private static final long KIB = 1024;
    private NvmeTarget target;
    private final List<AutoCloseable> open = new ArrayList<>();

    private int start(String perConnection, String total) throws Exception {
        target = NvmeTarget.start(new TargetConfig(2, 4, 128, MDTS,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null)))))
                .withMemoryLimits(perConnection, total));
        return target.tcpPort(0);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
        if (target != null) {
            target.close();
        }
    }

    /** The most the target's memory accounting showed while it ran, sampled as fast as a thread can. */
    private final class PeakSampler {
        private final AtomicLong peak = new AtomicLong();
        private final AtomicBoolean sampling = new AtomicBoolean(true);
        private final Thread thread = new Thread(() -> {
            while (sampling.get()) {
                peak.accumulateAndGet(target.core().memory().used(), Math::max);
                Thread.onSpinWait();
            }
        }, "memory-sampler");

        PeakSampler() {
            thread.setDaemon(true); // a failed assertion before stop() leaves nothing running
            thread.start();
        }

        void stop() throws InterruptedException {
            sampling.set(false);
            thread.join();
        }

        long get() {
            return peak.get();
        }
    }

    private static long reservation(int entries) {
        return (16 + 2L * entries) * KIB + 32 * KIB + 256;
    }

    private RawTcpHost host(int port) throws Exception {
        RawTcpHost h = new RawTcpHost(port);
        open.add(h);
        h.initialize(0);
        return h;
    }

    @Test
    void aQueueTooLargeForTheConnectionLimitIsRefusedOnSqsizeAndASmallerOneIsServed() throws Exception {
        // 320 KiB less one 128 KiB transfer leaves 192 KiB: queues up to 71 entries; 128 do not fit.
        int port = start("320KiB", null);
        RawTcpHost h = host(port);
        Completion c = h.connect(0, 127, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
        assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()));
        assertTrue(Status.dnr(c.status()), "the same Connect would fail again");
        assertEquals(FabricsCommand.SQSIZE, c.dw0(), "IATTR 0 (the SQE), IPO at SQSIZE");
        assertEquals(0, target.core().memory().used(), "a refused Connect keeps nothing");
        assertEquals(0, target.core().liveControllers());
        // The connection survives the refusal, and the largest queue the refusal names fits.
        c = h.connect(0, 70, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
        assertEquals(Status.SUCCESS, c.status());
        assertEquals(reservation(71), target.core().memory().used());
        h.close();
        assertTrue(TestTargets.eventually(() -> target.core().memory().used() == 0, 10_000), "given back on close");
    }

    @Test
    void aConnectBeyondTheTargetLimitIsControllerBusyUntilAnotherConnectionLeaves() throws Exception {
        // Reservations may take 1 MiB less one largest transfer (896 KiB): seven admin queues of 32 entries
        // (112.25 KiB each) fit, an eighth does not.
        int port = start("320KiB", "1MiB");
        List<RawTcpHost> admitted = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            RawTcpHost h = host(port);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status(), "host " + i);
            admitted.add(h);
        }
        assertEquals(7 * reservation(32), target.core().memory().used());
        RawTcpHost late = host(port);
        Completion c = late.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
        assertEquals(Status.CONNECT_CONTROLLER_BUSY, Status.code(c.status()));
        assertFalse(Status.dnr(c.status()), "the host may retry: memory comes back as connections leave");
        assertEquals(7, target.core().liveControllers());
        assertEquals(7 * reservation(32), target.core().memory().used());
        assertEquals(1, target.core().memory().refusedConnects());
        // A connection that has not connected holds no reservation; one that leaves gives its reservation back.
        admitted.get(3).close();
        assertTrue(TestTargets.eventually(() -> target.core().memory().used() == 6 * reservation(32), 10_000));
        assertEquals(Status.SUCCESS, late.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
        assertEquals(7 * reservation(32), target.core().memory().used());
    }

    @Test
    void commandsBeyondTheLimitsWaitAndCompleteIntact() throws Exception {
        // Data digests make every read and write go through a buffer of the target's (none is sent from or received
        // into the RAM namespace directly), so every command's data counts. Two hosts, each with one I/O queue of 32
        // entries and 32 commands of 128 KiB in flight: 8 MiB asked for at once, against a per-connection limit that
        // holds three transfers besides the queue's reservation and a total that holds two besides all four queues'.
        long perConnection = 512 * KIB;
        long total = 4 * reservation(32) + 2 * MDTS + 64 * KIB;
        int port = start("512KiB", total + "");
        List<NvmeofController> hosts = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            NvmeofController h = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                    ConnectOptions.builder().ioQueues(1).queueDepth(32).dataDigest(true).build());
            open.add(h);
            hosts.add(h);
        }
        long reserved = target.core().memory().used();
        assertEquals(4 * reservation(32), reserved);
        PeakSampler peak = new PeakSampler();
        int perHost = 32;
        int blocks = MDTS / 512;
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        List<ByteBuffer> written = new ArrayList<>();
        for (int h = 0; h < 2; h++) {
            NamespaceHandle ns = hosts.get(h).namespace(1);
            for (int i = 0; i < perHost; i++) {
                ByteBuffer src = ByteBuffer.allocateDirect(MDTS);
                for (int b = 0; b < MDTS; b += 8) {
                    src.putLong(b, (long) h << 48 | (long) i << 32 | b);
                }
                written.add(src);
                writes.add(ns.write((long) (h * perHost + i) * blocks, blocks, src));
            }
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        List<CompletableFuture<Void>> reads = new ArrayList<>();
        List<ByteBuffer> readBack = new ArrayList<>();
        for (int h = 0; h < 2; h++) {
            NamespaceHandle ns = hosts.get(h).namespace(1);
            for (int i = 0; i < perHost; i++) {
                ByteBuffer dst = ByteBuffer.allocateDirect(MDTS);
                readBack.add(dst);
                reads.add(ns.read((long) (h * perHost + i) * blocks, blocks, dst));
            }
        }
        CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        peak.stop();
        for (int i = 0; i < written.size(); i++) {
            byte[] want = new byte[MDTS];
            byte[] got = new byte[MDTS];
            written.get(i).get(0, want);
            readBack.get(i).get(0, got);
            assertArrayEquals(want, got, "command " + i);
        }
        assertTrue(peak.get() <= total, "peak " + peak.get() + " beyond the limit " + total);
        assertTrue(peak.get() > reserved, "data was charged (peak " + peak.get() + ")");
        assertTrue(target.core().memory().waits() > 0, "commands waited for memory another queue held");
        assertTrue(TestTargets.eventually(() -> target.core().memory().used() == reserved, 10_000),
                "every charge given back: " + target.core().memory().used() + " vs " + reserved);
        System.out.printf("memory limits: %d commands of 128 KiB on 2 queues, peak %d B of %d (per connection %d),"
                + " %d waits for the target's memory%n", 4 * perHost, peak.get(), total, perConnection,
                target.core().memory().waits());
    }

    @Test
    void oneConnectionNeverHoldsMoreThanItsLimit() throws Exception {
        // The total is ample; only the per-connection limit holds the queue back: its reservation plus at most three
        // 128 KiB transfers at once (512 KiB), however many the host sends.
        int port = start("512KiB", "64MiB");
        NvmeofController h = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                ConnectOptions.builder().ioQueues(1).queueDepth(32).dataDigest(true).build());
        open.add(h);
        long admin = reservation(32);
        long limit = admin + 512 * KIB;
        PeakSampler peak = new PeakSampler();
        NamespaceHandle ns = h.namespace(1);
        List<CompletableFuture<Void>> io = new ArrayList<>();
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < 32; i++) {
                ByteBuffer b = ByteBuffer.allocateDirect(MDTS);
                io.add(round % 2 == 0 ? ns.write((long) i * (MDTS / 512), MDTS / 512, b)
                        : ns.read((long) i * (MDTS / 512), MDTS / 512, b));
            }
            CompletableFuture.allOf(io.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        }
        peak.stop();
        assertTrue(peak.get() <= limit, "peak " + peak.get() + " beyond admin reservation + per-connection limit " + limit);
        assertTrue(peak.get() > admin + reservation(32) + MDTS, "more than one transfer ran at once: " + peak.get());
        assertEquals(0, target.core().memory().waits(), "only the queue's own limit held it back");
    }

    @Test
    void hostsThatNeverSendTheirWriteDataHoldOnlyTheirLimitAndOthersGoOn() throws Exception {
        // Four hostile hosts open the largest I/O queue allowed (128 entries) and fill it with 128 KiB writes whose
        // data they never send: each queue reserves 304.25 KiB, so its 512 KiB limit holds one transfer, and the
        // target sends one R2T per queue; the other 127 commands wait. A well-behaved host meanwhile does its I/O.
        long total = 4L << 20;
        int port = start("512KiB", "4MiB");
        List<RawTcpHost> hostile = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            RawTcpHost admin = host(port);
            Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.SUCCESS, c.status());
            assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC,
                    ControllerRegisters.CC_ENABLE_DEFAULT).status());
            RawTcpHost io = new RawTcpHost(port);
            open.add(io);
            io.initialize(2); // data digest: the write data would go through a buffer
            assertEquals(Status.SUCCESS, io.connect(1, 127, c.dw0() & 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
            for (int i = 0; i < 128; i++) {
                byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, (long) i * 256, 256, MDTS, false);
                RawTcpHost.cmd(sqe).cid(i);
                io.send(io.capsule(sqe, null));
            }
            hostile.add(io);
        }
        for (RawTcpHost io : hostile) {
            assertEquals(1, io.countR2Ts(300), "R2Ts sent to a host within its limit");
        }
        long held = target.core().memory().used();
        assertEquals(4 * (reservation(32) + reservation(128) + MDTS), held);
        NvmeofController good = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, NQN),
                ConnectOptions.builder().ioQueues(1).queueDepth(32).dataDigest(true).build());
        open.add(good);
        NamespaceHandle ns = good.namespace(1);
        List<CompletableFuture<Void>> io = new ArrayList<>();
        List<ByteBuffer> bufs = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(MDTS);
            b.putLong(0, i).putLong(MDTS - 8, ~i);
            bufs.add(b);
            io.add(ns.write(16384 + (long) i * 256, 256, b));
        }
        CompletableFuture.allOf(io.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        for (int i = 0; i < 32; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(MDTS);
            ns.read(16384 + (long) i * 256, 256, b).get(30, TimeUnit.SECONDS);
            assertEquals(bufs.get(i), b, "block range " + i);
        }
        assertTrue(target.core().memory().used() <= total);
        for (RawTcpHost h : hostile) {
            h.close();
        }
        open.removeAll(hostile);
        long goodOnly = 2 * reservation(32) + 4 * reservation(32); // the good host, and the hostile admin queues
        assertTrue(TestTargets.eventually(() -> target.core().memory().used() == goodOnly, 10_000),
                "the hostile I/O queues' memory given back: " + target.core().memory().used());
    }

    @Test
    void limitsThatCouldNotRunOneCommandAreRefusedAtStart() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> start("128KiB", null));
        assertTrue(e.getMessage().contains("maxConnectionMemory"), e.getMessage());
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> start("1MiB", "512KiB"));
        assertTrue(e.getMessage().contains("maxMemory"), e.getMessage());
        e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> start("lots", null));
        assertTrue(e.getMessage().startsWith("maxConnectionMemory: size 'lots'"), e.getMessage());
    }
}

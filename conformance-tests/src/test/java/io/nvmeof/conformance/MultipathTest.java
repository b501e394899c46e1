package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.MultipathNamespace.IoPolicy;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.QueueStatistics;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.log.AnaState;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 35 part 4: our initiator's multipath namespace over two controllers of our target, one through each of two
 * TCP listeners: ANA states read from the target steer the I/O, a path made inaccessible or removed mid-run fails
 * nothing, and the I/O comes back when the path does. Namespace 1 is in ANA group 1, optimized through listener 1 and
 * non-optimized through listener 2; namespace 2 (group 2) is another volume.
 */
@Timeout(120)
class MultipathTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:multipath";
    private static final int BLOCK = 4096;
    private static final int BLOCKS = 2048;

    NvmeTarget target;
    NvmeofController c1;
    NvmeofController c2;
    MultipathNamespace mp;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(new TargetConfig(1, 4, 64, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null),
                        new ListenerConfig(2, "tcp", "127.0.0.1", 0, null, null, null, null,
                                Map.of("1", "non-optimized"))),
                List.of(new SubsystemConfig(NQN, null, null, 8, true, null, List.of(
                        new NamespaceConfig(1L, "ram", "8MiB", BLOCK, null, null),
                        new NamespaceConfig(2L, "ram", "8MiB", BLOCK, null, null, null, null, null, null, 2))))));
        ConnectOptions opts = ConnectOptions.builder().ioQueues(2).queueDepth(32)
                .connectTimeout(Duration.ofSeconds(2)).commandTimeout(Duration.ofSeconds(10))
                .reconnectDelay(Duration.ofMillis(200)).ctrlLossTimeout(Duration.ofSeconds(60)).build();
        c1 = NvmeofController.connect(TransportId.tcp("127.0.0.1", target.tcpPort(0), NQN), opts);
        c2 = NvmeofController.connect(TransportId.tcp("127.0.0.1", target.tcpPort(1), NQN), opts);
    }

    @AfterEach
    void stop() {
        if (mp != null) {
            mp.close();
        }
        for (NvmeofController c : new NvmeofController[] {c1, c2}) {
            if (c != null) {
                c.close();
            }
        }
        target.close();
    }

    /** I/O commands the controller completed, over its queues: what went through this path. */
    static long commands(NvmeofController c) {
        long n = 0;
        for (QueueStatistics s : c.queueStatistics()) {
            n += s.commands();
        }
        return n;
    }

    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    MultipathNamespace multipath(IoPolicy policy) {
        mp = MultipathNamespace.of(List.of(c1.namespace(1), c2.namespace(1)), policy, Duration.ofSeconds(20));
        return mp;
    }

    static ByteBuffer pattern(long lba, long round) {
        ByteBuffer b = ByteBuffer.allocateDirect(BLOCK);
        for (int i = 0; i < BLOCK; i += 16) {
            b.putLong(i, lba);
            b.putLong(i + 8, round);
        }
        return b;
    }

    @Test
    void theAnaStatesAreReadAndTheOptimizedPathTakesAllIo() throws Exception {
        assertEquals(AnaState.OPTIMIZED, c1.namespace(1).anaState());
        assertEquals(AnaState.NON_OPTIMIZED, c2.namespace(1).anaState());
        assertEquals(1, c1.namespace(1).anaGroup());
        assertEquals(2, c2.namespace(2).anaGroup());
        assertEquals(AnaState.OPTIMIZED, c2.namespace(2).anaState(), "group 2 is optimized through listener 2");
        // Round robin would split the I/O between the paths if the ANA states did not steer it.
        MultipathNamespace m = multipath(IoPolicy.ROUND_ROBIN);
        long p1 = commands(c1);
        long p2 = commands(c2);
        for (int i = 0; i < 200; i++) {
            ByteBuffer b = pattern(i, 1);
            m.write(i, 1, b).get(10, TimeUnit.SECONDS);
            ByteBuffer r = ByteBuffer.allocateDirect(BLOCK);
            m.read(i, 1, r).get(10, TimeUnit.SECONDS);
            assertEquals(b, r);
        }
        assertEquals(400, commands(c1) - p1, "every I/O through the optimized path");
        assertEquals(0, commands(c2) - p2, "none through the non-optimized one");
    }

    @Test
    void bothOptimizedRoundRobinSplitsEvenly() throws Exception {
        target.live().setAnaState(2, 1, "optimized");
        await("path 2 reads optimized", () -> c2.namespace(1).anaState() == AnaState.OPTIMIZED);
        MultipathNamespace m = multipath(IoPolicy.ROUND_ROBIN);
        long p1 = commands(c1);
        long p2 = commands(c2);
        int n = 1000;
        for (int i = 0; i < n; i++) {
            ByteBuffer r = ByteBuffer.allocateDirect(BLOCK);
            m.read(i % BLOCKS, 1, r).get(10, TimeUnit.SECONDS);
        }
        long d1 = commands(c1) - p1;
        long d2 = commands(c2) - p2;
        assertEquals(n, d1 + d2);
        assertTrue(Math.abs(d1 - n / 2) <= n / 10, "even split within 10%: path 1 " + d1 + ", path 2 " + d2);
    }

    /**
     * A verified job (writes, then reads compared) on four threads, two on each API flavour, each on its own blocks,
     * until stopped; returns the failures it met.
     */
    final class Job implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final List<String> failures = Collections.synchronizedList(new ArrayList<>());
        final AtomicLong ios = new AtomicLong();
        final List<Thread> threads = new ArrayList<>();

        Job(MultipathNamespace m) {
            for (int t = 0; t < 4; t++) {
                int id = t;
                Thread th = new Thread(() -> run(m, id), "job " + t);
                threads.add(th);
                th.start();
            }
        }

        void run(MultipathNamespace m, int id) {
            boolean callbacks = id >= 2;
            int span = BLOCKS / 4;
            try {
                for (long round = 1; !stop.get(); round++) {
                    long lba = id * span + round % span;
                    ByteBuffer w = pattern(lba, round);
                    ByteBuffer r = ByteBuffer.allocateDirect(BLOCK);
                    if (callbacks) {
                        viaCallback(cf -> m.write(lba, 1, w, (ctx, st) -> done(cf, st), 0));
                        viaCallback(cf -> m.read(lba, 1, r, (ctx, st) -> done(cf, st), 0));
                    } else {
                        m.write(lba, 1, w).get(30, TimeUnit.SECONDS);
                        m.read(lba, 1, r).get(30, TimeUnit.SECONDS);
                    }
                    if (!w.equals(r)) {
                        failures.add("lba " + lba + " round " + round + ": read back other data");
                    }
                    ios.addAndGet(2);
                }
            } catch (Exception e) {
                failures.add(Thread.currentThread().getName() + ": " + e);
            }
        }

        void viaCallback(java.util.function.Consumer<CompletableFuture<Integer>> submit) throws Exception {
            CompletableFuture<Integer> cf = new CompletableFuture<>();
            submit.accept(cf);
            int status = cf.get(30, TimeUnit.SECONDS);
            if (status != 0) {
                throw new AssertionError("status " + io.nvmeof.initiator.IoCallback.describe(status));
            }
        }

        static void done(CompletableFuture<Integer> cf, int status) {
            cf.complete(status);
        }

        /** Waits until the job did {@code more} I/Os more. */
        void progress(long more) throws InterruptedException {
            long until = ios.get() + more;
            await(more + " more I/Os (failures: " + failures + ")", () -> ios.get() >= until || !failures.isEmpty());
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(60_000);
            }
        }
    }

    /**
     * The I/O commands each path completed while the job did {@code ios} more I/Os, counted once the I/O caught by
     * the last change finished (failed over) after 200 more.
     */
    long[] perPathOver(Job job, long ios) throws InterruptedException {
        job.progress(200);
        long p1 = commands(c1);
        long p2 = commands(c2);
        job.progress(ios);
        return new long[] {commands(c1) - p1, commands(c2) - p2};
    }

    @Test
    void anInaccessiblePathMidRunFailsNothingAndIoComesBack() throws Exception {
        MultipathNamespace m = multipath(IoPolicy.QUEUE_DEPTH);
        Job job = new Job(m);
        try {
            job.progress(500);
            target.live().setAnaState(1, 1, "inaccessible");
            await("path 1 reads inaccessible", () -> c1.namespace(1).anaState() == AnaState.INACCESSIBLE);
            long[] perPath = perPathOver(job, 500);
            assertEquals(0, perPath[0], "nothing through the inaccessible path");
            assertTrue(perPath[1] >= 500, "the I/O moved to path 2: " + perPath[0] + " / " + perPath[1] + ", failures " + job.failures);

            target.live().setAnaState(1, 1, "optimized");
            await("path 1 reads optimized", () -> c1.namespace(1).anaState() == AnaState.OPTIMIZED);
            perPath = perPathOver(job, 500);
            assertTrue(perPath[0] >= 500, "the I/O came back to the optimized path");
            assertEquals(0, perPath[1], "nothing through the non-optimized path any more");
        } finally {
            job.close();
        }
        assertEquals(List.of(), job.failures, "no I/O failed");
        assertEquals(0, m.waitingRequests());
    }

    @Test
    void aRemovedListenerMidRunFailsNothing() throws Exception {
        MultipathNamespace m = multipath(IoPolicy.ROUND_ROBIN);
        Job job = new Job(m);
        try {
            job.progress(500);
            target.live().removeListener(1);
            await("path 1 lost", () -> c1.state() != ControllerState.CONNECTED);
            assertTrue(perPathOver(job, 500)[1] >= 500, "the I/O goes through path 2");
            assertNotEquals(ControllerState.CONNECTED, c1.state());
        } finally {
            job.close();
        }
        assertEquals(List.of(), job.failures, "no I/O failed");
    }

    @Test
    void withNoUsablePathIoWaitsForOneThenFailsNamingEachPathsState() throws Exception {
        target.live().setAnaState(1, 1, "inaccessible");
        target.live().setAnaState(2, 1, "inaccessible");
        await("both paths read inaccessible", () -> c1.namespace(1).anaState() == AnaState.INACCESSIBLE
                && c2.namespace(1).anaState() == AnaState.INACCESSIBLE);
        mp = MultipathNamespace.of(List.of(c1.namespace(1), c2.namespace(1)), IoPolicy.QUEUE_DEPTH,
                Duration.ofMillis(500));
        long start = System.nanoTime();
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> mp.write(0, 1, pattern(0, 1)).get(10, TimeUnit.SECONDS));
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(450), "it waited the failover timeout");
        assertTrue(e.getCause().getMessage().contains("path 0") && e.getCause().getMessage().contains("path 1")
                && e.getCause().getMessage().contains("ANA inaccessible"), e.getCause().getMessage());

        // A request waiting for a path goes as soon as one comes back.
        CompletableFuture<Void> w = mp.write(0, 1, pattern(0, 2));
        Thread.sleep(100);
        assertEquals(1, mp.waitingRequests());
        target.live().setAnaState(2, 1, "non-optimized");
        w.get(10, TimeUnit.SECONDS);
        assertEquals(0, mp.waitingRequests());
    }

    @Test
    void aRequestWaitsPastTheFailoverTimeoutWhileAPathReconnects() throws Exception {
        int port2 = target.tcpPort(1);
        target.live().setAnaState(1, 1, "inaccessible");
        await("path 1 reads inaccessible", () -> c1.namespace(1).anaState() == AnaState.INACCESSIBLE);
        target.live().removeListener(2);
        await("path 2 lost", () -> c2.state() == ControllerState.RECONNECTING);
        mp = MultipathNamespace.of(List.of(c1.namespace(1), c2.namespace(1)), IoPolicy.QUEUE_DEPTH,
                Duration.ofMillis(300));
        CompletableFuture<Void> w = mp.write(5, 1, pattern(5, 1));
        Thread.sleep(900); // three failover timeouts: path 2 may still come back, so the write must not fail
        assertFalse(w.isDone(), "the write waits while path 2 reconnects: " + w);
        target.live().addListener(new ListenerConfig(2, "tcp", "127.0.0.1", port2, null, null, null, null,
                Map.of("1", "non-optimized")));
        w.get(20, TimeUnit.SECONDS);
        ByteBuffer r = ByteBuffer.allocateDirect(BLOCK);
        mp.read(5, 1, r).get(10, TimeUnit.SECONDS);
        assertEquals(pattern(5, 1), r);
    }

    @Test
    void aRequestRefusedAtSubmissionIsToldOnAnotherThread() throws Exception {
        mp = multipath(IoPolicy.QUEUE_DEPTH);
        mp.close();
        CompletableFuture<Thread> told = new CompletableFuture<>();
        CompletableFuture<Integer> status = new CompletableFuture<>();
        mp.write(0, 1, pattern(0, 1), (ctx, st) -> {
            told.complete(Thread.currentThread());
            status.complete(st);
        }, 0);
        assertNotEquals(Thread.currentThread(), told.get(10, TimeUnit.SECONDS),
                "a callback run inside write() could recurse into itself by submitting again");
        assertEquals(io.nvmeof.initiator.IoCallback.ERR_CLOSED, status.get());
    }

    @Test
    void roundRobinTakesTurnsAfterTheLastPathSoAnUnusablePathGivesItsShareToAll() throws Exception {
        ListenerConfig third = target.live().addListener(new ListenerConfig(3, "tcp", "127.0.0.1", 0, null, null,
                null, null, Map.of("1", "inaccessible")));
        target.live().setAnaState(2, 1, "optimized");
        ConnectOptions opts = ConnectOptions.builder().ioQueues(1).queueDepth(32).build();
        try (NvmeofController c3 = NvmeofController.connect(TransportId.tcp("127.0.0.1", third.port(), NQN), opts)) {
            await("paths read optimized, optimized, inaccessible", () -> c2.namespace(1).anaState() == AnaState.OPTIMIZED
                    && c3.namespace(1).anaState() == AnaState.INACCESSIBLE);
            // The unusable path in the middle of the turn: 1, 3, 2.
            mp = MultipathNamespace.of(List.of(c1.namespace(1), c3.namespace(1), c2.namespace(1)),
                    IoPolicy.ROUND_ROBIN, Duration.ofSeconds(20));
            long p1 = commands(c1);
            long p2 = commands(c2);
            int n = 1000;
            ByteBuffer r = ByteBuffer.allocateDirect(BLOCK);
            for (int i = 0; i < n; i++) {
                mp.read(i % BLOCKS, 1, r.clear()).get(10, TimeUnit.SECONDS);
            }
            long d1 = commands(c1) - p1;
            long d2 = commands(c2) - p2;
            assertEquals(n, d1 + d2);
            assertTrue(Math.abs(d1 - n / 2) <= n / 10, "even split within 10%: path 1 " + d1 + ", path 2 " + d2);
            mp.close();
            mp = null;
        }
    }

    /**
     * A request sent again on another path lands where its buffer's position was when it was submitted, not where the
     * caller has moved it since (the loader reads runs into one buffer, moving its position between submissions).
     * Failed before the fix: a read failed over into the next read's place, and a loader epoch handed out a sample
     * whose CRC did not match.
     */
    @Test
    void aFailedOverReadLandsWhereItsBufferPointedAtSubmission() throws Exception {
        int n = 256;
        mp = multipath(IoPolicy.QUEUE_DEPTH);
        for (int i = 0; i < n; i++) {
            mp.write(i, 1, pattern(i, 7)).get(10, TimeUnit.SECONDS);
        }
        ByteBuffer shared = ByteBuffer.allocateDirect(n * BLOCK);
        for (int attempt = 0; attempt < 10 && mp.failedOverFrom(0) == 0; attempt++) {
            target.live().setAnaState(1, 1, "optimized");
            await("path 1 reads optimized", () -> c1.namespace(1).anaState() == AnaState.OPTIMIZED);
            // Path 1 answers "ANA inaccessible" from now on; the host learns it from the notice a little later, so
            // the first reads go to path 1 and fail over to path 2.
            target.live().setAnaState(1, 1, "inaccessible");
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(n);
            AtomicLong failed = new AtomicLong();
            for (int i = 0; i < n; i++) {
                shared.position(i * BLOCK);
                mp.read(i, 1, shared, (ctx, st) -> {
                    if (st != 0) {
                        failed.incrementAndGet();
                    }
                    done.countDown();
                }, i);
            }
            shared.position(0); // where a failover that read the position now would put every block
            assertTrue(done.await(20, TimeUnit.SECONDS));
            assertEquals(0, failed.get());
            for (int i = 0; i < n; i++) {
                assertEquals(pattern(i, 7), shared.duplicate().position(i * BLOCK).limit((i + 1) * BLOCK),
                        "block " + i + " landed in its place (" + mp.failedOverFrom(0) + " failed over)");
            }
        }
        assertTrue(mp.failedOverFrom(0) > 0, "some reads failed over, so the check above meant something");
    }

    /**
     * Two target processes exporting one subsystem over shared storage without disjoint controller ID ranges give out
     * the same ID: refused as Linux refuses it, saying what to configure (found trying it as an admin: the bench ran
     * as if all were well).
     */
    @Test
    void pathsToControllersWithOneIdAreRefused() throws Exception {
        String nqn = "nqn.2026-12.io.nvmeof:multipath-same-id";
        TargetConfig cfg = new TargetConfig(1, 4, 64, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null)),
                List.of(new SubsystemConfig(nqn, null, null, 8, true, null, List.of(
                        new NamespaceConfig(1L, "ram", "8MiB", BLOCK, null, "6c1f8a52-3c1e-4b7a-9d55-0a1b2c3d4e5f",
                                "00112233445566778899aabbccddeeff")))));
        NvmeTarget a = NvmeTarget.start(cfg);
        NvmeTarget b = NvmeTarget.start(cfg);
        ConnectOptions opts = ConnectOptions.builder().ioQueues(1).queueDepth(8).build();
        try (NvmeofController ca = NvmeofController.connect(TransportId.tcp("127.0.0.1", a.tcpPort(0), nqn), opts);
             NvmeofController cb = NvmeofController.connect(TransportId.tcp("127.0.0.1", b.tcpPort(0), nqn), opts)) {
            assertEquals(ca.cntlid(), cb.cntlid(), "both targets start at the same ID");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MultipathNamespace.of(List.of(ca.namespace(1), cb.namespace(1))));
            assertTrue(e.getMessage().contains("controller ID " + ca.cntlid()) && e.getMessage().contains("cntlidMin"),
                    e.getMessage());
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void handlesOfDifferentNamespacesAreRefused() {
        NamespaceHandle a = c1.namespace(1);
        NamespaceHandle b = c2.namespace(2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MultipathNamespace.of(List.of(a, b)));
        assertTrue(e.getMessage().contains("another namespace than path 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> MultipathNamespace.of(List.of(a, c1.namespace(1))));
        assertTrue(e.getMessage().contains("same controller"), e.getMessage());
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.BatchedIoCallback;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ControllerInfo;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.NvmeTarget;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The initiator library against the target over loopback NVMe/TCP, through the public API only. */
class EndToEndTest {
    @TempDir
    static Path dir;
    static NvmeTarget target;
    static int port;
    static Path file;

    @BeforeAll
    static void start() throws Exception {
        file = dir.resolve("ns3.img");
        target = NvmeTarget.start(TestTargets.config(8, file.toString()));
        port = target.tcpPort(0);
    }

    @AfterAll
    static void stop() throws Exception {
        target.close();
        assertEquals(List.of(), LeakTracker.collect(), "Netty buffers garbage collected without release");
    }

    static NvmeofController connect(ConnectOptions options) {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, TestTargets.NQN), options);
    }

    static NvmeofController connect(int queues, int depth) {
        return connect(ConnectOptions.builder().ioQueues(queues).queueDepth(depth).build());
    }

    static ByteBuffer pattern(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        ByteBuffer buf = ByteBuffer.allocateDirect(length);
        buf.put(b).flip();
        return buf;
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    @Test
    void identifyControllerAndNamespaces() {
        try (NvmeofController c = connect(2, 32)) {
            ControllerInfo i = c.info();
            assertEquals(TestTargets.NQN, i.subnqn());
            assertEquals("SN-TEST-1", i.serial());
            assertEquals("nvmeof-java test", i.model());
            assertEquals(c.cntlid(), i.cntlid());
            assertEquals(1, i.controllerType(), "I/O controller");
            assertEquals(1 << 20, i.mdts(), "MDTS of 1 MiB");
            assertEquals((64 + 8192) / 16, i.ioccsz(), "IOCCSZ covers the SQE and 8 KiB in-capsule data");
            assertEquals(1, i.iorcsz());
            assertEquals(16, i.nn());
            assertEquals(2, c.ioQueueCount());
            List<NamespaceHandle> nss = c.namespaces();
            assertEquals(3, nss.size());
            assertEquals(1, nss.get(0).nsid());
            assertEquals(512, nss.get(0).blockSize());
            assertEquals((64L << 20) / 512, nss.get(0).blockCount());
            assertEquals(4096, nss.get(1).blockSize());
            assertEquals((32L << 20) / 4096, c.namespace(3).blockCount());
        }
    }

    @Test
    void discoveryLogListsWhatThisHostMaySee() {
        List<DiscoveryEntry> log;
        try (NvmeofController d = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, Nqn.DISCOVERY),
                ConnectOptions.defaults())) {
            assertEquals(2, d.info().controllerType(), "discovery controller");
            log = d.discoveryLog();
        }
        List<String> nqns = log.stream().map(DiscoveryEntry::subnqn).toList();
        assertEquals(List.of(Nqn.DISCOVERY, TestTargets.NQN), nqns, "the restricted subsystem is hidden from this host");
        DiscoveryEntry e = log.get(1);
        assertEquals(DiscoveryLogEntry.TRTYPE_TCP, e.trtype());
        assertEquals(DiscoveryLogEntry.ADRFAM_IPV4, e.adrfam());
        assertEquals(DiscoveryLogEntry.SUBTYPE_NVM, e.subtype());
        assertEquals(DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY, log.get(0).subtype());
        assertEquals("127.0.0.1", e.traddr());
        assertEquals(Integer.toString(port), e.trsvcid());
        assertEquals(0xFFFF, e.cntlid());
        assertEquals(32, e.asqsz());

        ConnectOptions allowed = ConnectOptions.builder().hostNqn(TestTargets.ALLOWED_HOST).build();
        try (NvmeofController d = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, Nqn.DISCOVERY), allowed)) {
            assertTrue(d.discoveryLog().stream().anyMatch(x -> x.subnqn().equals(TestTargets.RESTRICTED_NQN)),
                    "the allowed host sees the restricted subsystem");
        }
    }

    @Test
    void connectRefusedForHostNotAllowed() {
        NvmeStatusException e = assertThrows(NvmeStatusException.class, () -> NvmeofController.connect(
                new TransportId("tcp", "127.0.0.1", port, TestTargets.RESTRICTED_NQN), ConnectOptions.defaults()));
        assertEquals(Status.CONNECT_INVALID_HOST, Status.code(e.status()));
        assertTrue(e.getMessage().contains("CONNECT_INVALID_HOST"), e.getMessage());
    }

    /** Sizes cross one block, the 8 KiB in-capsule limit, the 128 KiB MAXH2CDATA and reach MDTS (1 MiB). */
    @ParameterizedTest
    @ValueSource(ints = {512, 4096, 8192, 8704, 65536, 131072, 131584, 262144 + 512, 1048576})
    void writeThenReadBackAtRandomLbas(int size) throws Exception {
        try (NvmeofController c = connect(2, 32)) {
            NamespaceHandle ns = c.namespace(1);
            Random r = new Random(size);
            for (int round = 0; round < 3; round++) {
                int blocks = size / ns.blockSize();
                long lba = (long) (r.nextDouble() * (ns.blockCount() - blocks));
                ByteBuffer src = pattern(size, size * 31L + round);
                ns.write(lba, blocks, src).get(10, TimeUnit.SECONDS);
                ByteBuffer dst = ByteBuffer.allocateDirect(size);
                ns.read(lba, blocks, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(bytes(src), bytes(dst), size + " bytes at LBA " + lba);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"header", "data", "both"})
    void digestsNegotiatedAndVerified(String which) throws Exception {
        ConnectOptions o = ConnectOptions.builder().ioQueues(1).queueDepth(16)
                .headerDigest(!which.equals("data")).dataDigest(!which.equals("header")).build();
        try (NvmeofController c = connect(o)) {
            NamespaceHandle ns = c.namespace(2);
            for (int size : new int[] {4096, 8192, 200 * 1024, 1 << 20}) {
                ByteBuffer src = pattern(size, size);
                ns.write(16, size / 4096, src).get(10, TimeUnit.SECONDS);
                ByteBuffer dst = ByteBuffer.allocateDirect(size);
                ns.read(16, size / 4096, dst).get(10, TimeUnit.SECONDS);
                assertArrayEquals(bytes(src), bytes(dst));
            }
        }
    }

    @Test
    void flushWriteZeroesDeallocateCompare() throws Exception {
        try (NvmeofController c = connect(1, 16)) {
            NamespaceHandle ns = c.namespace(1);
            ByteBuffer src = pattern(8192, 7);
            ns.write(100, 16, src).get(10, TimeUnit.SECONDS);
            ns.flush().get(10, TimeUnit.SECONDS);
            ns.compare(100, 16, src).get(10, TimeUnit.SECONDS);
            ByteBuffer other = pattern(8192, 8);
            ExecutionException mismatch = assertThrows(ExecutionException.class, () -> ns.compare(100, 16, other).get(10, TimeUnit.SECONDS));
            assertEquals(Status.COMPARE_FAILED, Status.code(((NvmeStatusException) mismatch.getCause()).status()));

            ns.writeZeroes(104, 4).get(10, TimeUnit.SECONDS);
            ByteBuffer dst = ByteBuffer.allocateDirect(8192);
            ns.read(100, 16, dst).get(10, TimeUnit.SECONDS);
            byte[] expected = bytes(src);
            java.util.Arrays.fill(expected, 4 * 512, 8 * 512, (byte) 0);
            assertArrayEquals(expected, bytes(dst), "blocks 104..107 are zero, the rest unchanged");

            ns.deallocate(100, 16).get(10, TimeUnit.SECONDS);
            dst.clear();
            ns.read(100, 16, dst).get(10, TimeUnit.SECONDS);
            assertArrayEquals(new byte[8192], bytes(dst), "deallocated blocks read as zeroes");

            ExecutionException range = assertThrows(ExecutionException.class,
                    () -> ns.read(ns.blockCount() - 1, 2, ByteBuffer.allocateDirect(1024)).get(10, TimeUnit.SECONDS));
            assertEquals(Status.LBA_RANGE, Status.code(((NvmeStatusException) range.getCause()).status()));
        }
    }

    @Test
    void fileNamespaceIsDurableAfterFlush() throws Exception {
        try (NvmeofController c = connect(1, 16)) {
            NamespaceHandle ns = c.namespace(3);
            ByteBuffer src = pattern(65536, 3);
            ns.write(10, 16, src).get(10, TimeUnit.SECONDS);
            ns.flush().get(10, TimeUnit.SECONDS);
            ByteBuffer onDisk = ByteBuffer.allocate(65536);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                ch.read(onDisk, 10 * 4096L);
            }
            onDisk.flip();
            assertArrayEquals(bytes(src), bytes(onDisk), "the file holds the written bytes at LBA 10 x 4 KiB");
        }
    }

    @Test
    void callbackFlavourCompletesWithStatusAndContext() throws Exception {
        try (NvmeofController c = connect(1, 32)) {
            NamespaceHandle ns = c.namespace(2);
            int n = 64;
            ByteBuffer[] bufs = new ByteBuffer[n];
            CountDownLatch done = new CountDownLatch(n);
            AtomicLong contexts = new AtomicLong();
            AtomicInteger failures = new AtomicInteger();
            for (int i = 0; i < n; i++) {
                bufs[i] = pattern(4096, i);
                ns.write(i, 1, bufs[i], (context, status) -> {
                    contexts.addAndGet(context);
                    if (status != Status.SUCCESS) {
                        failures.incrementAndGet();
                    }
                    done.countDown();
                }, i);
            }
            assertTrue(done.await(10, TimeUnit.SECONDS));
            assertEquals(0, failures.get());
            assertEquals((long) n * (n - 1) / 2, contexts.get(), "every context came back once");
            ByteBuffer dst = ByteBuffer.allocateDirect(4096);
            ns.read(17, 1, dst).get(10, TimeUnit.SECONDS);
            assertArrayEquals(bytes(bufs[17]), bytes(dst));
        }
    }

    /**
     * A batched callback at queue depth 32: every completion is followed by an onBatchEnd on the same thread, never
     * one without a completion before it, and receives that carry several completions are told once.
     */
    @Test
    void aBatchedCallbackIsToldOnceAfterEachReceiveOfCompletions() throws Exception {
        final int depth = 32;
        final int total = 20_000;
        try (NvmeofController c = connect(1, depth + 1)) {
            NamespaceHandle ns = c.namespace(2);
            ByteBuffer memory = ByteBuffer.allocateDirect(depth * 4096);
            final class Loop implements BatchedIoCallback {
                final AtomicInteger issued = new AtomicInteger();
                final AtomicInteger completed = new AtomicInteger();
                final AtomicInteger batches = new AtomicInteger();
                final AtomicInteger problems = new AtomicInteger();
                final CountDownLatch done = new CountDownLatch(1);
                volatile String firstProblem;
                /** Completions not yet followed by onBatchEnd, and the thread they were delivered on. */
                int unended;
                Thread deliveredOn;

                void issue(int slot) {
                    if (issued.incrementAndGet() <= total) {
                        ns.read(slot * 7L % 16_000, 1, memory.duplicate().position(slot * 4096).limit(slot * 4096 + 4096),
                                this, slot);
                    }
                }

                void problem(String what) {
                    if (problems.getAndIncrement() == 0) {
                        firstProblem = what;
                    }
                }

                @Override
                public synchronized void onComplete(long context, int status) {
                    if (status != 0) {
                        problem("read failed: " + Status.name(status));
                    }
                    if (unended > 0 && deliveredOn != Thread.currentThread()) {
                        problem("completions on two threads without onBatchEnd between them");
                    }
                    unended++;
                    deliveredOn = Thread.currentThread();
                    completed.incrementAndGet();
                    issue((int) context);
                }

                @Override
                public synchronized void onBatchEnd() {
                    if (unended == 0) {
                        problem("onBatchEnd without a completion before it");
                    } else if (deliveredOn != Thread.currentThread()) {
                        problem("onBatchEnd on " + Thread.currentThread().getName() + ", completions on "
                                + deliveredOn.getName());
                    }
                    unended = 0;
                    batches.incrementAndGet();
                    if (completed.get() == total) {
                        done.countDown();
                    }
                }
            }
            Loop loop = new Loop();
            for (int slot = 0; slot < depth; slot++) {
                loop.issue(slot);
            }
            assertTrue(loop.done.await(60, TimeUnit.SECONDS), "all reads completed and were followed by onBatchEnd: "
                    + loop.completed.get() + " of " + total + " completed");
            assertEquals(0, loop.problems.get(), loop.firstProblem);
            synchronized (loop) {
                assertEquals(0, loop.unended, "every completion was followed by onBatchEnd");
            }
            assertTrue(loop.batches.get() < total, "some receives carried several completions, told once: "
                    + loop.batches.get() + " batches for " + total + " completions");
        }
    }

    @Test
    void severalControllersAndQueuesWithConcurrentIo() throws Exception {
        int controllers = 3;
        int threadsPer = 4;
        List<NvmeofController> cs = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(controllers * threadsPer);
        try {
            for (int i = 0; i < controllers; i++) {
                cs.add(connect(4, 32));
            }
            // Earlier tests' controllers are torn down on their poll groups after their sockets close: wait for that.
            assertTrue(TestTargets.eventually(() -> target.core().controllers().stream()
                    .filter(x -> x.subsystem().nqn().equals(TestTargets.NQN)).count() == controllers, 10_000),
                    "only this test's controllers remain: " + target.core().controllers().size());
            List<Future<?>> jobs = new ArrayList<>();
            for (int ci = 0; ci < controllers; ci++) {
                for (int t = 0; t < threadsPer; t++) {
                    NamespaceHandle ns = cs.get(ci).namespace(2);
                    long region = (ci * threadsPer + t) * 512L; // 512 blocks of 4 KiB per worker
                    jobs.add(pool.submit(() -> {
                        Random r = new Random(region);
                        List<CompletableFuture<Void>> inflight = new ArrayList<>();
                        ByteBuffer[] written = new ByteBuffer[64];
                        for (int k = 0; k < 64; k++) {
                            written[k] = pattern(8 * 4096, region + k);
                            inflight.add(ns.write(region + k * 8, 8, written[k]));
                        }
                        CompletableFuture.allOf(inflight.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
                        for (int k = 0; k < 64; k++) {
                            int pick = r.nextInt(64);
                            ByteBuffer dst = ByteBuffer.allocateDirect(8 * 4096);
                            ns.read(region + pick * 8, 8, dst).get(30, TimeUnit.SECONDS);
                            assertArrayEquals(bytes(written[pick]), bytes(dst));
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> f : jobs) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            for (NvmeofController c : cs) {
                c.close();
            }
        }
    }

    @Test
    void keepAliveKeepsAnIdleControllerAlive() throws Exception {
        ConnectOptions o = ConnectOptions.builder().ioQueues(1).queueDepth(8).keepAliveTimeoutMs(1000).build();
        try (NvmeofController c = connect(o)) {
            Thread.sleep(2500); // longer than KATO; the initiator's keep-alives (every KATO/2) keep it alive
            assertTrue(c.isConnected());
            ByteBuffer dst = ByteBuffer.allocateDirect(512);
            c.namespace(1).read(0, 1, dst).get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void keepAliveExpiryTearsTheControllerDown() throws Exception {
        int before = target.core().liveControllers();
        try (RawTcpHost admin = new RawTcpHost(port)) {
            admin.initialize(0);
            Completion c = admin.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 600);
            int cntlid = c.dw0() & 0xFFFF;
            admin.propertySet(0x14, io.nvmeof.protocol.regs.ControllerRegisters.CC_ENABLE_DEFAULT);
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                assertEquals(Status.SUCCESS, io.connect(1, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                // Silence: no keep-alive, no I/O.
                assertTrue(admin.closedByTarget(), "the admin queue is closed once KATO (600 ms, rounded up to 1 s) and nvmet's slack pass");
                assertTrue(io.closedByTarget(), "and so is the I/O queue");
            }
        }
        assertTrue(TestTargets.eventually(() -> target.core().liveControllers() <= before, 2000));
    }

    @Test
    void orderlyShutdownReleasesEverything() throws Exception {
        NvmeofController c = connect(4, 16);
        assertTrue(c.isConnected());
        int cntlid = c.cntlid();
        assertTrue(target.core().controllers().stream().anyMatch(x -> x.cntlid() == cntlid));
        c.close();
        assertFalse(c.isConnected());
        assertTrue(TestTargets.eventually(() -> target.core().controllers().stream().noneMatch(x -> x.cntlid() == cntlid), 5000),
                "the controller is gone after shutdown and disconnect");
        assertThrows(Exception.class, () -> c.namespace(1).read(0, 1, ByteBuffer.allocateDirect(512)).get(5, TimeUnit.SECONDS));
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ErrorKind;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.FileBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The long-running integrity checker (issue 29): several hosts, each with its own controller over a relay that can
 * be cut, write, read, Write Zeroes, Deallocate, Flush and write with FUA, overlapping one another on a small hot range
 * of two namespaces (a sparse RAM one, and a file one whose space changes and flushes are slow now and then, so that
 * one host's short command timeout fires), while a chaos thread cuts hosts' connections, keeps a host away while its
 * namespace is replaced (a target restarted with another volume), and replaces namespaces live. Every read is held to
 * {@link BlockModel}: for each block, the values that the operations acknowledged or in flight allow.
 *
 * <p>{@code -Dintegrity.seconds=N} (default 20) sets how long it runs; {@code -Dintegrity.seed} replays the choices.
 * {@code ./test --fuzz MIN} runs it for MIN minutes.
 */
class IntegrityModelTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:integrity";
    private static final int BLOCK = 4096;
    private static final int NS_BLOCKS = (64 << 20) / BLOCK;
    /** Most I/O goes to the first blocks, so that hosts overlap. */
    private static final int HOT_BLOCKS = 1024;
    /** A RAM namespace's chunk: deallocating all of it gives its memory back (the sparse race). */
    private static final int CHUNK_BLOCKS = (2 << 20) / BLOCK;
    private static final int QUEUE_DEPTH = 16;

    @TempDir
    Path dir;

    private final AtomicLong clock = new AtomicLong();
    private final AtomicLong nextOp = new AtomicLong(1);
    private final AtomicLong nextVolume = new AtomicLong(1);
    /** The current volume of each NSID (index 1 and 2). */
    private final java.util.concurrent.atomic.AtomicReferenceArray<BlockModel> volumes =
            new java.util.concurrent.atomic.AtomicReferenceArray<>(3);
    private final List<String> violations = new CopyOnWriteArrayList<>();
    /** What the chaos thread did, with clock ticks, for a violation's report. */
    private final List<String> events = new CopyOnWriteArrayList<>();

    private void event(String what) {
        events.add(clock.incrementAndGet() + " " + what);
    }
    private final AtomicLongArray counts = new AtomicLongArray(Count.values().length);
    private NvmeTarget target;

    enum Count {
        READS, WRITES, FUA_WRITES, WRITE_ZEROES, DEALLOCATES, FLUSHES, BLOCKS_CHECKED, FAILED, TIMED_OUT,
        NAMESPACE_GONE, CUTS, DISCONNECTS, RESTARTS, REPLACEMENTS, TORN_READS
    }

    private void count(Count c) {
        counts.incrementAndGet(c.ordinal());
    }

    /** A file backend whose space changes and flushes take up to {@code maxDelayMs} now and then, as a busy disk's. */
    static final class SlowDisk implements BlockBackend {
        final FileBackend file;
        final Random random;

        SlowDisk(FileBackend file, long seed) {
            this.file = file;
            this.random = new Random(seed);
        }

        private void maybeStall() throws IOException {
            int delay;
            synchronized (random) {
                delay = random.nextInt(8) == 0 ? random.nextInt(900) : 0;
            }
            if (delay > 0) {
                try {
                    Thread.sleep(delay);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted");
                }
            }
        }

        @Override public long sizeBytes() { return file.sizeBytes(); }
        // Served direct (issue 32): reads, writes and flushes go through the poll group's io_uring, not the stalls here.
        @Override public io.nvmeof.tgt.backend.RingFile ringFile() { return file.ringFile(); }
        @Override public void read(long offset, ByteBuffer dst) throws IOException { file.read(offset, dst); }
        @Override public void write(long offset, ByteBuffer src) throws IOException { file.write(offset, src); }
        @Override public boolean mayBlock(long bytes) { return true; }
        @Override public String describe() { return "slow " + file.describe(); }
        @Override public void close() throws IOException { file.close(); }

        @Override
        public void flush() throws IOException {
            maybeStall();
            file.flush();
        }

        @Override
        public void writeZeroes(long offset, long length) throws IOException {
            maybeStall();
            file.writeZeroes(offset, length);
        }

        @Override
        public void deallocate(long offset, long length) throws IOException {
            maybeStall();
            file.deallocate(offset, length);
        }
    }

    /** One host: its relay, its controller and, for each NSID, the handle it uses and the volume that handle is of. */
    final class Host {
        final String name;
        final String nqn;
        final CuttableProxy proxy;
        final NvmeofController ctrl;
        final NamespaceHandle[] handles = new NamespaceHandle[3];
        final BlockModel[] handleVolume = new BlockModel[3];
        final Semaphore slots = new Semaphore(QUEUE_DEPTH);
        /** Operations in flight per NSID. */
        final AtomicInteger[] inFlight = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        /** Operations that failed, each with the tick its failure was reported; bounded by a later completion. */
        final List<long[]> failedAt = new ArrayList<>();
        final List<BlockModel.Op> failed = new ArrayList<>();
        final List<BlockModel> failedVolume = new ArrayList<>();
        /** While set for an NSID, this host submits nothing to it. */
        final boolean[] quiet = new boolean[3];
        /** While set, an operation through a stale handle that succeeds is a violation (the host reconnected). */
        volatile long staleAfter = Long.MAX_VALUE;
        volatile NamespaceHandle[] stale = new NamespaceHandle[3];

        Host(String name, int targetPort, Duration commandTimeout) throws IOException {
            this.name = name;
            this.nqn = "nqn.2014-08.org.nvmexpress:uuid:" + UUID.nameUUIDFromBytes(name.getBytes());
            this.proxy = new CuttableProxy(targetPort);
            this.ctrl = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", proxy.port(), NQN),
                    ConnectOptions.builder().hostNqn(nqn).hostId(UUID.nameUUIDFromBytes(nqn.getBytes()))
                            .ioQueues(2).queueDepth(32).commandTimeout(commandTimeout)
                            .connectTimeout(Duration.ofSeconds(5)).reconnectDelay(Duration.ofMillis(50)).build());
            for (int n = 1; n <= 2; n++) {
                handles[n] = ctrl.namespace(n);
                handleVolume[n] = volumes.get(n);
            }
        }

        /** The handle for {@code nsid} and its volume, taking a new one once the controller has replaced it. */
        synchronized Object[] handle(int nsid) {
            NamespaceHandle now;
            try {
                now = ctrl.namespace(nsid);
            } catch (IllegalArgumentException e) {
                return null; // not active now (removed, not added back yet)
            }
            if (now != handles[nsid]) {
                handles[nsid] = now;
                handleVolume[nsid] = volumes.get(nsid);
            }
            return new Object[] {handles[nsid], handleVolume[nsid]};
        }

        /** A later command of this host completed: what failed before it was submitted ended by then. */
        synchronized void completed(long submitted, long now) {
            for (int i = failed.size() - 1; i >= 0; i--) {
                if (failedAt.get(i)[0] < submitted) {
                    failedVolume.get(i).endedBy(failed.get(i), now);
                    failed.remove(i);
                    failedAt.remove(i);
                    failedVolume.remove(i);
                }
            }
        }

        synchronized void failedOp(BlockModel.Op op, BlockModel volume, long now) {
            failed.add(op);
            failedAt.add(new long[] {now});
            failedVolume.add(volume);
        }
    }

    @Test
    void everyReadReturnsAValueTheOperationsAllow() throws Exception {
        long seconds = Long.getLong("integrity.seconds", 20);
        long seed = Long.getLong("integrity.seed", System.nanoTime());
        Random chaos = new Random(seed);
        target = NvmeTarget.start(new TargetConfig(2, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 8, true, null, List.of()))));
        List<Host> hosts = new ArrayList<>();
        try {
            replace(1, seed);
            replace(2, seed);
            hosts.add(new Host("a", target.tcpPort(0), Duration.ofSeconds(10)));
            hosts.add(new Host("b", target.tcpPort(0), Duration.ofSeconds(10)));
            hosts.add(new Host("impatient", target.tcpPort(0), Duration.ofMillis(400)));
            List<Thread> drivers = new ArrayList<>();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            for (int i = 0; i < hosts.size(); i++) {
                Host h = hosts.get(i);
                Random r = new Random(seed * 31 + i);
                Thread t = new Thread(() -> drive(h, r, end), "driver-" + h.name);
                t.start();
                drivers.add(t);
            }
            while (System.nanoTime() < end && violations.isEmpty()) {
                Thread.sleep(500 + chaos.nextInt(1000));
                if (System.nanoTime() < end) {
                    chaos(hosts, chaos);
                }
            }
            for (Thread t : drivers) {
                t.join(120_000);
            }
            for (Host h : hosts) {
                for (int n = 1; n <= 2; n++) {
                    awaitQuiet(h, n);
                }
            }
            if (violations.isEmpty()) {
                verifyAll(hosts.get(0));
            }
        } finally {
            for (Host h : hosts) {
                h.ctrl.close();
                h.proxy.close();
            }
            target.close();
        }
        for (int n = 1; n <= 2; n++) {
            counts.addAndGet(Count.TORN_READS.ordinal(), volumes.get(n).tornReads());
        }
        StringBuilder figures = new StringBuilder();
        for (Count c : Count.values()) {
            figures.append(c.name().toLowerCase()).append(' ').append(counts.get(c.ordinal())).append(", ");
        }
        System.out.printf("integrity check: %d s, %d hosts, %s%d violations (seed %d)%n", seconds, hosts.size(),
                figures, violations.size(), seed);
        if (!violations.isEmpty()) {
            System.out.println("events: " + events);
            violations.forEach(v -> System.out.println("violation: " + v));
            fail(violations.size() + " violations (seed " + seed + "); first: " + violations.get(0));
        }
        assertTrue(counts.get(Count.READS.ordinal()) > 0 && counts.get(Count.WRITES.ordinal()) > 0);
    }

    /**
     * Issue 50: two target processes export one subsystem over one shared file, a host writes and reads through both
     * with a {@link MultipathNamespace}, and one target at a time is paused (SIGSTOP) and resumed: for less than its
     * keep-alive deadline (it runs what waited in its sockets when it comes back) or for more (it must run none of
     * it). Writes the host failed over meanwhile must never be overwritten by the paused target's late copies: every
     * read is held to {@link BlockModel}. {@code -Dintegrity.pauses=N} (default 4) sets the number of pauses.
     */
    @Test
    void everyReadHoldsWhileATargetOfTwoIsPausedAndResumes() throws Exception {
        int pauses = Integer.getInteger("integrity.pauses", 4);
        long seed = Long.getLong("integrity.seed", System.nanoTime());
        Random chaos = new Random(seed);
        int blocks = 2048;
        int hot = 96;
        Path file = dir.resolve("shared.img");
        volumes.set(1, new BlockModel(1, BLOCK, blocks, clock.incrementAndGet()));
        BlockModel vol = volumes.get(1);
        List<TargetProcess> targets = new ArrayList<>();
        List<NvmeofController> hosts = new ArrayList<>();
        MultipathNamespace mp = null;
        try {
            for (int t = 0; t < 2; t++) {
                targets.add(SharedFileTarget.start(file, 1 + 100 * t, blocks * BLOCK / 1024 + "KiB",
                        dir.resolve("target-" + t + ".log")));
            }
            for (TargetProcess t : targets) {
                hosts.add(NvmeofController.connect(new TransportId("tcp", "127.0.0.1", t.port, SharedFileTarget.NQN),
                        ConnectOptions.builder().ioQueues(1).queueDepth(32).keepAliveTimeoutMs(1000)
                                .commandTimeout(Duration.ofSeconds(30)).reconnectDelay(Duration.ofMillis(200))
                                .build()));
            }
            mp = MultipathNamespace.of(List.of(hosts.get(0).namespace(1), hosts.get(1).namespace(1)),
                    MultipathNamespace.IoPolicy.ROUND_ROBIN, Duration.ofSeconds(30));
            MultipathNamespace ns = mp;
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Random r = new Random(seed * 31);
            Thread driver = new Thread(() -> driveMultipath(ns, vol, r, hot, stop), "driver-multipath");
            driver.start();
            try {
                Thread.sleep(1500);
                for (int i = 0; i < pauses && violations.isEmpty(); i++) {
                    int which = chaos.nextInt(2);
                    // Below the keep-alive deadline (twice the 1 s KATO), after the host gave up (KATO unanswered);
                    // or well past it.
                    long pauseMs = chaos.nextBoolean() ? 1800 : 5000;
                    count(Count.CUTS);
                    event("pause target " + which + " for " + pauseMs + " ms");
                    targets.get(which).pause();
                    Thread.sleep(pauseMs);
                    targets.get(which).resume();
                    event("resumed target " + which);
                    // Until the host has the path again (its reconnect after the pause) and a little load through it.
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (!hosts.get(which).isConnected() && System.nanoTime() < until) {
                        Thread.sleep(50);
                    }
                    Thread.sleep(1500);
                }
            } finally {
                stop.set(true);
                driver.join(120_000);
            }
            if (violations.isEmpty()) {
                ByteBuffer buf = ByteBuffer.allocateDirect(64 * BLOCK);
                for (long lba = 0; lba < blocks && violations.isEmpty(); lba += 64) {
                    long start = clock.incrementAndGet();
                    vol.readStarted(start);
                    mp.read(lba, 64, buf).get(60, TimeUnit.SECONDS);
                    String wrong = vol.check(lba, 64, buf, start, clock.incrementAndGet());
                    vol.readEnded(start);
                    counts.addAndGet(Count.BLOCKS_CHECKED.ordinal(), 64);
                    if (wrong != null) {
                        violations.add("final read: " + wrong);
                    }
                }
            }
        } finally {
            if (mp != null) {
                mp.close();
            }
            for (NvmeofController h : hosts) {
                h.close();
            }
            for (TargetProcess t : targets) {
                t.close();
            }
        }
        long fenced = mp == null ? 0 : mp.fencedWaits();
        System.out.printf("integrity check, paused targets: %d pauses, reads %d, writes %d, blocks checked %d,"
                        + " failed %d, writes held for a fence %d, %d violations (seed %d)%n", pauses,
                counts.get(Count.READS.ordinal()), counts.get(Count.WRITES.ordinal()),
                counts.get(Count.BLOCKS_CHECKED.ordinal()), counts.get(Count.FAILED.ordinal()), fenced,
                violations.size(), seed);
        if (!violations.isEmpty()) {
            System.out.println("events: " + events);
            violations.forEach(v -> System.out.println("violation: " + v));
            fail(violations.size() + " violations (seed " + seed + "); first: " + violations.get(0));
        }
        assertTrue(counts.get(Count.READS.ordinal()) > 0 && counts.get(Count.WRITES.ordinal()) > 0);
    }

    /**
     * The multipath load: writes and reads of 1-4 blocks on {@code hot} blocks at up to QUEUE_DEPTH in flight, every
     * read held to the model; a failed operation (no path in time) may have landed, and ends by the next completion.
     */
    private void driveMultipath(MultipathNamespace ns, BlockModel vol, Random r, int hot,
            java.util.concurrent.atomic.AtomicBoolean stop) {
        Semaphore slots = new Semaphore(QUEUE_DEPTH);
        List<BlockModel.Op> failed = new CopyOnWriteArrayList<>();
        while (!stop.get() && violations.isEmpty()) {
            try {
                if (!slots.tryAcquire(10, TimeUnit.MILLISECONDS)) {
                    continue;
                }
            } catch (InterruptedException e) {
                return;
            }
            int n = 1 + r.nextInt(4);
            long lba = r.nextInt(hot - n);
            long start = clock.incrementAndGet();
            CompletableFuture<Void> f;
            if (r.nextInt(100) < 40) {
                count(Count.READS);
                ByteBuffer buf = ByteBuffer.allocateDirect(n * BLOCK);
                vol.readStarted(start);
                f = ns.read(lba, n, buf).handle((v, e) -> {
                    long done = clock.incrementAndGet();
                    if (e == null) {
                        String wrong = vol.check(lba, n, buf, start, done);
                        counts.addAndGet(Count.BLOCKS_CHECKED.ordinal(), n);
                        if (wrong != null) {
                            violations.add("read through " + ns + ": " + wrong);
                        }
                    } else {
                        count(Count.FAILED);
                    }
                    vol.readEnded(start);
                    return null;
                });
            } else {
                count(Count.WRITES);
                long id = nextOp.getAndIncrement();
                ByteBuffer buf = ByteBuffer.allocateDirect(n * BLOCK);
                for (int i = 0; i < n; i++) {
                    vol.fill(buf, i, lba + i, id);
                }
                BlockModel.Op op = vol.begin(id, false, "write LBA " + lba + "+" + n, lba, n, start);
                f = ns.write(lba, n, buf).handle((v, e) -> {
                    long done = clock.incrementAndGet();
                    if (e == null) {
                        vol.succeeded(op, lba, n, done);
                        for (BlockModel.Op o : failed) {
                            if (o.submitted < start) {
                                vol.endedBy(o, done);
                                failed.remove(o);
                            }
                        }
                    } else {
                        count(Count.FAILED);
                        failed.add(op);
                    }
                    return null;
                });
            }
            f.whenComplete((v, e) -> slots.release());
        }
        try {
            slots.acquire(QUEUE_DEPTH); // every operation ended
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Replaces NSID {@code nsid}'s volume with a new, empty one (or creates the first). */
    private void replace(int nsid, long seed) throws IOException {
        if (volumes.get(nsid) != null) {
            counts.addAndGet(Count.TORN_READS.ordinal(), volumes.get(nsid).tornReads());
        }
        long volume = nextVolume.getAndIncrement();
        BlockBackend backend = nsid == 1 ? new RamBackend((long) NS_BLOCKS * BLOCK, true)
                // Every other volume is served with direct I/O through the poll groups' io_uring, the rest buffered.
                : new SlowDisk(FileBackend.openFile(dir.resolve("volume-" + volume + ".img"), (long) NS_BLOCKS * BLOCK,
                        volume % 2 == 1), seed ^ volume);
        if (volumes.get(nsid) != null) {
            target.live().removeNamespace(NQN, nsid);
        }
        volumes.set(nsid, new BlockModel(volume, BLOCK, NS_BLOCKS, clock.incrementAndGet()));
        Namespace ns = new Namespace(nsid, backend, BLOCK, UUID.randomUUID());
        if (nsid == 2 && volume % 4 == 1) {
            // A shallow device (issue 50, the slow neighbour): its requests wait in its own line in the poll group's
            // ring, beside the RAM namespace's, and are withdrawn from there when cuts and restarts end their queues.
            ns.limitDeviceQueue(2);
        }
        target.core().subsystem(NQN).addNamespace(ns);
    }

    /** One host's load: random operations at up to QUEUE_DEPTH in flight, until {@code end}. */
    private void drive(Host h, Random r, long end) {
        while (System.nanoTime() < end && violations.isEmpty()) {
            try {
                if (!h.slots.tryAcquire(10, TimeUnit.MILLISECONDS)) {
                    continue;
                }
            } catch (InterruptedException e) {
                return;
            }
            int nsid = 1 + r.nextInt(2);
            Object[] hv;
            synchronized (h) {
                hv = h.quiet[nsid] ? null : h.handle(nsid);
                if (hv != null) {
                    h.inFlight[nsid].incrementAndGet();
                }
            }
            if (hv == null) {
                h.slots.release();
                sleep(5);
                continue;
            }
            try {
                submit(h, nsid, (NamespaceHandle) hv[0], (BlockModel) hv[1], r).whenComplete((v, e) -> {
                    h.inFlight[nsid].decrementAndGet();
                    h.slots.release();
                });
            } catch (RuntimeException e) {
                h.inFlight[nsid].decrementAndGet();
                h.slots.release();
                violations.add(h.name + ": submitting threw " + e);
            }
        }
    }

    private CompletableFuture<Void> submit(Host h, int nsid, NamespaceHandle ns, BlockModel vol, Random r) {
        int kind = r.nextInt(100);
        int blocks = 1 + r.nextInt(8);
        long lba = r.nextInt(10) == 0 ? r.nextInt(NS_BLOCKS - blocks) : r.nextInt(HOT_BLOCKS - blocks);
        long start = clock.incrementAndGet();
        if (kind < 35) {
            count(Count.READS);
            ByteBuffer buf = ByteBuffer.allocateDirect(blocks * BLOCK);
            vol.readStarted(start);
            return track(h, ns, vol, start, ns.read(lba, blocks, buf), null, 0, 0).thenAccept(succeeded -> {
                long done = clock.incrementAndGet();
                if (succeeded) { // a failed read's buffer holds nothing to check
                    String wrong = vol.check(lba, blocks, buf, start, done);
                    counts.addAndGet(Count.BLOCKS_CHECKED.ordinal(), blocks);
                    if (wrong != null) {
                        violations.add(h.name + " read through " + ns + ": " + wrong);
                    }
                }
                vol.readEnded(start);
            });
        }
        if (kind < 85) {
            boolean fua = kind >= 80;
            count(fua ? Count.FUA_WRITES : Count.WRITES);
            long id = nextOp.getAndIncrement();
            ByteBuffer buf = ByteBuffer.allocateDirect(blocks * BLOCK);
            for (int i = 0; i < blocks; i++) {
                vol.fill(buf, i, lba + i, id);
            }
            BlockModel.Op op = vol.begin(id, false, h.name + (fua ? " write FUA" : " write") + " LBA " + lba + "+"
                    + blocks, lba, blocks, start);
            return track(h, ns, vol, start, fua ? ns.writeFua(lba, blocks, buf) : ns.write(lba, blocks, buf), op, lba,
                    blocks).thenAccept(succeeded -> { });
        }
        if (kind < 95) {
            boolean deallocate = kind >= 90;
            boolean chunk = nsid == 1 && r.nextInt(3) == 0;
            long at = chunk ? (long) r.nextInt(HOT_BLOCKS / CHUNK_BLOCKS) * CHUNK_BLOCKS : lba;
            int n = chunk ? CHUNK_BLOCKS : (int) Math.min(blocks * (1 + r.nextInt(4)), NS_BLOCKS - lba);
            count(deallocate ? Count.DEALLOCATES : Count.WRITE_ZEROES);
            BlockModel.Op op = vol.begin(nextOp.getAndIncrement(), true, h.name + (deallocate ? " deallocate" :
                    " write zeroes") + " LBA " + at + "+" + n, at, n, start);
            return track(h, ns, vol, start, deallocate ? ns.deallocate(at, n) : ns.writeZeroes(at, n), op, at, n)
                    .thenAccept(succeeded -> { });
        }
        count(Count.FLUSHES);
        return track(h, ns, vol, start, ns.flush(), null, 0, 0).thenAccept(succeeded -> { });
    }

    /**
     * Records how an operation ended in its volume's model and its host's failures; the future says whether it
     * succeeded (and never fails).
     */
    private CompletableFuture<Boolean> track(Host h, NamespaceHandle ns, BlockModel vol, long start,
            CompletableFuture<Void> f, BlockModel.Op op, long lba, int blocks) {
        return f.handle((v, e) -> {
            long done = clock.incrementAndGet();
            if (e == null) {
                if (op != null) {
                    vol.succeeded(op, lba, blocks, done);
                }
                h.completed(start, done);
                if (h.stale[(int) ns.nsid()] == ns && done > h.staleAfter) {
                    violations.add(h.name + ": " + (op != null ? op : "a command") + " through " + ns + " succeeded"
                            + " after the host reconnected to a replaced namespace");
                }
            } else {
                count(Count.FAILED);
                Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                        ? e.getCause() : e;
                ErrorKind kind = cause instanceof NvmeofException ne ? ne.kind() : null;
                if (kind == ErrorKind.TIMED_OUT) {
                    count(Count.TIMED_OUT);
                } else if (kind == ErrorKind.NAMESPACE_GONE) {
                    count(Count.NAMESPACE_GONE);
                } else if (kind != ErrorKind.CONNECTION_LOST) {
                    violations.add(h.name + ": " + (op != null ? op : "a command") + " failed unexpectedly: " + cause);
                }
                if (op != null) {
                    h.failedOp(op, vol, done);
                }
            }
            return e == null;
        });
    }

    /** One disturbance, chosen at random. */
    private void chaos(List<Host> hosts, Random r) throws Exception {
        Host h = hosts.get(r.nextInt(hosts.size()));
        switch (r.nextInt(5)) {
            case 0 -> {
                count(Count.CUTS);
                event("cut " + h.name);
                h.proxy.cut();
            }
            case 3 -> {
                count(Count.DISCONNECTS); // the administrator ends the host's association (admin API's DELETE)
                event("disconnect " + h.name);
                try {
                    target.live().disconnect(NQN, h.ctrl.cntlid());
                } catch (RuntimeException e) {
                    // not connected right now (reconnecting)
                }
            }
            case 1 -> restartWithAnotherVolume(hosts, h, 1 + r.nextInt(2));
            case 2 -> replaceLive(hosts, 1 + r.nextInt(2));
            default -> {
                // a quiet moment
            }
        }
    }

    /**
     * A target that comes back with another volume under an NSID, as the host sees it: its connections are cut and
     * refused while the namespace is replaced, then it reconnects with writes held meanwhile. Those must fail, not
     * land in the new volume, and nothing through the old handle may succeed after the reconnect.
     */
    private void restartWithAnotherVolume(List<Host> hosts, Host away, int nsid) throws Exception {
        count(Count.RESTARTS);
        event("restart: " + away.name + " away, NSID " + nsid);
        for (Host h : hosts) {
            if (h != away) {
                quiet(h, nsid, true);
            }
        }
        away.proxy.refuse(true);
        away.proxy.cut();
        if (!awaitTrue(() -> noControllerOf(away), 20_000)) {
            violations.add("the target kept a controller of " + away.name + " 20 s after its connections were cut");
        }
        for (Host h : hosts) {
            if (h != away) {
                awaitQuiet(h, nsid);
            }
        }
        NamespaceHandle old = away.handles[nsid];
        away.stale = staleArray(nsid, old);
        replace(nsid, System.nanoTime());
        away.staleAfter = clock.incrementAndGet();
        event("restart: NSID " + nsid + " is volume " + volumes.get(nsid).volume + "; " + away.name + " may come back");
        away.proxy.refuse(false);
        awaitReplaced(hosts, nsid);
        event("restart: every host has its new handle");
        for (Host h : hosts) {
            quiet(h, nsid, false);
        }
    }

    /** A namespace replaced under connected hosts, with their I/O to it paused around the change. */
    private void replaceLive(List<Host> hosts, int nsid) throws Exception {
        count(Count.REPLACEMENTS);
        event("live replacement of NSID " + nsid);
        for (Host h : hosts) {
            quiet(h, nsid, true);
        }
        for (Host h : hosts) {
            awaitQuiet(h, nsid);
        }
        replace(nsid, System.nanoTime());
        event("live replacement: NSID " + nsid + " is volume " + volumes.get(nsid).volume);
        awaitReplaced(hosts, nsid);
        event("live replacement: every host has its new handle");
        for (Host h : hosts) {
            quiet(h, nsid, false);
        }
    }

    private static NamespaceHandle[] staleArray(int nsid, NamespaceHandle old) {
        NamespaceHandle[] a = new NamespaceHandle[3];
        a[nsid] = old;
        return a;
    }

    private void awaitReplaced(List<Host> hosts, int nsid) throws InterruptedException {
        for (Host h : hosts) {
            NamespaceHandle old = h.handles[nsid];
            if (!awaitTrue(() -> {
                try {
                    return h.ctrl.namespace(nsid) != old;
                } catch (IllegalArgumentException e) {
                    return false;
                }
            }, 20_000)) {
                violations.add(h.name + " still used its handle of NSID " + nsid + " 20 s after the namespace was"
                        + " replaced by another volume");
            }
        }
    }

    private static void quiet(Host h, int nsid, boolean on) {
        synchronized (h) {
            h.quiet[nsid] = on;
        }
    }

    private void awaitQuiet(Host h, int nsid) throws InterruptedException {
        if (!awaitTrue(() -> h.inFlight[nsid].get() == 0, 60_000)) {
            violations.add(h.name + " still had " + h.inFlight[nsid].get() + " operations on NSID " + nsid
                    + " in flight after 60 s");
        }
    }

    private boolean noControllerOf(Host h) {
        for (Controller c : target.core().controllers()) {
            if (c.hostNqn().equals(h.nqn)) {
                return false;
            }
        }
        return target.core().drainingControllers() == 0;
    }

    /** Reads every block of both namespaces once nothing is in flight. */
    private void verifyAll(Host h) throws Exception {
        for (int nsid = 1; nsid <= 2; nsid++) {
            Object[] hv = h.handle(nsid);
            NamespaceHandle ns = (NamespaceHandle) hv[0];
            BlockModel vol = (BlockModel) hv[1];
            int chunk = 64;
            ByteBuffer buf = ByteBuffer.allocateDirect(chunk * BLOCK);
            for (long lba = 0; lba < NS_BLOCKS && violations.isEmpty(); lba += chunk) {
                long start = clock.incrementAndGet();
                vol.readStarted(start);
                ns.read(lba, chunk, buf).get(60, TimeUnit.SECONDS);
                String wrong = vol.check(lba, chunk, buf, start, clock.incrementAndGet());
                vol.readEnded(start);
                counts.addAndGet(Count.BLOCKS_CHECKED.ordinal(), chunk);
                if (wrong != null) {
                    violations.add("final read: " + wrong);
                }
            }
        }
    }

    private static boolean awaitTrue(java.util.function.BooleanSupplier c, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!c.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

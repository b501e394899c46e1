package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills the target (SIGKILL, in its own JVM) at a random moment while a host writes to a file namespace with plain
 * writes, FUA writes and Flushes, restarts it on the same file, and reads every block back.
 *
 * <p>Every write that completed with FUA, or before a Flush that completed, must read back intact (and no block may
 * hold data nobody wrote). A SIGKILL leaves the kernel's page cache alone, so here every acknowledged write must
 * survive, FUA or not: a lost one would mean the target acknowledged before storing. That FUA and Flush reach stable
 * media (fdatasync) before they complete is {@link DurabilityTest}'s part.
 *
 * <p>{@code -Dcrash.iterations=N} (default 4) sets the number of kills; {@code -Dcrash.seed} replays a run.
 */
class CrashConsistencyTest {
    private static final int BLOCK = CrashTestTarget.BLOCK;
    private static final int BLOCKS = (8 << 20) / BLOCK;
    private static final int MAX_BLOCKS_PER_WRITE = 8;
    private static final int QUEUE_DEPTH = 16;

    /** What the host knows of each block: the newest write issued, completed, and made durable (0: never). */
    private final long[] issued = new long[BLOCKS];
    private final long[] acked = new long[BLOCKS];
    private final long[] durable = new long[BLOCKS];
    private final boolean[] inFlight = new boolean[BLOCKS];
    private long nextSeq = 1;
    private long writesAcked;
    private long fuaAcked;
    private long flushesDone;
    private long blocksChecked;
    private long tornInFlight;

    @TempDir
    Path dir;

    @Test
    void everyAcknowledgedWriteSurvivesAKilledTarget() throws Exception {
        int iterations = Integer.getInteger("crash.iterations", 4);
        long seed = Long.getLong("crash.seed", System.nanoTime());
        Random random = new Random(seed);
        Path file = dir.resolve("ns.img");
        for (int i = 0; i < iterations; i++) {
            Process target = startTarget(file, i);
            try {
                int port = awaitPort(target, i);
                if (i > 0) {
                    verify(port, "after kill " + i + " (seed " + seed + ")");
                }
                writeUntilKilled(port, target, random, 100 + random.nextInt(400));
            } finally {
                target.destroyForcibly();
                target.waitFor(30, TimeUnit.SECONDS);
            }
        }
        Process target = startTarget(file, iterations);
        try {
            verify(awaitPort(target, iterations), "after the last kill (seed " + seed + ")");
        } finally {
            target.destroyForcibly();
            target.waitFor(30, TimeUnit.SECONDS);
        }
        System.out.printf("crash test: %d kills, %d writes acknowledged (%d FUA), %d flushes, %d blocks checked,"
                        + " %d blocks torn by a write in flight, 0 acknowledged writes lost (seed %d)%n", iterations,
                writesAcked, fuaAcked, flushesDone, blocksChecked, tornInFlight, seed);
        assertTrue(writesAcked > 0 && fuaAcked > 0 && flushesDone > 0, "the run wrote, wrote with FUA and flushed");
    }

    private Process startTarget(Path file, int run) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), CrashTestTarget.class.getName(), file.toString())
                .redirectError(dir.resolve("target-" + run + ".log").toFile()).start();
    }

    private int awaitPort(Process target, int run) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(target.getInputStream(), StandardCharsets.US_ASCII));
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (java.io.IOException e) {
                return null;
            }
        });
        String l = line.get(60, TimeUnit.SECONDS);
        if (l == null || !l.startsWith("PORT ")) {
            fail("the target did not start: " + Files.readString(dir.resolve("target-" + run + ".log")));
        }
        return Integer.parseInt(l.substring(5).trim());
    }

    private static NvmeofController connect(int port) {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, CrashTestTarget.NQN),
                ConnectOptions.builder().ioQueues(2).queueDepth(32).ctrlLossTimeout(Duration.ZERO)
                        .commandTimeout(Duration.ofSeconds(20)).build());
    }

    /** Writes, FUA writes and Flushes at QD 16 until the target, killed after {@code killAfterMs}, stops answering. */
    private void writeUntilKilled(int port, Process target, Random random, int killAfterMs) throws Exception {
        Semaphore slots = new Semaphore(QUEUE_DEPTH);
        List<CompletableFuture<Void>> all = new ArrayList<>();
        try (NvmeofController host = connect(port)) {
            NamespaceHandle ns = host.namespace(1);
            assertEquals(BLOCKS, ns.blockCount());
            long killAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(killAfterMs);
            while (target.isAlive()) {
                if (System.nanoTime() >= killAt) {
                    target.destroyForcibly(); // SIGKILL
                    break;
                }
                if (!slots.tryAcquire(10, TimeUnit.MILLISECONDS)) {
                    continue;
                }
                int kind = random.nextInt(10);
                CompletableFuture<Void> f;
                if (kind == 0) {
                    long[] snapshot;
                    synchronized (this) {
                        snapshot = acked.clone(); // a Flush covers the writes completed before it was sent
                    }
                    f = ns.flush().thenRun(() -> {
                        synchronized (this) {
                            for (int b = 0; b < BLOCKS; b++) {
                                durable[b] = Math.max(durable[b], snapshot[b]);
                            }
                            flushesDone++;
                        }
                    });
                } else {
                    f = submitWrite(ns, random, kind <= 2);
                    if (f == null) {
                        slots.release();
                        continue;
                    }
                }
                all.add(f.whenComplete((v, e) -> slots.release()));
            }
            target.waitFor(30, TimeUnit.SECONDS);
            for (CompletableFuture<Void> f : all) {
                try {
                    f.get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    // failed by the kill: its blocks are in flight, undetermined
                }
            }
        } catch (RuntimeException e) {
            if (target.isAlive()) {
                throw e;
            }
            // killed while connecting or before the first write: nothing was written this round
        }
    }

    /** One write of 1-8 blocks to blocks with no write in flight, or null when none was found. */
    private CompletableFuture<Void> submitWrite(NamespaceHandle ns, Random random, boolean fua) {
        int blocks = 1 + random.nextInt(MAX_BLOCKS_PER_WRITE);
        int lba = random.nextInt(BLOCKS - blocks + 1);
        long seq;
        synchronized (this) {
            for (int b = lba; b < lba + blocks; b++) {
                if (inFlight[b]) {
                    return null; // never two writes to one block at once: their order would be undefined
                }
            }
            seq = nextSeq++;
            for (int b = lba; b < lba + blocks; b++) {
                inFlight[b] = true;
                issued[b] = seq;
            }
        }
        ByteBuffer data = ByteBuffer.allocateDirect(blocks * BLOCK);
        for (int b = 0; b < blocks; b++) {
            fill(data, b * BLOCK, lba + b, seq);
        }
        CompletableFuture<Void> f = fua ? ns.writeFua(lba, blocks, data) : ns.write(lba, blocks, data);
        return f.whenComplete((v, e) -> {
            synchronized (this) {
                for (int b = lba; b < lba + blocks; b++) {
                    if (e == null) {
                        inFlight[b] = false;
                        acked[b] = seq;
                        if (fua) {
                            durable[b] = seq;
                        }
                    }
                }
                if (e == null) {
                    writesAcked++;
                    if (fua) {
                        fuaAcked++;
                    }
                }
            }
        });
    }

    /** Block contents: its LBA and the write's sequence number, then bytes derived from both. */
    private static void fill(ByteBuffer buf, int at, long lba, long seq) {
        buf.putLong(at, lba);
        buf.putLong(at + 8, seq);
        long x = lba * 0x9E3779B97F4A7C15L ^ seq;
        for (int i = 16; i < BLOCK; i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            buf.putLong(at + i, x);
        }
    }

    /** The sequence number a block holds: 0 for zeroes, -1 for anything no write of ours produced. */
    private static long decode(ByteBuffer buf, int at, long lba) {
        boolean zero = true;
        for (int i = 0; i < BLOCK && zero; i += 8) {
            zero = buf.getLong(at + i) == 0;
        }
        if (zero) {
            return 0;
        }
        long seq = buf.getLong(at + 8);
        if (buf.getLong(at) != lba || seq <= 0) {
            return -1;
        }
        ByteBuffer expect = ByteBuffer.allocate(BLOCK);
        fill(expect, 0, lba, seq);
        return buf.slice(at, BLOCK).equals(expect.rewind()) ? seq : -1;
    }

    private void verify(int port, String when) throws Exception {
        try (NvmeofController host = connect(port)) {
            NamespaceHandle ns = host.namespace(1);
            int chunk = 64;
            ByteBuffer buf = ByteBuffer.allocateDirect(chunk * BLOCK);
            for (int lba = 0; lba < BLOCKS; lba += chunk) {
                ns.read(lba, chunk, buf).get(30, TimeUnit.SECONDS);
                synchronized (this) {
                    for (int b = 0; b < chunk; b++) {
                        check(lba + b, decode(buf, b * BLOCK, lba + b), when);
                    }
                }
            }
        }
    }

    private void check(int lba, long seq, String when) {
        blocksChecked++;
        boolean wasInFlight = inFlight[lba];
        inFlight[lba] = false;
        if (seq < 0) {
            if (wasInFlight) {
                tornInFlight++; // a write cut short by the kill: its blocks may hold any mix (NVMe allows it)
                return;
            }
            fail("block " + lba + " " + when + " holds data no write produced (last completed write "
                    + acked[lba] + ", last issued " + issued[lba] + ")");
        }
        if (seq < durable[lba]) {
            fail("block " + lba + " " + when + " lost a durable write: holds " + seq + ", write " + durable[lba]
                    + " completed with FUA or before a completed Flush");
        }
        if (seq < acked[lba]) {
            fail("block " + lba + " " + when + " lost an acknowledged write: holds " + seq + ", write " + acked[lba]
                    + " had completed");
        }
        if (seq > issued[lba]) {
            fail("block " + lba + " " + when + " holds write " + seq + ", never issued to it");
        }
        acked[lba] = seq; // what the file now holds; a write in flight at the kill may have landed
    }
}

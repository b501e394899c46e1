package io.nvmeof.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.loader.format.CorruptRecordException;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.DatasetVerifier;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Datasets imported into real targets over NVMe/TCP on loopback and read back by the loader: coverage across ranks,
 * byte-identical samples, determinism, corruption, resume, the prefetch bound, release errors, resumable import.
 */
@Timeout(120)
class LoaderTest {
    @TempDir
    Path dir;

    private final List<NvmeTarget> targets = new ArrayList<>();
    private final List<NvmeofController> controllers = new ArrayList<>();

    @AfterEach
    void stop() {
        controllers.forEach(NvmeofController::close);
        targets.forEach(NvmeTarget::close);
    }

    /** A target with one subsystem of {@code count} RAM namespaces. */
    NvmeTarget target(String nqn, int count, String size, int blockSize) throws IOException {
        StringBuilder ns = new StringBuilder();
        for (int i = 1; i <= count; i++) {
            ns.append(i > 1 ? "," : "").append("{\"nsid\":").append(i).append(",\"backend\":\"ram\",\"size\":\"").append(size)
                    .append("\",\"blockSize\":").append(blockSize).append('}');
        }
        NvmeTarget t = NvmeTarget.start(TargetConfig.parse("{\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\","
                + "\"port\":0}],\"subsystems\":[{\"nqn\":\"" + nqn + "\",\"namespaces\":[" + ns + "]}]}"));
        targets.add(t);
        return t;
    }

    static DatasetLocation location(NvmeTarget t, String nqn, int nsid) {
        return DatasetLocation.parse("tcp://127.0.0.1:" + t.tcpPort(0) + "/" + nqn + "/" + nsid);
    }

    NamespaceHandle namespace(DatasetLocation l) {
        NvmeofController c = NvmeofController.connect(l.transportId(), ConnectOptions.builder().ioQueues(2).build());
        controllers.add(c);
        return c.namespace(l.nsid());
    }

    /** A target with one RAM namespace holding {@code spec}'s dataset, opened. */
    NvmeofDataset imported(String nqnSuffix, String size, int blockSize, DatasetGenerator.Spec spec) throws IOException {
        String nqn = "nqn.2026-12.io.nvmeof:" + nqnSuffix;
        DatasetLocation loc = location(target(nqn, 1, size, blockSize), nqn, 1);
        generateAndImport(spec, "src", namespace(loc));
        return NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults());
    }

    static DatasetImporter.Options options(String name, int recordSize) {
        return new DatasetImporter.Options(name, recordSize, true, false, false, false);
    }

    /** Generates {@code spec}'s shards under {@code dir/sub} and imports them into {@code ns}. */
    DatasetImporter.Result generateAndImport(DatasetGenerator.Spec spec, String sub, NamespaceHandle... ns) throws IOException {
        DatasetGenerator.generate(dir.resolve(sub), spec);
        boolean fixed = spec.format() == ShardFormat.FIXED;
        return DatasetImporter.run(DatasetImporter.scan(List.of(dir.resolve(sub)), fixed ? ShardFormat.FIXED : null),
                List.of(ns), options(sub, spec.recordSize()), ImportProgress.SILENT);
    }

    /** The generator's index of a sample, from its key ({@code sample00000017} or {@code shard-00001/3}). */
    static long generatorIndex(DatasetGenerator.Spec spec, SampleView s) {
        String key = s.key();
        if (key.startsWith("sample")) {
            return Long.parseLong(key.substring(6));
        }
        int shard = Integer.parseInt(key.substring(6, 11));
        return (long) shard * spec.samplesPerShard() + Long.parseLong(key.substring(key.indexOf('/') + 1));
    }

    static void assertSampleIsTheSource(DatasetGenerator.Spec spec, SampleView s) {
        long i = generatorIndex(spec, s);
        String payload = spec.format() == ShardFormat.TAR ? "bin" : "data";
        assertTrue(DatasetGenerator.matches(spec, i, s.member(payload)), "payload of " + s);
        if (spec.format() == ShardFormat.TAR) {
            assertEquals(String.valueOf(i % 10), StandardCharsets.US_ASCII.decode(s.member("cls")).toString());
        }
    }

    @Test
    void aTarDatasetOnTwoTargetsIsReadExactlyOncePerEpochAcrossRanks() throws Exception {
        NvmeTarget a = target("nqn.2026-12.io.nvmeof:a", 1, "16MiB", 4096);
        NvmeTarget b = target("nqn.2026-12.io.nvmeof:b", 1, "16MiB", 512);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 7, 30, 1000, 24_000, 5, 0);
        List<DatasetLocation> locs = List.of(location(a, "nqn.2026-12.io.nvmeof:a", 1), location(b, "nqn.2026-12.io.nvmeof:b", 1));
        DatasetImporter.Result r = generateAndImport(spec, "src", namespace(locs.get(0)), namespace(locs.get(1)));
        assertEquals(7, r.shards());
        assertEquals(210, r.samples());

        // Any client opens it from the transport IDs alone (the parts in any order).
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(locs.get(1), locs.get(0)), ConnectOptions.builder().ioQueues(2).build())) {
            assertEquals(210, ds.sampleCount());
            assertEquals(2, ds.parts().size());
            assertEquals(r.datasetId(), ds.id());
            int world = 3;
            int[] seen = new int[ds.sampleCount()];
            for (int rank = 0; rank < world; rank++) {
                try (DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).seed(9).rank(rank).worldSize(world)
                        .remainder(Remainder.UNEVEN).prefetchBytes(1 << 20).build();
                     SampleIterator it = l.samples(0)) {
                    for (Sample s : it) {
                        seen[(int) s.index()]++;
                        assertSampleIsTheSource(spec, s);
                    }
                }
            }
            for (int i = 0; i < seen.length; i++) {
                assertEquals(1, seen[i], "sample " + i);
            }
            List<Long> e0 = order(ds, ShuffleMode.FULL, 0);
            assertEquals(e0, order(ds, ShuffleMode.FULL, 0), "the same seed and epoch: the same order");
            assertNotEquals(e0, order(ds, ShuffleMode.FULL, 1), "another epoch: another order");
            List<Long> w0 = order(ds, ShuffleMode.WINDOW, 0);
            assertEquals(w0, order(ds, ShuffleMode.WINDOW, 0));
            assertNotEquals(w0, order(ds, ShuffleMode.WINDOW, 1));
        }
    }

    /**
     * The issue's finding: 400 samples over 3 ranks read 399 an epoch, one left out silently. By default the ranks
     * now pad as PyTorch's DistributedSampler does (134 each, every sample at least once) and say so.
     */
    @Test
    void byDefaultEverySampleIsReadEachEpochWhateverTheWorldSizeAsPyTorchPads() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 4, 100, 100, 300, 11, 0);
        try (NvmeofDataset ds = imported("pad", "8MiB", 512, spec)) {
            assertEquals(400, ds.sampleCount());
            int[] seen = new int[400];
            for (int rank = 0; rank < 3; rank++) {
                try (DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).seed(5).rank(rank).worldSize(3).build();
                     SampleIterator it = l.samples(0)) {
                    assertEquals(134, l.epochSize());
                    int read = 0;
                    for (Sample s : it) {
                        seen[(int) s.index()]++;
                        read++;
                    }
                    assertEquals(134, read, "rank " + rank);
                    assertEquals("rank " + rank + " of 3: 134 samples an epoch of the dataset's 400; 2 read twice"
                            + " across the ranks to make the shares equal (remainder PAD, as PyTorch's"
                            + " DistributedSampler)", l.share());
                }
            }
            assertEquals(400, Arrays.stream(seen).filter(c -> c >= 1).count(), "every sample read");
            assertEquals(402, Arrays.stream(seen).sum());
            try (DatasetLoader drop = ds.loader().rank(0).worldSize(3).remainder(Remainder.DROP).build()) {
                assertEquals(133, drop.epochSize());
                assertTrue(drop.share().endsWith("; 1 of them left out of each epoch (remainder DROP)"), drop.share());
            }
        }
    }

    static List<Long> order(NvmeofDataset ds, ShuffleMode mode, long epoch) {
        List<Long> out = new ArrayList<>();
        try (DatasetLoader l = ds.loader().shuffle(mode).window(16).seed(9).prefetchBytes(1 << 20).build();
             BatchIterator it = l.batches(epoch, 10)) {
            for (Batch b : it) {
                out.addAll(b.indexes());
            }
        }
        return out;
    }

    @Test
    void tfrecordAndFixedSizeDatasetsReadBackByteIdentical() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:rec", 2, "8MiB", 512);
        DatasetGenerator.Spec tf = new DatasetGenerator.Spec(ShardFormat.TFRECORD, 3, 50, 10, 9000, 11, 0);
        DatasetGenerator.Spec fixed = new DatasetGenerator.Spec(ShardFormat.FIXED, 2, 64, 0, 0, 12, 4096);
        DatasetLocation l1 = location(t, "nqn.2026-12.io.nvmeof:rec", 1);
        DatasetLocation l2 = location(t, "nqn.2026-12.io.nvmeof:rec", 2);
        generateAndImport(tf, "tf", namespace(l1));
        generateAndImport(fixed, "fixed", namespace(l2));
        for (var c : List.of(List.of(l1, tf), List.of(l2, fixed))) {
            DatasetGenerator.Spec spec = (DatasetGenerator.Spec) c.get(1);
            try (NvmeofDataset ds = NvmeofDataset.connect(List.of((DatasetLocation) c.get(0)), ConnectOptions.defaults());
                 DatasetLoader l = ds.loader().shuffle(ShuffleMode.WINDOW).window(20).seed(3).verify(true).build();
                 BatchIterator it = l.batches(2, 16)) {
                int n = 0;
                for (Batch b : it) {
                    for (int i = 0; i < b.size(); i++) {
                        assertSampleIsTheSource(spec, ds.read(b.index(i)));
                        ByteBuffer zeroCopy = b.buffer();
                        int off = b.offset(i, 0);
                        byte[] want = DatasetGenerator.payload(spec, generatorIndex(spec, ds.read(b.index(i))));
                        assertEquals(want.length, b.memberLength(i, 0));
                        for (int k = 0; k < want.length; k += 97) {
                            assertEquals(want[k], zeroCopy.get(off + k));
                        }
                        n++;
                    }
                }
                assertEquals(spec.samples(), n);
            }
        }
    }

    @Test
    void corruptRecordsAreNamedOrSkippedAndCounted() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:bad", 2, "4MiB", 512);
        DatasetGenerator.Spec tf = new DatasetGenerator.Spec(ShardFormat.TFRECORD, 2, 20, 100, 3000, 1, 0);
        DatasetGenerator.Spec tar = new DatasetGenerator.Spec(ShardFormat.TAR, 2, 20, 100, 3000, 2, 0);
        DatasetLocation l1 = location(t, "nqn.2026-12.io.nvmeof:bad", 1);
        DatasetLocation l2 = location(t, "nqn.2026-12.io.nvmeof:bad", 2);
        NamespaceHandle n1 = namespace(l1);
        NamespaceHandle n2 = namespace(l2);
        generateAndImport(tf, "tf", n1);
        generateAndImport(tar, "tar", n2);

        for (var c : List.of(List.of(l1, n1, "TFRecord data CRC mismatch", 30), List.of(l2, n2, "tar header checksum", -400))) {
            DatasetLocation loc = (DatasetLocation) c.get(0);
            long victim = 27;
            long shardOffset;
            String shard;
            try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults())) {
                shard = ds.shardOf(victim).name();
                shardOffset = ds.start((int) victim) - ds.shardOf(victim).offset();
                // Damage one byte on the namespace: inside the record's data, or inside a member's tar header.
                int delta = (Integer) c.get(3);
                long at = delta > 0 ? ds.start((int) victim) + delta
                        : ds.start((int) victim) + ds.read(victim).offset(0) - ds.read(victim).offset + delta;
                flip((NamespaceHandle) c.get(1), at);
            }
            try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults())) {
                try (DatasetLoader l = ds.loader().build(); SampleIterator it = l.samples(0)) {
                    CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> it.forEachRemaining(s -> { }));
                    assertEquals(shard, e.shard());
                    assertEquals(shardOffset, e.offset());
                    assertTrue(e.getMessage().contains((String) c.get(2)), e.getMessage());
                }
                try (DatasetLoader l = ds.loader().corrupt(CorruptPolicy.SKIP).shuffle(ShuffleMode.FULL).build();
                     SampleIterator it = l.samples(0)) {
                    long n = it.stream().peek(s -> assertNotEquals(victim, s.index())).count();
                    assertEquals(ds.sampleCount() - 1, n);
                    assertEquals(1, l.statistics().corruptSkipped());
                }
                DatasetVerifier.Report report = DatasetVerifier.verify(ds, ImportProgress.SILENT);
                assertFalse(report.ok());
                assertEquals(1, report.badShards());
                assertTrue(report.problems().get(0).contains(shard), report.problems().toString());
                assertTrue(report.problems().stream().anyMatch(p -> p.contains("offset " + shardOffset)), report.problems().toString());
            }
        }
    }

    static void flip(NamespaceHandle ns, long byteOffset) throws IOException {
        NamespaceIo io = new NamespaceIo(ns, 1);
        long block = byteOffset / ns.blockSize() * ns.blockSize();
        ByteBuffer b = ByteBuffer.allocate(ns.blockSize());
        io.read(block, b);
        b.flip();
        int i = (int) (byteOffset - block);
        b.put(i, (byte) (b.get(i) ^ 0x20));
        io.write(block, b);
    }

    @Test
    void aCheckpointResumesExactlyWhereItWasTaken() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 4, 25, 500, 8000, 4, 0);
        try (NvmeofDataset ds = imported("resume", "8MiB", 4096, spec)) {
            for (ShuffleMode mode : ShuffleMode.values()) {
                DatasetLoader.Builder b = ds.loader().shuffle(mode).window(8).seed(77).rank(1).worldSize(2);
                List<Long> whole = new ArrayList<>();
                try (DatasetLoader l = b.build(); SampleIterator it = l.samples(3)) {
                    it.forEachRemaining(s -> whole.add(s.index()));
                }
                List<Long> resumed = new ArrayList<>();
                Checkpoint cp;
                try (DatasetLoader l = b.build(); BatchIterator it = l.batches(3, 5)) {
                    for (int k = 0; k < 3; k++) {
                        resumed.addAll(it.next().indexes());
                    }
                    it.hasNext(); // a look ahead must not move the checkpoint
                    cp = l.checkpoint();
                }
                assertEquals(new Checkpoint(3, 15, 77, mode, 8, 1, 2, Remainder.PAD, ds.id()), cp);
                try (DatasetLoader l = b.build(); SampleIterator it = l.samples(Checkpoint.parse(cp.toString()))) {
                    it.forEachRemaining(s -> resumed.add(s.index()));
                }
                assertEquals(whole, resumed, mode + ": resumed = uninterrupted");
                try (DatasetLoader other = b.seed(5).build()) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> other.samples(cp));
                    assertTrue(e.getMessage().contains("seed"), e.getMessage());
                }
                b.seed(77);
            }
        }
    }

    /**
     * Issue 30, finding 16: a checkpoint resumes only the order it was taken in. One taken at world 2 / rank 1 used to
     * resume at world 4 / rank 0 without a word; now every setting that fixes the order is recorded and a mismatch
     * is refused naming it, as is a checkpoint of the first format, which records none of them.
     */
    @Test
    void aCheckpointOfOtherSettingsIsRefusedNamingThem() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:cp", 2, "8MiB", 4096);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.FIXED, 4, 20, 0, 0, 4, 4096);
        DatasetLocation l1 = location(t, "nqn.2026-12.io.nvmeof:cp", 1);
        DatasetLocation l2 = location(t, "nqn.2026-12.io.nvmeof:cp", 2);
        generateAndImport(spec, "one", namespace(l1));
        generateAndImport(spec, "two", namespace(l2));
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(l1), ConnectOptions.defaults());
             NvmeofDataset other = NvmeofDataset.connect(List.of(l2), ConnectOptions.defaults())) {
            java.util.function.Supplier<DatasetLoader.Builder> taken = () -> ds.loader().shuffle(ShuffleMode.WINDOW)
                    .window(8).seed(3).rank(1).worldSize(2).remainder(Remainder.PAD);
            Checkpoint cp;
            try (DatasetLoader l = taken.get().build(); BatchIterator it = l.batches(2, 4)) {
                it.next();
                it.next();
                cp = Checkpoint.parse(l.checkpoint().toString());
            }
            try (DatasetLoader same = taken.get().build(); SampleIterator it = same.samples(cp)) {
                assertEquals(ds.sampleCount() / 2 - 8, it.stream().count(), "the same settings resume");
            }
            record Case(String named, DatasetLoader.Builder loader) { }
            List<Case> cases = List.of(
                    new Case("worldSize 2", taken.get().rank(0).worldSize(4)),
                    new Case("rank 1", taken.get().rank(0)),
                    new Case("shuffle WINDOW", taken.get().shuffle(ShuffleMode.FULL)),
                    new Case("window 8", taken.get().window(16)),
                    new Case("remainder PAD", taken.get().remainder(Remainder.DROP)),
                    new Case("seed 3", taken.get().seed(4)),
                    new Case("dataset " + ds.id(), other.loader().shuffle(ShuffleMode.WINDOW).window(8).seed(3).rank(1)
                            .worldSize(2).remainder(Remainder.PAD)));
            for (Case c : cases) {
                try (DatasetLoader l = c.loader().build()) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.samples(cp),
                            "resumed with another " + c.named());
                    assertTrue(e.getMessage().contains("taken with " + c.named()), e.getMessage());
                }
            }
            IllegalArgumentException old = assertThrows(IllegalArgumentException.class,
                    () -> Checkpoint.parse("epoch=3,position=15,seed=77"));
            assertTrue(old.getMessage().contains("checkpointAt(3, 15)"), old.getMessage());
        }
    }

    @Test
    void readsAheadStayWithinThePrefetchBoundUnderASlowConsumer() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:slow", 1, "8MiB", 512);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.FIXED, 2, 100, 0, 0, 6, 16384);
        DatasetLocation loc = location(t, "nqn.2026-12.io.nvmeof:slow", 1);
        generateAndImport(spec, "src", namespace(loc));
        int prefetch = 128 << 10;
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults());
             DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).prefetchBytes(prefetch).build();
             SampleIterator it = l.samples(0)) {
            long handed = 0;
            long maxAhead = 0;
            for (Sample s : it) {
                handed += s.memberLength(0);
                Thread.sleep(handed < 20 * 16384 ? 3 : 0);
                long ahead = l.statistics().readBytes() - handed;
                maxAhead = Math.max(maxAhead, ahead);
                assertTrue(ahead <= prefetch, "read " + ahead + " bytes ahead of the consumer; the bound is " + prefetch);
            }
            assertTrue(maxAhead >= prefetch - 2 * 16384, "the loader does read ahead, up to its bound: " + maxAhead);
        }
    }

    /**
     * The consuming thread creates nothing per sample in steady state: over a whole epoch of batches it allocates
     * the epoch's plan (4 bytes a sample) and one handle per batch, and nothing that grows with the samples beyond
     * that. (The initiator's own I/O threads are not counted: their garbage is the initiator's.)
     */
    @Test
    void theConsumerAllocatesNothingPerSample() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:alloc", 1, "32MiB", 512);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 4, 1000, 500, 3000, 9, 0);
        DatasetLocation loc = location(t, "nqn.2026-12.io.nvmeof:alloc", 1);
        generateAndImport(spec, "src", namespace(loc));
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults());
             DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).prefetchBytes(4 << 20).build()) {
            long[] perEpoch = new long[3];
            for (int epoch = 0; epoch < 3; epoch++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                long touched = 0;
                try (BatchIterator it = l.batches(epoch, 50)) {
                    while (it.hasNext()) {
                        Batch b = it.next();
                        for (int i = 0; i < b.size(); i++) {
                            touched += b.buffer().get(b.offset(i, b.memberIndex(i, "bin")));
                        }
                    }
                }
                perEpoch[epoch] = threads.getCurrentThreadAllocatedBytes() - before;
                assertTrue(touched != Long.MIN_VALUE);
            }
            double perSample = perEpoch[2] / (double) ds.sampleCount();
            assertTrue(perSample < 12, "the consumer allocated " + perEpoch[2] + " bytes over an epoch of "
                    + ds.sampleCount() + " samples (" + perSample + " a sample): something is created per sample");
        }
    }

    @Test
    void releasedSamplesAndBatchesFailClearly() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.FIXED, 1, 64, 0, 0, 6, 8192);
        try (NvmeofDataset ds = imported("rel", "4MiB", 512, spec)) {
            try (DatasetLoader l = ds.loader().build(); BatchIterator it = l.batches(0, 4)) {
                Batch first = it.next();
                first.member(0, 0);
                Batch second = it.next();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> first.member(0, 0));
                assertTrue(e.getMessage().contains("was released"), e.getMessage());
                second.close();
                assertThrows(IllegalStateException.class, () -> second.offset(0, 0));
                Batch third = it.next();
                it.close();
                e = assertThrows(IllegalStateException.class, () -> third.buffer());
                assertTrue(e.getMessage().contains("iteration"), e.getMessage());
            }
            try (DatasetLoader l = ds.loader().prefetchBytes(64 << 10).window(2).releaseOnNext(false)
                    .releaseTimeout(java.time.Duration.ofMillis(300)).build();
                 SampleIterator it = l.samples(0)) {
                List<Sample> held = new ArrayList<>();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                    while (it.hasNext()) {
                        held.add(it.next());
                    }
                });
                assertTrue(e.getMessage().contains("not released"), e.getMessage());
                assertEquals(8, held.size(), "64 KiB holds 8 samples of 8 KiB");
                held.get(0).release();
                held.get(1).release();
                assertTrue(it.hasNext(), "released space is read into again");
                assertThrows(IllegalStateException.class, () -> held.get(0).member(0));
            }
        }
    }

    /**
     * loader-bench's baseline replays {@link DatasetLoader#forEachRead}: it must be exactly the reads the loader issues
     * for an epoch, no more, no fewer, no other sizes.
     */
    @Test
    void forEachReadListsTheReadsTheLoaderIssues() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 3, 40, 3000, 40_000, 8, 0);
        try (NvmeofDataset ds = imported("reads", "16MiB", 512, spec)) {
            for (ShuffleMode mode : ShuffleMode.values()) {
                try (DatasetLoader l = ds.loader().shuffle(mode).window(16).prefetchBytes(4 << 20).build()) {
                    long[] listed = new long[2];
                    l.forEachRead(4, (part, offset, bytes) -> {
                        assertEquals(0, offset % 512);
                        listed[0]++;
                        listed[1] += bytes;
                    });
                    try (BatchIterator it = l.batches(4, 8)) {
                        it.forEachRemaining(b -> { });
                    }
                    assertEquals(listed[0], l.statistics().reads(), mode + ": reads");
                    assertEquals(listed[1], l.statistics().readBytes(), mode + ": bytes");
                }
            }
        }
    }

    /**
     * Issue 30, finding 17: a batch iterator whose caller holds earlier batches says so when the buffer fills, rather
     * than that a batch does not fit (a batch of 3 samples of 8 KiB fits 64 KiB easily); a batch that really does not
     * fit is still told so.
     */
    @Test
    void aFullBufferIsBlamedOnWhatFillsIt() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.FIXED, 1, 64, 0, 0, 6, 8192);
        try (NvmeofDataset ds = imported("held", "4MiB", 512, spec)) {
            try (DatasetLoader l = ds.loader().prefetchBytes(64 << 10).window(1).releaseOnNext(false)
                    .releaseTimeout(java.time.Duration.ofMillis(300)).build();
                 BatchIterator it = l.batches(0, 3)) {
                List<Batch> held = new ArrayList<>();
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                    while (it.hasNext()) {
                        held.add(it.next());
                    }
                });
                assertEquals(2, held.size(), "two batches of 3 held, the third could take 2 of the 8 samples");
                assertTrue(e.getMessage().contains("not released") && e.getMessage().contains("6 samples of earlier"
                        + " batches"), e.getMessage());
                assertFalse(e.getMessage().contains("does not fit"), e.getMessage());
            }
            try (DatasetLoader l = ds.loader().prefetchBytes(64 << 10).window(1)
                    .releaseTimeout(java.time.Duration.ofMillis(300)).build();
                 BatchIterator it = l.batches(0, 16)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, it::next);
                assertTrue(e.getMessage().contains("a batch of 16 samples does not fit the prefetch buffer"), e.getMessage());
            }
        }
    }

    /**
     * Issue 30, finding 17: the defaults fit a dataset of large samples. A window of 1,024 samples of 17 MiB needed
     * far more than the 64 MiB buffer; now the defaults follow the samples (four of the largest fit the buffer, a
     * window of them too), and settings given explicitly that do not fit are refused saying what to change.
     */
    @Test
    void theDefaultsFitADatasetOfLargeSamples() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.FIXED, 1, 4, 0, 0, 17, 17 << 20);
        try (NvmeofDataset ds = imported("large", "72MiB", 4096, spec)) {
            for (ShuffleMode mode : ShuffleMode.values()) {
                try (DatasetLoader l = ds.loader().shuffle(mode).build(); BatchIterator it = l.batches(0, 2)) {
                    int n = 0;
                    for (Batch b : it) {
                        for (int i = 0; i < b.size(); i++) {
                            assertSampleIsTheSource(spec, b.sample(i));
                            n++;
                        }
                    }
                    assertEquals(4, n, mode.toString());
                    assertTrue(l.statistics().prefetchBytes() >= 4L * (17 << 20), "the buffer holds four samples: "
                            + l.statistics().prefetchBytes());
                }
            }
            try (DatasetLoader l = ds.loader().window(4).prefetchBytes(64 << 20).build()) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.samples(0));
                assertTrue(e.getMessage().contains("raise prefetchBytes or lower window"), e.getMessage());
            }
        }
    }

    /**
     * A file-backed namespace whose file is a tar GNU tar wrote: indexed where it lies; refused with the size to grow
     * to while the index does not fit after the tar; afterwards the file is still a tar GNU tar reads.
     */
    @Test
    void aTarBackingFileIsIndexedInPlaceAndStaysATar() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 1, 40, 100, 5000, 21, 0);
        Path src = dir.resolve("members");
        java.nio.file.Files.createDirectories(src);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            java.nio.file.Files.write(src.resolve(DatasetGenerator.key(i) + ".bin"), DatasetGenerator.payload(spec, i));
            java.nio.file.Files.write(src.resolve(DatasetGenerator.key(i) + ".cls"), String.valueOf(i % 10).getBytes(StandardCharsets.US_ASCII));
            names.add(DatasetGenerator.key(i) + ".bin");
            names.add(DatasetGenerator.key(i) + ".cls");
        }
        Path tar = dir.resolve("shard.tar");
        List<String> cmd = new ArrayList<>(List.of("tar", "-b", "1", "-cf", tar.toString(), "-C", src.toString()));
        cmd.addAll(names);
        assertEquals(0, new ProcessBuilder(cmd).inheritIO().start().waitFor());
        long tarBytes = java.nio.file.Files.size(tar);
        String nqn = "nqn.2026-12.io.nvmeof:inplace";
        NvmeTarget t = NvmeTarget.start(TargetConfig.parse("{\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\","
                + "\"port\":0}],\"subsystems\":[{\"nqn\":\"" + nqn + "\",\"namespaces\":[{\"nsid\":1,\"backend\":\"file\","
                + "\"path\":\"" + tar + "\",\"blockSize\":512}]}]}"));
        targets.add(t);
        DatasetLocation loc = location(t, nqn, 1);
        NvmeofController c = NvmeofController.connect(loc.transportId(), ConnectOptions.defaults());
        controllers.add(c);
        IOException tooSmall = assertThrows(IOException.class, () -> io.nvmeof.loader.imports.InPlaceIndexer.index(
                c.namespace(1), "shard.tar", "inplace", false, false, ImportProgress.SILENT));
        assertTrue(tooSmall.getMessage().contains("ns-resize " + nqn + " 1 "), tooSmall.getMessage());
        assertEquals(tarBytes, java.nio.file.Files.size(tar), "a refused index writes nothing");

        t.live().resizeNamespace(nqn, 1, String.valueOf(tarBytes + (1 << 20)));
        c.rescanNamespaces();
        io.nvmeof.loader.imports.InPlaceIndexer.index(c.namespace(1), "shard.tar", "inplace", false, false, ImportProgress.SILENT);

        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults());
             DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).verify(true).build(); SampleIterator it = l.samples(0)) {
            assertEquals(40, ds.sampleCount());
            assertEquals(0, ds.shards().get(0).offset(), "the shard is the file itself, from byte 0");
            assertEquals(40, it.stream().peek(s -> assertSampleIsTheSource(spec, s)).count());
        }
        Process list = new ProcessBuilder("tar", "-tf", tar.toString()).redirectErrorStream(true).start();
        String listed = new String(list.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, list.waitFor(), listed);
        assertEquals(names, List.of(listed.trim().split("\n")), "GNU tar still reads exactly the members");
        Process one = new ProcessBuilder("tar", "-xOf", tar.toString(), names.get(6)).start();
        assertArrayEquals(DatasetGenerator.payload(spec, 3), one.getInputStream().readAllBytes());
        assertEquals(0, one.waitFor());
    }

    @Test
    void anInterruptedImportResumesWhereItStopped() throws Exception {
        NvmeTarget t = target("nqn.2026-12.io.nvmeof:imp", 2, "8MiB", 4096);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 6, 20, 2000, 30000, 8, 0);
        DatasetGenerator.generate(dir.resolve("src"), spec);
        List<DatasetLocation> locs = List.of(location(t, "nqn.2026-12.io.nvmeof:imp", 1), location(t, "nqn.2026-12.io.nvmeof:imp", 2));
        List<NamespaceHandle> ns = List.of(namespace(locs.get(0)), namespace(locs.get(1)));
        List<DatasetImporter.Source> sources = DatasetImporter.scan(List.of(dir.resolve("src")), null);
        long[] written = {0};
        ImportProgress dies = new ImportProgress() {
            String phase = "";

            public void phase(String name, long total) { phase = name; }

            public void advanced(long bytes, String detail) {
                if (phase.startsWith("writing") && (written[0] += bytes) > 2_000_000) {
                    throw new IllegalStateException("killed");
                }
            }

            public void note(String line) { }
        };
        assertThrows(IllegalStateException.class, () -> DatasetImporter.run(sources, ns, options("imp", 0), dies));
        IOException unfinished = assertThrows(IOException.class, () -> NvmeofDataset.connect(locs, ConnectOptions.defaults()));
        assertTrue(unfinished.getMessage().contains("unfinished import"), unfinished.getMessage());

        List<String> notes = new ArrayList<>();
        ImportProgress listen = new ImportProgress() {
            public void phase(String name, long total) { }
            public void advanced(long bytes, String detail) { }
            public void note(String line) { notes.add(line); }
        };
        DatasetImporter.Result r = DatasetImporter.run(sources, ns, options("imp", 0), listen);
        assertTrue(r.resumedShards() > 0 && r.resumedShards() < 6, "resumed after " + r.resumedShards() + " shards");
        assertTrue(notes.get(0).contains("resuming"), notes.toString());
        try (NvmeofDataset ds = NvmeofDataset.connect(locs, ConnectOptions.defaults());
             DatasetLoader l = ds.loader().verify(true).build(); SampleIterator it = l.samples(0)) {
            assertEquals(r.datasetId(), ds.id());
            assertEquals(120, it.stream().peek(s -> assertSampleIsTheSource(spec, s)).count());
        }
        IOException again = assertThrows(IOException.class, () -> DatasetImporter.run(sources, ns, options("imp", 0), listen));
        assertTrue(again.getMessage().contains("--force"), again.getMessage());
    }
}

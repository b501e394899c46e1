package io.nvmeof.loader.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.translate.Pipeline;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * DJL's dataset options, held to DJL's own behaviour: each test runs the same assertions on DJL's
 * {@link ArrayDataset} over the samples and on {@link NvmeofDjlDataset} over the same samples read from our target.
 * Sample {@code i} has features {@code i, i + 0.25, i + 0.5, i + 0.75} and label {@code -i}, so a batch row says which
 * sample it is and what was done to it.
 */
@Timeout(120)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DjlDatasetOptionsTest {
    static final int SAMPLES = 40;

    @TempDir
    static Path dir;
    static TargetWithDataset fixture;
    static NDManager manager;
    final List<AutoCloseable> built = new ArrayList<>();

    /** Builds a DJL dataset over the samples with the options given, as a user's code would. */
    interface Peer {
        RandomAccessDataset build(Consumer<RandomAccessDataset.BaseBuilder<?>> options) throws Exception;
    }

    @BeforeAll
    static void start() throws Exception {
        ByteBuffer b = ByteBuffer.allocate(SAMPLES * TargetWithDataset.RECORD).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < SAMPLES; i++) {
            for (float x : features(i)) {
                b.putFloat(x);
            }
            b.putFloat(-i);
        }
        Files.write(dir.resolve("part-0.bin"), b.array());
        fixture = TargetWithDataset.start(dir, "options");
        manager = NDManager.newBaseManager();
    }

    @AfterAll
    static void stop() {
        if (manager != null) {
            manager.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @AfterEach
    void closeBuilt() throws Exception {
        for (AutoCloseable c : built) {
            c.close();
        }
        built.clear();
    }

    static float[] features(long i) {
        return new float[] {i, i + 0.25f, i + 0.5f, i + 0.75f};
    }

    Stream<Arguments> peers() {
        Peer djl = options -> {
            float[][] x = new float[SAMPLES][];
            float[][] y = new float[SAMPLES][];
            for (int i = 0; i < SAMPLES; i++) {
                x[i] = features(i);
                y[i] = new float[] {-i};
            }
            ArrayDataset.Builder b = new ArrayDataset.Builder().setData(manager.create(x)).optLabels(manager.create(y));
            options.accept(b);
            return b.build();
        };
        Peer ours = options -> {
            NvmeofDjlDataset.Builder b = NvmeofDjlDataset.builder(fixture.ds).decoder(TargetWithDataset::decode)
                    .loader(l -> l.prefetchBytes(1 << 20));
            options.accept(b);
            NvmeofDjlDataset d = b.build();
            built.add(d);
            return d;
        };
        return Stream.of(Arguments.of("DJL ArrayDataset", djl), Arguments.of("NvmeofDjlDataset", ours));
    }

    /** What one epoch of {@code getData} yielded: batch sizes, sample indices in order, progress totals. */
    record Epoch(List<Integer> batchSizes, List<Long> indices, Set<Long> progressTotals) {
        Set<Long> distinct() {
            return new HashSet<>(indices);
        }
    }

    static Epoch epoch(Iterable<Batch> data) {
        List<Integer> sizes = new ArrayList<>();
        List<Long> indices = new ArrayList<>();
        Set<Long> totals = new HashSet<>();
        for (Batch b : data) {
            try (b) {
                sizes.add(b.getSize());
                b.getIndices().forEach(i -> indices.add(((Number) i).longValue()));
                totals.add(b.getProgressTotal());
            }
        }
        return new Epoch(sizes, indices, totals);
    }

    static Set<Long> range(long from, long to) {
        return LongStream.range(from, to).boxed().collect(Collectors.toSet());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("peers")
    void thePipelineTransformsEachSamplesDataAndTheTargetPipelineTheLabels(String peerName, Peer peer)
            throws Exception {
        RandomAccessDataset d = peer.build(b -> b.setSampling(8, true)
                .optPipeline(new Pipeline(a -> a.mul(10)))
                .optTargetPipeline(new Pipeline(a -> a.add(1000))));
        List<Long> seen = new ArrayList<>();
        for (Batch b : d.getData(manager)) {
            try (b) {
                float[] x = b.getData().head().toFloatArray();
                float[] y = b.getLabels().head().toFloatArray();
                List<?> indices = b.getIndices();
                assertEquals(b.getSize(), indices.size());
                for (int k = 0; k < indices.size(); k++) {
                    long i = ((Number) indices.get(k)).longValue();
                    float[] want = features(i);
                    for (int j = 0; j < want.length; j++) {
                        want[j] *= 10;
                    }
                    assertArrayEquals(want, Arrays.copyOfRange(x, 4 * k, 4 * k + 4), "the pipeline on sample " + i);
                    assertEquals(1000 - i, y[k], "the target pipeline on sample " + i);
                    seen.add(i);
                }
            }
        }
        assertEquals(SAMPLES, seen.size());
        assertEquals(range(0, SAMPLES), new HashSet<>(seen));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("peers")
    void aLimitBoundsTheSizeAndWhatEveryEpochYields(String peerName, Peer peer) throws Exception {
        RandomAccessDataset d = peer.build(b -> b.setSampling(4, true).optLimit(10));
        assertEquals(10, d.size());
        for (int e = 0; e < 2; e++) {
            Epoch epoch = epoch(d.getData(manager));
            assertEquals(List.of(4, 4, 2), epoch.batchSizes(), "epoch " + e);
            assertEquals(10, epoch.distinct().size(), "10 distinct samples in epoch " + e + ": " + epoch.indices());
            assertEquals(Set.of(10L), epoch.progressTotals(), "the progress bar's total is size()");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("peers")
    void aLimitWithSequentialSamplingYieldsTheFirstSamplesInOrder(String peerName, Peer peer) throws Exception {
        RandomAccessDataset d = peer.build(b -> b.setSampling(4, false, true).optLimit(10));
        Epoch epoch = epoch(d.getData(manager));
        assertEquals(List.of(4, 4), epoch.batchSizes(), "dropLast leaves out the incomplete third batch");
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L), epoch.indices());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("peers")
    void getDataBuildsItsBatchesOnTheExecutorGivenPrefetchingAsSet(String peerName, Peer peer) throws Exception {
        Set<String> pipelineThreads = ConcurrentHashMap.newKeySet();
        RandomAccessDataset d = peer.build(b -> b.setSampling(8, false).optPrefetchNumber(3)
                .optPipeline(new Pipeline(a -> {
                    pipelineThreads.add(Thread.currentThread().getName());
                    return a;
                })));
        CountingExecutor executor = new CountingExecutor("given-executor-");
        try {
            Iterator<Batch> it = d.getData(manager, executor).iterator();
            assertTrue(it.hasNext());
            assertEquals(3, executor.submitted.get(), "optPrefetchNumber(3) batches submitted ahead");
            it.next().close();
            assertEquals(4, executor.submitted.get(), "taking a batch submits the next");
            int batches = 1;
            while (it.hasNext()) {
                it.next().close();
                batches++;
            }
            assertEquals(SAMPLES / 8, batches);
            assertEquals(SAMPLES / 8, executor.submitted.get(), "one task a batch");
            assertFalse(pipelineThreads.isEmpty());
            assertTrue(pipelineThreads.stream().allMatch(t -> t.startsWith("given-executor-")),
                    "the batches are made on the executor's threads: " + pipelineThreads);
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    void aRanksDatasetIsItsShareOfEachEpoch() throws Exception {
        int world = 3;
        Set<Long> union = new HashSet<>();
        for (int rank = 0; rank < world; rank++) {
            int r = rank;
            NvmeofDjlDataset d = NvmeofDjlDataset.builder(fixture.ds).decoder(TargetWithDataset::decode)
                    .loader(l -> NvmeofDjlDataset.rank(r, world).apply(l).prefetchBytes(1 << 20))
                    .setSampling(5, true).build();
            built.add(d);
            long share = SAMPLES / world + (rank < SAMPLES % world ? 1 : 0);
            assertEquals(share, d.availableSize(), "rank " + rank + " of " + world);
            assertEquals(share, d.size(), "rank " + rank + " of " + world);
            Epoch epoch = epoch(d.getData(manager));
            assertEquals(share, epoch.indices().size(), "the samples one epoch yields are size()");
            assertEquals(Set.of(share), epoch.progressTotals(), "the progress bar's total is size()");
            union.addAll(epoch.indices());
        }
        assertEquals(range(0, SAMPLES), union, "the ranks' shares cover the epoch");

        NvmeofDjlDataset limited = NvmeofDjlDataset.builder(fixture.ds).decoder(TargetWithDataset::decode)
                .loader(l -> NvmeofDjlDataset.rank(1, world).apply(l).prefetchBytes(1 << 20))
                .setSampling(5, true).optLimit(6).build();
        built.add(limited);
        assertEquals(6, limited.size());
        assertEquals(List.of(5, 1), epoch(limited.getData(manager)).batchSizes());
    }

    @Test
    void aDecoderFailingOnTheExecutorFailsTheLoopWithItsErrorAndTheNextEpochReadsWhole() throws Exception {
        AtomicInteger failures = new AtomicInteger(1);
        NvmeofDjlDataset d = NvmeofDjlDataset.builder(fixture.ds)
                .decoder((m, s) -> {
                    if (s.index() == 17 && failures.getAndDecrement() > 0) {
                        throw new IOException("sample 17 cannot be decoded");
                    }
                    return TargetWithDataset.decode(m, s);
                })
                .loader(l -> l.prefetchBytes(1 << 20)).setSampling(4, false).optPrefetchNumber(3).build();
        built.add(d);
        CountingExecutor executor = new CountingExecutor("given-executor-");
        try {
            UncheckedIOException e = assertThrows(UncheckedIOException.class,
                    () -> epoch(d.getData(manager, executor)));
            assertEquals("sample 17 cannot be decoded", e.getCause().getMessage());
            Epoch next = epoch(d.getData(manager, executor));
            assertEquals(range(0, SAMPLES), next.distinct(), "the next epoch, after the failed one was left");
        } finally {
            executor.shutdownNow();
        }
    }

    /** An executor that counts the tasks given to it and names its threads. */
    static final class CountingExecutor extends AbstractExecutorService {
        final AtomicInteger submitted = new AtomicInteger();
        private final ExecutorService pool;

        CountingExecutor(String threadPrefix) {
            AtomicInteger n = new AtomicInteger();
            pool = Executors.newFixedThreadPool(2, task -> {
                Thread t = new Thread(task, threadPrefix + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }

        @Override
        public void execute(Runnable command) {
            submitted.incrementAndGet();
            pool.execute(command);
        }

        @Override
        public void shutdown() {
            pool.shutdown();
        }

        @Override
        public List<Runnable> shutdownNow() {
            return pool.shutdownNow();
        }

        @Override
        public boolean isShutdown() {
            return pool.isShutdown();
        }

        @Override
        public boolean isTerminated() {
            return pool.isTerminated();
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
            return pool.awaitTermination(timeout, unit);
        }
    }
}

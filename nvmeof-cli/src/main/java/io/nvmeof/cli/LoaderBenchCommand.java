package io.nvmeof.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.loader.Batch;
import io.nvmeof.loader.BatchIterator;
import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.LoaderStatistics;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.plan.ShuffleMode;
import io.nvmeof.tgt.config.TargetConfig;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code nvmeof loader-bench}: generates a dataset, imports it, then measures the loader reading it against raw reads
 * in the same run: the loader's own reads of an epoch replayed at the same reads in flight (same bytes, same transfer
 * sizes, same order), a bound the loader can at best reach.
 */
@Command(name = "loader-bench", mixinStandardHelpOptions = true,
        description = "Generate and import a dataset, then compare the loader's reads with the same reads replayed raw,"
                + " at the same reads in flight (JSON summary with --json).")
final class LoaderBenchCommand implements Callable<Integer> {
    @Mixin
    DatasetCommand.Namespaces where;

    @Option(names = "--sample-size", defaultValue = "4k-16k", description = "Sample payload sizes, MIN-MAX or one size. Default: ${DEFAULT-VALUE}")
    String sampleSize;

    @Option(names = "--dataset-size", defaultValue = "256MiB", description = "Bytes of payload to generate. Default: ${DEFAULT-VALUE}")
    String datasetSize;

    @Option(names = "--format", defaultValue = "tar", description = "tar, tfrecord or fixed. Default: ${DEFAULT-VALUE}")
    String format;

    @Option(names = "--shuffle", description = "none, window or full (default: full for samples under 256 KiB, else window)")
    String shuffle;

    @Option(names = "--window", defaultValue = "256", description = "Samples per window (none/window). Default: ${DEFAULT-VALUE}")
    int window;

    @Option(names = "--qd", defaultValue = "32", description = "Reads in flight per controller, loader and raw alike. Default: ${DEFAULT-VALUE}")
    int qd;

    @Option(names = "--io-queues", defaultValue = "1", description = "I/O queues per controller. Default: ${DEFAULT-VALUE}")
    int ioQueues;

    @Option(names = "--batch", defaultValue = "64", description = "Samples per batch. Default: ${DEFAULT-VALUE}")
    int batch;

    @Option(names = "--prefetch", defaultValue = "64MiB", description = "The loader's buffer. Default: ${DEFAULT-VALUE}")
    String prefetch;

    @Option(names = "--time", defaultValue = "10", description = "Seconds each measurement runs. Default: ${DEFAULT-VALUE}")
    int seconds;

    @Option(names = "--ramp", defaultValue = "2", description = "Seconds of warm-up before each measurement, not counted. Default: ${DEFAULT-VALUE}")
    int ramp;

    @Option(names = "--rounds", defaultValue = "1", description = "Loader and raw measurements alternate this many times. Default: ${DEFAULT-VALUE}")
    int rounds;

    @Option(names = "--work-dir", description = "Where the generated shards go (default: a temporary directory, removed after)")
    Path workDir;

    @Option(names = "--json", description = "A JSON summary on stdout")
    boolean json;

    @Override
    public Integer call() throws Exception {
        int[] sizes = parseSizes(sampleSize);
        ShardFormat fmt = ShardFormat.parse(format);
        long bytes = TargetConfig.parseSize(datasetSize);
        int mean = (sizes[0] + sizes[1]) / 2;
        ShuffleMode mode = shuffle != null ? ShuffleMode.valueOf(shuffle.toUpperCase(Locale.ROOT))
                : mean < 256 << 10 ? ShuffleMode.FULL : ShuffleMode.WINDOW;
        if (qd < 1 || batch < 1 || seconds < 1 || rounds < 1) {
            throw new IllegalArgumentException("--qd, --batch, --time and --rounds must be at least 1");
        }
        long samples = Math.max(1, bytes / Math.max(1, mean));
        long perShardMax = Math.max(1, (64L << 20) / Math.max(1, mean)); // shards of about 64 MiB
        int shards = (int) Math.max(1, (samples + perShardMax - 1) / perShardMax);
        int perShard = (int) ((samples + shards - 1) / shards);
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(fmt, shards, perShard, sizes[0], sizes[1], 1,
                fmt == ShardFormat.FIXED ? sizes[0] : 0);
        Path dir = workDir != null ? workDir : Files.createTempDirectory("nvmeof-loader-bench");
        ProgressBar bar = new ProgressBar();
        DatasetCommand.Opened opened = null;
        try {
            System.err.printf(Locale.ROOT, "generating %d shards of %d samples (%s-%s) in %s%n", shards, perShard,
                    ProgressBar.size(sizes[0]), ProgressBar.size(sizes[1]), dir);
            DatasetGenerator.generate(dir, spec);
            opened = where.open(ioQueues);
            List<NamespaceHandle> ns = opened.namespaces();
            DatasetImporter.run(DatasetImporter.scan(List.of(dir), fmt == ShardFormat.FIXED ? fmt : null), ns,
                    new DatasetImporter.Options("loader-bench", spec.recordSize(), false, false, true, true), bar);
            bar.finishLine();
            try (NvmeofDataset ds = NvmeofDataset.open(ns);
                 DatasetLoader loader = ds.loader().shuffle(mode).window(window).seed(1).readsInFlight(qd)
                         .prefetchBytes(TargetConfig.parseSize(prefetch)).build()) {
                List<Map<String, Object>> runs = new ArrayList<>();
                List<Double> ratios = new ArrayList<>();
                for (int r = 0; r < rounds; r++) {
                    Map<String, Object> l = measureLoader(loader, r);
                    Map<String, Object> raw = measureRaw(ds, loader, r * 1000L);
                    // The same reads on both sides: read MiB/s and reads/s give one ratio.
                    double ratio = (double) l.get("readMiBps") / (double) raw.get("MiBps");
                    Map<String, Object> round = new LinkedHashMap<>();
                    round.put("loader", l);
                    round.put("raw", raw);
                    round.put("ratio", ratio);
                    runs.add(round);
                    ratios.add(ratio);
                    System.err.printf(Locale.ROOT, "round %d: loader %,.0f samples/s, %.1f MiB/s of samples, %,.0f reads/s"
                                    + " (%.1f MiB/s read); raw: %s, %,.0f reads/s, %.1f MiB/s; ratio %.3f; CPU %.2f us and"
                                    + " %.1f B allocated per sample (raw: %.2f us, %.1f B per read)%n", r + 1,
                            l.get("samplesPerSecond"), l.get("sampleMiBps"), l.get("readsPerSecond"), l.get("readMiBps"),
                            raw.get("workload"), raw.get("iops"), raw.get("MiBps"), ratio, l.get("cpuMicrosPerSample"),
                            l.get("allocatedBytesPerSample"), raw.get("cpuMicrosPerIo"), raw.get("allocatedBytesPerIo"));
                }
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("format", fmt.label());
                out.put("sampleSize", sampleSize);
                out.put("samples", ds.sampleCount());
                out.put("dataBytes", ds.dataBytes());
                out.put("namespaces", ns.size());
                out.put("shuffle", mode.name().toLowerCase(Locale.ROOT));
                out.put("qd", qd);
                out.put("ioQueues", ioQueues);
                out.put("batch", batch);
                out.put("rounds", runs);
                java.util.Collections.sort(ratios);
                double median = ratios.size() % 2 == 1 ? ratios.get(ratios.size() / 2)
                        : (ratios.get(ratios.size() / 2 - 1) + ratios.get(ratios.size() / 2)) / 2;
                out.put("medianRatio", median);
                if (json) {
                    System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(out));
                } else {
                    System.out.printf(Locale.ROOT, "%s %s samples, %s shuffle, qd %d: loader / its reads replayed raw, median"
                                    + " %.3f of %d round(s) (%.3f-%.3f)%n", fmt.label(), sampleSize,
                            mode.name().toLowerCase(Locale.ROOT), qd, median, ratios.size(), ratios.get(0),
                            ratios.get(ratios.size() - 1));
                }
            }
            return 0;
        } finally {
            if (opened != null) {
                opened.close();
            }
            if (workDir == null) {
                try (Stream<Path> s = Files.walk(dir)) {
                    s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
    }

    static int[] parseSizes(String s) {
        String[] parts = s.split("-");
        if (parts.length > 2) {
            throw new IllegalArgumentException("--sample-size is MIN-MAX or one size, got " + s);
        }
        int min = (int) TargetConfig.parseSize(parts[0]);
        int max = parts.length == 2 ? (int) TargetConfig.parseSize(parts[1]) : min;
        if (min < 1 || max < min) {
            throw new IllegalArgumentException("--sample-size must satisfy 1 <= MIN <= MAX, got " + s);
        }
        return new int[] {min, max};
    }

    /** The loader for {@code seconds}: epochs one after another, every sample's bytes touched once. */
    private Map<String, Object> measureLoader(DatasetLoader loader, int round) {
        if (ramp > 0) {
            runLoader(loader, round * 1000L + 500, System.nanoTime() + ramp * 1_000_000_000L, "warm-up");
        }
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        LoaderStatistics before = loader.statistics();
        long alloc0 = allocated(threads);
        double cpu0 = cpuSeconds();
        long consumer0 = threads.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        long touched = runLoader(loader, round * 1000L, t0 + seconds * 1_000_000_000L, "loader");
        double secs = (System.nanoTime() - t0) / 1e9;
        double cpu = cpuSeconds() - cpu0;
        long consumerNs = threads.getCurrentThreadCpuTime() - consumer0;
        long alloc = allocated(threads) - alloc0;
        LoaderStatistics after = loader.statistics();
        System.err.print("\r" + " ".repeat(40) + "\r");
        long n = after.samples() - before.samples();
        long reads = after.reads() - before.reads();
        long readBytes = after.readBytes() - before.readBytes();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("seconds", secs);
        m.put("samples", n);
        m.put("samplesPerSecond", n / secs);
        m.put("sampleMiBps", (after.sampleBytes() - before.sampleBytes()) / 1048576.0 / secs);
        m.put("readsPerSecond", reads / secs);
        m.put("readMiBps", readBytes / 1048576.0 / secs);
        m.put("meanReadBytes", reads > 0 ? readBytes / reads : 0L);
        m.put("waitSeconds", (after.waitNanos() - before.waitNanos()) / 1e9);
        m.put("waitsPerSample", n > 0 ? (double) (after.waits() - before.waits()) / n : Double.NaN);
        m.put("parksPerSample", n > 0 ? (double) (after.parks() - before.parks()) / n : Double.NaN);
        m.put("cpuMicrosPerSample", n > 0 ? cpu * 1e6 / n : Double.NaN);
        m.put("consumerThreadCpuMicrosPerSample", n > 0 ? consumerNs / 1e3 / n : Double.NaN);
        m.put("allocatedBytesPerSample", n > 0 ? (double) alloc / n : Double.NaN);
        m.put("checksum", touched);
        return m;
    }

    /** Iterates epochs until {@code end}, touching every sample once as a training step reading it would. */
    private long runLoader(DatasetLoader loader, long epoch, long end, String what) {
        long t0 = System.nanoTime();
        long touched = 0;
        long lastReport = t0;
        long n0 = loader.statistics().samples();
        while (true) {
            try (BatchIterator it = loader.batches(epoch++, batch)) {
                while (it.hasNext()) {
                    Batch b = it.next();
                    ByteBuffer buf = b.buffer();
                    for (int i = 0; i < b.size(); i++) {
                        touched += buf.get(b.offset(i, 0));
                    }
                    long now = System.nanoTime();
                    if (now - lastReport > 1_000_000_000L) {
                        lastReport = now;
                        System.err.printf(Locale.ROOT, "\r%s [%2ds] %,.0f samples/s   ", what, (now - t0) / 1_000_000_000L,
                                (loader.statistics().samples() - n0) / ((now - t0) / 1e9));
                    }
                    if (now > end) {
                        return touched;
                    }
                }
            }
        }
    }

    /**
     * The baseline: the loader's own reads of epoch {@code epoch} replayed in a closed loop at the same reads in flight
     * ({@link LoaderReadReplay}): the same bytes, the same transfer sizes, the same queue depth, without the loader.
     */
    private Map<String, Object> measureRaw(NvmeofDataset ds, DatasetLoader loader, long epoch) throws Exception {
        try (LoaderReadReplay replay = new LoaderReadReplay(ds, loader, epoch, qd)) {
            replay.start();
            Thread.sleep(ramp * 1000L);
            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long alloc0 = allocated(threads);
            long n0 = replay.reads();
            long b0 = replay.bytes();
            double cpu0 = cpuSeconds();
            long t0 = System.nanoTime();
            for (int s = 1; s <= seconds && replay.failure() == null; s++) {
                Thread.sleep(1000);
                System.err.printf(Locale.ROOT, "\rraw [%2ds/%ds] %,.0f reads/s   ", s, seconds,
                        (replay.reads() - n0) / ((System.nanoTime() - t0) / 1e9));
            }
            long n = replay.reads() - n0;
            long bytes = replay.bytes() - b0;
            double secs = (System.nanoTime() - t0) / 1e9;
            double cpu = cpuSeconds() - cpu0;
            long alloc = allocated(threads) - alloc0;
            replay.stop();
            System.err.print("\r" + " ".repeat(40) + "\r");
            if (replay.failure() != null) {
                throw new IllegalStateException("a raw read failed: " + replay.failure());
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("workload", "the loader's " + replay.readsPerEpoch() + " reads of epoch " + epoch + ", "
                    + replay.meanReadBytes() + " B on average, replayed");
            m.put("seconds", secs);
            m.put("iops", n / secs);
            m.put("MiBps", bytes / 1048576.0 / secs);
            m.put("meanReadBytes", n > 0 ? bytes / n : 0L);
            m.put("cpuMicrosPerIo", n > 0 ? cpu * 1e6 / n : Double.NaN);
            m.put("allocatedBytesPerIo", n > 0 ? (double) alloc / n : Double.NaN);
            return m;
        }
    }

    private static long allocated(com.sun.management.ThreadMXBean threads) {
        long sum = 0;
        for (long id : threads.getAllThreadIds()) {
            long a = threads.getThreadAllocatedBytes(id);
            if (a > 0) {
                sum += a;
            }
        }
        return sum;
    }

    private static double cpuSeconds() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() / 1e9 : Double.NaN;
    }
}

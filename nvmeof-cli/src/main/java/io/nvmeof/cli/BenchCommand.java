package io.nvmeof.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.cpu.CpuList;
import io.nvmeof.cpu.ThreadPlacement;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.protocol.Status;
import io.nvmeof.tgt.config.TargetConfig;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * A closed-loop load generator on the zero-allocation callback API: every queue keeps {@code --qd} commands in flight;
 * each completion records its latency and submits the next command from the completion thread.
 *
 * <p>With several {@code --path}s it runs over a multipath namespace (one controller per path, {@code --queues}
 * queues each) and reports the I/Os each path completed, so round-robin's spreading and a failover show. A failed
 * I/O there is counted and reported, and its slot goes on, as long as some path is connected; with one path, or with
 * none left, the first failure ends the run.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure IOPS, bandwidth and latency percentiles against a namespace (fio-style JSON with --json).")
final class BenchCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions conn;

    @Option(names = {"-n", "--nqn"}, required = true, description = "Subsystem NQN")
    String nqn;

    @Option(names = {"-N", "--namespace-id"}, defaultValue = "1", description = "Namespace ID. Default: ${DEFAULT-VALUE}")
    long nsid;

    @Option(names = "--rw", defaultValue = "randread", description = "randread, randwrite, read or write. Default: ${DEFAULT-VALUE}")
    String rw;

    @Option(names = "--bs", defaultValue = "4k", description = "Block size of each I/O. Default: ${DEFAULT-VALUE}")
    String bs;

    @Option(names = "--qd", defaultValue = "32", description = "Commands in flight per queue. Default: ${DEFAULT-VALUE}")
    int qd;

    @Option(names = "--queues", defaultValue = "1", description = "I/O queues (connections). Default: ${DEFAULT-VALUE}")
    int queues;

    @Option(names = "--time", defaultValue = "10", description = "Seconds to measure. Default: ${DEFAULT-VALUE}")
    int seconds;

    @Option(names = "--ramp", defaultValue = "1", description = "Seconds of warm-up not measured. Default: ${DEFAULT-VALUE}")
    int rampSeconds;

    @Option(names = "--size", description = "Bytes of the namespace to address (default: all of it)")
    String size;

    @Option(names = "--target-pid", paramLabel = "PID", description = "Also report this local target process's CPU"
            + " time (user + system, from /proc) per I/O over the measured window")
    Long targetPid;

    @Option(names = "--json", description = "Print fio-compatible JSON on stdout")
    boolean json;

    @Option(names = "--event-loop-cpus", paramLabel = "CPUS", description = "NVMe/TCP: run the event loop on this CPU"
            + " alone (with --queues N, N loops on N CPUs: 2-3), as taskset -c writes them; the JVM's other threads run"
            + " on the process's other CPUs. Default: the kernel places every thread")
    String eventLoopCpus;

    private volatile boolean stop;

    @Override
    public Integer call() throws Exception {
        boolean write = rw.endsWith("write");
        boolean random = rw.startsWith("rand");
        if (!rw.equals("randread") && !rw.equals("randwrite") && !rw.equals("read") && !rw.equals("write")) {
            throw new IllegalArgumentException("--rw must be randread, randwrite, read or write");
        }
        long ioBytes = TargetConfig.parseSize(bs);
        if (qd < 1 || queues < 1 || seconds < 1) {
            throw new IllegalArgumentException("--qd, --queues and --time must be at least 1");
        }
        if (rampSeconds < 0) {
            throw new IllegalArgumentException("--ramp must be 0 or more seconds");
        }
        ConnectOptions.Builder options = conn.builder().ioQueues(queues).queueDepth(Math.min(qd + 1, 1024));
        ThreadPlacement placement = null;
        if (eventLoopCpus != null) {
            CpuList cpus;
            try {
                cpus = CpuList.parse(eventLoopCpus);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--event-loop-cpus: " + e.getMessage(), e);
            }
            try {
                placement = ThreadPlacement.start(cpus);
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw new IllegalArgumentException("--event-loop-cpus " + cpus + ": " + e.getMessage(), e);
            }
            options.eventLoopThreads(cpus.size()).eventLoopPlacement(placement::pinned);
        }
        try (ThreadPlacement placed = placement;
             ConnectedNamespace ns = conn.connectNamespace(nqn, nsid, options.build())) {
            if (ioBytes % ns.blockSize() != 0 || ioBytes <= 0) {
                throw new IllegalArgumentException("--bs " + bs + " is not a multiple of the block size " + ns.blockSize());
            }
            int blocks = (int) (ioBytes / ns.blockSize());
            if (blocks > ns.maxBlocksPerIo()) {
                throw new IllegalArgumentException("--bs " + bs + " exceeds the controller's transfer limit of "
                        + (long) ns.maxBlocksPerIo() * ns.blockSize() + " bytes");
            }
            long span = size != null ? Math.min(TargetConfig.parseSize(size) / ns.blockSize(), ns.blockCount()) : ns.blockCount();
            long slots = span / blocks;
            if (slots < 1) {
                throw new IllegalArgumentException("the namespace region is smaller than one I/O");
            }
            int inflight = qd * ns.ioQueueCount();
            ByteBuffer[] buffers = new ByteBuffer[inflight];
            long[] started = new long[inflight];
            for (int i = 0; i < inflight; i++) {
                buffers[i] = ns.allocateBuffer((int) ioBytes);
                if (write) {
                    byte[] pattern = new byte[(int) ioBytes];
                    ThreadLocalRandom.current().nextBytes(pattern);
                    buffers[i].put(pattern).clear();
                }
            }
            Recorder recorder = new Recorder(3);
            LongAdder completed = new LongAdder();
            LongAdder submitted = new LongAdder();
            LongAdder ioErrors = new LongAdder();
            AtomicReference<String> firstError = new AtomicReference<>();
            AtomicReference<String> failure = new AtomicReference<>();
            boolean multipath = ns.multipath() != null;
            CompletionGaps gaps = multipath ? new CompletionGaps() : null;
            long[] sequential = new long[inflight];
            for (int i = 0; i < inflight; i++) {
                sequential[i] = (long) i;
            }
            IoCallback[] self = new IoCallback[1];
            self[0] = (context, status) -> {
                int slot = (int) context;
                long now = System.nanoTime();
                completed.increment();
                if (gaps != null) {
                    gaps.completion(now);
                }
                if (status != Status.SUCCESS) {
                    String what = IoCallback.describe(status);
                    // Over several paths a failed I/O is counted and its slot goes on while a path can carry it;
                    // the multipath namespace already waited its failover timeout for one before failing it.
                    // A request's own error (DNR, media, LBA range) ends the run as on one path: only a path failure
                    // that outlasted the failover is counted and carried on from.
                    if (!multipath || !ns.anyPathConnected() || !MultipathNamespace.failsOver(status)) {
                        failure.compareAndSet(null, what);
                        return;
                    }
                    ioErrors.increment();
                    if (firstError.get() == null) { // an I/O that no path carried in time: the paths' states then
                        firstError.compareAndSet(null, what + ", no path carried it in time ("
                                + ns.multipath().describePaths() + ")");
                    }
                    if (!stop) {
                        submit(ns, write, random, slot, blocks, slots, inflight, buffers, started, sequential, submitted,
                                self[0]);
                    }
                    return;
                }
                // Recorded during the warm-up too (and thrown away when it ends): a branch first taken when measuring
                // starts is compiled then, and the JIT's recompiling of the whole completion path landed in the
                // measured window as millisecond stalls (docs/performance.md, "Tails").
                recorder.recordValue(Math.max(1, now - started[slot]));
                if (!stop) {
                    submit(ns, write, random, slot, blocks, slots, inflight, buffers, started, sequential, submitted, self[0]);
                }
            };
            ProcessCpu targetCpu = targetPid != null ? ProcessCpu.of(targetPid) : null;
            for (int i = 0; i < inflight; i++) {
                submit(ns, write, random, i, blocks, slots, inflight, buffers, started, sequential, submitted, self[0]);
            }
            // The warm-up runs the same loop as the measurement and throws its seconds away: work first done when
            // measuring starts (reading /proc through a heap buffer, here) changed the type profiles of the JDK's
            // I/O methods the event loop shares, and the JIT's deoptimising and recompiling of the whole I/O path
            // fell into the measured window as millisecond stalls (docs/performance.md, "Tails").
            long t0 = System.nanoTime();
            double cpu0 = cpuSeconds();
            double target0 = targetCpu != null ? targetCpu.seconds() : Double.NaN;
            Histogram total = new Histogram(3);
            Histogram h = null;
            long[] pathsAt0 = pathCounts(ns, completed);
            long errorsAt0 = ioErrors.sum();
            if (rampSeconds == 0 && gaps != null) {
                gaps.start(t0); // no warm-up: measured from the start
            }
            for (int s = 1 - rampSeconds; s <= seconds && failure.get() == null; s++) {
                Thread.sleep(1000);
                h = recorder.getIntervalHistogram(h); // recycled: the bench makes no garbage of its own per second
                if (s <= 0) {
                    if (s == 0) { // the end of the warm-up: measured from here
                        t0 = System.nanoTime();
                        cpu0 = cpuSeconds();
                        target0 = targetCpu != null ? targetCpu.seconds() : Double.NaN;
                        pathsAt0 = pathCounts(ns, completed);
                        errorsAt0 = ioErrors.sum();
                        if (gaps != null) {
                            gaps.start(t0);
                        }
                    }
                    continue;
                }
                total.add(h);
                if (!json || System.console() != null) {
                    System.err.printf(Locale.ROOT, "\r[%3d/%ds] %s %.1fk IOPS, %.1f MiB/s, p99 %.1f us   ", s, seconds, rw,
                            h.getTotalCount() / 1000.0, h.getTotalCount() * ioBytes / 1048576.0,
                            h.getValueAtPercentile(99) / 1000.0);
                }
            }
            long elapsedNs = System.nanoTime() - t0;
            long longestPause = gaps != null ? gaps.longestNanos(t0 + elapsedNs) : -1;
            double cpu = cpuSeconds() - cpu0;
            double target = targetCpu != null ? targetCpu.seconds() - target0 : Double.NaN;
            total.add(recorder.getIntervalHistogram());
            long[] perPath = pathCounts(ns, completed);
            for (int p = 0; p < perPath.length; p++) {
                perPath[p] -= pathsAt0[p];
            }
            long errors = ioErrors.sum() - errorsAt0;
            stop = true;
            long deadline = System.currentTimeMillis() + 10_000;
            while (completed.sum() < submitted.sum() && System.currentTimeMillis() < deadline) {
                Thread.sleep(10);
            }
            System.err.println();
            if (failure.get() != null) {
                throw new IllegalStateException("an I/O failed during the benchmark: " + failure.get());
            }
            report(total, elapsedNs, ioBytes, write, new CpuTimes(cpu, target), ns,
                    new PathCounts(perPath, failedOver(ns), errors, firstError.get(), longestPause));
            if (ioErrors.sum() > 0) { // the warm-up's count too
                System.err.printf(Locale.ROOT, "nvmeof bench: %,d I/Os failed on every path, warm-up included"
                        + " (first: %s)%n", ioErrors.sum(), firstError.get());
                return 1; // as fio: a run with I/O errors does not exit 0, whatever it reported
            }
            return 0;
        }
    }

    /**
     * I/Os completed so far per path: the multipath namespace counts them per path; with one path, every completion.
     * Read once at the start of the measured window and once at its end.
     */
    private static long[] pathCounts(ConnectedNamespace ns, LongAdder completed) {
        MultipathNamespace mp = ns.multipath();
        if (mp == null) {
            return new long[] {completed.sum()};
        }
        long[] counts = new long[ns.pathCount()];
        for (int p = 0; p < counts.length; p++) {
            counts[p] = mp.completedThrough(p);
        }
        return counts;
    }

    /** Path failures each path gave that failed over, over the whole run (zeros with one path). */
    private static long[] failedOver(ConnectedNamespace ns) {
        long[] counts = new long[ns.pathCount()];
        MultipathNamespace mp = ns.multipath();
        for (int p = 0; mp != null && p < counts.length; p++) {
            counts[p] = mp.failedOverFrom(p);
        }
        return counts;
    }

    /**
     * @param completed         I/Os each path completed in the measured window
     * @param failedOver        path failures of each path over the run that were sent again on another
     * @param errors            I/Os that failed in the measured window (counted, not fatal: several paths)
     * @param firstError        the first of them, null if none
     * @param longestPauseNanos the longest time without a completion (multipath runs; -1 otherwise)
     */
    private record PathCounts(long[] completed, long[] failedOver, long errors, String firstError,
                              long longestPauseNanos) {
    }

    private static void submit(ConnectedNamespace ns, boolean write, boolean random, int slot, int blocks, long slots, int inflight,
            ByteBuffer[] buffers, long[] started, long[] sequential, LongAdder submitted, IoCallback cb) {
        long index;
        if (random) {
            index = ThreadLocalRandom.current().nextLong(slots);
        } else {
            index = sequential[slot] % slots;
            sequential[slot] += inflight;
        }
        long lba = index * blocks;
        started[slot] = System.nanoTime();
        submitted.increment();
        if (write) {
            ns.write(lba, blocks, buffers[slot], cb, slot);
        } else {
            ns.read(lba, blocks, buffers[slot], cb, slot);
        }
    }

    private static double cpuSeconds() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
    }

    /** CPU seconds over the measured window: this process's, and the target's (NaN without --target-pid). */
    private record CpuTimes(double initiator, double target) {
    }

    private void report(Histogram h, long elapsedNs, long ioBytes, boolean write, CpuTimes cpuTimes,
            ConnectedNamespace ns, PathCounts counts) throws Exception {
        long ios = h.getTotalCount();
        double secs = elapsedNs / 1e9;
        double iops = ios / secs;
        double mibs = ios * ioBytes / 1048576.0 / secs;
        double cpu = cpuTimes.initiator();
        double cpuPerMillion = ios > 0 ? cpu / (ios / 1e6) : Double.NaN;
        double targetPerMillion = ios > 0 ? cpuTimes.target() / (ios / 1e6) : Double.NaN;
        if (json) {
            Map<String, Object> pct = new LinkedHashMap<>();
            for (double p : new double[] {1, 5, 10, 50, 90, 95, 99, 99.5, 99.9, 99.99}) {
                pct.put(String.format(Locale.ROOT, "%.6f", p), h.getValueAtPercentile(p));
            }
            Map<String, Object> clat = new LinkedHashMap<>();
            clat.put("min", h.getMinValue());
            clat.put("max", h.getMaxValue());
            clat.put("mean", h.getMean());
            clat.put("stddev", h.getStdDeviation());
            clat.put("N", ios);
            clat.put("percentile", pct);
            Map<String, Object> active = new LinkedHashMap<>();
            active.put("io_bytes", ios * ioBytes);
            active.put("bw", (long) (ios * ioBytes / 1024.0 / secs));
            active.put("bw_bytes", (long) (ios * ioBytes / secs));
            active.put("iops", iops);
            active.put("runtime", elapsedNs / 1_000_000);
            active.put("total_ios", ios);
            active.put("clat_ns", clat);
            active.put("lat_ns", clat);
            Map<String, Object> idle = new LinkedHashMap<>();
            idle.put("io_bytes", 0);
            idle.put("bw", 0);
            idle.put("iops", 0.0);
            idle.put("total_ios", 0);
            Map<String, Object> job = new LinkedHashMap<>();
            job.put("jobname", rw);
            job.put("job options", Map.of("rw", rw, "bs", bs, "iodepth", qd, "numjobs", ns.ioQueueCount(), "runtime", seconds));
            job.put("read", write ? idle : active);
            job.put("write", write ? active : idle);
            job.put("cpu_seconds", cpu);
            job.put("cpu_seconds_per_million_ios", cpuPerMillion);
            if (targetPid != null) {
                job.put("target_pid", targetPid);
                job.put("target_cpu_seconds", cpuTimes.target());
                job.put("target_cpu_seconds_per_million_ios", targetPerMillion);
            }
            job.put("transport_statistics", ns.transportStatistics());
            job.put("io_errors", counts.errors());
            if (counts.firstError() != null) {
                job.put("first_io_error", counts.firstError());
            }
            if (ns.multipath() != null) {
                job.put("iopolicy", ns.multipath().policy() == MultipathNamespace.IoPolicy.ROUND_ROBIN
                        ? "round-robin" : "queue-depth");
                job.put("longest_pause_ms", counts.longestPauseNanos() / 1e6);
                job.put("writes_held_for_fence", ns.multipath().fencedWaits());
            }
            List<Map<String, Object>> paths = new ArrayList<>();
            for (int p = 0; p < ns.pathCount(); p++) {
                NvmeofController c = ns.controller(p);
                Map<String, Object> path = new LinkedHashMap<>();
                path.put("path", p);
                path.put("traddr", c.transportId().traddr());
                path.put("trsvcid", c.transportId().trsvcid());
                path.put("ios", counts.completed()[p]);
                path.put("failed_over", counts.failedOver()[p]);
                path.put("state", c.state().toString());
                if (ns.multipath() != null) {
                    path.put("ana_state", ns.multipath().paths().get(p).anaState().label());
                }
                paths.add(path);
            }
            job.put("paths", paths);
            Map<String, Object> root = new LinkedHashMap<>();
            root.put("fio version", "nvmeof-java-0.1.0");
            root.put("timestamp", System.currentTimeMillis() / 1000);
            root.put("jobs", java.util.List.of(job));
            System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(root));
            return;
        }
        System.out.printf(Locale.ROOT, "%s bs=%s qd=%d queues=%d time=%.1fs (%s)%n", rw, bs, qd, ns.ioQueueCount(), secs, conn.where());
        System.out.printf(Locale.ROOT, "  IOPS      %,.0f%n", iops);
        System.out.printf(Locale.ROOT, "  bandwidth %.1f MiB/s%n", mibs);
        System.out.printf(Locale.ROOT, "  latency   mean %.1f us, p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us%n",
                h.getMean() / 1000, h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0,
                h.getValueAtPercentile(99.9) / 1000.0, h.getMaxValue() / 1000.0);
        System.out.printf(Locale.ROOT, "  initiator CPU %.2f s per million I/Os%n", cpuPerMillion);
        if (targetPid != null) {
            System.out.printf(Locale.ROOT, "  target CPU    %.2f s per million I/Os (PID %d)%n", targetPerMillion, targetPid);
        }
        if (ns.multipath() != null) {
            long all = 0;
            for (long n : counts.completed()) {
                all += n;
            }
            for (int p = 0; p < ns.pathCount(); p++) {
                long n = counts.completed()[p];
                System.out.printf(Locale.ROOT, "  path %d %s: %,d I/Os (%.1f%%), %d failed over, %s, ANA %s%n", p,
                        ns.pathName(p), n, all > 0 ? 100.0 * n / all : 0.0, counts.failedOver()[p],
                        ns.controller(p).state(), ns.multipath().paths().get(p).anaState().label());
            }
            System.out.printf(Locale.ROOT, "  longest pause %.1f ms (the longest time without a completion)%n",
                    counts.longestPauseNanos() / 1e6);
            long held = ns.multipath().fencedWaits();
            if (held > 0) {
                System.out.printf(Locale.ROOT, "  %,d write(s) waited for a lost path's association to be fenced before"
                        + " going to another path%n", held);
            }
        }
        if (counts.errors() > 0) {
            System.out.printf(Locale.ROOT, "  I/O errors %,d (first: %s)%n", counts.errors(), counts.firstError());
        }
        String stats = ns.transportStatistics();
        if (!stats.isEmpty()) {
            System.out.printf(Locale.ROOT, "  %s%n", stats);
        }
    }
}

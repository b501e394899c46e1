package io.nvmeof.admin;

import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.live.TargetMonitoring;
import io.nvmeof.tgt.live.TargetMonitoring.SubsystemStatistics;
import io.nvmeof.tgt.core.IoStatistics;
import io.nvmeof.tgt.core.NamespaceStatistics;
import io.nvmeof.tgt.core.QueueStatistics;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * {@code /metrics}: the target's statistics in Prometheus text format, built at each scrape from the same counters
 * {@code GET /api/v1/statistics} serves (the Prometheus Java client writes the format). Per namespace (labels
 * {@code subsystem}, {@code nsid}): commands, bytes, errors, and a latency histogram in seconds; per subsystem:
 * connected controllers and I/O queues; and the number of listeners.
 */
final class Metrics {
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();

    Metrics(LiveConfiguration live) {
        registry.register(() -> collect(live));
        // The JVM's series, from the Prometheus client's own collectors: heap, memory pools and direct buffers
        // (jvm_memory_*, jvm_buffer_pool_*), GC pauses (jvm_gc_collection_seconds), threads, classes, process CPU.
        JvmMetrics.builder().register(registry);
    }

    String contentType() {
        return writer.getContentType();
    }

    String scrape() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        writer.write(out, registry.scrape());
        return out.toString(StandardCharsets.UTF_8);
    }

    private static MetricSnapshots collect(LiveConfiguration live) {
        List<SubsystemStatistics> stats = live.monitoring().statistics();
        MetricSnapshots.Builder out = MetricSnapshots.builder();
        out.metricSnapshot(counter(stats, "nvmeof_namespace_read_commands", "Reads completed successfully", NamespaceStatistics::reads));
        out.metricSnapshot(counter(stats, "nvmeof_namespace_write_commands", "Writes completed successfully", NamespaceStatistics::writes));
        out.metricSnapshot(counter(stats, "nvmeof_namespace_other_commands", "Flush, Write Zeroes, Dataset Management and Compare commands completed successfully",
                NamespaceStatistics::otherCommands));
        out.metricSnapshot(counter(stats, "nvmeof_namespace_read_bytes", "Bytes read", NamespaceStatistics::readBytes));
        out.metricSnapshot(counter(stats, "nvmeof_namespace_written_bytes", "Bytes written", NamespaceStatistics::writtenBytes));
        out.metricSnapshot(counter(stats, "nvmeof_namespace_errors", "Commands completed with an error status", NamespaceStatistics::errors));
        out.metricSnapshot(latency(stats));
        Map<String, Integer> controllers = new HashMap<>();
        Map<String, Integer> queues = new HashMap<>();
        for (TargetMonitoring.ControllerView c : live.monitoring().controllers()) {
            controllers.merge(c.subsystem(), 1, Integer::sum);
            queues.merge(c.subsystem(), c.ioQueues(), Integer::sum);
        }
        perQueue(live.monitoring().queueStatistics(), out);
        out.metricSnapshot(perSubsystem(stats, "nvmeof_subsystem_controllers", "Connected hosts (controllers)", controllers));
        out.metricSnapshot(perSubsystem(stats, "nvmeof_subsystem_io_queues", "Connected I/O queues, over every controller",
                queues));
        CounterSnapshot.Builder authOk = CounterSnapshot.builder().name("nvmeof_subsystem_authentication_successes")
                .help("Queues whose host completed DH-HMAC-CHAP (each queue of a connection counts)");
        CounterSnapshot.Builder authFailed = CounterSnapshot.builder().name("nvmeof_subsystem_authentication_failures")
                .help("Queues whose host failed DH-HMAC-CHAP or did not authenticate in time");
        for (TargetMonitoring.AuthenticationCounts a : live.monitoring().authentications()) {
            Labels l = Labels.of("subsystem", a.nqn());
            authOk.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(l).value(a.successes()).build());
            authFailed.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(l).value(a.failures()).build());
        }
        out.metricSnapshot(authOk.build());
        out.metricSnapshot(authFailed.build());
        out.metricSnapshot(GaugeSnapshot.builder().name("nvmeof_listeners").help("Ports the target listens on")
                .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(live.listeners().size()).build()).build());
        out.metricSnapshot(GaugeSnapshot.builder().name("nvmeof_data_path_failures")
                .help("Poll groups and accept loops that have stopped while the target runs (/health names them)")
                .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(live.monitoring().dataPathFailures().size()).build())
                .build());
        return out.build();
    }

    /**
     * Per host controller (labels subsystem, cntlid, host) and per I/O queue (subsystem, cntlid, qid): commands and
     * bytes since it connected, and per queue its depth and the commands outstanding now.
     */
    private static void perQueue(List<QueueStatistics> queues, MetricSnapshots.Builder out) {
        Map<String, long[]> controllers = new java.util.TreeMap<>();
        Map<String, Labels> controllerLabels = new HashMap<>();
        String[] names = {"read_commands", "write_commands", "read_bytes", "written_bytes"};
        String[] helps = {"Reads completed", "Writes completed", "Bytes read", "Bytes written"};
        List<CounterSnapshot.Builder> perQueue = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            perQueue.add(CounterSnapshot.builder().name("nvmeof_queue_" + names[i]).help(helps[i] + " on this I/O queue"));
        }
        GaugeSnapshot.Builder outstanding = GaugeSnapshot.builder().name("nvmeof_queue_outstanding_commands")
                .help("Commands the host has outstanding on this I/O queue now");
        GaugeSnapshot.Builder depth = GaugeSnapshot.builder().name("nvmeof_queue_depth").help("The I/O queue's size (entries)");
        for (QueueStatistics q : queues) {
            long[] v = {q.reads(), q.writes(), q.bytesRead(), q.bytesWritten()};
            Labels l = Labels.of("subsystem", q.subsystem(), "cntlid", Integer.toString(q.cntlid()), "qid",
                    Integer.toString(q.qid()));
            for (int i = 0; i < v.length; i++) {
                perQueue.get(i).dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(l).value(v[i]).build());
            }
            outstanding.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(l).value(q.outstanding()).build());
            depth.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(l).value(q.depth()).build());
            String key = q.subsystem() + "/" + q.cntlid();
            controllerLabels.putIfAbsent(key, Labels.of("subsystem", q.subsystem(), "cntlid", Integer.toString(q.cntlid()),
                    "host", q.hostNqn()));
            long[] sum = controllers.computeIfAbsent(key, k -> new long[4]);
            for (int i = 0; i < v.length; i++) {
                sum[i] += v[i];
            }
        }
        for (int i = 0; i < names.length; i++) {
            CounterSnapshot.Builder c = CounterSnapshot.builder().name("nvmeof_controller_" + names[i])
                    .help(helps[i] + " by this host's controller, over its connected I/O queues");
            for (Map.Entry<String, long[]> e : controllers.entrySet()) {
                c.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(controllerLabels.get(e.getKey()))
                        .value(e.getValue()[i]).build());
            }
            out.metricSnapshot(c.build());
            out.metricSnapshot(perQueue.get(i).build());
        }
        out.metricSnapshot(outstanding.build());
        out.metricSnapshot(depth.build());
    }

    private static GaugeSnapshot perSubsystem(List<SubsystemStatistics> stats, String name, String help,
                                              Map<String, Integer> values) {
        GaugeSnapshot.Builder g = GaugeSnapshot.builder().name(name).help(help);
        for (SubsystemStatistics s : stats) {
            g.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(Labels.of("subsystem", s.nqn()))
                    .value(values.getOrDefault(s.nqn(), 0)).build());
        }
        return g.build();
    }

    private static CounterSnapshot counter(List<SubsystemStatistics> stats, String name, String help,
                                           ToLongFunction<NamespaceStatistics> value) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(name).help(help);
        for (SubsystemStatistics s : stats) {
            for (NamespaceStatistics n : s.namespaces()) {
                b.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels(s, n))
                        .value(value.applyAsLong(n)).build());
            }
        }
        return b.build();
    }

    private static HistogramSnapshot latency(List<SubsystemStatistics> stats) {
        double[] bounds = new double[IoStatistics.BOUNDS_NS.length + 1];
        for (int i = 0; i < IoStatistics.BOUNDS_NS.length; i++) {
            bounds[i] = IoStatistics.BOUNDS_NS[i] / 1e9;
        }
        bounds[bounds.length - 1] = Double.POSITIVE_INFINITY;
        HistogramSnapshot.Builder b = HistogramSnapshot.builder().name("nvmeof_namespace_latency_seconds")
                .help("Time from a command's arrival to its completion, per namespace");
        for (SubsystemStatistics s : stats) {
            for (NamespaceStatistics n : s.namespaces()) {
                long count = 0;
                for (long c : n.latencyBuckets()) {
                    count += c;
                }
                b.dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder().labels(labels(s, n))
                        .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, n.latencyBuckets()))
                        .sum(n.meanLatencyNs() * (double) count / 1e9).build());
            }
        }
        return b.build();
    }

    private static Labels labels(SubsystemStatistics s, NamespaceStatistics n) {
        return Labels.of("subsystem", s.nqn(), "nsid", Long.toString(n.nsid()));
    }
}

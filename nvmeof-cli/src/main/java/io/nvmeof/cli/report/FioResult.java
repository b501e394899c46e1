package io.nvmeof.cli.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;

/**
 * What a report shows of one run, from fio's JSON ({@code --output-format=json}) or {@code nvmeof bench --json}, which
 * writes the same shape: the direction that did the I/O (reads, else writes), its IOPS, bandwidth and completion
 * latency percentiles, and CPU time per I/O where the run gives it (the bench's host and target figures; fio's own
 * user and system time over its I/Os).
 */
public record FioResult(double iops, double mibPerSecond, double p50Us, double p99Us, double p999Us,
        Double hostCpuUsPerIo, Double targetCpuUsPerIo) {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static FioResult parse(Path file) throws IOException {
        JsonNode root = JSON.readTree(file.toFile());
        JsonNode job = root.path("jobs").path(0);
        if (job.isMissingNode()) {
            throw new IllegalArgumentException(file + ": no jobs[0] (not fio's or nvmeof bench's JSON)");
        }
        JsonNode side = job.path("read").path("iops").asDouble() > 0 ? job.path("read") : job.path("write");
        double iops = side.path("iops").asDouble();
        if (!(iops > 0)) {
            throw new IllegalArgumentException(file + ": the run did no I/O (jobs[0] read and write IOPS are 0)");
        }
        JsonNode pct = side.path("clat_ns").path("percentile");
        if (pct.isMissingNode()) {
            pct = side.path("lat_ns").path("percentile");
        }
        Double host = number(job, "cpu_seconds_per_million_ios");
        if (host == null && job.has("usr_cpu") && job.path("job_runtime").asDouble() > 0) {
            double ios = side.path("total_ios").asDouble(iops * job.path("job_runtime").asDouble() / 1000);
            double cpuSeconds = (job.path("usr_cpu").asDouble() + job.path("sys_cpu").asDouble()) / 100
                    * job.path("job_runtime").asDouble() / 1000;
            host = ios > 0 ? cpuSeconds / ios * 1e6 : null;
        }
        return new FioResult(iops, side.path("bw").asDouble() / 1024, percentile(pct, "50.000000"),
                percentile(pct, "99.000000"), percentile(pct, "99.900000"), host,
                number(job, "target_cpu_seconds_per_million_ios"));
    }

    private static double percentile(JsonNode pct, String key) {
        return pct.has(key) ? pct.path(key).asDouble() / 1000 : Double.NaN;
    }

    private static Double number(JsonNode job, String key) {
        return job.has(key) && job.path(key).isNumber() ? job.path(key).asDouble() : null;
    }
}

package io.nvmeof.tgt.core;

/**
 * A namespace's I/O since it was added: successful reads and writes with their bytes, other commands (flush, write
 * zeroes, deallocate, compare), errors, and latency (mean, and percentiles as the upper bound of the bucket they fall
 * in: {@link IoStatistics#BOUNDS_NS}), with the bucket counts themselves.
 */
public record NamespaceStatistics(long nsid, long reads, long writes, long otherCommands, long readBytes,
                                  long writtenBytes, long errors, long meanLatencyNs, long p50LatencyNs,
                                  long p90LatencyNs, long p99LatencyNs, long p999LatencyNs, long[] latencyBuckets) {
}

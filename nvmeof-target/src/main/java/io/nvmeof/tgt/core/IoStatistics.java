package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Opcodes;

/**
 * I/O counters of one namespace: per queue, written by that queue's thread only (plain fields, no lock, no
 * allocation per command), and per namespace the totals of queues that have closed (folded in under the namespace's
 * monitor, once per queue). Readers sum them racily: a snapshot for monitoring, not an exact cut.
 *
 * <p>Latency is counted in fixed buckets (upper bounds {@link #BOUNDS_NS}, as a Prometheus histogram has them), from
 * the capsule's arrival to the completion being handed to the transport.
 */
public final class IoStatistics {
    /** Bucket upper bounds, ns: 10 us to 10 s; one more bucket counts what is slower. */
    public static final long[] BOUNDS_NS = {10_000L, 25_000L, 50_000L, 100_000L, 250_000L, 500_000L, 1_000_000L,
            2_500_000L, 5_000_000L, 10_000_000L, 25_000_000L, 50_000_000L, 100_000_000L, 250_000_000L, 500_000_000L,
            1_000_000_000L, 10_000_000_000L};

    final Namespace ns;
    long reads;
    long writes;
    long others;
    long readBytes;
    long writtenBytes;
    long errors;
    long latencySumNs;
    final long[] buckets = new long[BOUNDS_NS.length + 1];

    IoStatistics(Namespace ns) {
        this.ns = ns;
    }

    /** Queue thread: one command on this namespace completed. */
    void record(int opcode, int bytes, int status, long latencyNs) {
        if (status != 0) {
            errors++;
        } else if (opcode == Opcodes.IO_READ) {
            reads++;
            readBytes += bytes;
        } else if (opcode == Opcodes.IO_WRITE) {
            writes++;
            writtenBytes += bytes;
        } else {
            others++;
        }
        latencySumNs += latencyNs;
        int b = 0;
        while (b < BOUNDS_NS.length && latencyNs > BOUNDS_NS[b]) {
            b++;
        }
        buckets[b]++;
    }

    /** Adds {@code o}'s counts to these. */
    void add(IoStatistics o) {
        reads += o.reads;
        writes += o.writes;
        others += o.others;
        readBytes += o.readBytes;
        writtenBytes += o.writtenBytes;
        errors += o.errors;
        latencySumNs += o.latencySumNs;
        for (int i = 0; i < buckets.length; i++) {
            buckets[i] += o.buckets[i];
        }
    }

    /** The counts as a value. */
    NamespaceStatistics snapshot(long nsid) {
        long n = 0;
        for (long c : buckets) {
            n += c;
        }
        return new NamespaceStatistics(nsid, reads, writes, others, readBytes, writtenBytes, errors,
                n == 0 ? 0 : latencySumNs / n, percentile(0.50, n), percentile(0.90, n), percentile(0.99, n),
                percentile(0.999, n), buckets.clone());
    }

    /** The upper bound of the bucket holding quantile {@code q} (the largest finite bound for the last bucket). */
    private long percentile(double q, long n) {
        if (n == 0) {
            return 0;
        }
        long rank = (long) Math.ceil(q * n);
        long seen = 0;
        for (int i = 0; i < buckets.length; i++) {
            seen += buckets[i];
            if (seen >= rank) {
                return BOUNDS_NS[Math.min(i, BOUNDS_NS.length - 1)];
            }
        }
        return BOUNDS_NS[BOUNDS_NS.length - 1];
    }
}

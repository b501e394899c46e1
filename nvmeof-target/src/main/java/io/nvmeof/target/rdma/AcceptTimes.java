package io.nvmeof.target.rdma;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How long one RDMA listener took to accept, from a connect request reaching its CM thread to {@code rdma_accept}
 * returning. Hosts bound each CM event by a timeout (SPDK's: 1 s), so a slow first accept is a refused connection.
 * Three figures: the first accept after start (cold); the median of the next {@link #WARM} (warm: every one-time cost
 * paid, as the second connection a minute later in the report that found the slow first one); and the median of all
 * later ones (steady state, after the JIT compiler has worked on the accept path for hundreds of connections). The
 * listener's own rehearsal connections at start are not counted.
 */
public final class AcceptTimes {
    private static final Logger LOG = LoggerFactory.getLogger(AcceptTimes.class);
    /** Accepts after the first that make up the warm figure. */
    static final int WARM = 19;
    /** Samples kept; later ones only count. */
    private static final int KEEP = 4096;

    private long firstNanos = -1;
    /** The listener's first rehearsal accept: what the first host's accept would have cost without rehearsals. */
    private long rehearsalNanos = -1;
    private final long[] later = new long[KEEP];
    private int kept;
    private long count;

    synchronized void record(int qid, long nanos, boolean rehearsal) {
        if (rehearsal) {
            if (rehearsalNanos < 0) {
                rehearsalNanos = nanos;
            }
            LOG.debug("NVMe/RDMA accept rehearsal at start: {} ms from connect request to rdma_accept", millis(nanos));
            return;
        }
        count++;
        if (firstNanos < 0) {
            firstNanos = nanos;
            LOG.info("NVMe/RDMA first accept after start (qid {}): {} ms from connect request to rdma_accept", qid,
                    millis(nanos));
            return;
        }
        if (kept < KEEP) {
            later[kept++] = nanos;
        }
        LOG.debug("NVMe/RDMA accept (qid {}): {} ms", qid, millis(nanos));
    }

    /** The first rehearsal accept's time, for the log. */
    synchronized String rehearsalSummary() {
        return rehearsalNanos < 0 ? "none" : millis(rehearsalNanos) + " ms";
    }

    /** Accepts so far. */
    public synchronized long count() {
        return count;
    }

    /** The first accept's time in ns, or -1 before any. */
    public synchronized long firstNanos() {
        return firstNanos;
    }

    /** The median of the {@link #WARM} accepts after the first, in ns; -1 when there were none. */
    public synchronized long warmMedianNanos() {
        return median(Math.min(kept, WARM));
    }

    /** The median of every accept after the first, in ns; -1 when there were none. */
    public synchronized long laterMedianNanos() {
        return median(kept);
    }

    private long median(int n) {
        if (n == 0) {
            return -1;
        }
        long[] sorted = Arrays.copyOf(later, n);
        Arrays.sort(sorted);
        return sorted[n / 2];
    }

    /** One line for the log: count, first, warm and steady-state medians, and first / warm. */
    public synchronized String summary() {
        long warm = warmMedianNanos();
        return "NVMe/RDMA accepts: " + count + (rehearsalNanos < 0 ? "" : " (after rehearsals at start, the first "
                + millis(rehearsalNanos) + " ms)") + "; first " + millis(firstNanos) + " ms"
                + (warm < 0 ? "" : ", next " + Math.min(kept, WARM) + " median " + millis(warm) + " ms, all "
                        + kept + " later median " + millis(laterMedianNanos()) + " ms (first/warm "
                        + String.format("%.2f", firstNanos / (double) Math.max(1, warm)) + ")");
    }

    private static String millis(long nanos) {
        return String.format("%.2f", nanos / (double) TimeUnit.MILLISECONDS.toNanos(1));
    }
}

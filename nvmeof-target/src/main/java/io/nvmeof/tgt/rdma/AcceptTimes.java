package io.nvmeof.tgt.rdma;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;
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
 *
 * <p>Each accept has two times: wall (what the host waits for) and CPU (the accepting threads' own user + system time
 * for the work: the CM thread's part and the poll group's part). WHY both: a one-time cost (class loading, the
 * interpreter's first runs, device setup) shows in both; being preempted by another process on a busy machine, or held
 * at a garbage-collection safepoint, shows only in wall time. A single cold sample's wall time is at the mercy of the
 * latter (in the 2-vCPU emulated guest one first accept took 36 ms of wall time against a 6 ms warm median; the
 * connecting host there is a JVM just started on the same vCPUs), so whether the rehearsals removed the one-time costs
 * is judged on CPU time.
 */
public final class AcceptTimes {
    private static final Logger LOG = LoggerFactory.getLogger(AcceptTimes.class);
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** Accepts after the first that make up the warm figure. */
    static final int WARM = 19;
    /** Samples kept; later ones only count. */
    private static final int KEEP = 4096;

    private long firstNanos = -1;
    private long firstCpuNanos = -1;
    /** The listener's first rehearsal accept: what the first host's accept would have cost without rehearsals. */
    private long rehearsalNanos = -1;
    private long rehearsalCpuNanos = -1;
    private final long[] later = new long[KEEP];
    private final long[] laterCpu = new long[KEEP];
    private int kept;
    private long count;

    /**
     * The calling thread's CPU time in ns (user + system), or -1 where the JVM cannot measure it. Costs a system
     * call: for connection setup, not for I/O.
     */
    static long threadCpuNanos() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    /**
     * One accept: {@code nanos} of wall time, {@code cpuNanos} of the accepting threads' CPU time (negative when not
     * measured).
     */
    synchronized void record(int qid, long nanos, long cpuNanos, boolean rehearsal) {
        if (rehearsal) {
            if (rehearsalNanos < 0) {
                rehearsalNanos = nanos;
                rehearsalCpuNanos = cpuNanos;
            }
            LOG.debug("NVMe/RDMA accept rehearsal at start: {} ms from connect request to rdma_accept", millis(nanos));
            return;
        }
        count++;
        if (firstNanos < 0) {
            firstNanos = nanos;
            firstCpuNanos = cpuNanos;
            LOG.info("NVMe/RDMA first accept after start (qid {}): {} ms from connect request to rdma_accept ({} ms of "
                    + "CPU)", qid, millis(nanos), millis(cpuNanos));
            return;
        }
        if (kept < KEEP) {
            later[kept] = nanos;
            laterCpu[kept] = cpuNanos;
            kept++;
        }
        LOG.debug("NVMe/RDMA accept (qid {}): {} ms ({} ms of CPU)", qid, millis(nanos), millis(cpuNanos));
    }

    /** The first rehearsal accept's time, for the log. */
    synchronized String rehearsalSummary() {
        return rehearsalNanos < 0 ? "none" : millis(rehearsalNanos) + " ms" + cpu(rehearsalCpuNanos);
    }

    /** Accepts so far. */
    public synchronized long count() {
        return count;
    }

    /** The first accept's wall time in ns, or -1 before any. */
    public synchronized long firstNanos() {
        return firstNanos;
    }

    /** The first accept's CPU time in ns, or -1 before any or where not measured. */
    public synchronized long firstCpuNanos() {
        return firstCpuNanos < 0 ? -1 : firstCpuNanos;
    }

    /** The median wall time of the {@link #WARM} accepts after the first, in ns; -1 when there were none. */
    public synchronized long warmMedianNanos() {
        return median(later, Math.min(kept, WARM));
    }

    /** The median CPU time of the {@link #WARM} accepts after the first, in ns; -1 when none or not measured. */
    public synchronized long warmMedianCpuNanos() {
        return median(laterCpu, Math.min(kept, WARM));
    }

    /** The median wall time of every accept after the first, in ns; -1 when there were none. */
    public synchronized long laterMedianNanos() {
        return median(later, kept);
    }

    private static long median(long[] samples, int n) {
        if (n == 0) {
            return -1;
        }
        long[] sorted = Arrays.copyOf(samples, n);
        Arrays.sort(sorted);
        return sorted[0] < 0 ? -1 : sorted[n / 2];
    }

    /**
     * One line for the log: count, first, warm and steady-state medians, first / warm in wall time and in CPU time
     * (the job in the guest reads {@code CPU first/warm R}).
     */
    public synchronized String summary() {
        long warm = warmMedianNanos();
        StringBuilder s = new StringBuilder("NVMe/RDMA accepts: ").append(count);
        if (rehearsalNanos >= 0) {
            s.append(" (after rehearsals at start, the first ").append(millis(rehearsalNanos)).append(" ms")
                    .append(cpu(rehearsalCpuNanos)).append(')');
        }
        s.append("; first ").append(millis(firstNanos)).append(" ms").append(cpu(firstCpuNanos()));
        if (warm >= 0) {
            long warmCpu = warmMedianCpuNanos();
            s.append(", next ").append(Math.min(kept, WARM)).append(" median ").append(millis(warm)).append(" ms")
                    .append(cpu(warmCpu)).append(", all ").append(kept).append(" later median ")
                    .append(millis(laterMedianNanos())).append(" ms (first/warm ").append(ratio(firstNanos, warm));
            if (firstCpuNanos() >= 0 && warmCpu >= 0) {
                s.append(", CPU first/warm ").append(ratio(firstCpuNanos, warmCpu));
            }
            s.append(')');
        }
        return s.toString();
    }

    private static String cpu(long nanos) {
        return nanos < 0 ? "" : " (CPU " + millis(nanos) + " ms)";
    }

    private static String ratio(long a, long b) {
        return String.format(Locale.ROOT, "%.2f", a / (double) Math.max(1, b));
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.2f", nanos / (double) TimeUnit.MILLISECONDS.toNanos(1));
    }
}

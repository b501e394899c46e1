package io.nvmeof.tgt.core;

import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a removed namespace's backend once no request uses it any more. After the removal no new command can reach
 * the namespace (its lookup fails with Invalid Namespace), but commands parsed before it may still be moving data or
 * waiting in the backend. Each queue is asked, on its own thread (so without racing its poll loop), whether one of
 * its requests still holds the namespace; when none does and no work off the poll groups uses it any more (counted
 * by the namespace itself: a command whose queue closed while it ran keeps counting), the namespace's backend is
 * retired, so none can start, and closed. The data path pays nothing.
 */
public final class NamespaceDrain {
    private static final Logger LOG = LoggerFactory.getLogger(NamespaceDrain.class);
    /** How often the queues are asked again while the namespace is still in use. */
    static final long RETRY_MS = 50;
    /** A queue that does not answer within this long is closed (its thread ended): it holds nothing. */
    static final long ANSWER_MS = 5_000;
    /** A backend call stuck for this long is left to the target's shutdown rather than closed under it. */
    static final long GIVE_UP_MS = 600_000;

    private final Namespace ns;
    private final List<SubmissionQueue> queues;
    private final ScheduledExecutorService timer;
    private final Runnable close;
    private final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GIVE_UP_MS);

    private NamespaceDrain(Namespace ns, List<SubmissionQueue> queues, ScheduledExecutorService timer, Runnable close) {
        this.ns = ns;
        this.queues = queues;
        this.timer = timer;
        this.close = close;
    }

    /**
     * Runs {@code close} (on {@code timer}) once none of {@code queues} (its subsystem's, {@code
     * TargetCore.queuesOf}) holds a request for {@code ns}, which must already be removed from the subsystem, and no
     * work off the poll groups uses it.
     */
    public static void closeWhenDrained(Namespace ns, List<SubmissionQueue> queues, ScheduledExecutorService timer,
            Runnable close) {
        new NamespaceDrain(ns, queues, timer, close).ask();
    }

    private void ask() {
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger holding = new AtomicInteger();
        for (SubmissionQueue q : queues) {
            try {
                q.transport().execute(() -> {
                    if (q.holds(ns)) {
                        holding.incrementAndGet();
                    }
                    answered.incrementAndGet();
                });
            } catch (RuntimeException e) {
                answered.incrementAndGet(); // its thread has ended: nothing runs there any more
            }
        }
        long asked = System.nanoTime();
        timer.schedule(() -> check(answered, holding, asked), 1, TimeUnit.MILLISECONDS);
    }

    private void check(AtomicInteger answered, AtomicInteger holding, long asked) {
        long now = System.nanoTime();
        if (holding.get() == 0 && (answered.get() == queues.size()
                || now - asked > TimeUnit.MILLISECONDS.toNanos(ANSWER_MS))) {
            // No queue holds a request for it; the last check is work off the poll groups (a command whose queue
            // closed while it ran, a Flush of all namespaces): retired only once none is left, and none starts after.
            if (ns.retireBackendIfIdle()) {
                close.run();
                return;
            }
            holding.incrementAndGet(); // ask again after RETRY_MS
        }
        if (holding.get() == 0) {
            timer.schedule(() -> check(answered, holding, asked), 10, TimeUnit.MILLISECONDS);
            return;
        }
        if (now > deadline) {
            LOG.warn("namespace {} ({}) is still in use {} s after its removal; its backend stays open until the target"
                    + " stops", ns.nsid(), ns.backend().describe(), GIVE_UP_MS / 1000);
            return;
        }
        timer.schedule(this::ask, RETRY_MS, TimeUnit.MILLISECONDS);
    }
}

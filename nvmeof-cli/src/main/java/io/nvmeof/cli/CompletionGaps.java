package io.nvmeof.cli;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The longest time the bench went without a completion: over several paths, the I/O pause a failover costs (the
 * issue's goal: at most ANATT + 1 s when a path goes away). Measured only over several paths: every completion writes
 * one shared field, a cost the single-path bench does not pay.
 */
final class CompletionGaps {
    private volatile long last;
    private final AtomicLong longest = new AtomicLong();
    private volatile boolean counting;

    /** An I/O completed at {@code now} (System.nanoTime), on any I/O thread. */
    void completion(long now) {
        long prev = last;
        last = now;
        if (counting && now - prev > longest.get()) {
            longest.accumulateAndGet(now - prev, Math::max); // rare: only a new longest gap gets here
        }
    }

    /** From now on (the measured window), gaps count; the warm-up's do not. */
    void start(long now) {
        last = now;
        longest.set(0);
        counting = true;
    }

    /** The longest gap since {@link #start}, at {@code now}: one still open counts up to now. */
    long longestNanos(long now) {
        return Math.max(longest.get(), now - last);
    }
}

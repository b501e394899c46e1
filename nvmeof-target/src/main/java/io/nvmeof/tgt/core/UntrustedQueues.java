package io.nvmeof.tgt.core;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * The queues that reserve from the untrusted allowance (see {@link MemoryBudget}), by source address, oldest first:
 * where one is evicted from when the allowance is full and a lighter source asks for room (issue 51: a flood from a
 * few addresses must not hold the whole allowance against a host that comes to authenticate).
 */
final class UntrustedQueues {
    private final ConcurrentHashMap<Object, ConcurrentLinkedDeque<SubmissionQueue>> bySource = new ConcurrentHashMap<>();

    void add(Object source, SubmissionQueue q) {
        if (source != SourceAddress.UNKNOWN) {
            bySource.computeIfAbsent(source, k -> new ConcurrentLinkedDeque<>()).addLast(q);
        }
    }

    void remove(Object source, SubmissionQueue q) {
        ConcurrentLinkedDeque<SubmissionQueue> d = bySource.get(source);
        if (d != null) {
            d.remove(q);
            if (d.isEmpty()) {
                bySource.remove(source, d);
            }
        }
    }

    /** Takes the oldest queue of {@code source} off the list (it is being evicted), or null. */
    SubmissionQueue takeOldest(Object source) {
        ConcurrentLinkedDeque<SubmissionQueue> d = bySource.get(source);
        return d == null ? null : d.pollFirst();
    }
}

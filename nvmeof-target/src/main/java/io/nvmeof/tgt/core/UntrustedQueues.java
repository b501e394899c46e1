package io.nvmeof.tgt.core;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * The queues that reserve from the untrusted allowance (see {@link MemoryBudget}), by source address, oldest first:
 * where one is evicted from when the allowance is full and a lighter source asks for room (issue 51: a flood from a
 * few addresses must not hold the whole allowance against a host that comes to authenticate). Each source's list is
 * changed only inside the map's compute for that source, so a list is never dropped while a queue is added to it.
 */
final class UntrustedQueues {
    private final ConcurrentHashMap<Object, ConcurrentLinkedDeque<SubmissionQueue>> bySource = new ConcurrentHashMap<>();

    void add(Object source, SubmissionQueue q) {
        if (source != SourceAddress.UNKNOWN) {
            bySource.compute(source, (k, d) -> {
                ConcurrentLinkedDeque<SubmissionQueue> list = d != null ? d : new ConcurrentLinkedDeque<>();
                list.addLast(q);
                return list;
            });
        }
    }

    void remove(Object source, SubmissionQueue q) {
        bySource.computeIfPresent(source, (k, d) -> {
            d.remove(q);
            return d.isEmpty() ? null : d;
        });
    }

    /** Takes the oldest queue of {@code source} off the list (it is being evicted), or null. */
    SubmissionQueue takeOldest(Object source) {
        SubmissionQueue[] taken = new SubmissionQueue[1];
        bySource.computeIfPresent(source, (k, d) -> {
            taken[0] = d.pollFirst();
            return d.isEmpty() ? null : d;
        });
        return taken[0];
    }
}

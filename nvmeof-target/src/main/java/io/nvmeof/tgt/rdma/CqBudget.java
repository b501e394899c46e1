package io.nvmeof.tgt.rdma;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Completion queue entries committed to the queue pairs that share one CQ. A queue pair is created only while every
 * work request it can have outstanding still fits: a teardown flushes all of a QP's work at once, and a CQ that
 * overflows is an error that breaks every queue pair on it (SPDK resizes its CQ for the same reason,
 * {@code nvmf_rdma_resize_cq}; here the CQ is made large once and connections past it are refused).
 */
final class CqBudget {
    private final int capacity;
    private final AtomicInteger committed = new AtomicInteger();

    CqBudget(int capacity) {
        this.capacity = capacity;
    }

    /** Entries a queue pair needs: one per send and one per receive work request it may have outstanding. */
    static int entriesFor(int sendDepth, int receiveDepth) {
        return sendDepth + receiveDepth;
    }

    /** Commits {@code entries} if they fit; any thread. */
    boolean reserve(int entries) {
        if (committed.addAndGet(entries) <= capacity) {
            return true;
        }
        committed.addAndGet(-entries);
        return false;
    }

    /** Gives back what a destroyed (or never created) queue pair had. */
    void release(int entries) {
        committed.addAndGet(-entries);
    }

    int committed() {
        return committed.get();
    }

    int capacity() {
        return capacity;
    }
}

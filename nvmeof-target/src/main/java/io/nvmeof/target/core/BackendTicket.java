package io.nvmeof.target.core;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One piece of a request's work handed to the core's backend executor. Until a backend thread starts it, an Abort
 * may withdraw it; exactly one of the two wins. A ticket per hand-off (not a flag on the pooled request), so a request
 * completed by an Abort and reused for a new command is never mistaken for the withdrawn work.
 */
final class BackendTicket {
    private static final int QUEUED = 0;
    private static final int STARTED = 1;
    private static final int WITHDRAWN = 2;

    private final AtomicInteger state = new AtomicInteger(QUEUED);

    /** The backend thread takes the work; false when an Abort withdrew it first. */
    boolean start() {
        return state.compareAndSet(QUEUED, STARTED);
    }

    /** An Abort withdraws the work; false when a backend thread has already started it. */
    boolean withdraw() {
        return state.compareAndSet(QUEUED, WITHDRAWN);
    }
}

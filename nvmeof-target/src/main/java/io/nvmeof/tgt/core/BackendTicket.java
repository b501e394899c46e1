package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Status;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One piece of a request's work handed to a {@link BackendLane}. Until a backend thread starts it, it may be withdrawn
 * (by an Abort, or because its queue closed); exactly one of the two wins. A ticket per hand-off (not a flag on the
 * pooled request), so a request completed by an Abort and reused for a new command is never mistaken for the
 * withdrawn work.
 *
 * <p>While it exists (queued or running) a ticket counts as its controller's backend work (a reset, a shutdown and
 * the host's next association wait for it) and as a use of its namespace's backend (which is not closed under it).
 */
final class BackendTicket {
    private static final Logger LOG = LoggerFactory.getLogger(BackendTicket.class);

    private static final int QUEUED = 0;
    private static final int STARTED = 1;
    private static final int WITHDRAWN = 2;

    private final AtomicInteger state = new AtomicInteger(QUEUED);
    private final Request req;
    private final TargetCore.BackendCall call;
    private final int failure;
    private final BackendLane lane;
    private final Controller controller;
    private final Namespace ns;
    private final boolean abortable;

    /**
     * @param ns        the namespace whose backend the call uses (counted as a user), or null
     * @param abortable whether an Abort may withdraw it: not the flush of a FUA write, whose data is already stored
     *                  (the write cannot be undone, so it is not reported as aborted)
     */
    BackendTicket(Request req, TargetCore.BackendCall call, int failure, BackendLane lane, Namespace ns,
            boolean abortable) {
        this.req = req;
        this.call = call;
        this.failure = failure;
        this.lane = lane;
        this.controller = req.sq().controller();
        this.ns = ns;
        this.abortable = abortable;
    }

    Request request() { return req; }

    boolean abortable() { return abortable; }

    /** Takes the counts this ticket holds; false when the namespace is retired (its backend closed or closing). */
    boolean enter() {
        if (ns != null && !ns.enterBackend()) {
            return false;
        }
        if (controller != null) {
            controller.backendWorkStarted();
        }
        return true;
    }

    /**
     * Withdraws the work if no backend thread has started it: it never runs, and its counts are given back now (so a
     * closed queue's work neither outlives it nor holds up its controller's teardown). False when it has started.
     */
    boolean withdraw() {
        if (!state.compareAndSet(QUEUED, WITHDRAWN)) {
            return false;
        }
        lane.remove(this);
        exit();
        return true;
    }

    private void exit() {
        if (ns != null) {
            ns.exitBackend();
        }
        if (controller != null) {
            controller.backendWorkDone();
        }
    }

    /** Backend thread: runs the call unless withdrawn, then completes the request back on its queue's thread. */
    void run() {
        long now = System.nanoTime();
        boolean ended = controller != null && !controller.mayRun(now);
        // I/O commands only: an admin command's opcode (Set Features' 09h) names nothing of the I/O command set.
        int access = ended || controller == null || ns == null || !abortable || req.sq().qid() == 0 ? Status.SUCCESS
                : ns.reservations().checkAccess(controller.hostUuid(), req.cmd.opcode(), now);
        if (ended || access != Status.SUCCESS) {
            // Its controller ended, or the target stalled past the keep-alive deadline while this waited for a thread:
            // its host has given it up and may have written the same blocks elsewhere since. Or a reservation taken
            // meanwhile fences its host, or the namespace's shared reservations were not read for a lease (another
            // target may have fenced its host meanwhile): it does not start (a conflict, or retried).
            if (state.compareAndSet(QUEUED, WITHDRAWN)) {
                exit();
                completeOnQueue(ended ? -1 : access, null);
            }
            return;
        }
        if (!state.compareAndSet(QUEUED, STARTED)) {
            return; // withdrawn: whoever withdrew it completed the request (Abort) or released it (queue closed)
        }
        int status;
        try {
            status = call.run(req);
        } catch (java.io.IOException | RuntimeException e) {
            LOG.warn("backend work for opcode 0x{} on queue {} failed: {}", Integer.toHexString(req.cmd.opcode()),
                    req.sq().qid(), e.toString());
            status = failure;
        } finally {
            // Before the completion is handed over: a teardown waiting for this work sees it done only once it has
            // stopped touching the media.
            exit();
        }
        completeOnQueue(status, call);
    }

    /** Completes the request with {@code status} on its queue's thread ({@code call} told first, when it ran). */
    private void completeOnQueue(int status, TargetCore.BackendCall ran) {
        try {
            req.sq().transport().execute(() -> {
                if (req.backendTicket == this) { // else the queue closed and released the request meanwhile
                    req.backendTicket = null;
                    if (ran != null) {
                        ran.completing(req, status);
                    }
                    if (status < 0) {
                        TargetCore.endUnanswered(req); // its controller has ended
                    } else {
                        req.complete(status);
                    }
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("queue {} is gone; its request's result is dropped", req.sq().qid());
        }
    }

    /**
     * Completes a request whose work could not be queued (the target is stopping), unless a thread already serving the
     * lane took the ticket meanwhile (then it runs and completes the request).
     */
    void refuse() {
        if (!state.compareAndSet(QUEUED, WITHDRAWN)) {
            return;
        }
        exit();
        req.backendTicket = null;
        req.complete(Status.ABORT_SQ_DELETED);
    }
}

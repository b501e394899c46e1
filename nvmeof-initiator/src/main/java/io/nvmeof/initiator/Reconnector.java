package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's connection state machine: decides that an association is lost (a queue failed, a command timed
 * out, Keep Alive went unanswered), tears it down, reconnects every reconnectDelay, fails I/O fast after
 * fastIoFailTimeout and gives up after ctrlLossTimeout; it tells {@link HeldRequests} whether to hold I/O meanwhile.
 * Every transition of {@link ControllerState} after connect, except to CLOSED, is made here.
 */
final class Reconnector implements HeldRequests.Owner {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);

    private final NvmeofController ctrl;
    private final TransportId id;
    private final ConnectOptions options;
    private volatile boolean failFast;
    private volatile String lastFailure;
    private volatile long lossStart;
    private int reconnectAttempts;
    private ScheduledFuture<?> fastFailTask;

    Reconnector(NvmeofController ctrl) {
        this.ctrl = ctrl;
        this.id = ctrl.id;
        this.options = ctrl.options;
    }

    /** True when a lost connection is re-established (not for discovery controllers, nor with ctrlLossTimeout 0). */
    boolean reconnects() {
        return !ctrl.discovery && !options.ctrlLossTimeout().isZero();
    }

    // ---------------------------------------------------------------------------------------------- held requests

    @Override
    public ControllerState state() {
        return ctrl.state.get();
    }

    @Override
    public boolean failFast() {
        return failFast;
    }

    @Override
    public boolean holds() {
        return reconnects() && !ctrl.closed.get();
    }

    @Override
    public HostQueue liveQueue() {
        return ctrl.openQueue();
    }

    @Override
    public void noLiveQueue() {
        beginRecovery("no I/O queue is open", ctrl.generation);
    }

    /** Why the connection was last lost (or the last reconnect attempt failed); null if it never was. */
    @Override
    public String lastFailure() {
        return lastFailure;
    }

    // ---------------------------------------------------------------------------------------------- recovery

    static String failureOf(HostQueue q) {
        return q.label() + " failed: " + q.failure();
    }

    /** A queue of association {@code gen} failed (its I/O thread). */
    /**
     * A queue of association {@code gen} failed (its I/O thread), before its requests fail back: they are fenced from
     * now ({@link NvmeofController#fencedAtNanos()}; the controller's side ended the connection, or this host gave up
     * on it), then the association is torn down.
     */
    void onQueueFailure(HostQueue q, int gen) {
        if (!q.abortedByHost()) { // a queue the recovery tore down: the loss that began it fenced already
            fenceFromNow(q.closedByPeer());
        }
        beginRecovery(failureOf(q), gen);
    }

    /** Keep Alive went unanswered for KATO: what was sent may run on the target until its deadline; then recovery. */
    void keepAliveLost(String reason, int gen) {
        fenceFromNow(false);
        beginRecovery(reason, gen);
    }

    /**
     * Whether every loss of the present association so far was the controller's side ending the connection (then
     * the quiesce time alone fences what was sent); one silent loss (a timeout, an unanswered Keep Alive) and the
     * keep-alive deadline counts too. Back to true when an association comes up.
     */
    private volatile boolean lossesClosedByPeer = true;

    /** What was sent on the association until now may run on its target until now plus the fence delay. */
    private void fenceFromNow(boolean closedByPeer) {
        if (!closedByPeer) {
            lossesClosedByPeer = false;
        }
        ctrl.extendFence(System.nanoTime() + ctrl.fenceDelayNanos(lossesClosedByPeer));
    }

    /**
     * Any thread: the association {@code gen} is lost; the housekeeping thread tears it down and reconnects. The loss
     * that says so has fenced its requests ({@link #onQueueFailure}, {@link #keepAliveLost}); the tear-down fences
     * them again once nothing more is sent.
     */
    void beginRecovery(String reason, int gen) {
        if (gen != ctrl.generation || ctrl.closed.get()
                || !ctrl.state.compareAndSet(ControllerState.CONNECTED, ControllerState.RECONNECTING)) {
            return;
        }
        lastFailure = reason;
        lossStart = System.nanoTime();
        ctrl.housekeep(() -> recover(reason));
    }

    /** Housekeeping thread: tear the association down, then reconnect after the delay (or give up at once). */
    private void recover(String reason) {
        ctrl.association.lock();
        try {
            if (ctrl.closed.get()) {
                return; // close() fenced what it failed back
            }
            LOG.warn("{}: connection lost ({}); {}", id, reason, reconnects() ? "reconnecting every "
                    + options.reconnectDelay().toMillis() + " ms" : "not reconnecting (ctrlLossTimeout 0)");
            report(ControllerState.RECONNECTING, reason);
            try {
                tearDown(reason);
            } finally {
                // Nothing more is sent on the old association from here: its commands may run on the target until it
                // notices (at once when it ended the connection, else by its keep-alive deadline) and quiesces them.
                fenceFromNow(lossesClosedByPeer);
            }
            boolean byPeer = lossesClosedByPeer;
            LOG.info("{}: writes of the lost association go to another path after {} ms ({})", id,
                    TimeUnit.NANOSECONDS.toMillis(ctrl.fenceDelayNanos(byPeer)), byPeer
                            ? "the controller ended the connection: its quiesce time"
                            : "its keep-alive deadline and quiesce time");
            if (!reconnects()) {
                giveUp(reason);
                return;
            }
            reconnectAttempts = 0;
            Duration fastFail = options.fastIoFailTimeout();
            if (!fastFail.isNegative()) {
                fastFailTask = ctrl.housekeeping.schedule(this::fastFailExpired, fastFail.toMillis(),
                        TimeUnit.MILLISECONDS);
            }
            ctrl.housekeeping.schedule(this::reconnect, options.reconnectDelay().toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            ctrl.association.unlock();
        }
    }

    /**
     * Stops keep alive and fails every queue of the current association (their requests go to
     * {@link NvmeofController#held}), then lets the transport free them.
     */
    private void tearDown(String reason) {
        ctrl.keepAlive.stop();
        for (HostQueue q : ctrl.ioQueues) {
            q.abort(reason);
        }
        if (ctrl.admin != null) {
            ctrl.admin.abort(reason);
        }
        releaseAll();
    }

    /** The association's queues are done with: the transport frees them (RDMA: queue pairs, memory). */
    private void releaseAll() {
        HostQueue[] qs = ctrl.ioQueues;
        ctrl.ioQueues = new HostQueue[0];
        for (HostQueue q : qs) {
            if (q != null) {
                ctrl.transport.release(q);
            }
        }
        if (ctrl.admin != null) {
            ctrl.transport.release(ctrl.admin);
        }
    }

    private void fastFailExpired() {
        if (ctrl.state.get() == ControllerState.RECONNECTING) {
            LOG.warn("{}: still not reconnected after fast_io_fail_tmo {} ms; failing I/O until it is", id,
                    options.fastIoFailTimeout().toMillis());
            failFast = true;
            ctrl.held.drain();
        }
    }

    /** Housekeeping thread: one reconnect attempt; on failure the next one, or giving up after ctrlLossTimeout. */
    private void reconnect() {
        ctrl.association.lock();
        try {
            if (ctrl.closed.get() || ctrl.state.get() != ControllerState.RECONNECTING) {
                return;
            }
            reconnectAttempts++;
            int gen = ++ctrl.generation;
            try {
                ctrl.setup.establish(gen);
            } catch (RuntimeException e) {
                releaseAll();
                String why = e.getMessage();
                lastFailure = "reconnect attempt " + reconnectAttempts + " failed: " + why;
                Duration limit = options.ctrlLossTimeout();
                long next = System.nanoTime() + options.reconnectDelay().toNanos();
                if (!limit.isNegative() && next - lossStart > limit.toNanos()) {
                    giveUp("no reconnect within ctrlLossTimeout " + limit.toMillis() + " ms (" + reconnectAttempts
                            + " attempts; last: " + why + ")");
                    return;
                }
                LOG.info("{}: {}; next attempt in {} ms", id, lastFailure, options.reconnectDelay().toMillis());
                ctrl.housekeeping.schedule(this::reconnect, options.reconnectDelay().toMillis(), TimeUnit.MILLISECONDS);
                return;
            }
            failFast = false;
            if (fastFailTask != null) {
                fastFailTask.cancel(false);
            }
            ctrl.establishedGeneration = ctrl.generation; // before CONNECTED: see establishedGeneration()
            lossesClosedByPeer = true;
            ctrl.state.set(ControllerState.CONNECTED);
            String how = "reconnected after " + reconnectAttempts + " attempt(s), "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lossStart) + " ms; resending "
                    + ctrl.held.size() + " request(s)";
            LOG.info("{}: {}", id, how);
            ctrl.setup.started();
            report(ControllerState.CONNECTED, how);
            ctrl.held.drain();
        } finally {
            ctrl.association.unlock();
        }
    }

    private void giveUp(String reason) {
        lastFailure = reason;
        if (ctrl.state.compareAndSet(ControllerState.RECONNECTING, ControllerState.FAILED)) {
            LOG.error("{}: giving up: {}; every request fails until the controller is closed", id, reason);
            report(ControllerState.FAILED, reason);
        }
        ctrl.held.drain();
    }

    /** Tells the state listener (on the calling thread); a listener that throws is logged, not passed on. */
    void report(ControllerState s, String reason) {
        ctrl.pathsChanged();
        ControllerStateListener l = options.stateListener();
        if (l != null) {
            try {
                l.stateChanged(ctrl, s, reason);
            } catch (RuntimeException e) {
                LOG.warn("{}: state listener threw", id, e);
            }
        }
    }
}

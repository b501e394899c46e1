package io.nvmeof.rdma;

/**
 * A completion queue. Two ways to consume it:
 * <ul>
 *   <li>busy polling: {@link #poll(CompletionBatch)} — one native call returns up to the batch's capacity;</li>
 *   <li>event-driven: {@link #requestNotify(boolean)}, poll once more (to close the race with a completion that
 *       arrived before arming), then {@link #waitForEvent(int)} sleeps on the completion channel.</li>
 * </ul>
 * A poller thread owns its CQ (no locking on the data path).
 */
public final class CompletionQueue implements AutoCloseable {
    /** ibv_ack_cq_events takes a mutex; acknowledge events in groups of this many rather than one by one. */
    private static final int ACK_BATCH = 64;

    private long cq;
    private final int entries;
    private final CompletionChannel channel;
    private int unackedEvents;
    private long pollCalls;
    private long completions;

    CompletionQueue(long cq, int entries, CompletionChannel channel) {
        this.cq = cq;
        this.entries = entries;
        this.channel = channel;
    }

    /** The struct ibv_cq pointer. */
    long address() {
        return cq;
    }

    /** Entries the provider actually allocated (at least what was asked). */
    public int entries() {
        return entries;
    }

    public CompletionChannel channel() {
        return channel;
    }

    /**
     * Polls up to {@code batch.capacity()} completions with one native call; returns how many (0: none), also in
     * {@link CompletionBatch#count()}.
     */
    public int poll(CompletionBatch batch) throws RdmaException {
        pollCalls++;
        int n = NvrNative.nvr_poll_cq(cq, batch.capacity(), batch.address());
        if (n < 0) {
            batch.count(0);
            throw RdmaException.fromErrno("ibv_poll_cq", -n);
        }
        batch.count(n);
        completions += n;
        return n;
    }

    /** Arms the CQ: the next completion (only the next solicited one if {@code solicitedOnly}) raises an event. */
    public void requestNotify(boolean solicitedOnly) throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_req_notify_cq(cq, solicitedOnly ? 1 : 0), "ibv_req_notify_cq");
    }

    /**
     * Sleeps up to {@code timeoutMillis} for an event on this CQ's channel; true if one came. For a channel shared by
     * several CQs use {@link CompletionChannel#waitForEvent(int)}, which says which CQ.
     */
    public boolean waitForEvent(int timeoutMillis) throws RdmaException {
        if (channel == null) {
            throw new IllegalStateException("this CQ has no completion channel");
        }
        CompletionQueue which = channel.waitForEvent(timeoutMillis);
        if (which != null && which != this) {
            throw new IllegalStateException("the channel is shared: use CompletionChannel.waitForEvent");
        }
        return which != null;
    }

    void eventReceived() {
        if (++unackedEvents >= ACK_BATCH) {
            NvrNative.nvr_ack_cq_events(cq, unackedEvents);
            unackedEvents = 0;
        }
    }

    /** Native poll calls made on this CQ so far (for the calls-per-I/O figure). */
    public long pollCalls() {
        return pollCalls;
    }

    /** Completions returned so far. */
    public long completions() {
        return completions;
    }

    /** Destroys the CQ (its queue pairs must be destroyed first), acknowledging outstanding events first. */
    @Override
    public void close() throws RdmaException {
        // Under the channel's lock, which a waiter holds while it takes an event and counts it here: an event taken
        // by a racing waiter is then counted before the acknowledgement, and ibv_destroy_cq (which waits until every
        // event was acknowledged) cannot wait for ever.
        synchronized (channel != null ? channel.eventLock() : this) {
            if (cq == 0) {
                return;
            }
            if (unackedEvents > 0) {
                NvrNative.nvr_ack_cq_events(cq, unackedEvents);
                unackedEvents = 0;
            }
            RdmaLibrary.check(NvrNative.nvr_destroy_cq(cq), "ibv_destroy_cq"); // EBUSY (QPs left): the handle stays
            if (channel != null) {
                channel.unregister(this);
            }
            cq = 0;
        }
    }
}

package io.nvmeof.rdma;

import java.util.HashMap;
import java.util.Map;

/**
 * A completion channel: the file descriptor through which armed completion queues signal "a completion arrived",
 * so a poller can sleep instead of spinning when idle. Several CQs may share one channel.
 */
public final class CompletionChannel implements AutoCloseable {
    private long channel;
    private final Map<Long, CompletionQueue> queues = new HashMap<>();
    private final long[] cqOut = new long[1];

    CompletionChannel(long channel) {
        this.channel = channel;
    }

    long address() {
        return channel;
    }

    /** The channel's file descriptor (for an external poll/epoll loop). */
    public synchronized int fd() {
        return NvrNative.nvr_comp_channel_fd(requireOpen());
    }

    /** The handle, or an exception once closed: C must never be handed a destroyed (or null) channel. */
    private long requireOpen() {
        if (channel == 0) {
            throw new IllegalStateException("completion channel closed");
        }
        return channel;
    }

    synchronized void register(CompletionQueue cq) {
        queues.put(cq.address(), cq);
    }

    synchronized void unregister(CompletionQueue cq) {
        queues.remove(cq.address());
    }

    /**
     * Waits up to {@code timeoutMillis} (-1: forever) for a CQ event and returns the CQ it came from (the event is
     * counted for acknowledgement by that CQ), or null on timeout. The CQ is disarmed by the event: call
     * {@link CompletionQueue#requestNotify(boolean)} again, then poll it empty, before waiting again.
     */
    public synchronized CompletionQueue waitForEvent(int timeoutMillis) throws RdmaException {
        return taken(RdmaLibrary.check(NvrNative.nvr_wait_comp_channel(requireOpen(), timeoutMillis, cqOut),
                "ibv_get_cq_event"));
    }

    /**
     * As {@link #waitForEvent(int)}, but also returns (null) as soon as {@code wakeup} is signalled; the signal is
     * consumed. A signal that came before the call makes it return at once.
     */
    public synchronized CompletionQueue waitForEvent(int timeoutMillis, Wakeup wakeup) throws RdmaException {
        return taken(RdmaLibrary.check(NvrNative.nvr_wait_comp_channel_or_wakeup(requireOpen(), wakeup.fd(), timeoutMillis,
                cqOut), "ibv_get_cq_event"));
    }

    /** After a wait: rc 1 means an event for the CQ in cqOut, which counts it for acknowledgement. */
    private CompletionQueue taken(int rc) {
        if (rc != 1) {
            return null;
        }
        CompletionQueue cq = queues.get(cqOut[0]);
        if (cq == null) {
            throw new IllegalStateException("event for an unknown CQ 0x" + Long.toHexString(cqOut[0]));
        }
        cq.eventReceived();
        return cq;
    }

    @Override
    public synchronized void close() throws RdmaException {
        if (channel != 0) {
            // EBUSY while CQs still use it: the handle stays, so close can be retried once they are destroyed.
            RdmaLibrary.check(NvrNative.nvr_destroy_comp_channel(channel), "ibv_destroy_comp_channel");
            channel = 0;
        }
    }

    /** The lock that orders event taking ({@link #waitForEvent}) with a CQ's acknowledgement and destruction. */
    Object eventLock() {
        return this;
    }
}

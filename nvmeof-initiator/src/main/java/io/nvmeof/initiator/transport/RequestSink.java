package io.nvmeof.initiator.transport;

/**
 * Where a failed queue hands the requests its connection loss interrupted, instead of failing them: the controller
 * holds them while it reconnects and sends them again (as the Linux host requeues them). Called on the queue's I/O
 * thread; must not block.
 */
@FunctionalInterface
public interface RequestSink {
    /** @return false when the request is not taken (no reconnect will happen): the queue fails it as usual */
    boolean offer(PendingRequest request);
}

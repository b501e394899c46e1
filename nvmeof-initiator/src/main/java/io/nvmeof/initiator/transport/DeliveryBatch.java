package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.BatchedIoCallback;

/**
 * The {@link BatchedIoCallback}s to tell when an I/O thread's batch of completions ends. The I/O thread opens a
 * batch before it delivers what one receive (or one poll) brought and closes it after; a completion delivered to a
 * batched callback inside it is remembered (once per callback), one delivered anywhere else is followed by
 * {@code onBatchEnd} at once. Confined to its I/O thread: another thread (the late-completion thread) never matches
 * {@link #owner}, whatever it reads there, so it always takes the at-once path.
 */
public final class DeliveryBatch {
    /** Distinct callbacks remembered per batch; a further one is told at once after each of its completions. */
    static final int CAPACITY = 8;

    private final BatchedIoCallback[] waiting = new BatchedIoCallback[CAPACITY];
    private int count;
    private Thread owner;

    /** I/O thread: completions delivered from now until {@link #end} belong to one batch. */
    public void begin() {
        owner = Thread.currentThread();
    }

    /** I/O thread: tells every callback that had a completion in the batch. */
    public void end() {
        owner = null;
        for (int i = 0; i < count; i++) {
            BatchedIoCallback cb = waiting[i];
            waiting[i] = null;
            SlotQueue.tellBatchEnd(cb);
        }
        count = 0;
    }

    /** A completion was delivered to {@code cb} (on any thread). */
    void delivered(BatchedIoCallback cb) {
        if (owner != Thread.currentThread()) {
            SlotQueue.tellBatchEnd(cb);
            return;
        }
        for (int i = 0; i < count; i++) {
            if (waiting[i] == cb) {
                return;
            }
        }
        if (count < CAPACITY) {
            waiting[count++] = cb;
        } else {
            SlotQueue.tellBatchEnd(cb);
        }
    }
}

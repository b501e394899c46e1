package io.nvmeof.initiator;

/**
 * An {@link IoCallback} that is also told when the I/O thread has finished delivering a batch of completions that
 * included at least one of its own: those of one receive on NVMe/TCP, of one completion-queue poll on NVMe/RDMA.
 * A caller that hands completions to a thread that may be asleep (fio's job thread, a consumer) wakes it once per
 * batch in {@link #onBatchEnd} instead of once per completion: one wake-up, and on a shared core one switch, for
 * all of them.
 *
 * <p>Every {@code onComplete} is followed by an {@code onBatchEnd} on the same thread: at the end of the batch, or
 * at once when the completion was delivered outside one (a timeout, a failure, a request completed after its queue
 * was gone). Like {@code onComplete}, it must not block.
 */
public interface BatchedIoCallback extends IoCallback {
    /** The I/O thread has delivered every completion of this batch (at least one to this callback). */
    void onBatchEnd();
}

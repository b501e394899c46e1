package io.nvmeof.initiator.transport;

/**
 * Internal completion hook (admin commands, futures). Runs on the queue's event loop.
 *
 * @see io.nvmeof.initiator.IoCallback for the status convention
 */
@FunctionalInterface
public interface CompletionListener {
    /**
     * @param status NVMe status (0 = success) or a negative {@link io.nvmeof.initiator.IoCallback} transport code
     * @param result CQE DW0 (low 32 bits) and DW1 (high 32 bits)
     */
    void onCompletion(int status, long result);
}

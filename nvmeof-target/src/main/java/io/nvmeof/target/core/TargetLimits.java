package io.nvmeof.target.core;

/**
 * Limits the target advertises and enforces.
 *
 * @param maxIoQueues I/O queues per controller
 * @param maxQueueSize entries per I/O queue (CAP.MQES + 1)
 * @param maxTransferSize MDTS in bytes: the largest data transfer of one command (a power of two, at least 4 KiB)
 */
public record TargetLimits(int maxIoQueues, int maxQueueSize, int maxTransferSize) {
    /** Admin queue entries (Linux NVME_AQ_DEPTH). */
    public static final int ADMIN_QUEUE_SIZE = 32;

    public static TargetLimits defaults() {
        return new TargetLimits(64, 128, 1 << 20);
    }

    public TargetLimits {
        if (maxIoQueues < 1 || maxIoQueues > 0xFFFE) {
            throw new IllegalArgumentException("maxIoQueues must be 1..65534, got " + maxIoQueues);
        }
        if (maxQueueSize < 2 || maxQueueSize > 1024) {
            throw new IllegalArgumentException("maxQueueSize must be 2..1024, got " + maxQueueSize);
        }
        if (Integer.bitCount(maxTransferSize) != 1 || maxTransferSize < 4096) {
            throw new IllegalArgumentException("maxTransferSize must be a power of two >= 4096, got " + maxTransferSize);
        }
    }

    /** MDTS field: log2 of the transfer size in 4 KiB units. */
    public int mdtsField() {
        return Integer.numberOfTrailingZeros(maxTransferSize) - 12;
    }
}

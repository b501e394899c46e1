package io.nvmeof.tgt.core;

/**
 * Limits the target advertises and enforces.
 *
 * @param maxIoQueues I/O queues per controller
 * @param maxQueueSize entries per I/O queue (CAP.MQES + 1)
 * @param maxTransferSize MDTS in bytes: the largest data transfer of one command (a power of two, at least 4 KiB)
 * @param maxConnectionMemory bytes one connection (queue) may hold at once: its request slots and buffers, fixed at
 *     Connect, and the data of its commands in flight. A Connect whose queue could not run one largest transfer within
 *     it is refused; commands beyond it wait for the queue's earlier ones.
 * @param maxMemory bytes all connections together may hold (the same accounting, summed). A Connect that does not fit
 *     is refused as Controller Busy (retry later); commands beyond it wait for memory another queue frees.
 */
public record TargetLimits(int maxIoQueues, int maxQueueSize, int maxTransferSize, long maxConnectionMemory,
        long maxMemory) {
    /** Admin queue entries (Linux NVME_AQ_DEPTH). */
    public static final int ADMIN_QUEUE_SIZE = 32;

    /** Default per-connection memory: 64 largest transfers of 1 MiB, far more than a queue of 4 KiB I/O needs. */
    public static final long DEFAULT_CONNECTION_MEMORY = 64L << 20;

    public static TargetLimits defaults() {
        return new TargetLimits(64, 128, 1 << 20);
    }

    /** These limits with the default memory limits (see {@link #defaultMaxMemory()}). */
    public TargetLimits(int maxIoQueues, int maxQueueSize, int maxTransferSize) {
        this(maxIoQueues, maxQueueSize, maxTransferSize, DEFAULT_CONNECTION_MEMORY, defaultMaxMemory());
    }

    /**
     * Half of the JVM's heap limit (the JDK's direct memory limit is the same by default), at least 256 MiB: room for
     * thousands of connections and their I/O, while what hosts ask for cannot take the process's memory.
     */
    public static long defaultMaxMemory() {
        return Math.max(256L << 20, Runtime.getRuntime().maxMemory() / 2);
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
        long least = 2L * maxTransferSize;
        if (maxConnectionMemory < least) {
            throw new IllegalArgumentException("maxConnectionMemory " + maxConnectionMemory + " is less than twice"
                    + " maxTransferSize (" + least + "): a queue could not run its largest command; raise it or lower"
                    + " maxTransferSize");
        }
        if (maxMemory < maxConnectionMemory) {
            throw new IllegalArgumentException("maxMemory " + maxMemory + " is less than maxConnectionMemory "
                    + maxConnectionMemory + ": not even one connection would fit; raise maxMemory");
        }
    }

    /** MDTS field: log2 of the transfer size in 4 KiB units. */
    public int mdtsField() {
        return Integer.numberOfTrailingZeros(maxTransferSize) - 12;
    }
}

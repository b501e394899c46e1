package io.nvmeof.initiator.transport;

import java.nio.ByteBuffer;
import java.util.concurrent.ScheduledFuture;

/**
 * What a controller needs from one transport binding (NVMe/TCP, NVMe/RDMA): queues connected to the controller's
 * address, its I/O threads, and memory the transport can move data in and out of without a copy. One instance per
 * controller; closing it releases every queue and resource it made.
 */
public interface HostTransport extends AutoCloseable {

    /**
     * Connects one queue at the transport level (TCP connection and ICReq/ICResp; RDMA CM connect with the NVMe/RDMA
     * private data). The NVMe-oF Connect command is the caller's next step.
     *
     * @param slots           commands outstanding at most: the queue size minus the entry NVMe keeps empty (SQSIZE)
     * @param inlineLimit     largest write data carried in the command capsule (0 = never)
     * @param maxTransfer     largest data transfer of one command, in bytes
     */
    HostQueue connectQueue(int qid, int slots, int inlineLimit, long maxTransfer);

    /**
     * Closes a queue of an association that is gone and frees what it holds once its I/O thread is done with it
     * (the controller reconnected on new queues). Default: {@link HostQueue#close()}.
     */
    default void release(HostQueue q) {
        q.close();
    }

    /** Our cap on one command's data with this transport (applied on top of the controller's MDTS). */
    long maxTransferCap();

    /**
     * The cap on one command's data when the controller reports MDTS 0 ("no limit"), given its admin queue {@code
     * admin}: by default {@link #maxTransferCap()}.
     */
    default long maxTransferWithoutMdts(HostQueue admin) {
        return maxTransferCap();
    }

    /** True on one of this transport's I/O threads, where blocking would stall or deadlock I/O. */
    boolean inIoThread();

    /** Runs {@code task} every {@code periodMs} on a transport thread (keep alive); it must not block. */
    ScheduledFuture<?> scheduleAtFixedRate(Runnable task, long periodMs);

    /**
     * A direct buffer that moves data without a copy: for RDMA registered with the device once, so a read lands in it
     * by one RDMA WRITE from the controller. Plain direct memory for TCP.
     */
    ByteBuffer allocateBuffer(int bytes);

    /** Registers a caller's direct buffer for zero-copy transfers until {@link #deregisterBuffer} (no-op for TCP). */
    default void registerBuffer(ByteBuffer direct) {
    }

    /** Ends a {@link #registerBuffer} registration; no I/O may be using the buffer. */
    default void deregisterBuffer(ByteBuffer direct) {
    }

    /** Transport statistics for logs and tests (e.g. registrations, bytes moved zero-copy and bounced). */
    default String statistics() {
        return "";
    }

    @Override
    void close();
}

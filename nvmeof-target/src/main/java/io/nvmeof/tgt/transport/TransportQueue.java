package io.nvmeof.tgt.transport;

import io.netty.buffer.ByteBufAllocator;
import io.nvmeof.tgt.core.Request;

/**
 * What the core asks of one transport queue (a TCP connection, an RDMA queue pair): the NVMe-oF counterpart of
 * Linux's {@code nvmet_fabrics_ops}. A transport only moves capsules and data; every command decision is the core's.
 * All calls but {@link #close} and {@link #execute} come on the queue's own poll-group thread.
 */
public interface TransportQueue {
    /**
     * Checks the request's SGL (SGL1 in its SQE) against this transport's rules and the request's expected transfer
     * length. Returns an NVMe status; on success the transport knows whether the data is in the capsule already.
     */
    int mapData(Request request);

    /** Brings host data (a host-to-controller transfer not in the capsule) into the request; then calls
     *  {@link Request#dataReady()}. */
    void fetchData(Request request);

    /**
     * Provides the buffer a controller-to-host transfer will be read into, before the command runs. Returns false when
     * none is free now; the transport then calls {@link Request#dataReady()} once it has placed one.
     */
    boolean allocateReadData(Request request);

    /** Sends the completion (and controller-to-host data) of a request, then releases it. */
    void queueResponse(Request request);

    /** Closes the connection; safe from any thread, idempotent. */
    void close(String reason);

    /** Runs a task on this queue's poll-group thread. */
    void execute(Runnable task);

    /** Allocator of pooled buffers for command data. */
    ByteBufAllocator allocator();

    /** Bytes of in-capsule data this queue accepts (advertised through IOCCSZ). */
    int inlineDataSize();

    /** True when hosts address data with keyed SGLs (RDMA). */
    boolean keyedSgls();

    /** NVMe-oF transport type (discovery log TRTYPE): 3 for TCP, 1 for RDMA. */
    int trtype();

    /** The peer's address, for logs. */
    String peer();

    /** A request went back to the pool of a queue that was out of them; a transport that stopped reading resumes. */
    default void requestFreed() {
    }

    /** The peer's IP address where the transport knows it (null otherwise): what per-source limits count by. */
    default java.net.InetAddress peerAddress() {
        return null;
    }

    /**
     * The address of this machine the host reached (null where unknown): what the discovery log says for a listener
     * on the wildcard address, where hosts cannot connect to "0.0.0.0" (nvmet's {@code nvmet_set_disc_traddr}).
     */
    default java.net.InetAddress localAddress() {
        return null;
    }

    /**
     * Whether data of {@code ns} still waits here to be sent from the namespace's own memory (zero-copy reads, after
     * their requests were released): a removed namespace is not closed under it. Only on this queue's thread.
     */
    default boolean sendsFrom(io.nvmeof.tgt.core.Namespace ns) {
        return false;
    }

    /**
     * Bytes this connection keeps for itself beyond its request slots (receive buffers at their largest), counted in
     * its memory reservation at Connect.
     */
    default long bufferedBytes() {
        return 0;
    }

    /**
     * Withdraws a request that waits in this transport before its data moves: for memory under the limits or a data
     * buffer (SPDK's NEED_BUFFER), or for its turn to fetch host data (SPDK's DATA_TRANSFER_TO_CONTROLLER_PENDING).
     * Such a command has not started, so Abort completes it as aborted; the transport forgets it and takes it up again
     * only as a response to send. False when the request does not wait here. Only on this queue's thread.
     */
    default boolean withdrawWaiting(Request request) {
        return false;
    }

    /** A command of this queue gave back charged memory (see {@code SubmissionQueue.chargeData}): resume waiters. */
    default void memoryFreed() {
    }

    /**
     * The io_uring of this queue's poll group, for namespaces served with direct I/O, or null when it has none (the
     * namespace's blocking methods serve them then). Only on this queue's thread.
     */
    default io.nvmeof.tgt.core.StorageRing storageRing() {
        return null;
    }

    /** The listener this connection came through (which subsystems it exposes), or null when not known. */
    default io.nvmeof.tgt.core.ListenerInfo listener() {
        return null;
    }

    /**
     * The TLS PSK identity this connection's handshake agreed on (NVMe/TCP with TLS), or null for a connection without
     * TLS. Only on this queue's thread.
     */
    default io.nvmeof.protocol.tls.PskIdentity tlsIdentity() {
        return null;
    }
}

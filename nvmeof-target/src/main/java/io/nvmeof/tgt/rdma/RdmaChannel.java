package io.nvmeof.tgt.rdma;

/**
 * The verbs one RDMA queue pair needs, as the queue sees them: work requests are queued by the post calls and handed
 * to the NIC together by {@link #flush()}, so a burst of responses, reads and re-posted receives costs one native call.
 * Implemented over rdma-core by the native module; tests use an in-memory NIC.
 *
 * <p>Work request IDs come back in completions; the queue encodes in them what finished.
 */
public interface RdmaChannel {
    /** Posts a receive of one command capsule into {@code [address, address + length)}. */
    void postRecv(long wrId, long address, int length, long lkey);

    /** RDMA READ of the host's {@code remoteAddress/rkey} into local memory; signaled. */
    void postRead(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey);

    /** RDMA WRITE of local memory to the host's {@code remoteAddress/rkey}; unsignaled (a later SEND covers it). */
    void postWrite(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey);

    /** SEND of a response capsule, optionally invalidating the host's {@code invalidateRkey}; signaled. */
    void postSend(long wrId, long localAddress, int length, long lkey, boolean invalidate, long invalidateRkey);

    /** Hands everything posted since the last flush to the NIC. */
    void flush();

    /** Starts an orderly disconnect of the queue pair. */
    void disconnect();
}

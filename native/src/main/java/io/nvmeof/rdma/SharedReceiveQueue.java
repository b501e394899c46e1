package io.nvmeof.rdma;

/**
 * A shared receive queue: one pool of receive buffers for many queue pairs (SPDK's target default), so receive
 * memory grows with load rather than with the number of connections.
 */
public final class SharedReceiveQueue implements AutoCloseable {
    private long srq;
    private final int maxWr;
    private long postCalls;

    SharedReceiveQueue(long srq, int maxWr) {
        this.srq = srq;
        this.maxWr = maxWr;
    }

    long address() {
        return srq;
    }

    public int maxWr() {
        return maxWr;
    }

    /** Posts the whole batch with one native call and clears it. */
    public void postRecv(RecvBatch batch) throws RdmaException {
        postCalls++;
        int rc = NvrNative.nvr_post_srq_recv(srq, batch.address(), batch.size(), batch.badIndexAddress());
        if (rc < 0) {
            throw new PostException("ibv_post_srq_recv", -rc, batch.badIndex());
        }
        batch.clear();
    }

    public long postCalls() {
        return postCalls;
    }

    @Override
    public synchronized void close() throws RdmaException {
        if (srq != 0) {
            RdmaLibrary.check(NvrNative.nvr_destroy_srq(srq), "ibv_destroy_srq"); // the handle stays on failure
            srq = 0;
        }
    }
}

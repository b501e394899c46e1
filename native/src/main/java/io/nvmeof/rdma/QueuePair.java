package io.nvmeof.rdma;

/**
 * A reliable-connected queue pair created on a {@link CmId} (RDMA CM moves it through INIT, RTR and RTS during
 * connect/accept). Posting is one native call per batch. A queue pair is used by one thread at a time (the verbs
 * provider locks internally, but batches and counters here are not shared).
 */
public final class QueuePair implements AutoCloseable {
    // enum ibv_qp_state
    public static final int STATE_RESET = 0;
    public static final int STATE_INIT = 1;
    public static final int STATE_RTR = 2;
    public static final int STATE_RTS = 3;
    public static final int STATE_SQD = 4;
    public static final int STATE_SQE = 5;
    public static final int STATE_ERR = 6;

    private final CmId id;
    private long qp;
    private final int qpNum;
    private final int maxSendWr;
    private final int maxRecvWr;
    private final int maxInlineData;
    private long postCalls;

    QueuePair(CmId id, long qp, int qpNum, int maxSendWr, int maxRecvWr, int maxInlineData) {
        this.id = id;
        this.qp = qp;
        this.qpNum = qpNum;
        this.maxSendWr = maxSendWr;
        this.maxRecvWr = maxRecvWr;
        this.maxInlineData = maxInlineData;
    }

    public int qpNum() {
        return qpNum;
    }

    /** Send queue depth the provider granted. */
    public int maxSendWr() {
        return maxSendWr;
    }

    public int maxRecvWr() {
        return maxRecvWr;
    }

    /** Largest payload {@link SendBatch#INLINE} may carry on this QP. */
    public int maxInlineData() {
        return maxInlineData;
    }

    /** Posts the whole batch with one ibv_post_send and clears it; on failure throws {@link PostException}. */
    public void postSend(SendBatch batch) throws RdmaException {
        postCalls++;
        int rc = NvrNative.nvr_post_send(requireOpen(), batch.address(), batch.size(), batch.badIndexAddress());
        if (rc < 0) {
            throw new PostException("ibv_post_send", -rc, batch.badIndex());
        }
        batch.clear();
    }

    /** Posts the whole batch of receive buffers with one ibv_post_recv and clears it. */
    public void postRecv(RecvBatch batch) throws RdmaException {
        postCalls++;
        int rc = NvrNative.nvr_post_recv(requireOpen(), batch.address(), batch.size(), batch.badIndexAddress());
        if (rc < 0) {
            throw new PostException("ibv_post_recv", -rc, batch.badIndex());
        }
        batch.clear();
    }

    /** The current state, {@link #STATE_RTS} when connected, {@link #STATE_ERR} after a fatal completion error. */
    public int state() throws RdmaException {
        return RdmaLibrary.check(NvrNative.nvr_qp_state(requireOpen()), "ibv_query_qp");
    }

    /** Moves the QP to ERR: everything outstanding completes with a flush error (drain before destroying). */
    public void moveToError() throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_qp_to_error(requireOpen()), "ibv_modify_qp(ERR)");
    }

    /** Native post calls made on this QP (for the calls-per-I/O figure). */
    public long postCalls() {
        return postCalls;
    }

    public CmId cmId() {
        return id;
    }

    private long requireOpen() {
        if (qp == 0) {
            throw new IllegalStateException("queue pair closed");
        }
        return qp;
    }

    /** Destroys the QP (rdma_destroy_qp); its CM id stays usable until closed. */
    @Override
    public void close() {
        if (qp != 0) {
            qp = 0;
            id.queuePairClosed();
        }
    }

    @Override
    public String toString() {
        return "QueuePair[qpn=0x" + Integer.toHexString(qpNum) + "]";
    }
}

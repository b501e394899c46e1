package io.nvmeof.rdma;

/**
 * What {@link CmId#createQueuePair} needs: the CQs (may be the same one), an optional shared receive queue, and
 * queue sizes. One SGE per work request (what the batch descriptors carry); RC; {@code sq_sig_all = 0}, so only
 * work requests flagged {@link SendBatch#SIGNALED} complete.
 */
public record QueuePairConfig(CompletionQueue sendCq, CompletionQueue recvCq, SharedReceiveQueue srq, int maxSendWr,
                              int maxRecvWr, int maxInlineData) {
    public QueuePairConfig {
        if (sendCq == null || recvCq == null) {
            throw new IllegalArgumentException("a queue pair needs a send and a receive CQ");
        }
    }

    /** One CQ for both directions, no SRQ, no inline data. */
    public static QueuePairConfig of(CompletionQueue cq, int maxSendWr, int maxRecvWr) {
        return new QueuePairConfig(cq, cq, null, maxSendWr, maxRecvWr, 0);
    }

    public QueuePairConfig withInlineData(int bytes) {
        return new QueuePairConfig(sendCq, recvCq, srq, maxSendWr, maxRecvWr, bytes);
    }

    public QueuePairConfig withSharedReceiveQueue(SharedReceiveQueue s) {
        return new QueuePairConfig(sendCq, recvCq, s, maxSendWr, maxRecvWr, maxInlineData);
    }
}

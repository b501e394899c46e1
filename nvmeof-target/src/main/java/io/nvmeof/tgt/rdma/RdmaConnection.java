package io.nvmeof.tgt.rdma;

import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.QueuePair;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One accepted NVMe/RDMA queue and what it holds: its CM id, queue pair, poll group and queue. Kept apart so the CM
 * thread, the poll groups and the listener's close release a queue the same way.
 *
 * @param cqEntries completion queue entries committed to this connection's queue pair
 */
record RdmaConnection(CmId id, QueuePair qp, RdmaPollGroupThread group, RdmaQueue queue, int cqEntries) {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    /**
     * Poll-group thread: the queue is done. Stop it, destroy its queue pair (after which the NIC can no longer touch
     * its buffers), then release its requests and buffers, then the CM id.
     */
    void release(String why) {
        queue().closeNow(why);
        qp().close();
        queue().queuePairDestroyed();
        group().cqBudget.release(cqEntries()); // its work requests can no longer complete
        try {
            id().close();
        } catch (Exception e) {
            LOG.warn("destroying the CM id of a closed NVMe/RDMA queue: {}", e.toString());
        }
    }
}

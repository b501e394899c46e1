package io.nvmeof.tgt.rdma;

import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.QueuePair;
import io.nvmeof.rdma.RecvBatch;
import io.nvmeof.rdma.SendBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link RdmaChannel} over a real queue pair: posts accumulate in descriptor batches in direct memory and go to the NIC
 * with one native call per batch at {@link #flush()} (or when a batch fills).
 */
final class VerbsRdmaChannel implements RdmaChannel {
    private static final Logger LOG = LoggerFactory.getLogger(VerbsRdmaChannel.class);

    /** Native call accounting of one poll group (its thread only). */
    static final class Counters {
        long postCalls;
        long workRequests;
        long pollsWithWork;
        long completions;
    }

    private final CmId id;
    private final QueuePair qp;
    private final Counters counters;
    private final SendBatch sends = new SendBatch(SendBatch.MAX_BATCH);
    private final RecvBatch recvs = new RecvBatch(SendBatch.MAX_BATCH);
    private final RdmaTransport owner;
    private boolean failed;

    VerbsRdmaChannel(CmId id, QueuePair qp, Counters counters, RdmaTransport owner) {
        this.id = id;
        this.qp = qp;
        this.counters = counters;
        this.owner = owner;
    }

    QueuePair queuePair() {
        return qp;
    }

    @Override
    public void postRecv(long wrId, long address, int length, long lkey) {
        if (recvs.isFull()) {
            flushRecvs();
        }
        recvs.add(wrId, address, length, (int) lkey);
    }

    @Override
    public void postRead(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey) {
        DataPathObserver o = owner.observer();
        if (o != null) {
            o.rdmaRead(remoteAddress, length, rkey);
        }
        room();
        sends.rdmaRead(wrId, localAddress, length, (int) lkey, remoteAddress, (int) rkey, SendBatch.SIGNALED);
    }

    @Override
    public void postWrite(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey) {
        DataPathObserver o = owner.observer();
        if (o != null) {
            o.rdmaWrite(remoteAddress, length, rkey);
        }
        room();
        sends.rdmaWrite(wrId, localAddress, length, (int) lkey, remoteAddress, (int) rkey, 0);
    }

    @Override
    public void postSend(long wrId, long localAddress, int length, long lkey, boolean invalidate, long invalidateRkey) {
        room();
        if (invalidate) {
            sends.sendWithInvalidate(wrId, localAddress, length, (int) lkey, (int) invalidateRkey, SendBatch.SIGNALED);
        } else {
            sends.send(wrId, localAddress, length, (int) lkey, SendBatch.SIGNALED);
        }
    }

    private void room() {
        if (sends.isFull()) {
            flushSends();
        }
    }

    @Override
    public void flush() {
        flushRecvs();
        flushSends();
    }

    private void flushRecvs() {
        if (recvs.size() == 0) {
            return;
        }
        try {
            if (!failed) {
                counters.postCalls++;
                counters.workRequests += recvs.size();
                qp.postRecv(recvs);
            }
        } catch (Exception e) {
            fail(e);
        } finally {
            recvs.clear();
        }
    }

    private void flushSends() {
        if (sends.isEmpty()) {
            return;
        }
        try {
            if (!failed) {
                counters.postCalls++;
                counters.workRequests += sends.size();
                qp.postSend(sends);
            }
        } catch (Exception e) {
            fail(e);
        } finally {
            sends.clear();
        }
    }

    private void fail(Exception e) {
        // A post fails when the queue pair is in error (its outstanding work then completes with flush errors, which
        // end the queue), but providers also fail posts on a live queue pair (ENOMEM, EINVAL). Either way nothing
        // more can be posted: disconnect, so the DISCONNECTED event releases the queue and its requests, instead of
        // leaving a connection that silently stopped.
        if (!failed) {
            failed = true;
            LOG.warn("posting to {} failed: {}; disconnecting", qp, e.toString());
            disconnect();
        }
    }

    @Override
    public void disconnect() {
        try {
            id.disconnect();
        } catch (Exception e) {
            LOG.debug("rdma_disconnect: {}", e.toString());
        }
    }
}

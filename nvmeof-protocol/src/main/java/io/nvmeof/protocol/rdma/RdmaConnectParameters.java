package io.nvmeof.protocol.rdma;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Checks a host's RDMA CM connect request against a controller's limits and derives the queue depths, or says which
 * reject status to send (Linux nvmet_rdma_parse_cm_connect_req, SPDK nvmf_rdma_connect).
 *
 * <p>Hosts disagree on what the sizes mean: the Linux host sends HRQSIZE = N, HSQSIZE = N - 1 (admin: 32 / 31) for a
 * queue of N entries; SPDK's sends N + 1, N. Both fit one reading: the host can have HSQSIZE + 1 commands in flight,
 * so the target posts that many receives and takes HSQSIZE up to the largest queue it serves plus one (beyond that it
 * clamps, as SPDK does, except on the admin queue, where Linux nvmet's limit of 32 entries is kept).
 *
 * @param qid queue ID the host asks for
 * @param receiveDepth receives to post: commands the host may have outstanding (HSQSIZE + 1)
 * @param hostReceiveQueueSize responses the host can take (HRQSIZE)
 * @param rejectStatus 0 when acceptable, else an {@link RdmaCmReject} status
 */
public record RdmaConnectParameters(int qid, int receiveDepth, int hostReceiveQueueSize, int rejectStatus) {

    public boolean acceptable() {
        return rejectStatus == 0;
    }

    /**
     * @param adminQueueSize largest admin queue (32)
     * @param maxQueueSize largest I/O queue (CAP.MQES + 1)
     * @param maxQid largest I/O queue ID the target serves
     */
    public static RdmaConnectParameters parse(DirectBuffer privateData, int length, int adminQueueSize, int maxQueueSize, int maxQid) {
        if (privateData == null || length < RdmaCmRequest.LENGTH) {
            return reject(RdmaCmReject.STS_INVALID_LENGTH);
        }
        RdmaCmRequest r = new RdmaCmRequest().wrap(new UnsafeBuffer(privateData, 0, RdmaCmRequest.LENGTH), 0);
        if (r.recfmt() != 0) {
            return reject(RdmaCmReject.STS_INVALID_RECFMT);
        }
        int qid = r.qid();
        if (qid > maxQid) {
            return reject(RdmaCmReject.STS_INVALID_QID);
        }
        int hsqsize = r.hsqsize();
        if (qid == 0 && hsqsize > adminQueueSize) {
            // nvmet refuses admin queues beyond its 32 entries too; SPDK clamps.
            return reject(RdmaCmReject.STS_INVALID_HSQSIZE);
        }
        int hrqsize = r.hrqsize();
        if (hrqsize == 0) {
            return reject(RdmaCmReject.STS_INVALID_HRQSIZE); // a host that can take no response
        }
        // Larger I/O queues than the target serves are clamped (as SPDK does; nvmet does not look): CRQSIZE tells the
        // host, and a Connect whose SQSIZE exceeds CAP.MQES is refused later anyway. HSQSIZE 0 is one command.
        int limit = qid == 0 ? adminQueueSize : maxQueueSize;
        return new RdmaConnectParameters(qid, Math.min(hsqsize, limit) + 1, Math.min(hrqsize, limit + 1), 0);
    }

    private static RdmaConnectParameters reject(int sts) {
        return new RdmaConnectParameters(-1, 0, 0, sts);
    }
}

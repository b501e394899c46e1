package io.nvmeof.tgt.rdma;

import io.nvmeof.protocol.rdma.RdmaCmRequest;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmEventType;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.CompletionQueue;
import io.nvmeof.rdma.ConnectionParameters;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.QueuePairConfig;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loopback connections a listener makes to itself at listen time, so that its first real accept is as fast as later
 * ones (see {@link #rehearse}); and which connect request, on the CM thread, is the rehearsal's own.
 */
final class ConnectionRehearsal {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    /** The listener's connections: a rehearsal waits for its own to go. */
    private final Map<CmId, RdmaConnection> connections;
    /** Set while {@link #rehearse} runs. */
    private volatile boolean rehearsing;
    /** The rehearsal's source port once resolved: its connect request is the one from this port. */
    private volatile int rehearsalPort = -1;
    /** The target's id of the rehearsal's connection: the rehearsal waits for this one to go, and no other. */
    private volatile CmId rehearsalAccepted;

    ConnectionRehearsal(Map<CmId, RdmaConnection> connections) {
        this.connections = connections;
    }

    /**
     * CM thread: whether the connect request on {@code id} is the rehearsal's (then remembered as its connection). A
     * host may connect while the listener rehearses (a restarted target's hosts reconnecting): only the rehearsal's
     * own request, from its port, is the rehearsal's.
     */
    boolean claims(CmId id) {
        boolean rehearsal = rehearsing && id.peerPort() == rehearsalPort;
        if (rehearsal) {
            rehearsalAccepted = id;
        }
        return rehearsal;
    }

    /**
     * Connects to this listener once (on the next poll group in turn), as an NVMe/RDMA host would (admin queue private data, no NVMe command sent),
     * and disconnects: the CM thread's handling of a connect request, the queue's construction and receive posting on
     * a poll group, {@code rdma_accept} and the release at disconnect have then all been loaded, linked and run once.
     *
     * <p>WHY: SPDK's host waits at most 1 s for each RDMA CM event ({@code rdma_cm_event_timeout_ms}). On Soft-RoCE a
     * first accept that did all this for the first time missed that: the host gave up, our late accept then failed
     * with EINVAL, and the connection was refused.
     */
    boolean rehearse(InetSocketAddress self) {
        long t0 = System.nanoTime();
        rehearsing = true;
        try (CmEventChannel ch = CmEventChannel.create()) {
            CmId id = ch.createId();
            ProtectionDomain hostPd = null;
            CompletionQueue cq = null;
            try {
                id.resolve(self, 5000);
                rehearsalPort = id.localPort();
                // The host side has resources of its own, as a real host would: nothing of the target's is shared.
                hostPd = id.device().allocateProtectionDomain();
                cq = id.device().createCompletionQueue(16, null, 0);
                id.createQueuePair(hostPd, QueuePairConfig.of(cq, 4, 4));
                id.connect(ConnectionParameters.forConnect(REHEARSAL_REQUEST, 1, 1));
                ch.expect(CmEventType.ESTABLISHED, id, 10_000);
                id.disconnect();
                ch.expect(CmEventType.DISCONNECTED, id, 10_000);
            } finally {
                id.close(); // its queue pair first, then what it used
                if (cq != null) {
                    cq.close();
                }
                if (hostPd != null) {
                    hostPd.close();
                }
            }
            // Its target side gone (the next rehearsal then meets a listener without it). Only its own: waiting for every
            // connection to go stalled a restarted target's start by 5 s per rehearsal (30 s) while its hosts
            // reconnected.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            CmId accepted = rehearsalAccepted;
            while (accepted != null && connections.containsKey(accepted) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            LOG.debug("NVMe/RDMA connection rehearsal against {}: {} ms", self,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (Exception e) {
            // Only a warm-up: real hosts may still connect (e.g. when loopback over this device is not possible).
            LOG.info("NVMe/RDMA connection rehearsal against {} failed ({}); the first host's connection will be slower",
                    self, e.toString());
            return false;
        } finally {
            rehearsing = false;
            rehearsalPort = -1;
            rehearsalAccepted = null;
        }
    }

    /** An admin-queue connect request as the Linux host sends it (HRQSIZE 32, HSQSIZE 31). */
    private static final byte[] REHEARSAL_REQUEST = rehearsalRequest();

    private static byte[] rehearsalRequest() {
        byte[] b = new byte[RdmaCmRequest.LENGTH];
        new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(b), 0).recfmt(0).qid(0).hrqsize(32).hsqsize(31);
        return b;
    }
}

package io.nvmeof.tgt.rdma;

import io.nvmeof.protocol.rdma.RdmaCmAccept;
import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaConnectParameters;
import io.nvmeof.rdma.AsyncEvent;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.ConnectionParameters;
import io.nvmeof.rdma.QueuePair;
import io.nvmeof.rdma.QueuePairConfig;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CM side of an NVMe/RDMA listener (Linux nvmet rdma.c's): one thread takes the RDMA CM events. Connect requests
 * are checked against the NVMe/RDMA private data rules, and each accepted queue gets a reliable-connected queue pair on
 * one poll group's completion queue with its receives posted before the accept; disconnects tear the queue down. The
 * same thread reads the device's asynchronous events.
 */
final class RdmaConnectionManager {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    private final RdmaTransport owner;
    private final TargetCore core;
    private final int inlineDataSize;
    private final RdmaDeviceResources resources;
    private final Map<CmId, RdmaConnection> connections;
    private final ConnectionRehearsal rehearsal;
    private final AcceptTimes acceptTimes = new AcceptTimes();
    private CmEventChannel cm;
    private Thread cmThread;

    /** {@code owner}: the listener, which says whether it runs, its info, and its data path observer. */
    RdmaConnectionManager(RdmaTransport owner, TargetCore core, int inlineDataSize, RdmaDeviceResources resources,
                          Map<CmId, RdmaConnection> connections, ConnectionRehearsal rehearsal) {
        this.owner = owner;
        this.core = core;
        this.inlineDataSize = inlineDataSize;
        this.resources = resources;
        this.connections = connections;
        this.rehearsal = rehearsal;
    }

    AcceptTimes acceptTimes() {
        return acceptTimes;
    }

    /** Starts the CM thread on {@code channel}; it runs while the listener does. */
    void start(CmEventChannel channel) {
        cm = channel;
        cmThread = new Thread(this::cmLoop, "nvmeof-rdma-cm");
        cmThread.setDaemon(true);
        cmThread.start();
    }

    /** Waits (bounded) for the CM thread to end once the listener no longer runs. */
    void awaitEnd(long millis) {
        try {
            if (cmThread != null) {
                cmThread.join(millis);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Releases every connection on its own poll group, which may be busy: waits for them, bounded. Returns whether
     * all were released.
     */
    boolean releaseAll() {
        List<java.util.concurrent.CountDownLatch> released = new ArrayList<>();
        for (RdmaPollGroupThread g : resources.groups()) {
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
            released.add(done);
            g.group.execute(() -> {
                for (RdmaConnection c : connections.values()) {
                    if (c.group() == g && connections.remove(c.id(), c)) {
                        c.release("target shutting down");
                    }
                }
                done.countDown();
            });
        }
        for (java.util.concurrent.CountDownLatch done : released) {
            try {
                if (!done.await(5, TimeUnit.SECONDS)) {
                    LOG.warn("an RDMA poll group did not release its connections within 5 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        boolean allDestroyed = connections.isEmpty();
        if (!allDestroyed) {
            LOG.warn("{} NVMe/RDMA connection(s) could not be released on their poll group; leaking them",
                    connections.size());
        }
        return allDestroyed;
    }

    private void cmLoop() {
        while (owner.running()) {
            try {
                CmEvent ev = cm.poll(200);
                if (ev != null) {
                    handle(ev);
                }
                asyncEvents();
            } catch (Exception e) {
                if (owner.running()) {
                    LOG.warn("RDMA CM event handling: {}", e.toString());
                }
            }
        }
    }

    /**
     * CM thread: the device's asynchronous events, which no work completion reports. A CQ error (an overrun) has
     * broken every queue pair on that poll group's CQ; a queue pair error ends that connection; a device error ends
     * them all. Each is logged, and the queues concerned are closed on their poll groups.
     */
    private void asyncEvents() throws Exception {
        RdmaDevice d = resources.device();
        if (d == null) {
            return;
        }
        AsyncEvent e;
        while ((e = d.pollAsyncEvent(0)) != null) {
            AsyncEvent ev = e;
            if (e.type() == AsyncEvent.CQ_ERR || e.type() == AsyncEvent.DEVICE_FATAL) {
                LOG.error("RDMA device {}: {}; closing the queues it affects", d.name(), e);
                for (RdmaConnection c : connections.values()) {
                    if (e.type() == AsyncEvent.DEVICE_FATAL || ev.isFor(c.group().cq)) {
                        c.group().group.execute(() -> c.queue().closeNow("RDMA " + ev.name()));
                    }
                }
            } else if (e.queuePairError()) {
                LOG.warn("RDMA device {}: {}; closing that queue", d.name(), e);
                for (RdmaConnection c : connections.values()) {
                    if (c.qp().qpNum() == e.qpNum()) {
                        c.group().group.execute(() -> c.queue().closeNow("RDMA " + ev.name()));
                    }
                }
            } else if (e.type() == AsyncEvent.PORT_ERR) {
                LOG.warn("RDMA device {}: {}", d.name(), e);
            } else {
                LOG.info("RDMA device {}: {}", d.name(), e);
            }
        }
    }

    private void handle(CmEvent ev) {
        if (ev.id() == null) {
            return; // about an id already destroyed
        }
        switch (ev.type()) {
            case CONNECT_REQUEST:
                connectRequest(ev);
                break;
            case ESTABLISHED:
                LOG.debug("RDMA connection established: {}", ev);
                break;
            case DISCONNECTED:
            case TIMEWAIT_EXIT:
            case CONNECT_ERROR:
            case UNREACHABLE:
            case REJECTED:
            case DEVICE_REMOVAL:
                RdmaConnection c = connections.remove(ev.id());
                if (c != null) {
                    c.group().group.execute(() -> c.release("RDMA CM " + ev.type()));
                }
                break;
            default:
                break;
        }
    }

    private void connectRequest(CmEvent ev) {
        long received = System.nanoTime();
        long cmCpu = AcceptTimes.threadCpuNanos();
        CmId id = ev.id();
        boolean rehearsed = rehearsal.claims(id);
        byte[] pdata = ev.privateData();
        TargetLimits limits = core.limits();
        RdmaConnectParameters p = RdmaConnectParameters.parse(new UnsafeBuffer(pdata), pdata.length,
                TargetLimits.ADMIN_QUEUE_SIZE, limits.maxQueueSize(), limits.maxIoQueues());
        if (!p.acceptable()) {
            reject(id, p.rejectStatus());
            return;
        }
        try {
            resources.ensureDevice(id.device());
            int depth = p.receiveDepth();
            int sendDepth = 2 * depth + 16;
            // Every work request a queue pair can have outstanding may complete (or be flushed) into the shared CQ at
            // once: a CQ with fewer free entries than that would overrun, which is fatal to every queue pair on it.
            int cqEntries = CqBudget.entriesFor(sendDepth, depth);
            RdmaPollGroupThread g = resources.reserveCompletionQueue(cqEntries);
            if (g == null) {
                LOG.warn("NVMe/RDMA connect request (qid {}) refused: every poll group's completion queue is committed "
                        + "({} entries each); more poll groups (--poll-groups) take more queues", p.qid(),
                        resources.groups().get(0).cq.entries());
                reject(id, RdmaCmReject.STS_NO_RESOURCES);
                return;
            }
            QueuePair qp;
            try {
                qp = id.createQueuePair(resources.pd(), QueuePairConfig.of(g.cq, sendDepth, depth));
            } catch (Exception e) {
                g.cqBudget.release(cqEntries);
                throw e;
            }
            int initiatorDepth = Math.min(ev.initiatorDepth(), resources.attributes().maxQpInitRdAtom());
            int responderResources = Math.min(ev.responderResources(), resources.attributes().maxQpRdAtom());
            VerbsRdmaChannel channel = new VerbsRdmaChannel(id, qp, g.counters, owner);
            java.net.InetAddress peerAddress = id.peerAddress();
            String peer = "rdma qid " + p.qid() + (peerAddress != null ? " from " + peerAddress.getHostAddress() : "");
            long cmCpuUsed = cmCpu < 0 ? -1 : AcceptTimes.threadCpuNanos() - cmCpu;
            g.group.execute(() -> {
                long groupCpu = AcceptTimes.threadCpuNanos();
                try {
                    // Admin capsules carry no data; I/O capsules up to the advertised in-capsule size.
                    RdmaQueue queue = new RdmaQueue(core, channel, g.pool, resources, g.group,
                            peer, depth, inlineDataSize, p.qid() == 0 ? 0 : inlineDataSize, Math.max(1, initiatorDepth));
                    queue.listener(owner.info());
                    queue.peerAddress(peerAddress);
                    queue.start();
                    connections.put(id, new RdmaConnection(id, qp, g, queue, cqEntries));
                    byte[] accept = new byte[RdmaCmAccept.LENGTH];
                    new RdmaCmAccept().<RdmaCmAccept>wrap(new UnsafeBuffer(accept), 0).recfmt(0).crqsize(depth);
                    id.accept(ConnectionParameters.forAccept(accept, responderResources, initiatorDepth));
                    long cpu = cmCpuUsed < 0 || groupCpu < 0 ? -1
                            : cmCpuUsed + AcceptTimes.threadCpuNanos() - groupCpu;
                    acceptTimes.record(p.qid(), System.nanoTime() - received, cpu, rehearsed);
                } catch (Exception e) {
                    LOG.warn("accepting NVMe/RDMA qid {}: {}", p.qid(), e.toString());
                    RdmaConnection c = connections.remove(id);
                    if (c != null) {
                        c.release("accept failed");
                    } else {
                        g.cqBudget.release(cqEntries);
                    }
                    reject(id, RdmaCmReject.STS_NO_RESOURCES);
                }
            });
        } catch (Exception e) {
            LOG.warn("NVMe/RDMA connect request refused, no resources: {}{}", e.toString(),
                    RdmaDeviceResources.memlockHint(e));
            reject(id, RdmaCmReject.STS_NO_RESOURCES);
        }
    }

    /** Rejections anyone on the fabric can cause: logged 20 a minute at most. */
    private static final io.nvmeof.netty.LogAllowance REJECT_LOG = new io.nvmeof.netty.LogAllowance();

    private static void reject(CmId id, int sts) {
        long leftOut = REJECT_LOG.admit();
        if (leftOut >= 0) {
            LOG.warn("NVMe/RDMA connect request rejected: {}{}", RdmaCmReject.stsName(sts),
                    io.nvmeof.netty.LogAllowance.leftOut(leftOut, "rejections"));
        }
        byte[] rej = new byte[RdmaCmReject.LENGTH];
        new RdmaCmReject().<RdmaCmReject>wrap(new UnsafeBuffer(rej), 0).recfmt(0).sts(sts);
        try {
            id.reject(rej);
            id.close();
        } catch (Exception e) {
            LOG.debug("rdma_reject: {}", e.toString());
        }
    }
}

package io.nvmeof.target.rdma;

import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.rdma.RdmaCmAccept;
import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaConnectParameters;
import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.CompletionBatch;
import io.nvmeof.rdma.CompletionChannel;
import io.nvmeof.rdma.CompletionQueue;
import io.nvmeof.rdma.ConnectionParameters;
import io.nvmeof.rdma.DeviceAttributes;
import io.nvmeof.rdma.MemoryRegion;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.QueuePair;
import io.nvmeof.rdma.QueuePairConfig;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.rdma.RdmaLibrary;
import io.nvmeof.target.core.ListenerInfo;
import io.nvmeof.target.core.TargetCore;
import io.nvmeof.target.core.TargetLimits;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVMe/RDMA listener (Linux nvmet rdma.c's CM side): RDMA CM connect requests are checked against the NVMe/RDMA
 * private data rules, each accepted queue gets a reliable-connected queue pair on one poll group's completion queue
 * with its receives posted before the accept, and disconnects tear the queue down. Each poll group is one thread that
 * busy-polls its completion queue in batches while there is work and sleeps on the completion channel when idle.
 */
public final class RdmaTransport implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    /** Busy-poll iterations without work before a poll group arms its completion channel and sleeps. */
    private static final int SPIN_BEFORE_SLEEP = 2000;
    private static final int CQ_ENTRIES = 8192;
    private static final int[] POOL_CLASSES = {4096, 128 << 10, 1 << 20};
    private static final int[] POOL_COUNTS = {512, 96, 16};

    private final TargetCore core;
    private final int pollGroupCount;
    private final int inlineDataSize;
    private final Map<CmId, Connection> connections = new ConcurrentHashMap<>();
    private final Map<ByteBuffer, MemoryRegion> registrations = new IdentityHashMap<>();
    private final List<PollGroupThread> groups = new ArrayList<>();

    private CmEventChannel cm;
    private CmId listener;
    private Thread cmThread;
    private volatile boolean running;
    private ListenerInfo info;
    private ProtectionDomain pd;
    private DeviceAttributes attributes;
    private int nextGroup;
    private volatile DataPathObserver observer;

    private record Connection(CmId id, QueuePair qp, PollGroupThread group, RdmaQueue queue) {
    }

    public RdmaTransport(TargetCore core, int pollGroups, int inlineDataSize) {
        this.core = core;
        this.pollGroupCount = Math.max(1, pollGroups);
        this.inlineDataSize = inlineDataSize;
    }

    /** Listens through RDMA CM on {@code address:port} (port 0 picks one). */
    public ListenerInfo listen(int portId, String address, int port, Set<String> subsystems) throws IOException {
        if (!RdmaLibrary.isAvailable()) {
            throw new IOException("cannot listen on NVMe/RDMA " + address + ":" + port + ": " + RdmaLibrary.unavailableReason());
        }
        try {
            cm = CmEventChannel.create();
            listener = cm.createId();
            listener.bind(new InetSocketAddress(address, port));
            listener.listen(128);
        } catch (Exception e) {
            close();
            throw new IOException("cannot listen on NVMe/RDMA " + address + ":" + port + ": " + e.getMessage()
                    + " (is the address on an RDMA device? 'rdma link' lists them)", e);
        }
        running = true;
        cmThread = new Thread(this::cmLoop, "nvmeof-rdma-cm");
        cmThread.setDaemon(true);
        cmThread.start();
        InetAddress addr = InetAddress.getByName(address);
        info = new ListenerInfo(portId, DiscoveryLogEntry.TRTYPE_RDMA,
                addr instanceof Inet6Address ? DiscoveryLogEntry.ADRFAM_IPV6 : DiscoveryLogEntry.ADRFAM_IPV4,
                address, Integer.toString(listener.localPort()), subsystems);
        core.addListener(info);
        LOG.info("NVMe/RDMA listening on {}:{} (in-capsule data {} B, {} poll group(s))", address, listener.localPort(),
                inlineDataSize, pollGroupCount);
        return info;
    }

    /** Sets (or with null removes) the observer of every RDMA WRITE and READ this listener's queues post. */
    public void observer(DataPathObserver o) {
        observer = o;
    }

    DataPathObserver observer() {
        return observer;
    }

    public int port() {
        return listener.localPort();
    }

    public ListenerInfo info() {
        return info;
    }

    /** Live queue pairs (for tests and statistics). */
    public int connections() {
        return connections.size();
    }

    // ---- connection management (the CM thread) ----

    private void cmLoop() {
        while (running) {
            try {
                CmEvent ev = cm.poll(200);
                if (ev != null) {
                    handle(ev);
                }
            } catch (Exception e) {
                if (running) {
                    LOG.warn("RDMA CM event handling: {}", e.toString());
                }
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
                Connection c = connections.remove(ev.id());
                if (c != null) {
                    c.group().group.execute(() -> release(c, "RDMA CM " + ev.type()));
                }
                break;
            default:
                break;
        }
    }

    private void connectRequest(CmEvent ev) {
        CmId id = ev.id();
        byte[] pdata = ev.privateData();
        TargetLimits limits = core.limits();
        RdmaConnectParameters p = RdmaConnectParameters.parse(new UnsafeBuffer(pdata), pdata.length,
                TargetLimits.ADMIN_QUEUE_SIZE, limits.maxQueueSize(), limits.maxIoQueues());
        if (!p.acceptable()) {
            reject(id, p.rejectStatus());
            return;
        }
        try {
            ensureDevice(id.device());
            PollGroupThread g = groups.get(nextGroup++ % groups.size());
            int depth = p.receiveDepth();
            QueuePair qp = id.createQueuePair(pd, QueuePairConfig.of(g.cq, 2 * depth + 16, depth));
            int initiatorDepth = Math.min(ev.initiatorDepth(), attributes.maxQpInitRdAtom());
            int responderResources = Math.min(ev.responderResources(), attributes.maxQpRdAtom());
            VerbsRdmaChannel channel = new VerbsRdmaChannel(id, qp, g.counters, this);
            String peer = "rdma qid " + p.qid();
            g.group.execute(() -> {
                try {
                    // Admin capsules carry no data; I/O capsules up to the advertised in-capsule size.
                    RdmaQueue queue = new RdmaQueue(core, channel, g.pool, registrar, g.group,
                            peer, depth, inlineDataSize, p.qid() == 0 ? 0 : inlineDataSize, Math.max(1, initiatorDepth));
                    queue.start();
                    connections.put(id, new Connection(id, qp, g, queue));
                    byte[] accept = new byte[RdmaCmAccept.LENGTH];
                    new RdmaCmAccept().<RdmaCmAccept>wrap(new UnsafeBuffer(accept), 0).recfmt(0).crqsize(depth);
                    id.accept(ConnectionParameters.forAccept(accept, responderResources, initiatorDepth));
                } catch (Exception e) {
                    LOG.warn("accepting NVMe/RDMA qid {}: {}", p.qid(), e.toString());
                    Connection c = connections.remove(id);
                    if (c != null) {
                        release(c, "accept failed");
                    }
                    reject(id, RdmaCmReject.STS_NO_RESOURCES);
                }
            });
        } catch (Exception e) {
            LOG.warn("NVMe/RDMA connect request refused, no resources: {}", e.toString());
            reject(id, RdmaCmReject.STS_NO_RESOURCES);
        }
    }

    private static void reject(CmId id, int sts) {
        LOG.warn("NVMe/RDMA connect request rejected: {}", RdmaCmReject.stsName(sts));
        byte[] rej = new byte[RdmaCmReject.LENGTH];
        new RdmaCmReject().<RdmaCmReject>wrap(new UnsafeBuffer(rej), 0).recfmt(0).sts(sts);
        try {
            id.reject(rej);
            id.close();
        } catch (Exception e) {
            LOG.debug("rdma_reject: {}", e.toString());
        }
    }

    /** Poll-group thread: the queue is done; destroy its queue pair and CM id. */
    private void release(Connection c, String why) {
        c.queue().closeNow(why);
        try {
            c.qp().close();
            c.id().close();
        } catch (Exception e) {
            LOG.debug("releasing an RDMA connection: {}", e.toString());
        }
    }

    private synchronized void ensureDevice(RdmaDevice device) throws Exception {
        if (pd != null) {
            return;
        }
        pd = device.allocateProtectionDomain();
        attributes = device.attributes();
        for (int i = 0; i < pollGroupCount; i++) {
            PollGroupThread g = new PollGroupThread(device, i);
            groups.add(g);
            g.thread.start();
        }
        LOG.info("NVMe/RDMA on device {}: max_qp_init_rd_atom {}, {} poll group(s)", device.name(),
                attributes.maxQpInitRdAtom(), pollGroupCount);
    }

    private final MemoryRegistrar registrar = new MemoryRegistrar() {
        @Override
        public long register(ByteBuffer direct) {
            return RdmaTransport.this.register(direct);
        }

        @Override
        public void deregister(ByteBuffer direct) {
            RdmaTransport.this.deregister(direct);
        }
    };

    /** Registers once per buffer: pinned namespace memory is asked for by every poll group that sends from it. */
    private long register(ByteBuffer direct) {
        synchronized (registrations) {
            MemoryRegion mr = registrations.get(direct);
            if (mr == null) {
                try {
                    mr = pd.register(direct, Access.LOCAL_WRITE);
                } catch (Exception e) {
                    throw new IllegalStateException("memory registration failed: " + e.getMessage(), e);
                }
                registrations.put(direct, mr);
            }
            return mr.lkey() & 0xFFFF_FFFFL;
        }
    }

    private void deregister(ByteBuffer direct) {
        MemoryRegion mr;
        synchronized (registrations) {
            mr = registrations.remove(direct);
        }
        if (mr != null) {
            try {
                mr.close();
            } catch (Exception e) {
                LOG.debug("deregistering: {}", e.toString());
            }
        }
    }

    /** One poll group: a thread, a completion queue with its channel, and a registered data buffer pool. */
    private final class PollGroupThread {
        final RdmaPollGroup group = new RdmaPollGroup();
        final CompletionChannel channel;
        final CompletionQueue cq;
        final MemoryRegion poolRegion;
        final RegisteredBufferPool pool;
        final Thread thread;
        final CompletionBatch batch = new CompletionBatch(64);
        final VerbsRdmaChannel.Counters counters = new VerbsRdmaChannel.Counters();

        PollGroupThread(RdmaDevice device, int index) throws Exception {
            channel = device.createCompletionChannel();
            cq = device.createCompletionQueue(CQ_ENTRIES, channel, index);
            long size = 0;
            for (int i = 0; i < POOL_CLASSES.length; i++) {
                size += (long) POOL_CLASSES[i] * POOL_COUNTS[i];
            }
            poolRegion = pd.allocateRegistered(size, Access.LOCAL_WRITE, false);
            pool = new RegisteredBufferPool(poolRegion.slice(0, (int) size), POOL_CLASSES, POOL_COUNTS);
            pool.lkey(poolRegion.lkey() & 0xFFFF_FFFFL);
            thread = new Thread(this::run, "nvmeof-rdma-poll-" + index);
            thread.setDaemon(true);
        }

        private int pollOnce() throws Exception {
            int n = cq.poll(batch);
            if (n > 0) {
                counters.pollsWithWork++;
                counters.completions += n;
            }
            for (int i = 0; i < n; i++) {
                boolean ok = batch.isSuccess(i);
                group.dispatch(batch.wrId(i), ok, ok ? "SUCCESS" : CompletionBatch.statusName(batch.status(i)),
                        batch.byteLength(i));
            }
            return n;
        }

        void run() {
            int idle = 0;
            while (running) {
                try {
                    int work = pollOnce() + group.afterBatch();
                    if (work > 0) {
                        idle = 0;
                        continue;
                    }
                    if (++idle < SPIN_BEFORE_SLEEP) {
                        Thread.onSpinWait();
                        continue;
                    }
                    // Idle: arm the channel, poll once more to close the race, then sleep until a completion or 1 ms
                    // (so tasks handed over from other threads still run promptly).
                    cq.requestNotify(false);
                    if (pollOnce() + group.afterBatch() > 0) {
                        idle = 0;
                        continue;
                    }
                    cq.waitForEvent(1);
                } catch (Exception e) {
                    if (running) {
                        LOG.warn("RDMA poll group: {}", e.toString());
                    }
                }
            }
        }

        void close() {
            try {
                thread.join(2000);
                cq.close();
                channel.close();
                poolRegion.close();
            } catch (Exception e) {
                LOG.debug("closing a poll group: {}", e.toString());
            }
        }
    }

    @Override
    public void close() {
        running = false;
        try {
            if (cmThread != null) {
                cmThread.join(2000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (PollGroupThread g : groups) {
            try {
                g.thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (Connection c : connections.values()) {
            c.queue().closeNow("target shutting down");
            try {
                c.qp().close();
                c.id().close();
            } catch (Exception e) {
                LOG.debug("closing: {}", e.toString());
            }
        }
        connections.clear();
        long posts = 0;
        long wrs = 0;
        long polls = 0;
        long completions = 0;
        for (PollGroupThread g : groups) {
            g.close();
            posts += g.counters.postCalls;
            wrs += g.counters.workRequests;
            polls += g.counters.pollsWithWork;
            completions += g.counters.completions;
        }
        if (completions > 0) {
            // Native calls on the data path per work request: the batching at work.
            LOG.info("NVMe/RDMA native calls: {} post calls for {} work requests, {} polls for {} completions: "
                    + "{} native calls per work request", posts, wrs, polls, completions,
                    String.format("%.3f", (posts + polls) / (double) Math.max(1, wrs)));
        }
        List<ByteBuffer> left;
        synchronized (registrations) {
            left = new ArrayList<>(registrations.keySet());
        }
        for (ByteBuffer b : left) {
            deregister(b); // pinned namespace memory (and anything a queue could not release)
        }
        try {
            if (listener != null) {
                listener.close();
            }
            if (cm != null) {
                cm.close();
            }
            if (pd != null) {
                pd.close();
            }
        } catch (Exception e) {
            LOG.debug("closing the RDMA listener: {}", e.toString());
        }
        if (info != null) {
            core.removeListener(info);
        }
    }
}

package io.nvmeof.tgt.rdma;

import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.rdma.RdmaCmAccept;
import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaCmRequest;
import io.nvmeof.protocol.rdma.RdmaConnectParameters;
import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmEventType;
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
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
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
import java.util.concurrent.TimeUnit;
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
    /**
     * Completion queue entries a poll group asks for (the device may allow fewer: its max_cqe). Queue pairs commit
     * entries against it and are refused past it (see {@link #reserveCompletionQueue}); 65536 serves some 160 queues
     * of 128 entries per poll group.
     */
    private static final int CQ_ENTRIES = 65536;
    /** Registered data buffers per poll group: small, medium, and MDTS-sized (at least 1 MiB). */
    private static final int[] POOL_CLASSES = {4096, 128 << 10, 1 << 20};
    private static final int[] POOL_COUNTS = {512, 96, 16};
    /** The MDTS-sized class holds at least this many bytes (and at least 2 buffers). */
    private static final int LARGE_CLASS_BYTES = 16 << 20;

    private final TargetCore core;
    private final int pollGroupCount;
    private final int inlineDataSize;
    private final Map<CmId, Connection> connections = new ConcurrentHashMap<>();
    private final Map<ByteBuffer, MemoryRegion> registrations = new IdentityHashMap<>();
    private final List<PollGroupThread> groups = new ArrayList<>();
    private final AcceptTimes acceptTimes = new AcceptTimes();

    private CmEventChannel cm;
    private CmId listener;
    private Thread cmThread;
    private volatile boolean running;
    /** Loopback connections per poll group that {@link #listen} makes to warm the accept path. */
    private static final int REHEARSALS_PER_GROUP = 3;
    /** Set while {@link #rehearseConnection} runs. */
    private volatile boolean rehearsing;
    /** The rehearsal's source port once resolved: its connect request is the one from this port. */
    private volatile int rehearsalPort = -1;
    /** The target's id of the rehearsal's connection: the rehearsal waits for this one to go, and no other. */
    private volatile CmId rehearsalAccepted;
    private volatile ListenerInfo info;
    private ProtectionDomain pd;
    private DeviceAttributes attributes;
    /** The device the poll groups were built on, once they are (its asynchronous events are read by the CM thread). */
    private volatile RdmaDevice device;
    private int nextGroup;
    private volatile DataPathObserver observer;

    /** @param cqEntries completion queue entries committed to this connection's queue pair */
    private record Connection(CmId id, QueuePair qp, PollGroupThread group, RdmaQueue queue, int cqEntries) {
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
        running = true; // the poll groups and the CM thread run while this is set
        boolean bound;
        try {
            bound = prepareDevice(address);
        } catch (Exception e) {
            close();
            throw new IOException("cannot set up NVMe/RDMA on " + address + ":" + port + ": " + e
                    + memlockHint(e), e);
        }
        cmThread = new Thread(this::cmLoop, "nvmeof-rdma-cm");
        cmThread.setDaemon(true);
        cmThread.start();
        long rehearsed = System.nanoTime();
        int rehearsals = 0;
        for (int i = 0; bound && i < REHEARSALS_PER_GROUP * groups.size(); i++, rehearsals++) {
            // Connections go to the poll groups in turn: a few rehearsals for each (the first pays the one-time
            // costs; the next ones get the accept path past its first, slowest executions).
            bound = rehearseConnection(new InetSocketAddress(address, listener.localPort()));
        }
        if (bound && rehearsals > 0) {
            LOG.info("NVMe/RDMA listener rehearsed {} connections against itself in {} ms (first accept {})", rehearsals,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - rehearsed), acceptTimes.rehearsalSummary());
        }
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

    /** The poll groups (numbered from 1) whose thread ended while the listener runs: their queues are not served. */
    public List<Integer> endedPollGroups() {
        List<Integer> ended = new ArrayList<>();
        for (int i = 0; i < groups.size(); i++) {
            if (running && groups.get(i).ended()) {
                ended.add(i + 1);
            }
        }
        return ended;
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
                asyncEvents();
            } catch (Exception e) {
                if (running) {
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
        RdmaDevice d = device;
        if (d == null) {
            return;
        }
        io.nvmeof.rdma.AsyncEvent e;
        while ((e = d.pollAsyncEvent(0)) != null) {
            io.nvmeof.rdma.AsyncEvent ev = e;
            if (e.type() == io.nvmeof.rdma.AsyncEvent.CQ_ERR || e.type() == io.nvmeof.rdma.AsyncEvent.DEVICE_FATAL) {
                LOG.error("RDMA device {}: {}; closing the queues it affects", d.name(), e);
                for (Connection c : connections.values()) {
                    if (e.type() == io.nvmeof.rdma.AsyncEvent.DEVICE_FATAL || ev.isFor(c.group().cq)) {
                        c.group().group.execute(() -> c.queue().closeNow("RDMA " + ev.name()));
                    }
                }
            } else if (e.queuePairError()) {
                LOG.warn("RDMA device {}: {}; closing that queue", d.name(), e);
                for (Connection c : connections.values()) {
                    if (c.qp().qpNum() == e.qpNum()) {
                        c.group().group.execute(() -> c.queue().closeNow("RDMA " + ev.name()));
                    }
                }
            } else if (e.type() == io.nvmeof.rdma.AsyncEvent.PORT_ERR) {
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
        long received = System.nanoTime();
        long cmCpu = AcceptTimes.threadCpuNanos();
        CmId id = ev.id();
        // A host may connect while the listener rehearses (a restarted target's hosts reconnecting): only the
        // rehearsal's own request, from its port, is the rehearsal's.
        boolean rehearsal = rehearsing && id.peerPort() == rehearsalPort;
        if (rehearsal) {
            rehearsalAccepted = id;
        }
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
            int depth = p.receiveDepth();
            int sendDepth = 2 * depth + 16;
            // Every work request a queue pair can have outstanding may complete (or be flushed) into the shared CQ at
            // once: a CQ with fewer free entries than that would overrun, which is fatal to every queue pair on it.
            int cqEntries = CqBudget.entriesFor(sendDepth, depth);
            PollGroupThread g = reserveCompletionQueue(cqEntries);
            if (g == null) {
                LOG.warn("NVMe/RDMA connect request (qid {}) refused: every poll group's completion queue is committed "
                        + "({} entries each); more poll groups (--poll-groups) take more queues", p.qid(),
                        groups.get(0).cq.entries());
                reject(id, RdmaCmReject.STS_NO_RESOURCES);
                return;
            }
            QueuePair qp;
            try {
                qp = id.createQueuePair(pd, QueuePairConfig.of(g.cq, sendDepth, depth));
            } catch (Exception e) {
                g.cqBudget.release(cqEntries);
                throw e;
            }
            int initiatorDepth = Math.min(ev.initiatorDepth(), attributes.maxQpInitRdAtom());
            int responderResources = Math.min(ev.responderResources(), attributes.maxQpRdAtom());
            VerbsRdmaChannel channel = new VerbsRdmaChannel(id, qp, g.counters, this);
            String peer = "rdma qid " + p.qid();
            long cmCpuUsed = cmCpu < 0 ? -1 : AcceptTimes.threadCpuNanos() - cmCpu;
            g.group.execute(() -> {
                long groupCpu = AcceptTimes.threadCpuNanos();
                try {
                    // Admin capsules carry no data; I/O capsules up to the advertised in-capsule size.
                    RdmaQueue queue = new RdmaQueue(core, channel, g.pool, registrar, g.group,
                            peer, depth, inlineDataSize, p.qid() == 0 ? 0 : inlineDataSize, Math.max(1, initiatorDepth));
                    queue.listener(info);
                    queue.start();
                    connections.put(id, new Connection(id, qp, g, queue, cqEntries));
                    byte[] accept = new byte[RdmaCmAccept.LENGTH];
                    new RdmaCmAccept().<RdmaCmAccept>wrap(new UnsafeBuffer(accept), 0).recfmt(0).crqsize(depth);
                    id.accept(ConnectionParameters.forAccept(accept, responderResources, initiatorDepth));
                    long cpu = cmCpuUsed < 0 || groupCpu < 0 ? -1
                            : cmCpuUsed + AcceptTimes.threadCpuNanos() - groupCpu;
                    acceptTimes.record(p.qid(), System.nanoTime() - received, cpu, rehearsal);
                } catch (Exception e) {
                    LOG.warn("accepting NVMe/RDMA qid {}: {}", p.qid(), e.toString());
                    Connection c = connections.remove(id);
                    if (c != null) {
                        release(c, "accept failed");
                    } else {
                        g.cqBudget.release(cqEntries);
                    }
                    reject(id, RdmaCmReject.STS_NO_RESOURCES);
                }
            });
        } catch (Exception e) {
            LOG.warn("NVMe/RDMA connect request refused, no resources: {}{}", e.toString(), memlockHint(e));
            reject(id, RdmaCmReject.STS_NO_RESOURCES);
        }
    }

    /**
     * Does at listen time what the first connection would otherwise pay for, so the first accept is as fast as later
     * ones: the device setup (protection domain; per poll group a completion queue and a registered buffer pool).
     * Returns whether the listener is bound to one device, so that {@link #rehearseConnection} can connect to it.
     */
    private boolean prepareDevice(String address) throws Exception {
        RdmaDevice device = listener.device();
        if (device == null) {
            List<RdmaDevice> all = RdmaDevice.all();
            if (all.size() != 1) {
                LOG.info("NVMe/RDMA listener on {} is not bound to one device ({} present): the first connection sets "
                        + "up its device", address, all.size());
                return false;
            }
            ensureDevice(all.get(0));
            return false; // a wildcard address: nothing to connect to
        }
        ensureDevice(device);
        return true;
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
    private boolean rehearseConnection(InetSocketAddress self) {
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

    private static String memlockHint(Exception e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("ibv_reg_mr") || m.contains("mmap") || m.contains("errno 12") || m.contains("ENOMEM")
                ? " (registering memory needs a locked-memory limit above the poll groups' buffer pools: raise "
                        + "'ulimit -l', or LimitMEMLOCK= in a systemd unit)"
                : "";
    }

    /** How long accepts took, from the connect request reaching the CM thread to rdma_accept returning. */
    public AcceptTimes acceptTimes() {
        return acceptTimes;
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
    /**
     * Poll-group thread: the queue is done. Stop it, destroy its queue pair (after which the NIC can no longer touch
     * its buffers), then release its requests and buffers, then the CM id.
     */
    private void release(Connection c, String why) {
        c.queue().closeNow(why);
        c.qp().close();
        c.queue().queuePairDestroyed();
        c.group().cqBudget.release(c.cqEntries()); // its work requests can no longer complete
        try {
            c.id().close();
        } catch (Exception e) {
            LOG.warn("destroying the CM id of a closed NVMe/RDMA queue: {}", e.toString());
        }
    }

    /** Picks the next poll group (in turn) whose completion queue has {@code entries} uncommitted, and commits them. */
    private PollGroupThread reserveCompletionQueue(int entries) {
        for (int i = 0; i < groups.size(); i++) {
            PollGroupThread g = groups.get(nextGroup++ % groups.size());
            if (g.cqBudget.reserve(entries)) {
                return g;
            }
        }
        return null;
    }

    private synchronized void ensureDevice(RdmaDevice device) throws Exception {
        if (pd != null) {
            return;
        }
        // All or nothing: a failure (a pool registration refused under a low 'ulimit -l') leaves nothing behind, so
        // the next connection tries again instead of meeting a half-built transport.
        ProtectionDomain newPd = device.allocateProtectionDomain();
        List<PollGroupThread> built = new ArrayList<>();
        try {
            attributes = device.attributes();
            pd = newPd;
            for (int i = 0; i < pollGroupCount; i++) {
                built.add(new PollGroupThread(device, i));
            }
        } catch (Exception | Error e) {
            for (PollGroupThread g : built) {
                g.destroy();
            }
            pd = null;
            try {
                newPd.close();
            } catch (Exception ce) {
                LOG.debug("releasing the protection domain: {}", ce.toString());
            }
            throw e;
        }
        for (PollGroupThread g : built) {
            groups.add(g);
            g.thread.start();
        }
        this.device = device;
        LOG.info("NVMe/RDMA on device {}: max_qp_init_rd_atom {}, {} poll group(s)", device.name(),
                attributes.maxQpInitRdAtom(), pollGroupCount);
    }

    private final MemoryRegistrar registrar = new MemoryRegistrar() {
        @Override
        public long register(ByteBuffer direct) {
            return RdmaTransport.this.register(direct);
        }

        @Override
        public boolean deregister(ByteBuffer direct) {
            return RdmaTransport.this.deregister(direct);
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

    /**
     * Drops the registrations of a closing backend's pinned regions: each poll group forgets their keys on its own
     * thread, then the memory regions are deregistered (no request uses them any more: the namespace has drained).
     */
    public void releasePinned(List<ByteBuffer> regions) {
        if (regions.isEmpty()) {
            return;
        }
        java.util.concurrent.CountDownLatch forgotten = new java.util.concurrent.CountDownLatch(groups.size());
        for (PollGroupThread g : groups) {
            g.group.execute(() -> {
                g.group.forgetPinned(regions);
                forgotten.countDown();
            });
        }
        try {
            if (!forgotten.await(5, java.util.concurrent.TimeUnit.SECONDS)) {
                return; // a group that does not run tasks any more: the transport's close deregisters everything
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        for (ByteBuffer b : regions) {
            deregister(b);
        }
    }

    private boolean deregister(ByteBuffer direct) {
        MemoryRegion mr;
        synchronized (registrations) {
            mr = registrations.remove(direct);
        }
        if (mr != null) {
            try {
                mr.close();
            } catch (Exception e) {
                // Kept registered, and so referenced: neither its queue nor the collector frees pages the NIC may
                // still reach; the transport's close tries again.
                LOG.warn("deregistering {} bytes: {}; the memory stays allocated", direct.capacity(), e.toString());
                synchronized (registrations) {
                    registrations.put(direct, mr);
                }
                return false;
            }
        }
        return true;
    }

    /**
     * Buffer sizes and counts of a poll group's pool: {classes, counts}. The largest class fits the largest transfer a
     * command may ask for (MDTS): a request bigger than every buffer would wait for one for ever.
     */
    static int[][] poolLayout(int maxTransferSize) {
        int[] classes = POOL_CLASSES.clone();
        int[] counts = POOL_COUNTS.clone();
        int last = classes.length - 1;
        classes[last] = Math.max(classes[last], maxTransferSize);
        counts[last] = Math.max(2, LARGE_CLASS_BYTES / classes[last]);
        return new int[][] {classes, counts};
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

        /** Set to stop this group's thread; its owner then destroys what it used. */
        volatile boolean stop;
        /** CQ entries committed to this group's queue pairs (the CM thread commits, the group's thread gives back). */
        final CqBudget cqBudget;
        private boolean deviceGone;

        PollGroupThread(RdmaDevice device, int index) throws Exception {
            channel = device.createCompletionChannel();
            CompletionQueue q = null;
            MemoryRegion region = null;
            try {
                q = device.createCompletionQueue(Math.min(CQ_ENTRIES, Math.max(256, attributes.maxCqe())), channel, index);
                region = pd.allocateRegistered(poolBytes(), Access.LOCAL_WRITE, false);
            } catch (Exception | Error e) {
                closeQuietly(q, "completion queue");
                closeQuietly(channel, "completion channel");
                throw e;
            }
            cq = q;
            cqBudget = new CqBudget(q.entries());
            poolRegion = region;
            int[][] layout = poolLayout(core.limits().maxTransferSize());
            pool = new RegisteredBufferPool(poolRegion.slice(0, (int) poolRegion.length()), layout[0], layout[1]);
            pool.lkey(poolRegion.lkey() & 0xFFFF_FFFFL);
            thread = new Thread(this::run, "nvmeof-rdma-poll-" + index);
            thread.setDaemon(true);
        }

        private long poolBytes() {
            int[][] layout = poolLayout(core.limits().maxTransferSize());
            int[] classes = layout[0];
            int[] counts = layout[1];
            long size = 0;
            for (int i = 0; i < classes.length; i++) {
                size += (long) classes[i] * counts[i];
            }
            if (size > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("a poll group's buffer pool of " + size + " bytes is too large");
            }
            return size;
        }

        private int pollOnce() throws Exception {
            if (deviceGone) {
                return 0;
            }
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
            while (!stop) {
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
                    if (deviceGone) {
                        // No channel to sleep on any more: keep running tasks (queue releases) without spinning.
                        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                        continue;
                    }
                    cq.requestNotify(false);
                    if (pollOnce() + group.afterBatch() > 0) {
                        idle = 0;
                        continue;
                    }
                    cq.waitForEvent(1);
                } catch (io.nvmeof.rdma.RdmaException e) {
                    if (!stop && !deviceGone && (e.errno() == 19 || e.errno() == 9 || e.errno() == 5)) {
                        // ENODEV/EBADF/EIO from the channel or CQ: the device is gone. Its queues end; no spinning.
                        deviceGone = true;
                        LOG.error("RDMA poll group: the device is gone ({}); closing its queues", e.getMessage());
                        for (Connection c : connections.values()) {
                            if (c.group() == this) {
                                c.queue().closeNow("RDMA device gone");
                            }
                        }
                    } else if (!stop) {
                        LOG.warn("RDMA poll group: {}", e.toString());
                    }
                } catch (Throwable e) { // an Error too: ending this thread would leave the group's queues unserved
                    if (!stop) {
                        LOG.warn("RDMA poll group: {}", e.toString());
                    }
                }
            }
        }

        /** Whether the thread has ended although nobody stopped it: its queues are no longer served. */
        boolean ended() {
            return !stop && thread.getState() == Thread.State.TERMINATED;
        }

        /**
         * Stops the thread and, only once it has provably ended, destroys the CQ, the channel and the pool (each on
         * its own: one failing does not skip the rest). A thread that does not end (held in a backend call) keeps
         * them: a leak, never native memory freed under a running thread. Returns whether everything was destroyed.
         */
        boolean stopAndDestroy(long joinMillis) {
            stop = true;
            try {
                thread.join(joinMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                LOG.warn("RDMA poll group thread {} did not stop within {} ms; leaking its CQ and buffer pool",
                        thread.getName(), joinMillis);
                return false;
            }
            return destroy();
        }

        /** Destroys what the group holds (its thread never started or has ended). */
        boolean destroy() {
            boolean ok = closeQuietly(cq, "completion queue");
            ok &= closeQuietly(channel, "completion channel");
            // The pool's memory may be freed only once no queue pair can still land data in it: after the CQ.
            return ok && closeQuietly(poolRegion, "buffer pool registration");
        }
    }

    private static boolean closeQuietly(AutoCloseable c, String what) {
        if (c == null) {
            return true;
        }
        try {
            c.close();
            return true;
        } catch (Exception e) {
            LOG.warn("closing the {}: {}", what, e.toString());
            return false;
        }
    }

    /**
     * Stops the listener. Ownership (docs/architecture in the README): a queue, its queue pair and CM id are released
     * on their poll group's thread; a group's CQ, channel and pool only after its thread has ended; the protection
     * domain only after every group's resources are gone. Whatever cannot be released so is leaked, with a warning.
     */
    @Override
    public void close() {
        running = false; // the CM thread stops taking events
        try {
            if (cmThread != null) {
                cmThread.join(2000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Each connection is released by its own poll group, which may be busy: wait for them, bounded.
        List<java.util.concurrent.CountDownLatch> released = new ArrayList<>();
        for (PollGroupThread g : groups) {
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
            released.add(done);
            g.group.execute(() -> {
                for (Connection c : connections.values()) {
                    if (c.group() == g && connections.remove(c.id(), c)) {
                        release(c, "target shutting down");
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
        for (PollGroupThread g : groups) {
            allDestroyed &= g.stopAndDestroy(5000);
        }
        long posts = 0;
        long wrs = 0;
        long polls = 0;
        long completions = 0;
        for (PollGroupThread g : groups) {
            posts += g.counters.postCalls;
            wrs += g.counters.workRequests;
            polls += g.counters.pollsWithWork;
            completions += g.counters.completions;
        }
        if (acceptTimes.count() > 0) {
            LOG.info("{}", acceptTimes.summary());
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
        if (listener != null) {
            closeQuietly(listener, "listening CM id");
        }
        if (cm != null) {
            closeQuietly(cm, "CM event channel");
        }
        if (pd != null) {
            if (allDestroyed) {
                closeQuietly(pd, "protection domain");
            } else {
                LOG.warn("leaking the protection domain: resources on it could not be destroyed");
            }
        }
        if (info != null) {
            core.removeListener(info);
        }
    }
}

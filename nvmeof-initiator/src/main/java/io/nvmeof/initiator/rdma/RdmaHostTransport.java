package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.NvmeofTimeoutException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.HostTransport;
import io.nvmeof.protocol.rdma.RdmaCmAccept;
import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaCmRequest;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmEventType;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.ConnectionParameters;
import io.nvmeof.rdma.DeviceAttributes;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.rdma.RdmaException;
import io.nvmeof.rdma.RdmaLibrary;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVMe/RDMA for one controller (Linux nvme-rdma's ctrl): an RDMA CM event channel with a thread that routes its events,
 * the device's protection domain and {@link RegistrationCache}, and {@link RdmaPoller} I/O threads
 * ({@link ConnectOptions#eventLoopThreads()}), each with a completion queue its queues share.
 */
public final class RdmaHostTransport implements HostTransport {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostTransport.class);
    /** A keyed SGL's length field has 24 bits; one command moves at most 8 MiB here. */
    static final long TRANSFER_CAP = 8L << 20;
    /** IB CM reject reason "consumer reject": the NVMe/RDMA reject private data says why. */
    private static final int REJECT_CONSUMER = 28;

    private final TransportId id;
    private final ConnectOptions options;
    private final InetSocketAddress destination;
    private final CmEventChannel cm;
    private final Thread cmThread;
    private final Map<CmId, Consumer<CmEvent>> handlers = new ConcurrentHashMap<>();
    /** Work for the CM thread: destroying a CM id there cannot race an event about it being handled. */
    private final java.util.Queue<Runnable> cmTasks = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final List<RdmaHostQueue> queues = new ArrayList<>();
    private final List<RdmaPoller> pollers = new ArrayList<>();
    private final AtomicInteger nextWrQueue = new AtomicInteger(1);
    private final ScheduledExecutorService timer;
    private volatile boolean running = true;

    private RdmaDevice device;
    private ProtectionDomain pd;
    private DeviceAttributes attributes;
    private RegistrationCache cache;

    private RdmaHostTransport(TransportId id, ConnectOptions options, CmEventChannel cm) {
        this.id = id;
        this.options = options;
        this.destination = new InetSocketAddress(id.traddr(), id.trsvcid());
        this.cm = cm;
        this.cmThread = new Thread(this::cmLoop, "nvmeof-rdma-cm");
        this.cmThread.setDaemon(true);
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "nvmeof-rdma-timer");
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        this.timer = t;
    }

    /** @throws NvmeofException when this machine cannot do RDMA (naming the packages to install) */
    public static RdmaHostTransport create(TransportId id, ConnectOptions options) {
        if (!RdmaLibrary.isAvailable()) {
            throw new NvmeofException("cannot connect to " + id + " over NVMe/RDMA: " + RdmaLibrary.unavailableReason());
        }
        if (new InetSocketAddress(id.traddr(), id.trsvcid()).isUnresolved()) {
            throw new NvmeofException("cannot resolve the NVMe/RDMA address '" + id.traddr() + "'");
        }
        try {
            RdmaHostTransport t = new RdmaHostTransport(id, options, CmEventChannel.create());
            t.cmThread.start();
            return t;
        } catch (RdmaException e) {
            throw new NvmeofException("cannot create an RDMA CM event channel: " + e.getMessage(), e);
        }
    }

    private void cmLoop() {
        while (running) {
            Runnable task;
            while ((task = cmTasks.poll()) != null) {
                task.run();
            }
            try {
                CmEvent ev = cm.poll(100);
                if (ev == null || ev.id() == null) {
                    continue;
                }
                Consumer<CmEvent> h = handlers.get(ev.id());
                if (h != null) {
                    h.accept(ev);
                } else {
                    LOG.debug("{}: RDMA CM event for no queue: {}", id, ev);
                }
            } catch (RdmaException | RuntimeException e) {
                if (running) {
                    LOG.warn("{}: RDMA CM event handling: {}", id, e.toString());
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ connect

    @Override
    public HostQueue connectQueue(int qid, int slots, int inlineLimit, long maxTransfer) {
        String where = "NVMe/RDMA queue " + qid + " to " + id.address();
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE - 1000, Math.max(1, options.connectTimeout().toMillis()));
        BlockingQueue<CmEvent> events = new LinkedBlockingQueue<>();
        CmId cmId;
        try {
            cmId = cm.createId();
        } catch (RdmaException e) {
            throw new NvmeofException(where + ": rdma_create_id failed: " + e.getMessage(), e);
        }
        handlers.put(cmId, events::offer);
        RdmaHostQueue q = null;
        boolean done = false;
        try {
            cmId.resolveAddress(destination, timeoutMs);
            await(events, CmEventType.ADDR_RESOLVED, timeoutMs, where);
            RdmaPoller poller = ensureDevice(cmId.device(), qid);
            cmId.resolveRoute(timeoutMs);
            await(events, CmEventType.ROUTE_RESOLVED, timeoutMs, where);
            q = new RdmaHostQueue(poller, cache, pd, nextWrQueue.getAndIncrement(), qid, slots, inlineLimit, cmId,
                    id.address(), options.commandTimeout().toNanos());
            // Private data as the Linux host: HRQSIZE = queue size, HSQSIZE = SQSIZE (queue size - 1, 0-based).
            byte[] pdata = new byte[RdmaCmRequest.LENGTH];
            new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(pdata), 0).recfmt(0).qid(qid)
                    .hrqsize(slots + 1).hsqsize(slots);
            // Responder resources: the controller RDMA READs our buffers to serve writes, that many at once.
            int responder = Math.min(255, Math.max(1, attributes.maxQpRdAtom()));
            cmId.connect(ConnectionParameters.forConnect(pdata, responder, 0));
            CmEvent est = await(events, CmEventType.ESTABLISHED, timeoutMs, where);
            checkAccept(est, slots, where);
            RdmaHostQueue queue = q;
            handlers.put(cmId, queue::onCmEvent);
            synchronized (queues) {
                queues.add(queue);
            }
            poller.add(queue);
            done = true;
            LOG.debug("{}: connected ({} slots, in-capsule {} B)", where, slots, inlineLimit);
            return queue;
        } catch (RdmaException e) {
            throw new NvmeofException(where + ": " + e.getMessage() + hint(e), e);
        } finally {
            if (!done) {
                handlers.remove(cmId);
                if (q != null) {
                    q.destroy();
                } else {
                    try {
                        cmId.close();
                    } catch (RdmaException | RuntimeException e) {
                        LOG.debug("rdma_destroy_id: {}", e.toString());
                    }
                }
            }
        }
    }

    /**
     * A queue of an association that was torn down (the controller reconnected): after its close ran on its poller
     * (queue pair in error, commands failed), the poller forgets it, and the CM thread destroys its queue pair, CM id
     * and memory, so a target that comes and goes does not pile up queue pairs until the controller closes.
     */
    @Override
    public void release(HostQueue hq) {
        RdmaHostQueue q = (RdmaHostQueue) hq;
        q.close();
        q.poller().execute(() -> {
            q.poller().remove(q);
            cmTasks.add(() -> {
                synchronized (queues) {
                    if (!queues.remove(q)) {
                        return; // the transport's close took it
                    }
                }
                handlers.remove(q.cmId());
                q.destroy();
            });
        });
    }

    private String hint(RdmaException e) {
        String m = String.valueOf(e.getMessage());
        if (m.contains("ADDR_ERROR") || m.contains("rdma_resolve_addr")) {
            return "; is " + id.traddr() + " reachable through an RDMA device ('rdma link' lists them)?";
        }
        return "";
    }

    private CmEvent await(BlockingQueue<CmEvent> events, CmEventType want, int timeoutMs, String where) {
        CmEvent ev;
        long waitMs = options.cmEventTimeout() != null ? options.cmEventTimeout().toMillis() : timeoutMs + 1000L;
        try {
            ev = events.poll(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException(where + ": interrupted while connecting", e);
        }
        if (ev == null) {
            throw new NvmeofTimeoutException(where + ": no " + want + " from RDMA CM within " + waitMs + " ms");
        }
        if (ev.type() == want) {
            return ev;
        }
        switch (ev.type()) {
            case ADDR_ERROR:
                throw new NvmeofException(where + ": cannot resolve " + id.traddr() + " to an RDMA device (status "
                        + ev.status() + "); is it an address on or reachable from an RDMA interface ('rdma link')?");
            case ROUTE_ERROR:
                throw new NvmeofException(where + ": no route to " + id.traddr() + " (status " + ev.status() + ")");
            case REJECTED:
                throw new NvmeofException(where + ": " + describeReject(ev));
            case UNREACHABLE:
            case CONNECT_ERROR:
                throw new NvmeofException(where + ": " + ev.type() + " (status " + ev.status() + "); is an NVMe/RDMA"
                        + " target listening on " + id.address() + "?");
            default:
                throw new NvmeofException(where + ": expected " + want + ", got " + ev);
        }
    }

    /** The reject's NVMe/RDMA status when the controller sent one, else the CM's reason. */
    static String describeReject(CmEvent ev) {
        byte[] p = ev.privateData();
        if (ev.status() == REJECT_CONSUMER && p.length >= RdmaCmReject.LENGTH) {
            RdmaCmReject rej = new RdmaCmReject().wrap(new UnsafeBuffer(p), 0);
            return "the controller rejected the connection: " + RdmaCmReject.stsName(rej.sts()) + " (NVMe/RDMA status 0x"
                    + Integer.toHexString(rej.sts()) + ")";
        }
        return "connection rejected (RDMA CM reason " + ev.status() + "); is an NVMe/RDMA target listening there?";
    }

    private void checkAccept(CmEvent est, int slots, String where) {
        byte[] p = est.privateData();
        if (p.length < 4) {
            return; // the kernel target always sends it; tolerate its absence as the Linux host does
        }
        RdmaCmAccept acc = new RdmaCmAccept().wrap(new UnsafeBuffer(p), 0);
        if (acc.recfmt() != 0) {
            throw new NvmeofException(where + ": the controller accepted with RECFMT " + acc.recfmt() + "; only 0 is known");
        }
        if (acc.crqsize() != 0 && acc.crqsize() < slots) {
            LOG.warn("{}: the controller posts {} receives (CRQSIZE) for {} commands in flight", where, acc.crqsize(), slots);
        }
    }

    /** The device, PD, registration cache and pollers, made when the first address resolves; returns qid's poller. */
    private synchronized RdmaPoller ensureDevice(RdmaDevice dev, int qid) throws RdmaException {
        if (dev == null) {
            throw new NvmeofException("RDMA CM resolved " + id.address() + " without a device");
        }
        if (pd == null) {
            device = dev;
            attributes = dev.attributes();
            pd = dev.allocateProtectionDomain();
            cache = new RegistrationCache(pd);
            int threads = options.eventLoopThreads();
            // Room for every completion its queues can produce at once: when a queue pair fails, all its receives
            // and send entries complete together (the admin queue shares poller 0).
            int ioPerPoller = (options.ioQueues() + threads - 1) / threads;
            long need = (long) ioPerPoller * RdmaHostQueue.completionEntries(options.queueDepth())
                    + RdmaHostQueue.completionEntries(32);
            int entries = (int) Math.min(attributes.maxCqe(), Math.max(256, need));
            long scan = Math.max(TimeUnit.MILLISECONDS.toNanos(10),
                    Math.min(TimeUnit.MILLISECONDS.toNanos(100), options.commandTimeout().toNanos() / 4));
            for (int i = 0; i < threads; i++) {
                RdmaPoller p = new RdmaPoller(dev, i, entries, scan, "nvmeof-rdma-host-" + i);
                pollers.add(p);
                p.start();
            }
            LOG.debug("{}: RDMA device {}, {} poller(s), CQ entries {}", id, dev.name(), threads, entries);
        } else if (!dev.equals(device)) {
            throw new NvmeofException("queues of " + id + " resolved to two RDMA devices (" + device.name() + ", "
                    + dev.name() + "); one controller must use one device");
        }
        return qid == 0 ? pollers.get(0) : pollers.get((qid - 1) % pollers.size());
    }

    // ------------------------------------------------------------------------------------------------ HostTransport

    @Override
    public long maxTransferCap() {
        return TRANSFER_CAP;
    }

    @Override
    public boolean inIoThread() {
        Thread t = Thread.currentThread();
        if (t == cmThread) {
            return true;
        }
        synchronized (this) {
            for (RdmaPoller p : pollers) {
                if (p.isPollerThread()) {
                    return true;
                }
            }
        }
        return false;
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable task, long periodMs) {
        return timer.scheduleAtFixedRate(task, periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public ByteBuffer allocateBuffer(int bytes) {
        return requireCache().allocate(bytes);
    }

    @Override
    public void registerBuffer(ByteBuffer direct) {
        requireCache().register(direct);
    }

    @Override
    public void deregisterBuffer(ByteBuffer direct) {
        requireCache().deregister(direct);
    }

    private synchronized RegistrationCache requireCache() {
        if (cache == null) {
            throw new IllegalStateException("no RDMA device yet: the controller is not connected");
        }
        return cache;
    }

    @Override
    public String statistics() {
        long zero = 0;
        long inCapsule = 0;
        long bounced = 0;
        long temporary = 0;
        long posts = 0;
        long wrs = 0;
        long polls = 0;
        long completions = 0;
        long sleeps = 0;
        long commands = 0;
        synchronized (this) {
            for (RdmaPoller p : pollers) {
                RdmaHostQueue.Stats s = p.stats();
                zero += s.zeroCopyBytes;
                inCapsule += s.inCapsuleBytes;
                bounced += s.bouncedBytes;
                temporary += s.temporaryRegistrations;
                posts += s.postCalls;
                wrs += s.workRequests;
                polls += p.pollsWithWork;
                completions += p.completions;
                sleeps += p.sleeps;
                commands += s.commands;
            }
        }
        return String.format("rdma: %d bytes zero-copy, %d in-capsule, %d bounced; %d cached registrations, %d per-I/O"
                        + " registrations; %d post calls for %d work requests, %d polls for %d completions"
                        + " (%.3f native calls per work request, %.3f per command); %d sleeps",
                zero, inCapsule, bounced, cache == null ? 0 : cache.size(), temporary, posts, wrs, polls, completions,
                (posts + polls) / (double) Math.max(1, wrs), (posts + polls) / (double) Math.max(1, commands), sleeps);
    }

    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        timer.shutdownNow();
        try {
            // A keep-alive being submitted must be done before queue memory is deregistered.
            timer.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // The CM thread first: destroying ids while it may hold an event about one of them is a use after free.
        if (Thread.currentThread() != cmThread) {
            try {
                cmThread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<RdmaPoller> ps;
        synchronized (this) {
            ps = new ArrayList<>(pollers);
        }
        for (RdmaPoller p : ps) {
            p.stop();
        }
        List<RdmaHostQueue> qs;
        synchronized (queues) {
            qs = new ArrayList<>(queues);
            queues.clear();
        }
        boolean leaked = false;
        for (RdmaHostQueue q : qs) {
            q.close();
            if (q.pollerStopped()) {
                q.ioThreadStopped(); // nothing else runs its slots now
                q.destroy();
            } else {
                // A callback blocks the poller: its queue pair may still complete work into the slots' memory, so
                // neither the slots nor the queue pair can go (use after free). Leak them, and say so.
                leaked = true;
            }
        }
        if (leaked) {
            LOG.warn("{}: an RDMA poller thread did not stop within 10 s (a completion callback blocks?); its queues'"
                    + " memory and queue pairs are left allocated, and the protection domain with them", id);
        }
        if (LOG.isDebugEnabled() && !ps.isEmpty()) {
            LOG.debug("{}: {}", id, statistics());
        }
        for (RdmaPoller p : ps) {
            if (p.isStopped()) {
                p.destroy();
            } else {
                // Never free a CQ a live thread may still poll: leak it instead (and say so).
                LOG.warn("{}: an RDMA poller thread did not stop; its completion queue is left allocated", id);
            }
        }
        try {
            if (cache != null) {
                cache.close();
                if (!leaked) {
                    cache.closeProtectionDomain();
                }
            } else if (pd != null) {
                pd.close();
            }
            cm.close();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("{}: closing RDMA resources: {}", id, e.toString());
        }
    }
}

package io.nvmeof.tgt.rdma;

import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.DeviceAttributes;
import io.nvmeof.rdma.MemoryRegion;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.tgt.core.TargetCore;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an NVMe/RDMA listener builds on its device, once: the protection domain, the poll groups on it (each a
 * completion queue and a registered buffer pool) and the registrations of namespace memory that queues send from.
 * Kept apart from the CM side so memory registration and the poll groups' wiring have one place.
 */
final class RdmaDeviceResources implements MemoryRegistrar {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    private final TargetCore core;
    private final int pollGroupCount;
    private final Map<CmId, RdmaConnection> connections;
    private final Map<ByteBuffer, MemoryRegion> registrations = new IdentityHashMap<>();
    private final List<RdmaPollGroupThread> groups = new ArrayList<>();
    private ProtectionDomain pd;
    private DeviceAttributes attributes;
    /** The device the poll groups were built on, once they are (its asynchronous events are read by the CM thread). */
    private volatile RdmaDevice device;
    private int nextGroup;

    RdmaDeviceResources(TargetCore core, int pollGroupCount, Map<CmId, RdmaConnection> connections) {
        this.core = core;
        this.pollGroupCount = pollGroupCount;
        this.connections = connections;
    }

    List<RdmaPollGroupThread> groups() {
        return groups;
    }

    ProtectionDomain pd() {
        return pd;
    }

    DeviceAttributes attributes() {
        return attributes;
    }

    /** The device, once the poll groups are built on it; else null. */
    RdmaDevice device() {
        return device;
    }

    /**
     * Does at listen time what the first connection would otherwise pay for, so the first accept is as fast as later
     * ones: the device setup (protection domain; per poll group a completion queue and a registered buffer pool).
     * Returns whether the listener is bound to one device, so that a {@link ConnectionRehearsal} can connect to it.
     */
    boolean prepare(CmId listener, String address) throws Exception {
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

    /** Picks the next poll group (in turn) whose completion queue has {@code entries} uncommitted, and commits them. */
    RdmaPollGroupThread reserveCompletionQueue(int entries) {
        for (int i = 0; i < groups.size(); i++) {
            RdmaPollGroupThread g = groups.get(nextGroup++ % groups.size());
            if (g.cqBudget.reserve(entries)) {
                return g;
            }
        }
        return null;
    }

    /** Builds the protection domain and the poll groups on {@code device} the first time it is called. */
    synchronized void ensureDevice(RdmaDevice device) throws Exception {
        if (pd != null) {
            return;
        }
        // All or nothing: a failure (a pool registration refused under a low 'ulimit -l') leaves nothing behind, so
        // the next connection tries again instead of meeting a half-built transport.
        ProtectionDomain newPd = device.allocateProtectionDomain();
        List<RdmaPollGroupThread> built = new ArrayList<>();
        try {
            attributes = device.attributes();
            pd = newPd;
            for (int i = 0; i < pollGroupCount; i++) {
                built.add(new RdmaPollGroupThread(device, i, pd, attributes, core, connections));
            }
        } catch (Exception | Error e) {
            for (RdmaPollGroupThread g : built) {
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
        for (RdmaPollGroupThread g : built) {
            groups.add(g);
            g.thread.start();
        }
        this.device = device;
        LOG.info("NVMe/RDMA on device {}: max_qp_init_rd_atom {}, {} poll group(s)", device.name(),
                attributes.maxQpInitRdAtom(), pollGroupCount);
    }

    /** Registers once per buffer: pinned namespace memory is asked for by every poll group that sends from it. */
    @Override
    public long register(ByteBuffer direct) {
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
    void releasePinned(List<ByteBuffer> regions) {
        if (regions.isEmpty()) {
            return;
        }
        java.util.concurrent.CountDownLatch forgotten = new java.util.concurrent.CountDownLatch(groups.size());
        for (RdmaPollGroupThread g : groups) {
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

    @Override
    public boolean deregister(ByteBuffer direct) {
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

    /** Deregisters whatever is still registered: pinned namespace memory (and anything a queue could not release). */
    void deregisterAll() {
        List<ByteBuffer> left;
        synchronized (registrations) {
            left = new ArrayList<>(registrations.keySet());
        }
        for (ByteBuffer b : left) {
            deregister(b); // pinned namespace memory (and anything a queue could not release)
        }
    }

    /** Stops every poll group and destroys what it holds; returns whether everything was destroyed. */
    boolean stopPollGroups() {
        boolean allDestroyed = true;
        for (RdmaPollGroupThread g : groups) {
            allDestroyed &= g.stopAndDestroy(5000);
        }
        return allDestroyed;
    }

    /** Logs the native calls on the data path per work request (the batching at work), once the groups are stopped. */
    void logNativeCalls() {
        long posts = 0;
        long wrs = 0;
        long polls = 0;
        long completions = 0;
        for (RdmaPollGroupThread g : groups) {
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
    }

    /** Destroys the protection domain when everything built on it is gone ({@code allDestroyed}); else leaks it. */
    void closeProtectionDomain(boolean allDestroyed) {
        if (pd != null) {
            if (allDestroyed) {
                RdmaPollGroupThread.closeQuietly(pd, "protection domain");
            } else {
                LOG.warn("leaking the protection domain: resources on it could not be destroyed");
            }
        }
    }

    /** A hint for a failure to register memory: the locked-memory limit is the usual cause. */
    static String memlockHint(Exception e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("ibv_reg_mr") || m.contains("mmap") || m.contains("errno 12") || m.contains("ENOMEM")
                ? " (registering memory needs a locked-memory limit above the poll groups' buffer pools: raise "
                        + "'ulimit -l', or LimitMEMLOCK= in a systemd unit)"
                : "";
    }
}

package io.nvmeof.tgt.rdma;

import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.rdma.CmEventChannel;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.RdmaLibrary;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TargetCore;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVMe/RDMA listener (Linux nvmet rdma.c's CM side): RDMA CM connect requests are checked against the NVMe/RDMA
 * private data rules, each accepted queue gets a reliable-connected queue pair on one poll group's completion queue
 * with its receives posted before the accept, and disconnects tear the queue down. Each poll group is one thread that
 * busy-polls its completion queue in batches while there is work and sleeps on the completion channel when idle.
 *
 * <p>This class binds, starts and stops the listener; the CM thread is {@link RdmaConnectionManager}, what is built on
 * the device (protection domain, poll groups, memory registrations) is {@link RdmaDeviceResources}, a poll group is
 * {@link RdmaPollGroupThread}, and the listen-time warm-up is {@link ConnectionRehearsal}.
 */
public final class RdmaTransport implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    private final TargetCore core;
    private final int pollGroupCount;
    private final int inlineDataSize;
    private final Map<CmId, RdmaConnection> connections = new ConcurrentHashMap<>();
    private final RdmaDeviceResources resources;
    private final ConnectionRehearsal rehearsal;
    private final RdmaConnectionManager cmEvents;

    private CmEventChannel cm;
    private CmId listener;
    private volatile boolean running;
    /** Loopback connections per poll group that {@link #listen} makes to warm the accept path. */
    private static final int REHEARSALS_PER_GROUP = 3;
    private volatile ListenerInfo info;
    private volatile DataPathObserver observer;

    public RdmaTransport(TargetCore core, int pollGroups, int inlineDataSize) {
        this.core = core;
        this.pollGroupCount = Math.max(1, pollGroups);
        this.inlineDataSize = inlineDataSize;
        this.resources = new RdmaDeviceResources(core, pollGroupCount, connections);
        this.rehearsal = new ConnectionRehearsal(connections);
        this.cmEvents = new RdmaConnectionManager(this, core, inlineDataSize, resources, connections, rehearsal);
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
            bound = resources.prepare(listener, address);
        } catch (Exception e) {
            close();
            throw new IOException("cannot set up NVMe/RDMA on " + address + ":" + port + ": " + e
                    + RdmaDeviceResources.memlockHint(e), e);
        }
        cmEvents.start(cm);
        long rehearsed = System.nanoTime();
        int rehearsals = 0;
        for (int i = 0; bound && i < REHEARSALS_PER_GROUP * resources.groups().size(); i++, rehearsals++) {
            // Connections go to the poll groups in turn: a few rehearsals for each (the first pays the one-time
            // costs; the next ones get the accept path past its first, slowest executions).
            bound = rehearsal.rehearse(new InetSocketAddress(address, listener.localPort()));
        }
        if (bound && rehearsals > 0) {
            LOG.info("NVMe/RDMA listener rehearsed {} connections against itself in {} ms (first accept {})", rehearsals,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - rehearsed),
                    cmEvents.acceptTimes().rehearsalSummary());
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
        List<RdmaPollGroupThread> groups = resources.groups();
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

    /** Whether the listener runs: the CM thread takes events while it does. */
    boolean running() {
        return running;
    }

    /** How long accepts took, from the connect request reaching the CM thread to rdma_accept returning. */
    public AcceptTimes acceptTimes() {
        return cmEvents.acceptTimes();
    }

    /**
     * Drops the registrations of a closing backend's pinned regions: each poll group forgets their keys on its own
     * thread, then the memory regions are deregistered (no request uses them any more: the namespace has drained).
     */
    public void releasePinned(List<ByteBuffer> regions) {
        resources.releasePinned(regions);
    }

    /**
     * Stops the listener. Ownership (docs/architecture.md): a queue, its queue pair and CM id are released
     * on their poll group's thread; a group's CQ, channel and pool only after its thread has ended; the protection
     * domain only after every group's resources are gone. Whatever cannot be released so is leaked, with a warning.
     */
    @Override
    public void close() {
        running = false; // the CM thread stops taking events
        cmEvents.awaitEnd(2000);
        boolean allDestroyed = cmEvents.releaseAll();
        allDestroyed &= resources.stopPollGroups();
        AcceptTimes acceptTimes = cmEvents.acceptTimes();
        if (acceptTimes.count() > 0) {
            LOG.info("{}", acceptTimes.summary());
        }
        resources.logNativeCalls();
        resources.deregisterAll();
        if (listener != null) {
            RdmaPollGroupThread.closeQuietly(listener, "listening CM id");
        }
        if (cm != null) {
            RdmaPollGroupThread.closeQuietly(cm, "CM event channel");
        }
        resources.closeProtectionDomain(allDestroyed);
        if (info != null) {
            core.removeListener(info);
        }
    }
}

package io.nvmeof.tgt.core;

import io.nvmeof.protocol.fabrics.Nqn;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/** An NVM subsystem (or the discovery subsystem): its namespaces, its access list and its live controllers. */
public final class Subsystem {
    public enum Type { NVM, DISCOVERY }

    private final String nqn;
    private final Type type;
    private final String serial;
    private final String model;
    private final int maxNamespaces;
    private volatile boolean allowAnyHost;
    private volatile boolean quiet;
    private final Set<String> allowedHosts = ConcurrentHashMap.newKeySet();
    private final ConcurrentSkipListMap<Long, Namespace> namespaces = new ConcurrentSkipListMap<>();
    private final Map<Integer, Controller> controllers = new ConcurrentHashMap<>();
    private int nextCntlid = 1;
    /** Flushes of all namespaces (NSID FFFFFFFFh) that may block run here; each namespace's own work has its lanes. */
    private volatile ReservationStore reservationStore;
    private final BackendLane flushAllLane = new BackendLane("flush of all namespaces", 2);

    public Subsystem(String nqn, Type type, String serial, String model, int maxNamespaces, boolean allowAnyHost) {
        String why = Nqn.validate(nqn);
        if (why != null) {
            throw new IllegalArgumentException("subsystem NQN '" + nqn + "': " + why);
        }
        if (maxNamespaces < 1) {
            throw new IllegalArgumentException("maxNamespaces must be at least 1");
        }
        this.nqn = nqn;
        this.type = type;
        this.serial = serial;
        this.model = model;
        this.maxNamespaces = maxNamespaces;
        this.allowAnyHost = allowAnyHost;
    }

    public String nqn() { return nqn; }
    BackendLane flushAllLane() { return flushAllLane; }
    public Type type() { return type; }
    public boolean isDiscovery() { return type == Type.DISCOVERY; }
    public String serial() { return serial; }
    public String model() { return model; }
    public int maxNamespaces() { return maxNamespaces; }
    public boolean allowAnyHost() { return allowAnyHost; }
    public void allowAnyHost(boolean v) { allowAnyHost = v; }

    /**
     * A subsystem of the target's own, not the administrator's (the start-up warm-up's): its controllers' creation and
     * end, and a listener that exports it alone, are not logged.
     */
    public boolean quiet() { return quiet; }
    public void quiet(boolean v) { quiet = v; }
    private final java.util.concurrent.atomic.AtomicLong authenticationSuccesses = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong authenticationFailures = new java.util.concurrent.atomic.AtomicLong();

    /** Queues whose host completed DH-HMAC-CHAP here (each queue of an association counts). */
    public long authenticationSuccesses() { return authenticationSuccesses.get(); }
    /** Queues whose host failed DH-HMAC-CHAP here, or did not authenticate in time. */
    public long authenticationFailures() { return authenticationFailures.get(); }
    public void countAuthentication(boolean success) {
        (success ? authenticationSuccesses : authenticationFailures).incrementAndGet();
    }

    public Set<String> allowedHosts() { return allowedHosts; }

    public boolean hostAllowed(String hostNqn) {
        return type == Type.DISCOVERY || allowAnyHost || allowedHosts.contains(hostNqn);
    }

    public void addNamespace(Namespace ns) {
        if (ns.nsid() > maxNamespaces) {
            throw new IllegalArgumentException("NSID " + ns.nsid() + " exceeds the subsystem's maximum of " + maxNamespaces);
        }
        if (namespaces.containsKey(ns.nsid())) {
            throw new IllegalArgumentException("NSID " + ns.nsid() + " already exists in " + nqn);
        }
        SharedReservations sharing = sharedReservations;
        ReservationStore store = reservationStore;
        if (sharing != null) {
            attachShared(sharing, ns); // before hosts can reach it: what the other targets hold, holds here at once
        } else if (store != null) {
            attachReservations(store, ns); // before hosts can reach it: a saved reservation holds from its first command
        }
        ns.reservations().suspend(reservationsUnavailable() != null);
        if (namespaces.putIfAbsent(ns.nsid(), ns) != null) {
            throw new IllegalArgumentException("NSID " + ns.nsid() + " already exists in " + nqn);
        }
        for (Controller c : controllers.values()) {
            c.namespaceChanged(ns.nsid());
        }
    }

    public Namespace removeNamespace(long nsid) {
        Namespace ns = namespaces.remove(nsid);
        SharedReservations sharing = sharedReservations;
        if (ns != null && sharing != null) {
            sharing.forget(ns);
        }
        if (ns != null) {
            for (Controller c : controllers.values()) {
                c.namespaceChanged(nsid);
            }
        }
        return ns;
    }

    /** Tells every controller that a namespace's attributes (its size) changed. */
    public void namespaceAttributesChanged(long nsid) {
        for (Controller c : controllers.values()) {
            c.namespaceChanged(nsid);
        }
    }

    /**
     * Where this subsystem's namespaces keep their reservations while Persist Through Power Loss is on; each namespace
     * takes back what it saved there under the same identity. Not where they are shared with other targets: the
     * shared directory keeps them then.
     */
    public void persistReservationsIn(ReservationStore store) {
        reservationStore = store;
        if (sharedReservations != null) {
            return;
        }
        for (Namespace ns : namespaces.values()) {
            attachReservations(store, ns);
        }
    }

    /** Where this subsystem's reservations are shared with the other targets that export it; null where they are not. */
    private volatile SharedReservations sharedReservations;

    /**
     * Shares this subsystem's reservations with the other target processes that export it, through {@code sharing}'s
     * directory (see {@link SharedReservations}); set before namespaces are added.
     */
    public void shareReservations(SharedReservations sharing) {
        sharedReservations = sharing;
        for (Namespace ns : namespaces.values()) {
            attachShared(sharing, ns);
        }
        applyReservationAvailability();
    }

    public SharedReservations sharedReservations() {
        return sharedReservations;
    }

    /** Stops sharing (the subsystem is removed): this target's acknowledgements go once nothing of it can land. */
    public void stopSharingReservations() {
        stopSharingReservations(false);
    }

    /** The same; {@code drained}: the target's I/O has stopped (it is shutting down), so they go at once. */
    public void stopSharingReservations(boolean drained) {
        SharedReservations sharing = sharedReservations;
        if (sharing != null) {
            sharing.close(drained);
        }
    }

    /**
     * Why this subsystem offers no reservations, or null when it does. A subsystem with a controller ID range of its
     * own is exported by several targets over shared storage (docs/architecture.md); without a shared reservation
     * directory each would keep its own reservations, and a host fenced through one would go on writing through
     * another, so none is offered (RESCAP 0, ONCS bit 5 clear, the commands refused).
     */
    public String reservationsUnavailable() {
        if (type != Type.NVM || sharedReservations != null) {
            return null;
        }
        synchronized (this) {
            if (cntlidMin == CNTLID_MIN && cntlidMax == CNTLID_MAX) {
                return null;
            }
        }
        return "subsystem " + nqn + " has a controller ID range of its own (cntlidMin/cntlidMax: several targets"
                + " export it) and no sharedReservations directory: reservations made through one target would not"
                + " hold on the others, so none are offered; give every target of the subsystem the same"
                + " sharedReservations directory on storage they all reach";
    }

    private void attachShared(SharedReservations sharing, Namespace ns) {
        try {
            ns.reservations().attachShared(sharing.forNamespace(ns));
        } catch (java.io.IOException | RuntimeException e) {
            ns.reservations().refuseAll(e.getMessage());
            org.slf4j.LoggerFactory.getLogger(Subsystem.class).error("subsystem {} namespace {}: {}; every command"
                    + " to it is refused (Reservation Conflict) until the shared state is repaired or removed and the"
                    + " namespace added again (or the target restarted)", nqn, ns.nsid(), e.getMessage());
        }
    }

    private final java.util.concurrent.atomic.AtomicBoolean reservationsRefusedLogged =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** True the first time a reservation command is refused here (to log why once). */
    public boolean noteReservationsRefused() {
        return reservationsRefusedLogged.compareAndSet(false, true);
    }

    /** Queues each notice in the Reservation Notification log of every controller of its host. Any thread. */
    public void deliverReservationNotices(long nsid, java.util.List<NamespaceReservations.Notice> notices) {
        for (NamespaceReservations.Notice n : notices) {
            for (Controller c : controllers.values()) {
                if (!c.isDead() && c.hostUuid().equals(n.host())) {
                    c.reservationNotice(nsid, n.type());
                }
            }
        }
    }

    private void attachReservations(ReservationStore store, Namespace ns) {
        try {
            ns.reservations().attach(store.forNamespace(nqn, ns));
        } catch (java.io.IOException | RuntimeException e) {
            // Fail closed: starting with no registrants would let a host the saved reservation fences write again.
            ns.reservations().refuseAll(e.getMessage());
            org.slf4j.LoggerFactory.getLogger(Subsystem.class).error("subsystem {} namespace {}: {}; every command"
                    + " to it is refused (Reservation Conflict) until the file is repaired or removed and the namespace"
                    + " added again (or the target restarted)", nqn, ns.nsid(), e.getMessage());
        }
    }

    /**
     * Measures {@code ns}'s storage again ({@link Namespace#revalidate}); when it shrank underneath, the loss is logged
     * and every controller is told (Namespace Attribute Changed), so hosts read the new size. Returns whether it
     * shrank. Any thread (it makes one system call: error paths and the periodic check only).
     */
    public boolean revalidate(Namespace ns) {
        long before;
        try {
            before = ns.revalidate();
        } catch (java.io.IOException | RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(Subsystem.class).debug("subsystem {} namespace {}: cannot measure {}: {}",
                    nqn, ns.nsid(), ns.backend().describe(), e.toString());
            return false;
        }
        if (before < 0) {
            return false;
        }
        org.slf4j.LoggerFactory.getLogger(Subsystem.class).error("subsystem {} namespace {}: {} shrank underneath the"
                + " target from {} to {} blocks of {} bytes; what was past the new end is gone. Hosts are told the new"
                + " size (Namespace Attribute Changed) and I/O past it is refused with LBA Out of Range", nqn,
                ns.nsid(), ns.backend().describe(), before, ns.blockCount(), ns.blockSize());
        if (namespaces.get(ns.nsid()) == ns) {
            namespaceAttributesChanged(ns.nsid());
        }
        return true;
    }

    /** The active namespace with this NSID, or null. */
    public Namespace namespace(long nsid) {
        return namespaces.get(nsid);
    }

    public Collection<Namespace> namespaces() {
        return namespaces.values();
    }

    public java.util.NavigableMap<Long, Namespace> namespaceMap() {
        return namespaces;
    }

    /** The controller IDs a dynamic controller may have (FFF0h and above are reserved). */
    public static final int CNTLID_MIN = 1;
    public static final int CNTLID_MAX = 0xFFEF;
    private int cntlidMin = CNTLID_MIN;
    private int cntlidMax = CNTLID_MAX;

    public synchronized int cntlidMin() { return cntlidMin; }
    public synchronized int cntlidMax() { return cntlidMax; }

    /**
     * Gives this subsystem's new controllers IDs in {@code min..max} (nvmet's {@code attr_cntlid_min/max}): targets
     * exporting one subsystem over a shared backend need disjoint ranges, since a host takes two controllers with one
     * ID for one and refuses the second path. Controllers that exist keep their IDs.
     */
    public synchronized void cntlidRange(int min, int max) {
        if (min < CNTLID_MIN || max > CNTLID_MAX || min > max) {
            throw new IllegalArgumentException("subsystem " + nqn + ": controller IDs must be a range within "
                    + CNTLID_MIN + " to " + CNTLID_MAX + " (0xFFEF), got cntlidMin " + min + ", cntlidMax " + max);
        }
        cntlidMin = min;
        cntlidMax = max;
        if (nextCntlid < min || nextCntlid > max) {
            nextCntlid = min;
        }
        applyReservationAvailability();
    }

    /** Enforces the namespaces' reservations where they are offered, and only there (see reservationsUnavailable). */
    private void applyReservationAvailability() {
        boolean off = reservationsUnavailable() != null;
        for (Namespace ns : namespaces.values()) {
            ns.reservations().suspend(off);
        }
    }

    /** Allocates a controller ID unique within this subsystem, within its range; -1 when all are taken. */
    synchronized int allocateCntlid() {
        for (int tries = 0; tries <= cntlidMax - cntlidMin; tries++) {
            int id = nextCntlid;
            nextCntlid = nextCntlid >= cntlidMax ? cntlidMin : nextCntlid + 1;
            if (!controllers.containsKey(id)) {
                return id;
            }
        }
        return -1;
    }

    void register(Controller c) {
        controllers.put(c.cntlid(), c);
    }

    void unregister(Controller c) {
        controllers.remove(c.cntlid(), c);
    }

    /** Every connected queue of this subsystem's controllers. */
    public java.util.List<SubmissionQueue> queues() {
        java.util.List<SubmissionQueue> out = new java.util.ArrayList<>();
        for (Controller c : controllers.values()) {
            out.addAll(c.queues());
        }
        return out;
    }

    public Controller controller(int cntlid) {
        return controllers.get(cntlid);
    }

    public Collection<Controller> controllers() {
        return controllers.values();
    }

    /**
     * Ends the associations of hosts this subsystem no longer admits (an allowed host removed, allowAnyHost turned
     * off), as SPDK's {@code nvmf_subsystem_remove_host} disconnects the host it removes: revoked access ends now, not
     * at the host's next reconnect. Their commands in flight finish on the backend but are not answered; the host's
     * reconnect is refused with Connect Invalid Host. Returns how many associations ended.
     */
    public int endAssociationsNoLongerAllowed() {
        int ended = 0;
        for (Controller c : controllers()) {
            if (!c.isDead() && !hostAllowed(c.hostNqn())) {
                c.teardown("host " + Nqn.display(c.hostNqn()) + " is no longer allowed on " + nqn);
                ended++;
            }
        }
        return ended;
    }

    /** I/O statistics of one of this subsystem's namespaces: closed queues' totals plus every open queue's counts. */
    public NamespaceStatistics statistics(Namespace ns) {
        java.util.List<IoStatistics> live = new java.util.ArrayList<>();
        for (Controller c : controllers()) {
            for (int qid = 1; qid <= c.maxIoQueues(); qid++) {
                SubmissionQueue q = c.queue(qid);
                IoStatistics st = q != null ? q.statsFor(ns) : null;
                if (st != null) {
                    live.add(st);
                }
            }
        }
        return ns.statistics(live);
    }
}

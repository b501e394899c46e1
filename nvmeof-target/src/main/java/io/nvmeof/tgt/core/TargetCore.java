package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.cmd.AdminCommands;
import io.nvmeof.tgt.cmd.DiscoveryCommands;
import io.nvmeof.tgt.cmd.FabricsCommands;
import io.nvmeof.tgt.cmd.IoCommands;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The target engine: subsystems, controllers, and the request lifecycle every transport feeds (Linux nvmet's core.c:
 * {@code nvmet_req_init} ... {@code nvmet_req_complete}). It does not know how bytes travel.
 */
public final class TargetCore {
    private static final Logger LOG = LoggerFactory.getLogger(TargetCore.class);

    /** CAP.TO: how long a host waits for CSTS.RDY, in 500 ms units. */
    public static final int READY_TIMEOUT_500MS = 15;
    /** KATO a discovery controller gets when the host asks for none (Linux NVMET_DISC_KATO_MS). */
    public static final long DISCOVERY_DEFAULT_KATO_MS = 120_000;

    private final TargetLimits limits;
    private volatile io.nvmeof.netty.EventLoops.LoopPlacement pollPlacement =
            io.nvmeof.netty.EventLoops.LoopPlacement.NONE;
    private final Map<String, Subsystem> subsystems = new ConcurrentHashMap<>();
    private final AnaGroups ana = new AnaGroups(this);
    private final List<ListenerInfo> listeners = new CopyOnWriteArrayList<>();
    /** The discovery log's referrals, by their id (the log lists them in this order). */
    private final Map<Integer, DiscoveryReferral> referrals = new java.util.concurrent.ConcurrentSkipListMap<>();
    private final Set<Controller> controllers = ConcurrentHashMap.newKeySet();
    private final AtomicLong discoveryGeneration = new AtomicLong(1);
    private final AtomicInteger liveQueues = new AtomicInteger();
    private final Subsystem discovery;
    /**
     * Threads for backend work that may block (see {@code BlockBackend.mayBlock}), never run on a poll group. Work
     * reaches them through the {@link BackendLane}s of its namespace, each served by a few threads at most, so one
     * namespace's work never holds up another's; threads come when work does and go after a minute without any.
     */
    private final java.util.concurrent.ThreadPoolExecutor backendWork = backendThreads();
    /** Hosts that must authenticate (DH-HMAC-CHAP), by host NQN. */
    private final io.nvmeof.tgt.auth.HostAuthRegistry hostAuth = new io.nvmeof.tgt.auth.HostAuthRegistry();
    private final io.nvmeof.tgt.auth.TlsKeys tlsKeys = new io.nvmeof.tgt.auth.TlsKeys();
    /** DH arithmetic of authentication (milliseconds each in the larger groups), never on a poll group. */
    private final AuthenticationWork authWork =
            new AuthenticationWork(Math.max(1, Runtime.getRuntime().availableProcessors() / 2)); // poll groups need the rest
    /** The most backend threads at once, over all lanes: beyond it a lane's turn waits for a free thread. */
    static final int BACKEND_THREADS = 64;

    /**
     * The target's own periodic work that makes system calls (measuring the namespaces' storage): one thread, started
     * with the core, never a poll group's nor a backend lane's (a pool of 64 core threads starts a new one per task).
     */
    private final java.util.concurrent.ThreadPoolExecutor housekeeping = housekeepingThread();

    private static java.util.concurrent.ThreadPoolExecutor housekeepingThread() {
        java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(1, 1, 0,
                TimeUnit.SECONDS, new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(() -> {
                        io.nvmeof.cpu.ThreadPlacement.leavePollCpus();
                        r.run();
                    }, "nvmeof-housekeeping");
                    t.setDaemon(true);
                    return t;
                });
        pool.prestartCoreThread();
        return pool;
    }

    private static java.util.concurrent.ThreadPoolExecutor backendThreads() {
        AtomicInteger n = new AtomicInteger();
        java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(BACKEND_THREADS,
                BACKEND_THREADS, 60, TimeUnit.SECONDS, new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
                    // Started by whichever thread submits first, often a poll group pinned to its own CPU: the
                    // worker leaves that CPU before it runs anything.
                    Thread t = new Thread(() -> {
                        io.nvmeof.cpu.ThreadPlacement.leavePollCpus();
                        r.run();
                    }, "nvmeof-backend-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** A backend step of a request; returns its NVMe status. */
    public interface BackendCall {
        int run(Request req) throws java.io.IOException;

        /** Back on the request's queue thread, just before it completes with {@code status} (statistics). */
        default void completing(Request req, int status) {
        }
    }

    public TargetCore(TargetLimits limits) {
        this.limits = limits;
        this.memory = new MemoryBudget(limits.maxMemory(), limits.maxTransferSize());
        this.discovery = new Subsystem(Nqn.DISCOVERY, Subsystem.Type.DISCOVERY, "discovery", "nvmeof-java discovery", 1, true);
        subsystems.put(Nqn.DISCOVERY, discovery);
    }

    private final long startNanos = System.nanoTime();

    public TargetLimits limits() { return limits; }
    /** ANA groups and their states per port. */
    public AnaGroups ana() { return ana; }
    public io.nvmeof.tgt.auth.HostAuthRegistry hostAuth() { return hostAuth; }
    public io.nvmeof.tgt.auth.TlsKeys tlsKeys() { return tlsKeys; }

    private final HostIdentities hostIdentities = new HostIdentities();

    /** Which host owns which Host ID (the first to authenticate with it). */
    public HostIdentities hostIdentities() { return hostIdentities; }

    /**
     * The host of {@code proven} has just proved who it is: if no host did with its Host ID before, its NQN owns that
     * ID from now on, and the associations other host NQNs made with it without proving themselves end (they borrowed
     * it). Hosts that prove themselves too may share an ID (several NQNs of one machine, one /etc/nvme/hostid).
     */
    public void hostProven(Controller proven) {
        proven.markProven();
        java.util.UUID hostId = proven.hostUuid();
        String hostNqn = proven.hostNqn();
        String owner = hostIdentities.owner(hostId);
        hostIdentities.proven(hostId, hostNqn);
        if (owner != null) {
            return; // owned before: borrowers were refused at Connect
        }
        for (Controller c : controllers) {
            if (c.hostUuid().equals(hostId) && !c.hostNqn().equals(hostNqn) && !c.isDead() && !c.proven()) {
                LOG.warn("controller {} of {}: host {} used Host ID {}, which host {} has just proved is its own;"
                        + " ended", c.cntlid(), c.subsystem().nqn(), Nqn.display(c.hostNqn()), hostId,
                        Nqn.display(hostNqn));
                c.teardown("its Host ID belongs to another host, which authenticated with it");
            }
        }
    }

    /**
     * Runs an authentication step off the poll groups, in turn with other source addresses' steps (see
     * {@link AuthenticationWork}). False when the step was not taken: its source, or all, have too many waiting; the
     * caller answers with a status the host may retry.
     */
    public boolean executeAuthentication(java.net.InetAddress peer, Runnable step) {
        return authWork.submit(SourceAddress.of(peer), step);
    }

    /**
     * How poll-group threads of every transport run: poll group N on its CPU when the target was given
     * {@code pollGroupCpus}, as the kernel places it otherwise. Set once, before any listener starts.
     */
    public io.nvmeof.netty.EventLoops.LoopPlacement pollPlacement() {
        return pollPlacement;
    }

    public void pollPlacement(io.nvmeof.netty.EventLoops.LoopPlacement placement) {
        this.pollPlacement = java.util.Objects.requireNonNull(placement);
    }

    private final MemoryBudget memory;

    /** The target's memory limit and what queues hold of it. */
    public MemoryBudget memory() { return memory; }

    private final UntrustedQueues untrustedQueues = new UntrustedQueues();
    private static final io.nvmeof.netty.LogAllowance EVICTION_LOG = new io.nvmeof.netty.LogAllowance();

    UntrustedQueues untrustedQueues() { return untrustedQueues; }

    /**
     * The untrusted allowance is full and {@code source} asks for {@code bytes} of it: closes the oldest queue of the
     * source that holds most, where that is another source holding more than {@code source} would with them (so a
     * flood from a few addresses gives way to a host that comes to authenticate, while a single flood only evicts
     * itself). True when one was closed; its memory comes back once the close is done.
     */
    boolean evictUntrustedFor(Object source, long bytes) {
        if (source == SourceAddress.UNKNOWN || !memory.fitsBesidesTheTotal(bytes, source)) {
            return false; // an address it cannot count, or one that would be refused anyway: nobody is evicted for it
        }
        Object heaviest = memory.heaviestUntrustedSource();
        if (heaviest == null || heaviest.equals(source)
                || memory.untrustedUsedBy(heaviest) <= memory.untrustedUsedBy(source) + bytes) {
            return false;
        }
        SubmissionQueue victim = untrustedQueues.takeOldest(heaviest);
        if (victim == null) {
            return false;
        }
        long leftOut = EVICTION_LOG.admit();
        if (leftOut >= 0) {
            LOG.warn("the allowance of connections that have not authenticated is full: closed the oldest of {}'s ({}),"
                    + " the address holding most of it, for a connection from {}{}", heaviest, victim.transport().peer(),
                    source, io.nvmeof.netty.LogAllowance.leftOut(leftOut, "evictions"));
        }
        try {
            victim.transport().execute(() -> {
                if (victim.untrusted()) { // not if it authenticated meanwhile
                    victim.transport().close("evicted for a connection from a lighter source");
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing already
        }
        return true;
    }

    public long uptimeHours() {
        return TimeUnit.NANOSECONDS.toHours(System.nanoTime() - startNanos);
    }

    // ---- configuration ----

    public void addSubsystem(Subsystem s) {
        if (subsystems.containsKey(s.nqn())) {
            throw new IllegalArgumentException("subsystem " + s.nqn() + " already exists");
        }
        ReservationStore store = reservationStore;
        if (store != null && !s.isDiscovery()) {
            s.persistReservationsIn(store); // before hosts can reach it: its saved reservations hold from the start
        }
        if (subsystems.putIfAbsent(s.nqn(), s) != null) {
            throw new IllegalArgumentException("subsystem " + s.nqn() + " already exists");
        }
        configChanged();
    }

    private volatile ReservationStore reservationStore;

    /**
     * Where namespaces persist their reservations (Persist Through Power Loss); without one PTPL cannot be turned on.
     * Set before subsystems are added.
     */
    public void persistReservationsIn(ReservationStore store) {
        reservationStore = store;
    }

    public Subsystem removeSubsystem(String nqn) {
        if (Nqn.DISCOVERY.equals(nqn)) {
            throw new IllegalArgumentException("the discovery subsystem cannot be removed");
        }
        Subsystem s = subsystems.remove(nqn);
        if (s != null) {
            for (Controller c : s.controllers()) {
                c.teardown("subsystem removed");
            }
            s.stopSharingReservations();
            configChanged();
        }
        return s;
    }

    public Subsystem subsystem(String nqn) { return subsystems.get(nqn); }

    public Collection<Subsystem> subsystems() { return subsystems.values(); }

    public void addListener(ListenerInfo l) {
        listeners.add(l);
        configChanged();
    }

    public void removeListener(ListenerInfo l) {
        listeners.remove(l);
        configChanged();
    }

    public List<ListenerInfo> listeners() { return listeners; }

    /** Adds or replaces (same id) a referral; the discovery controllers are told. */
    public void putReferral(DiscoveryReferral r) {
        referrals.put(r.id(), r);
        configChanged();
    }

    /** Removes referral {@code id}, if there; the discovery controllers are told. */
    public void removeReferral(int id) {
        if (referrals.remove(id) != null) {
            configChanged();
        }
    }

    /** The referrals, in id order. */
    public Collection<DiscoveryReferral> referrals() { return referrals.values(); }

    /**
     * Bumps the discovery log generation counter and tells the discovery controllers that asked (Discovery Log Page
     * Change notice); call after any change hosts may discover.
     */
    public void configChanged() {
        discoveryGeneration.incrementAndGet();
        for (Controller c : controllers()) {
            if (c.isDiscovery() && !c.isDead()) {
                c.discoveryLogChanged();
            }
        }
    }

    public long discoveryGeneration() { return discoveryGeneration.get(); }

    // ---- resources ----

    public int liveQueues() { return liveQueues.get(); }

    private final AtomicLong requestsAllocated = new AtomicLong();
    private final AtomicLong internalErrors = new AtomicLong();

    /**
     * Failures that are the target's own bugs, never the host's input: a command that threw while executing, or an
     * exception other than an I/O error reaching a queue's pipeline. A malformed input is answered with a status or a
     * termination, not this; the fuzz tests check that it stays 0.
     */
    public long internalErrors() { return internalErrors.get(); }

    /** Counts one of the {@link #internalErrors}; the caller has logged it. */
    public void internalError() { internalErrors.incrementAndGet(); }

    void requestsAllocated(int n) {
        requestsAllocated.addAndGet(n);
    }

    /** Request objects (each with its SQE and CQE buffers) allocated since start: what queues cost in memory. */
    public long requestsAllocated() { return requestsAllocated.get(); }

    public int liveControllers() { return controllers.size(); }

    public Collection<Controller> controllers() { return controllers; }

    public void queueOpened() {
        liveQueues.incrementAndGet();
    }

    void queueClosed(SubmissionQueue sq) {
        liveQueues.decrementAndGet();
        Controller c = sq.controller();
        if (c == null) {
            return;
        }
        if (sq.qid() == 0) {
            c.dropAers();
            c.teardown("admin queue closed");
        } else {
            c.detachQueue(sq);
        }
    }

    /** Creates a controller for an admin-queue Connect; null when the subsystem has no controller ID left. */
    public Controller createController(Subsystem s, String hostNqn, byte[] hostId, SubmissionQueue adminQueue, long kato) {
        int cntlid = s.allocateCntlid();
        if (cntlid < 0) {
            return null;
        }
        Controller c = new Controller(this, s, cntlid, hostNqn, hostId, adminQueue, kato, limits.maxIoQueues());
        s.register(c);
        controllers.add(c);
        return c;
    }

    void controllerGone(Controller c) {
        c.subsystem().unregister(c);
        controllers.remove(c);
        // Its host's next association waits until nothing of this one can still change the media (holdConnect).
        draining.add(c);
        c.maybeFinishPending();
    }

    // ---- an association's end, and the host's next one ----

    /** Torn-down controllers whose I/O queues or backend work are not done yet. */
    private final Set<Controller> draining = ConcurrentHashMap.newKeySet();
    /** Admin Connects held until their host's earlier associations have drained (rare: a list is fine). */
    private final List<Request> heldConnects = new CopyOnWriteArrayList<>();
    /**
     * How long an admin Connect waits for the host's earlier association to drain before it is answered Controller
     * Busy (the host retries): a stuck backend call must not hold a Connect past the host's own connect timeout.
     */
    public static final long CONNECT_HOLD_NANOS = TimeUnit.SECONDS.toNanos(5);

    /**
     * The queues that may still hold requests for {@code s}'s namespaces: its controllers' and those of its controllers
     * torn down whose queues' closes may not be taken yet (see {@link NamespaceDrain}).
     */
    public List<SubmissionQueue> queuesOf(Subsystem s) {
        List<SubmissionQueue> out = s.queues();
        for (Controller c : draining) {
            if (c.subsystem() == s) {
                out.addAll(c.queues()); // unregistered at teardown: not among s's own
            }
        }
        return out;
    }

    /** Controllers torn down whose work has not finished yet (for tests and the admin view). */
    public int drainingControllers() { return draining.size(); }

    /** A torn-down controller has drained: Connects held for it go on. Any thread; idempotent. */
    void controllerDrained(Controller c) {
        if (draining.remove(c)) {
            long quiesceMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - c.tornDownNanos());
            if (quiesceMs > COMMAND_QUIESCE_TIME_MS) {
                // The promise hosts were given (CQT) did not hold: a host may have resent these writes meanwhile.
                LOG.warn("controller {} of {} (host {}): its last commands took {} ms to stop after it was torn down,"
                        + " longer than the Command Quiesce Time of {} ms this target reports; a device that slow can"
                        + " let a host that failed over early see older data", c.cntlid(), c.subsystem().nqn(),
                        Nqn.display(c.hostNqn()), quiesceMs, COMMAND_QUIESCE_TIME_MS);
            }
            resumeHeldConnects();
        }
    }

    /**
     * Holds an admin Connect while an earlier association of the same host (Host NQN and Host ID) with the subsystem
     * has work that can still change the media: a command of it still running in a backend, or an I/O queue whose
     * close has not been taken yet. The host tore that association down (a command timed out, its connection broke)
     * and was told its commands failed; what it writes through the new association must not be overwritten by one of
     * them landing late. {@link ConnectHold#HELD}: the Connect runs again once they drain; {@link
     * ConnectHold#REFUSED}: held for {@link #CONNECT_HOLD_NANOS} already, the caller answers Controller Busy (the host
     * retries later). Only on the request's queue thread.
     */
    public ConnectHold holdConnect(Request req, Subsystem s, String hostNqn, byte[] hostId) {
        if (!earlierAssociationDraining(s, hostNqn, hostId)) {
            return ConnectHold.PROCEED;
        }
        long now = System.nanoTime();
        if (req.connectHeldSince == 0) {
            req.connectHeldSince = now;
            LOG.info("Connect of host {} to {} waits for its earlier association's commands to finish",
                    Nqn.display(hostNqn), s.nqn());
        } else if (now - req.connectHeldSince > CONNECT_HOLD_NANOS) {
            return ConnectHold.REFUSED;
        }
        heldConnects.add(req);
        // Drained meanwhile (between the check and the add): nobody else resumes it.
        if (!earlierAssociationDraining(s, hostNqn, hostId)) {
            resumeHeldConnects();
        }
        return ConnectHold.HELD;
    }

    /** What {@link #holdConnect} decided. */
    public enum ConnectHold { PROCEED, HELD, REFUSED }

    private boolean earlierAssociationDraining(Subsystem s, String hostNqn, byte[] hostId) {
        for (Controller c : draining) {
            if (c.subsystem() == s && c.hostNqn().equals(hostNqn) && java.util.Arrays.equals(c.hostId(), hostId)) {
                return true;
            }
        }
        return false;
    }

    /** Runs held Connects again on their queues' threads (each checks again, or is refused once held too long). */
    private void resumeHeldConnects() {
        for (Request req : heldConnects) {
            if (heldConnects.remove(req)) {
                try {
                    req.sq().transport().execute(() -> {
                        if (!req.inUse) {
                            return; // its connection closed meanwhile
                        }
                        if (req.sq().connected()) {
                            // A second Connect held on the same queue, after the first connected it.
                            req.complete(Status.COMMAND_SEQUENCE_ERROR | Status.DNR);
                        } else {
                            execute(req);
                        }
                    });
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    LOG.debug("held Connect dropped: its queue is gone");
                }
            }
        }
    }

    /** Every 100 ms (the keep-alive check): held Connects past their time are answered. */
    private void expireHeldConnects(long now) {
        for (Request req : heldConnects) {
            if (now - req.connectHeldSince > CONNECT_HOLD_NANOS) {
                resumeHeldConnects();
                return;
            }
        }
    }

    /** Binds a queue to a controller after a successful Connect. */
    public void bindQueue(SubmissionQueue sq, Controller c, int qid, int size, boolean disableFlowControl) {
        sq.bind(c, qid, size, disableFlowControl);
    }

    public int attachIoQueue(Controller c, int qid, SubmissionQueue sq) {
        return c.attachQueue(qid, sq);
    }

    /** An I/O queue that must authenticate first: see {@link Controller#attachPending}. */
    public int attachPendingIoQueue(Controller c, int qid, SubmissionQueue sq) {
        return c.attachPending(qid, sq);
    }

    /** How often {@link #checkKeepAlive} is called. */
    public static final long KEEP_ALIVE_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** Every this many keep-alive checks (1 s), every namespace's storage is measured again ({@link #revalidateNamespaces}). */
    private static final int REVALIDATE_EVERY_CHECKS = 10;
    private int keepAliveChecks;
    private final java.util.concurrent.atomic.AtomicBoolean revalidating = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * A backend thread, once a second: measures every namespace's storage again, so one that shrank underneath (a
     * truncated file, a device re-read smaller) is seen even before a read runs past its end, and hosts learn the new
     * size (as nvmet's revalidation). A write in the second before could still land past the new end of a file (a
     * write there extends it): the check bounds that window, it cannot close it.
     */
    private void revalidateNamespaces() {
        try {
            for (Subsystem s : subsystems.values()) {
                for (Namespace ns : s.namespaces()) {
                    s.revalidate(ns);
                }
            }
        } finally {
            revalidating.set(false);
        }
    }

    /**
     * Command Quiesce Time (Identify Controller CQT, NVMe 2.1 TP4129), in ms: once a controller learns that its host
     * is gone (its keep-alive expired, its connection closed), its commands stop touching the media within this long.
     * Nothing it read afterwards runs (see {@link Controller#trafficReceived}), work that waits for a backend thread or
     * for room in the io_uring is withdrawn, so what is left are the requests a device has already taken; a host adds
     * this to the keep-alive deadline before it sends a lost association's writes down another path. A controller
     * whose work takes longer to drain says so in the log ({@link #controllerDrained}).
     */
    public static final int COMMAND_QUIESCE_TIME_MS = 1000;

    /**
     * Tears down controllers whose keep-alive timer expired (see {@link Controller#keepAliveDeadlineMs}); called every
     * 100 ms. Traffic read after the deadline never counts (it ends the controller where it is read, before anything
     * of it runs), so a stalled target, whose own check ran late, ends the controllers that stalled with it: their
     * hosts, unanswered as long, have given them up.
     */
    public void checkKeepAlive() {
        long now = System.nanoTime();
        if (!heldConnects.isEmpty()) {
            expireHeldConnects(now);
        }
        if (++keepAliveChecks % REVALIDATE_EVERY_CHECKS == 0 && revalidating.compareAndSet(false, true)) {
            try {
                housekeeping.execute(this::revalidateNamespaces);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                revalidating.set(false); // stopping
            }
        }
        ana.expireTransitions(now);
        for (Controller c : controllers) {
            closeOverdueAuthentications(c, now);
            if (c.keepAliveExpiredAfter(c.idleNanos(now)) && !c.isDead()) {
                LOG.warn("controller {} of {}: keep-alive timeout ({} ms) expired, host {}", c.cntlid(),
                        c.subsystem().nqn(), c.kato(), Nqn.display(c.hostNqn()));
                c.teardown("keep-alive timeout expired");
            }
        }
    }

    /** Closes the queues of {@code c} that stayed connected past the deadline without authenticating. */
    private static void closeOverdueAuthentications(Controller c, long now) {
        for (int qid = 0; qid <= c.maxIoQueues(); qid++) {
            closeIfOverdue(c, qid == 0 ? c.adminQueue() : c.queue(qid), now);
        }
        c.forEachPendingQueue(q -> closeIfOverdue(c, q, now)); // I/O queues waiting for their slot
    }

    private static void closeIfOverdue(Controller c, SubmissionQueue q, long now) {
        io.nvmeof.tgt.auth.QueueAuthentication a = q == null ? null : q.authentication();
        if (a == null || !a.overdue(now)) {
            return;
        }
        try {
            q.transport().execute(() -> {
                if (q.awaitsAuthentication()) {
                    LOG.warn("queue {} of controller {} (host {}): not authenticated within {} s; closed", q.qid(),
                            c.cntlid(), Nqn.display(c.hostNqn()),
                            TimeUnit.NANOSECONDS.toSeconds(io.nvmeof.tgt.auth.QueueAuthentication.deadlineNanos()));
                    c.subsystem().countAuthentication(false);
                    q.transport().close("not authenticated in time");
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing already
        }
    }

    // ---- request lifecycle ----

    /**
     * Starts a request whose SQE the transport has copied in (and, for in-capsule data, whose data is attached). Parses
     * it, checks its data descriptor, then fetches host data or executes.
     */
    public void submit(Request req) {
        long now = System.nanoTime();
        req.startNanos = now;
        SubmissionQueue sq = req.sq();
        Command cmd = req.cmd;
        Controller c = sq.controller();
        // Commands refused for want of authentication do not keep a controller alive; none runs once it is gone, or
        // once its keep-alive expired before the command was read (its host gave the association up meanwhile).
        if (c != null && (c.isDead() || !(sq.qid() != 0 && sq.awaitsAuthentication()) && !c.trafficReceived(now))) {
            endUnanswered(req);
            return;
        }
        int status;
        if (cmd.fuse() != 0) {
            req.errorLocation = Command.FLAGS;
            status = Status.INVALID_FIELD | Status.DNR;
        } else if (cmd.psdt() != Command.PSDT_SGL) {
            // Fabrics carry data only through SGLs.
            req.errorLocation = Command.FLAGS;
            status = Status.INVALID_FIELD | Status.DNR;
        } else {
            status = parse(req, c);
        }
        if (status != Status.SUCCESS) {
            req.complete(status);
            return;
        }
        status = sq.transport().mapData(req);
        if (status != Status.SUCCESS) {
            req.errorLocation = Command.DPTR;
            req.complete(status);
            return;
        }
        if (req.direction == Request.DIR_HOST_TO_CONTROLLER && req.transferLength > 0 && !req.dataInCapsule) {
            sq.transport().fetchData(req);
            return;
        }
        if (req.direction == Request.DIR_CONTROLLER_TO_HOST && req.transferLength > 0
                && !sq.transport().allocateReadData(req)) {
            return; // resumes through dataReady() when a buffer is free
        }
        execute(req);
    }

    private int parse(Request req, Controller c) {
        Command cmd = req.cmd;
        if (cmd.opcode() == Opcodes.FABRICS) {
            return FabricsCommands.parse(req);
        }
        if (c == null) {
            // Only Connect is valid on a queue that is not connected yet.
            req.errorLocation = Command.OPCODE;
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        if (req.sq().awaitsAuthentication()) {
            // Before DH-HMAC-CHAP completes nothing but the Fabrics commands that carry it (nvmet: AUTH_REQUIRED).
            return Status.AUTH_REQUIRED | Status.DNR;
        }
        if (!c.ready()) {
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        if (req.sq().qid() == 0) {
            return c.isDiscovery() ? DiscoveryCommands.parse(req) : AdminCommands.parse(req);
        }
        return IoCommands.parse(req);
    }

    /** Runs the execute step chosen at parse time (data, if any, is present). */
    public void execute(Request req) {
        try {
            Controller c = req.sq().controller();
            long now = System.nanoTime();
            if (c != null && !c.mayRun(now)) {
                // Torn down while its data moved (its keep-alive expired, its host went away), or the target stalled
                // past the deadline since: it must not run now.
                endUnanswered(req);
                return;
            }
            Namespace ns = req.ns;
            if (ns != null) {
                // Checked again now that its data is in: a reservation taken while it moved (a Preempt and Abort
                // fencing this host) refuses it before it reaches the backend. One volatile read while none is held.
                int access = ns.reservations().checkAccess(req.sq().controller().hostUuid(), req.cmd.opcode(), now);
                if (access != Status.SUCCESS) {
                    req.complete(access);
                    return;
                }
            }
            req.execute.execute(req);
        } catch (RuntimeException e) {
            LOG.error("internal error executing opcode 0x{} on queue {}", Integer.toHexString(req.cmd.opcode()), req.sq().qid(), e);
            internalErrors.incrementAndGet();
            req.complete(Status.INTERNAL | Status.DNR);
        }
    }

    /**
     * A command of a controller that has ended: it never runs, and its host is not answered either. The connection is
     * closed first (it is closing anyway), so the completion that releases the request goes nowhere: a host that kept
     * the association (reconnecting) sends the command again on the next one; an answer (Keep Alive Timer Expired)
     * made a single-path host fail the I/O instead. Any thread of the request's queue.
     */
    public static void endUnanswered(Request req) {
        req.sq().transport().close("its controller has ended");
        req.complete(Status.ABORT_SQ_DELETED);
    }

    /** What a piece of backend work is, which decides its lane and whether an Abort may withdraw it. */
    public enum BackendKind {
        /** Write Zeroes, Deallocate: the namespace's space lane. */
        SPACE,
        /** Reads, writes and compares that may block, where no io_uring takes them: the namespace's data lane. */
        DATA,
        /** Flush: the namespace's flush lane (for NSID FFFFFFFFh, the subsystem's). */
        FLUSH,
        /**
         * The flush of a FUA write (or of any write while the volatile write cache is off) whose data is stored
         * already: the flush lane, and never withdrawn by an Abort, since the write it belongs to has landed.
         */
        FLUSH_OF_STORED_WRITE
    }

    /**
     * Runs {@code call} on a backend thread, in its turn in the lane of the request's namespace for {@code kind}, and
     * completes {@code req} with its status back on the request's queue thread ({@code failure} if the call throws).
     * The poll group goes on serving its other queues meanwhile. Until a thread starts it the work may be withdrawn:
     * by an Abort (but for {@link BackendKind#FLUSH_OF_STORED_WRITE}), and always when its queue closes, so a command
     * whose queue is gone never runs: its host was told it failed, and may have written the same blocks since.
     */
    public void executeOffPollGroup(Request req, BackendKind kind, BackendCall call, int failure) {
        Namespace ns = req.ns;
        BackendLane lane = ns == null ? req.sq().controller().subsystem().flushAllLane()
                : kind == BackendKind.SPACE ? ns.spaceLane() : kind == BackendKind.DATA ? ns.dataLane() : ns.flushLane();
        BackendTicket ticket = new BackendTicket(req, call, failure, lane, ns, kind != BackendKind.FLUSH_OF_STORED_WRITE);
        if (!ticket.enter()) {
            req.errorLocation = Command.NSID;
            req.complete(Status.INVALID_NAMESPACE | Status.DNR); // removed, and its backend closed meanwhile
            return;
        }
        req.backendTicket = ticket;
        try {
            lane.submit(ticket, backendWork);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            ticket.refuse(); // the target is shutting down
        }
    }

    /** Backend work waiting for a thread, over every lane of {@code namespaces}, for tests and the admin view. */
    public static int backendWorkWaiting(Collection<Namespace> namespaces) {
        int n = 0;
        for (Namespace ns : namespaces) {
            n += ns.spaceLane().waiting() + ns.flushLane().waiting() + ns.dataLane().waiting();
        }
        return n;
    }

    /** Runs work that may block (a flush at controller shutdown) on a backend thread; at target shutdown, here. */
    void runBackendWork(Runnable work) {
        try {
            backendWork.execute(work);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            work.run(); // the target is stopping: do it here rather than leave a shutdown incomplete
        }
    }

    /** Lets backend work already started finish (before backends close); takes no more. */
    public void stopBackendWork(long timeoutMs) {
        authWork.shutdownNow();
        housekeeping.shutdownNow();
        backendWork.shutdown();
        try {
            if (!backendWork.awaitTermination(timeoutMs, TimeUnit.MILLISECONDS)) {
                LOG.warn("backend work still running after {} ms at shutdown", timeoutMs);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Fills the CQE and hands the request to the transport (Linux {@code nvmet_req_complete}). */
    public void complete(Request req) {
        SubmissionQueue sq = req.sq();
        if (req.holdsAuthentication) {
            req.holdsAuthentication = false;
            sq.authenticationBusy(false);
        }
        int status = req.status;
        if (status != Status.SUCCESS) {
            Controller c = sq.controller();
            if (c != null && Status.code(status) != Status.ABORT_SQ_DELETED) {
                c.recordError(sq.qid() < 0 ? 0 : sq.qid(), req.cmd.cid(), status, req.errorLocation,
                        req.ns != null ? req.cmd.slba() : 0, req.cmd.nsid());
            }
        }
        req.cqe.result64(req.result);
        req.cqe.sqhd(sq.advanceHead());
        req.cqe.sqid(Math.max(sq.qid(), 0));
        req.cqe.cid(req.cmd.cid());
        req.cqe.status(status);
        if (req.ns != null && sq.qid() > 0) {
            sq.recordIo(req.ns, req.cmd.opcode(), req.transferLength, status, System.nanoTime() - req.startNanos);
        }
        sq.transport().queueResponse(req);
    }
}

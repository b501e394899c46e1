package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.util.ArrayDeque;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A controller of the dynamic model: created by an admin-queue Connect, bound to one host, torn down when its admin
 * queue goes away, when the host shuts it down or resets it, or when its keep-alive timer expires.
 *
 * <p>Registers and features change only on the admin queue's thread; I/O queues read them. Asynchronous events may be
 * raised from any thread and are delivered on the admin queue's thread.
 */
public final class Controller {
    private static final Logger LOG = LoggerFactory.getLogger(Controller.class);

    public static final int AER_LIMIT = 4;
    public static final int ERROR_LOG_ENTRIES = 64;

    private final TargetCore core;
    private final Subsystem subsystem;
    private final int cntlid;
    private final String hostNqn;
    private final byte[] hostId;
    private final SubmissionQueue adminQueue;
    private final AtomicReferenceArray<SubmissionQueue> queues;
    private final AtomicBoolean dead = new AtomicBoolean();

    private volatile long kato;
    private volatile long lastTrafficNanos = System.nanoTime();
    private volatile long cc;
    private volatile long csts;
    private volatile int grantedIoQueues;
    private int asyncEventConfig;
    /**
     * The Volatile Write Cache feature's WCE: while it is off, every write is made durable before it completes, as if
     * it carried FUA (the host asked for write-through). Read by the I/O queues' threads.
     */
    private volatile boolean writeCacheEnabled = true;

    // Asynchronous events: admin-queue thread only.
    private final ArrayDeque<Request> parkedAers = new ArrayDeque<>();
    private boolean nsChangePending;
    private boolean nsChangeMasked;
    private boolean anaChangePending;
    private boolean anaChangeMasked;
    private boolean discoveryChangePending;
    private boolean discoveryChangeMasked;
    private final TreeSet<Long> changedNamespaces = new TreeSet<>();
    private final ReservationNotices reservationNotices = new ReservationNotices();

    // Error log: rare, so a lock is fine here.
    private final long[][] errorLog = new long[ERROR_LOG_ENTRIES][];
    private long errorCount;

    Controller(TargetCore core, Subsystem subsystem, int cntlid, String hostNqn, byte[] hostId, SubmissionQueue adminQueue,
            long kato, int maxIoQueues) {
        this.core = core;
        this.subsystem = subsystem;
        this.cntlid = cntlid;
        this.hostNqn = hostNqn;
        this.hostId = hostId.clone();
        this.hostUuid = uuidOf(hostId);
        this.adminQueue = adminQueue;
        this.kato = kato;
        this.queues = new AtomicReferenceArray<>(maxIoQueues + 1);
        this.queues.set(0, adminQueue);
        this.grantedIoQueues = maxIoQueues;
        this.connectedAt = java.time.Instant.now();
        // The port the host came through (nvmet's ctrl->port): its ANA states are what this controller reports.
        this.anaStates = core.ana().of(adminQueue.transport().listener());
    }

    private final PortAnaStates anaStates;

    /** The ANA states of the port this controller's host connected through. */
    public PortAnaStates anaStates() { return anaStates; }

    private final java.time.Instant connectedAt;
    /** The host ID as a value: the key of the host's reservation registrations, compared on the I/O path. */
    private final java.util.UUID hostUuid;

    /** Whether this controller's host proved who it is (DH-HMAC-CHAP on its admin queue, or TLS with its own PSK). */
    private volatile boolean proven;

    public boolean proven() { return proven; }

    /** Its host proved who it is (see {@link TargetCore#hostProven}). */
    public void markProven() { proven = true; }

    /** A 16-byte Host ID as a value. */
    public static java.util.UUID uuidOf(byte[] id) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(id);
        return new java.util.UUID(b.getLong(0), b.getLong(8));
    }

    public java.util.UUID hostUuid() { return hostUuid; }

    /** When the admin queue's Connect created this controller. */
    public java.time.Instant connectedAt() { return connectedAt; }

    public int cntlid() { return cntlid; }
    public Subsystem subsystem() { return subsystem; }
    public String hostNqn() { return hostNqn; }
    public byte[] hostId() { return hostId.clone(); }
    public boolean isDiscovery() { return subsystem.isDiscovery(); }
    public TargetCore core() { return core; }
    public boolean isDead() { return dead.get(); }
    public SubmissionQueue adminQueue() { return adminQueue; }

    public long kato() { return kato; }
    public void kato(long ms) { kato = ms; }
    long idleNanos(long now) { return now - lastTrafficNanos; }

    /**
     * The host sent something on one of this controller's queues, read {@code now} (keep-alive is traffic based, as
     * nvmet's). Returns false, and tears the controller down, when the controller is gone or its keep-alive had already
     * expired when the traffic was read: the target (or the network) stalled past the deadline, and the host, which
     * heard nothing for as long, has given this association up and may have written the same blocks through another
     * path since. What waited in the socket meanwhile must then never run (a paused target that resumed used to run
     * it, overwriting writes the host had since acknowledged through the other path). A caller that gets false drops
     * what it read.
     */
    public boolean trafficReceived(long now) {
        if (!mayRun(now)) {
            return false;
        }
        lastTrafficNanos = now;
        return true;
    }

    /**
     * Whether work of this controller may still start {@code now}: a command, a device request it hands to the
     * io_uring, backend work a thread takes up. False when the controller is gone, or when its keep-alive deadline has
     * passed (then it is torn down here): a target that stalled (SIGSTOP, a GC or VM pause) between taking a command
     * and starting its I/O must not start it once its host has given the association up. Any thread.
     */
    public boolean mayRun(long now) {
        if (dead.get()) {
            return false;
        }
        long idle = idleNanos(now);
        if (keepAliveExpiredAfter(idle)) {
            LOG.warn("controller {} of {} (host {}): {} ms after its last traffic, past the keep-alive deadline of {} ms"
                    + " (KATO {} ms): the target or the network stalled; the host has given this association up, so"
                    + " nothing of it runs from now on", cntlid, subsystem.nqn(), Nqn.display(hostNqn),
                    java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(idle), keepAliveDeadlineMs(), kato);
            teardown("keep-alive timeout expired (found past the deadline after a stall)");
            return false;
        }
        return true;
    }

    /**
     * How long this controller lives without traffic: twice its KATO rounded up to whole seconds, or 0 (never expires)
     * when KATO is 0. Linux nvmet's timer fires every KATO and ends the controller only after a whole period without
     * traffic, so it allows between one and two KATO; this is never stricter, and it is what a host must wait (with
     * the Command Quiesce Time) before it may assume nothing of an association it lost can still run (TP4129).
     */
    public long keepAliveDeadlineMs() {
        long ms = kato;
        return ms <= 0 ? 0 : 2000 * ((ms + 999) / 1000);
    }

    /** Whether {@code idleNanos} without traffic is past the keep-alive deadline. */
    boolean keepAliveExpiredAfter(long idleNanos) {
        long deadline = keepAliveDeadlineMs();
        return deadline > 0 && idleNanos > java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(deadline);
    }

    public long cc() { return cc; }
    public long csts() { return csts; }
    public boolean ready() { return ControllerRegisters.cstsReady(csts) && ControllerRegisters.ccEnabled(cc); }

    public int grantedIoQueues() { return grantedIoQueues; }
    public void grantedIoQueues(int n) { grantedIoQueues = n; }
    public int maxIoQueues() { return queues.length() - 1; }
    public int asyncEventConfig() { return asyncEventConfig; }
    public void asyncEventConfig(int v) { asyncEventConfig = v; }
    public boolean writeCacheEnabled() { return writeCacheEnabled; }
    public void writeCacheEnabled(boolean on) { writeCacheEnabled = on; }

    /** CAP as this controller reports it. */
    public long cap() {
        return ControllerRegisters.cap(core.limits().maxQueueSize(), TargetCore.READY_TIMEOUT_500MS);
    }

    /**
     * Applies a host write to CC (Linux {@code nvmet_update_cc}): enable sets CSTS.RDY (or CFS for an unsupported
     * configuration), disable resets the controller, a shutdown notification completes at once.
     */
    public synchronized void writeCc(long value) {
        long old = cc;
        cc = value;
        boolean wasEnabled = ControllerRegisters.ccEnabled(old);
        boolean enabled = ControllerRegisters.ccEnabled(value);
        if (enabled && !wasEnabled) {
            resetPending = false; // enabled again before a reset completed (the host did not wait for RDY 0)
            // As nvmet: queue entry sizes matter only to controllers with I/O queues, and CSS may name the NVM
            // command set (0) or "all supported I/O command sets" (6), which here is the NVM command set alone.
            boolean entrySizesOk = isDiscovery()
                    || ControllerRegisters.ccIosqes(value) == 6 && ControllerRegisters.ccIocqes(value) == 4;
            int css = ControllerRegisters.ccCss(value);
            if (!entrySizesOk || ControllerRegisters.ccMps(value) != 0 || (css != 0 && css != 6)
                    || ((value >>> 11) & 0x7) != 0) {
                LOG.warn("controller {}: host enabled with unsupported CC {}; reporting controller fatal status", cntlid,
                        Long.toHexString(value));
                csts = ControllerRegisters.CSTS_CFS;
                return;
            }
            csts = ControllerRegisters.CSTS_RDY;
        } else if (!enabled && wasEnabled) {
            // The reset completes (CSTS.RDY reads 0, which the host waits for) only once nothing of the association can
            // still change the media: every I/O queue closed and the backend work they handed off done.
            LOG.info("controller {}: reset by host (CC.EN 1 -> 0)", cntlid);
            resetPending = true;
            closeIoQueues("controller reset");
            maybeFinishPending();
        }
        int shn = ControllerRegisters.ccShn(value);
        if (shn != ControllerRegisters.SHN_NONE && ControllerRegisters.ccShn(old) == ControllerRegisters.SHN_NONE) {
            // Complete only once nothing can still change the media: every I/O queue closed (a write running on
            // another poll group finishes first), the backend work they handed off done, and then the flush. Until
            // then the host, polling CSTS, sees "shutdown processing occurring".
            if (!subsystem.quiet()) {
                LOG.info("controller {}: shutdown notification from {}", cntlid, Nqn.display(hostNqn));
            }
            csts = (csts & ~0xCL) | (long) ControllerRegisters.SHST_OCCURRING << 2;
            shutdownPending = true;
            closeIoQueues("controller shutdown");
            maybeFinishPending();
        } else if (shn == ControllerRegisters.SHN_NONE && ControllerRegisters.ccShn(old) != ControllerRegisters.SHN_NONE) {
            csts &= ~0xCL;
        }
    }

    /**
     * Flushes every namespace, each even when another failed; returns how many failed (each logged). A failure is the
     * host's data not made durable, which nothing else would tell it.
     */
    private int flushNamespaces() {
        int failed = 0;
        for (Namespace ns : subsystem.namespaces()) {
            try {
                ns.flushBackend();
            } catch (java.io.IOException | RuntimeException e) {
                failed++;
                LOG.error("controller {} of {}: flushing namespace {} ({}) at shutdown failed: {}; its data written"
                        + " since the last flush may not be durable", cntlid, subsystem.nqn(), ns.nsid(),
                        ns.backend().describe(), e.toString());
            }
        }
        return failed;
    }

    /** Set by CC.SHN until the I/O queues are gone, their backend work done, and the namespaces flushed. */
    private volatile boolean shutdownPending;
    /** Set by CC.EN 1 -> 0 until the I/O queues are gone and their backend work done; then CSTS.RDY reads 0. */
    private volatile boolean resetPending;
    /** Requests of this controller's queues with a backend lane (queued or running). */
    private final java.util.concurrent.atomic.AtomicInteger backendWorkInFlight = new java.util.concurrent.atomic.AtomicInteger();

    void backendWorkStarted() {
        backendWorkInFlight.incrementAndGet();
    }

    void backendWorkDone() {
        if (backendWorkInFlight.decrementAndGet() == 0) {
            maybeFinishPending();
        }
    }

    /**
     * Whether nothing of this controller's I/O can change the media any more: no I/O queue is connected (a command
     * running on a queue's poll group finishes before that queue's close is taken) and no backend work is queued or
     * running for it.
     */
    public boolean drained() {
        return connectedIoQueues() == 0 && backendWorkInFlight.get() == 0;
    }

    /**
     * Any thread: once drained, completes a pending reset (CSTS.RDY reads 0) and a pending shutdown (the namespaces
     * are flushed, then CSTS.SHST reads complete), and tells the core a torn-down controller is done with.
     */
    void maybeFinishPending() {
        if (!resetPending && !shutdownPending && !dead.get() || !drained()) {
            return;
        }
        if (resetPending) {
            synchronized (this) {
                if (resetPending) {
                    resetPending = false;
                    csts = shutdownPending ? csts & 0xCL : 0;
                }
            }
        }
        if (shutdownPending) {
            synchronized (this) {
                if (shutdownPending) {
                    shutdownPending = false;
                    core.runBackendWork(this::finishShutdown);
                }
            }
        }
        if (dead.get()) {
            core.controllerDrained(this);
        }
    }

    /** A backend thread: the flush of a shutdown, then SHST complete (with CFS when a namespace failed to flush). */
    private void finishShutdown() {
        int failed = flushNamespaces();
        synchronized (this) { // CSTS changes under this monitor, as CC writes make them
            long status = (csts & ~0xCL) | (long) ControllerRegisters.SHST_COMPLETE << 2;
            if (failed > 0) {
                // Shutdown has no status of its own; Controller Fatal Status is how a controller reports an error it
                // cannot return in a completion, so a host checking CSTS learns that its data may not be durable.
                status |= ControllerRegisters.CSTS_CFS;
            }
            csts = status;
        }
        if (!subsystem.quiet() || failed > 0) {
            LOG.info("controller {}: shutdown complete{}", cntlid, failed > 0 ? " (" + failed
                    + " namespace(s) failed to flush: CSTS.CFS set)" : "");
        }
    }

    /** Binds an I/O queue; returns a status (the caller has checked the QID's range). */
    int attachQueue(int qid, SubmissionQueue sq) {
        if (!queues.compareAndSet(qid, null, sq)) {
            return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
        }
        if (dead.get() || resetPending || !ready()) {
            // Torn down, or reset (CC.EN 0) since the Connect was checked: a drain that counted this queue while it
            // was attached must learn it is gone, or the controller would never read as drained.
            queues.compareAndSet(qid, sq, null);
            maybeFinishPending();
            return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
        }
        return Status.SUCCESS;
    }

    void detachQueue(SubmissionQueue sq) {
        pendingQueues.remove(sq);
        int qid = sq.qid();
        if (qid > 0 && qid < queues.length()) {
            queues.compareAndSet(qid, sq, null);
            maybeFinishPending();
        }
    }

    /**
     * I/O queues connected but not yet authenticated: they take their QID's slot only once they have (issue 51: a
     * peer that knew the host NQN and the controller ID connected QID 1 first and held it, unauthenticated, for the 60 s
     * deadline, while the real host's Connect for it was refused). Several may wait for one QID; the first to
     * authenticate takes it, the others are closed as they finish.
     */
    private final java.util.Set<SubmissionQueue> pendingQueues = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * An I/O queue that must authenticate before it serves: checked like {@link #attachQueue} (the QID free of an
     * authenticated queue, the controller enabled) but left out of the slot until {@link #attachAuthenticated}.
     */
    int attachPending(int qid, SubmissionQueue sq) {
        if (queues.get(qid) != null || dead.get() || resetPending || !ready()) {
            return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
        }
        pendingQueues.add(sq);
        if (dead.get()) { // torn down meanwhile: its close sweep may have missed this one
            pendingQueues.remove(sq);
            return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
        }
        return Status.SUCCESS;
    }

    /**
     * A pending I/O queue authenticated: it takes its QID's slot. False (the caller closes it) when another queue took
     * the slot first, or the controller has gone.
     */
    public boolean attachAuthenticated(SubmissionQueue sq) {
        if (!pendingQueues.remove(sq)) {
            return true; // attached at Connect (no authentication was pending), or re-authenticating
        }
        return attachQueue(sq.qid(), sq) == Status.SUCCESS;
    }

    /** Runs {@code action} for each I/O queue connected and still authenticating (see {@link #attachPending}). */
    void forEachPendingQueue(java.util.function.Consumer<SubmissionQueue> action) {
        pendingQueues.forEach(action);
    }

    public SubmissionQueue queue(int qid) {
        return qid >= 0 && qid < queues.length() ? queues.get(qid) : null;
    }

    /** The queues connected now, admin queue first (read racily: a queue may close meanwhile). */
    public java.util.List<SubmissionQueue> queues() {
        java.util.List<SubmissionQueue> out = new java.util.ArrayList<>();
        for (int qid = 0; qid < queues.length(); qid++) {
            SubmissionQueue q = queues.get(qid);
            if (q != null) {
                out.add(q);
            }
        }
        return out;
    }

    public int connectedIoQueues() {
        int n = 0;
        for (int i = 1; i < queues.length(); i++) {
            if (queues.get(i) != null) {
                n++;
            }
        }
        return n;
    }

    private void closeIoQueues(String reason) {
        for (int i = 1; i < queues.length(); i++) {
            SubmissionQueue q = queues.get(i);
            if (q != null) {
                q.transport().close(reason);
            }
        }
    }

    private volatile long tornDownNanos;

    /** When {@link #teardown} ended this controller (System.nanoTime), for the quiesce time it took. */
    long tornDownNanos() { return tornDownNanos; }

    /** Tears the controller down: closes every queue, frees the controller ID. Idempotent, any thread. */
    public void teardown(String reason) {
        if (!dead.compareAndSet(false, true)) {
            return;
        }
        tornDownNanos = System.nanoTime();
        if (!subsystem.quiet()) {
            LOG.info("controller {} of {} (host {}) torn down: {}", cntlid, subsystem.nqn(), Nqn.display(hostNqn), reason);
        }
        for (SubmissionQueue q : pendingQueues) {
            q.transport().close(reason);
        }
        for (int i = queues.length() - 1; i >= 0; i--) {
            SubmissionQueue q = queues.get(i);
            if (q != null) {
                q.transport().close(reason);
            }
        }
        core.controllerGone(this);
    }

    // ---- Asynchronous events ----

    /** Parks an Asynchronous Event Request until an event occurs; returns false past the limit. Admin thread. */
    public boolean parkAer(Request r) {
        if (parkedAers.size() >= AER_LIMIT) {
            return false;
        }
        parkedAers.add(r);
        deliverEvents();
        return true;
    }

    /** Completes a parked Asynchronous Event Request with Command Abort Requested; false when {@code r} is not one. */
    boolean abortAer(Request r) {
        if (!parkedAers.remove(r)) {
            return false;
        }
        r.complete(Status.ABORT_REQUESTED);
        return true;
    }

    /** Records a namespace change and raises a Namespace Attribute Changed notice if enabled. Any thread. */
    public void namespaceChanged(long nsid) {
        adminQueue.transport().execute(() -> {
            if (changedNamespaces.size() < 1024) {
                changedNamespaces.add(nsid);
            } else {
                changedNamespaces.clear();
                changedNamespaces.add(0xFFFF_FFFFL);
            }
            if ((asyncEventConfig & Features.AEC_NS_ATTRIBUTE) != 0 && !nsChangeMasked) {
                nsChangePending = true;
                deliverEvents();
            }
        });
    }

    /**
     * The discovery log changed (a subsystem, listener or allowed host came or went): a discovery controller that
     * enabled the notice gets one, then no more until its host reads the log (as nvmet and SPDK do). Any thread.
     */
    public void discoveryLogChanged() {
        adminQueue.transport().execute(() -> {
            if ((asyncEventConfig & Features.AEC_DISCOVERY_LOG_CHANGE) != 0 && !discoveryChangeMasked) {
                discoveryChangePending = true;
                deliverEvents();
            }
        });
    }

    /**
     * An ANA group's state changed on this controller's port: an ANA Change notice if enabled, then no more until the
     * host reads the ANA log without retaining the event (as nvmet masks its AENs). Any thread.
     */
    public void anaChanged() {
        try {
            adminQueue.transport().execute(() -> {
                if ((asyncEventConfig & Features.AEC_ANA_CHANGE) != 0 && !anaChangeMasked) {
                    anaChangePending = true;
                    deliverEvents();
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("controller {}: closing, no ANA change notice", cntlid); // its host reads the log when back
        }
    }

    /** The host read the ANA log without retaining the event: the next change is told again. Admin thread. */
    public void anaLogRead() {
        anaChangeMasked = false;
    }

    /** The host read the discovery log without retaining the event: the next change is told again. Admin thread. */
    public void discoveryLogRead() {
        discoveryChangeMasked = false;
    }

    private void deliverEvents() {
        if (discoveryChangePending && !parkedAers.isEmpty()) {
            discoveryChangePending = false;
            discoveryChangeMasked = true;
            parkedAers.poll().completeWithResult(Features.asyncEvent(Features.AER_TYPE_NOTICE,
                    Features.AER_INFO_DISCOVERY_LOG_CHANGED, Opcodes.LOG_DISCOVERY) & 0xFFFF_FFFFL);
        }
        if (anaChangePending && !parkedAers.isEmpty()) {
            anaChangePending = false;
            anaChangeMasked = true;
            parkedAers.poll().completeWithResult(Features.asyncEvent(Features.AER_TYPE_NOTICE,
                    Features.AER_INFO_ANA_CHANGE, Opcodes.LOG_ANA) & 0xFFFF_FFFFL);
        }
        if (nsChangePending && !parkedAers.isEmpty()) {
            nsChangePending = false;
            nsChangeMasked = true;
            Request r = parkedAers.poll();
            r.completeWithResult(Features.asyncEvent(Features.AER_TYPE_NOTICE, Features.AER_INFO_NS_ATTRIBUTE_CHANGED,
                    Opcodes.LOG_CHANGED_NAMESPACE_LIST) & 0xFFFF_FFFFL);
        }
        if (!parkedAers.isEmpty() && reservationNotices.takeEvent()) {
            parkedAers.poll().completeWithResult(Features.asyncEvent(Features.AER_TYPE_IO_COMMAND_SPECIFIC,
                    Features.AER_INFO_RESERVATION_LOG_AVAILABLE, Opcodes.LOG_RESERVATION_NOTIFICATION) & 0xFFFF_FFFFL);
        }
    }

    /**
     * A reservation notice for this controller's host on namespace {@code nsid}: queued in its Reservation
     * Notification log, and an Asynchronous Event (I/O command specific, log 80h) when one is due. Any thread.
     */
    public void reservationNotice(long nsid, int type) {
        try {
            adminQueue.transport().execute(() -> {
                if (reservationNotices.add(nsid, type)) {
                    deliverEvents();
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("controller {}: closing, reservation notice dropped", cntlid); // the association ends anyway
        }
    }

    /** The Reservation Notification masks (and log, for tests). Admin thread. */
    public ReservationNotices reservationNotices() { return reservationNotices; }

    /**
     * Get Log Page 80h: the oldest unread notice, then gone; without {@code retain} a notice still unread raises the
     * next event. Admin thread.
     */
    public byte[] readReservationLog(boolean retain) {
        byte[] log = reservationNotices.read(retain);
        deliverEvents();
        return log;
    }

    /** Returns and (unless {@code retain}) clears the changed namespace list, unmasking the notice. Admin thread. */
    public long[] takeChangedNamespaces(boolean retain) {
        long[] list = changedNamespaces.stream().mapToLong(Long::longValue).toArray();
        if (!retain) {
            changedNamespaces.clear();
            nsChangeMasked = false;
        }
        return list;
    }

    /** Drops parked AERs without completing them (their queue is closing; the requests are released with it). */
    void dropAers() {
        parkedAers.clear();
    }

    // ---- Error log ----

    /** Records a failed command: {error count, sqid, cid, status, location, lba, nsid}. */
    public synchronized void recordError(int sqid, int cid, int status, int location, long lba, long nsid) {
        errorCount++;
        errorLog[(int) ((errorCount - 1) % ERROR_LOG_ENTRIES)] = new long[] {errorCount, sqid, cid, status, location, lba, nsid};
    }

    /** Error log entries, newest first. */
    public synchronized long[][] errorLogNewestFirst() {
        int n = (int) Math.min(errorCount, ERROR_LOG_ENTRIES);
        long[][] out = new long[n][];
        for (int i = 0; i < n; i++) {
            out[i] = errorLog[(int) ((errorCount - 1 - i) % ERROR_LOG_ENTRIES)];
        }
        return out;
    }

    public synchronized long errorCount() {
        return errorCount;
    }

    /** Sums the SMART counters over this controller's queues: {reads, writes, bytesRead, bytesWritten}. */
    public long[] ioCounters() {
        long[] c = new long[4];
        for (int i = 0; i < queues.length(); i++) {
            SubmissionQueue q = queues.get(i);
            if (q != null) {
                c[0] += q.readCommands;
                c[1] += q.writeCommands;
                c[2] += q.bytesRead;
                c[3] += q.bytesWritten;
            }
        }
        return c;
    }
}

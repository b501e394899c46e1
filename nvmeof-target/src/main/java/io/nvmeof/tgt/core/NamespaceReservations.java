package io.nvmeof.tgt.core;

import static io.nvmeof.protocol.reservation.Reservations.EXCLUSIVE_ACCESS;
import static io.nvmeof.protocol.reservation.Reservations.EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
import static io.nvmeof.protocol.reservation.Reservations.EXCLUSIVE_ACCESS_REGISTRANTS_ONLY;
import static io.nvmeof.protocol.reservation.Reservations.WRITE_EXCLUSIVE;
import static io.nvmeof.protocol.reservation.Reservations.WRITE_EXCLUSIVE_ALL_REGISTRANTS;
import static io.nvmeof.protocol.reservation.Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.reservation.Reservations;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A namespace's reservation and its registrants (NVMe Base 2.0 section 8.19), shared by every controller of the
 * subsystem. Registrants are hosts, keyed by their 128-bit host identifier from Connect: every controller of one host
 * shares its registration, and it outlives the host's associations (a host that disconnects stays registered, and a
 * holder keeps its reservation).
 *
 * <p>Changes come from reservation commands on any poll group and are made under this object's monitor; each change
 * publishes an immutable {@link Held} that the I/O path reads with one volatile load, so a namespace with no
 * reservation (the common case) costs each command a null check: no lock, no allocation. Notices for other hosts are
 * returned to the caller, which delivers them once the change is made.
 */
public final class NamespaceReservations {
    private static final Logger LOG = LoggerFactory.getLogger(NamespaceReservations.class);
    private static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;
    private static final int INVALID_FIELD = Status.INVALID_FIELD | Status.DNR;

    /** A registrant: a host and its reservation key. */
    public record Registrant(UUID host, long key) {
    }

    /** A notice for every controller of {@code host}: one of {@link Reservations}' NOTICE_ types. */
    public record Notice(UUID host, int type) {
    }

    /**
     * Everything Reservation Report tells and the state file keeps, as one value: the generation, the reservation type
     * (0: none), its holder (null for none and for the all-registrants types, where every registrant holds it), the
     * registrants in the order they registered, and whether it all persists through power loss.
     */
    public record State(long generation, int type, UUID holder, List<Registrant> registrants,
            boolean persistThroughPowerLoss) {
        public State {
            registrants = List.copyOf(registrants);
        }

        /** Whether {@code host} holds the reservation (with the all-registrants types, any registrant does). */
        public boolean holds(UUID host) {
            return type != 0 && (Reservations.allRegistrants(type) ? isRegistrant(host) : host.equals(holder));
        }

        public boolean isRegistrant(UUID host) {
            return registrants.stream().anyMatch(r -> r.host().equals(host));
        }
    }

    /** Where a namespace's state persists while PTPL is on (see {@link ReservationStore}). */
    public interface Store {
        /** The saved state, or null when none is saved for this namespace. */
        State load() throws IOException;

        void save(State state) throws IOException;

        void delete() throws IOException;
    }

    /**
     * What the I/O path reads: a held reservation, its holder and the registrants, immutable. Null while none is held.
     */
    private record Held(int type, UUID holder, Set<UUID> registrants) {
        /** What a namespace whose saved state could not be read holds: nothing reaches its media (fail closed). */
        static final Held UNKNOWN = new Held(-1, null, Set.of());

        boolean allows(UUID host, int opcode) {
            int group = commandGroup(opcode);
            if (type == -1) {
                return false;
            }
            if (group == OTHER) {
                return true; // reservation commands check their keys themselves; nothing else reaches the media
            }
            boolean registrant = registrants.contains(host);
            if (Reservations.allRegistrants(type) ? registrant : host.equals(holder)) {
                return true;
            }
            // NVMe Base 2.0 Figure 8.19 ("Command Behavior in the Presence of a Reservation") for a host that does
            // not hold the reservation: its read and write command groups, as a registrant or not.
            switch (type) {
                case WRITE_EXCLUSIVE:
                    return group == READ_GROUP;
                case EXCLUSIVE_ACCESS:
                    return false;
                case WRITE_EXCLUSIVE_REGISTRANTS_ONLY:
                case WRITE_EXCLUSIVE_ALL_REGISTRANTS:
                    return group == READ_GROUP || registrant;
                case EXCLUSIVE_ACCESS_REGISTRANTS_ONLY:
                case EXCLUSIVE_ACCESS_ALL_REGISTRANTS:
                    return registrant;
                default:
                    return true;
            }
        }
    }

    private static final int OTHER = 0;
    private static final int READ_GROUP = 1;
    private static final int WRITE_GROUP = 2;

    /** The spec's command groups: reads (Read, Compare) and writes (Write, Write Zeroes, Dataset Management, Flush). */
    static int commandGroup(int opcode) {
        switch (opcode) {
            case Opcodes.IO_READ:
            case Opcodes.IO_COMPARE:
                return READ_GROUP;
            case Opcodes.IO_WRITE:
            case Opcodes.IO_WRITE_ZEROES:
            case Opcodes.IO_DATASET_MANAGEMENT:
            case Opcodes.IO_FLUSH:
                return WRITE_GROUP;
            default:
                return OTHER;
        }
    }

    private final long nsid;
    private volatile Held held;
    private volatile State state;

    // Under this monitor.
    private final LinkedHashMap<UUID, Long> registrants = new LinkedHashMap<>();
    private int type;
    private UUID holder;
    private long generation;
    private boolean persistThroughPowerLoss;
    /** Read without the monitor (Identify Namespace's RESCAP on a poll group): never waits for a save. */
    private volatile Store store;
    /** Whether a change now must be saved (PTPL on): read by the queue deciding where a command runs. */
    private volatile boolean saving;
    /** Why every command is refused (the saved state could not be read); null normally. */
    private volatile String refusedBecause;

    /** Where the state is shared with the other targets of the subsystem ({@link SharedReservations}); else null. */
    private volatile SharedReservations.Store shared;
    /**
     * When this process last began a read of the shared state that succeeded (System.nanoTime): commands run on the
     * namespace only within {@link SharedReservations#LEASE_NANOS} of it.
     */
    private volatile long sharedReadAt;
    // Under this monitor: the newest shared epoch applied here, the changes that state kept, and the newest epoch
    // whose changes by other processes were delivered here (notices, aborts).
    private long sharedEpoch;
    private List<SharedReservations.Change> sharedChanges = List.of();
    private long noticedEpoch;
    // Under this monitor, while a shared change runs: what its commit writes with it, and the epoch it wrote.
    private UUID pendingIssuer;
    private boolean pendingAbort;
    private List<Notice> pendingNotices;
    private long writtenEpoch;

    public NamespaceReservations(long nsid) {
        this.nsid = nsid;
        this.state = new State(0, 0, null, List.of(), false);
    }

    // ---- the I/O path ----

    /**
     * Success, or Reservation Conflict when the namespace's reservation denies {@code host} the command; with the state
     * shared among targets and not read for a lease ({@code now}: System.nanoTime), ANA Transition (no DNR: a host
     * retries, or takes another path) rather than run on a state another target may have changed.
     */
    public int checkAccess(UUID host, int opcode) {
        return checkAccess(host, opcode, System.nanoTime());
    }

    /** {@link #checkAccess(UUID, int)} at {@code now} (System.nanoTime), as the I/O path has it already. */
    public int checkAccess(UUID host, int opcode, long now) {
        if (shared != null && now - sharedReadAt > SharedReservations.LEASE_NANOS) {
            return Status.ANA_TRANSITION;
        }
        Held h = held;
        if (h == null || h.allows(host, opcode)) {
            return Status.SUCCESS;
        }
        return CONFLICT;
    }

    /** The state as of the last change (Reservation Report, tests). */
    public State state() {
        return state;
    }

    // ---- persistence ----

    /** Whether a store is attached: Persist Through Power Loss can be turned on (RESCAP bit 0). */
    public boolean canPersist() {
        return store != null || shared != null;
    }

    /** Whether the state is shared with the other targets of the subsystem. */
    public boolean isShared() {
        return shared != null;
    }

    /**
     * Takes the state from where the subsystem's targets share it ({@link SharedReservations}), and from now on
     * changes it there and reads it there. Throws when it cannot be read (the caller refuses every command).
     */
    public synchronized void attachShared(SharedReservations.Store s) throws IOException {
        long readAt = System.nanoTime();
        SharedReservations.Snapshot snap = s.first();
        if (snap != null) {
            restore(snap.state());
            sharedEpoch = snap.epoch();
            sharedChanges = snap.changes();
            noticedEpoch = snap.epoch();
        }
        holder = Reservations.allRegistrants(type) ? null : holder;
        shared = s;
        sharedReadAt = readAt;
        publish();
        if (snap != null) {
            LOG.info("namespace {}: {} registrant(s) and reservation '{}' taken from the shared state {}", nsid,
                    registrants.size(), Reservations.typeName(type), s.file());
        }
    }

    /**
     * The shared state as read ({@code s}, null for none) by a read that began at {@code readAt}: a newer epoch is
     * applied, the lease renewed; returns the changes made by processes other than {@code self} that were not yet
     * delivered here (their notices, their aborts), oldest first.
     */
    synchronized List<SharedReservations.Change> applyShared(SharedReservations.Snapshot s, long readAt, String self) {
        long epoch = s == null ? 0 : s.epoch();
        if (epoch < sharedEpoch) {
            // Removed or put back older by hand while targets use it: what other targets hold now is unknown. Fail
            // closed (the lease runs out: ANA Transition) until every target of the subsystem restarts.
            throw new IllegalStateException("the shared reservation state went back from epoch " + sharedEpoch + " to "
                    + epoch + " (removed or restored while in use); restart every target of the subsystem");
        }
        if (s == null) {
            if (readAt - sharedReadAt > 0) {
                sharedReadAt = readAt;
            }
            return List.of();
        }
        if (s.epoch() > sharedEpoch) {
            restore(s.state());
            sharedEpoch = s.epoch();
            sharedChanges = s.changes();
            publish();
        }
        List<SharedReservations.Change> fresh = new ArrayList<>();
        long oldestKept = s.changes().isEmpty() ? s.epoch() + 1 : s.changes().get(0).epoch();
        if (s.epoch() > noticedEpoch && oldestKept > noticedEpoch + 1) {
            // Changes this process never saw were trimmed from the state (it read seldom, or was stopped): one of them
            // may have been a Preempt and Abort. Waited for as one: every host the state now fences.
            fresh.add(new SharedReservations.Change(s.epoch(), "", null, true, List.of()));
        }
        for (SharedReservations.Change c : s.changes()) {
            if (c.epoch() > noticedEpoch && !self.equals(c.member())) {
                fresh.add(c);
            }
        }
        noticedEpoch = Math.max(noticedEpoch, s.epoch());
        if (readAt - sharedReadAt > 0) {
            sharedReadAt = readAt;
        }
        return fresh;
    }

    /**
     * Whether the reservation now denies {@code host} writing to the namespace (whatever the lease): the hosts whose
     * commands a Preempt and Abort waits for.
     */
    public boolean deniesWrite(UUID host) {
        Held h = held;
        return h != null && !h.allows(host, Opcodes.IO_WRITE);
    }

    /**
     * Runs a change: alone, under this monitor; shared, also under the shared lock, from the newest shared state,
     * written there with its notices, and then (outside the monitor) until every other target applied it or its lease
     * ran out. {@code issuer}, {@code abort}: what other targets need to know of it.
     */
    private int change(UUID issuer, boolean abort, List<Notice> notices, java.util.function.IntSupplier body) {
        SharedReservations.Store s = shared;
        if (s == null) {
            synchronized (this) {
                return body.getAsInt();
            }
        }
        int status;
        long epoch;
        // The lock first, outside the monitor: a wait for another target's change must not hold up this process's
        // refresher (which takes the monitor to apply what it read), nor the I/O path's view of the state.
        long readAt = System.nanoTime();
        SharedReservations.Snapshot fresh;
        try {
            fresh = s.lockAndRead();
        } catch (IOException e) {
            LOG.error("namespace {}: the shared reservation state cannot be locked and read: {}; the change is not"
                    + " made", nsid, e.toString());
            return Status.INTERNAL;
        }
        try {
            synchronized (this) {
                if ((fresh == null ? 0 : fresh.epoch()) < sharedEpoch) {
                    LOG.error("namespace {}: the shared reservation state went back to epoch {} from {} (removed or"
                            + " restored while in use); the change is not made", nsid, fresh == null ? 0
                            : fresh.epoch(), sharedEpoch);
                    return Status.INTERNAL;
                }
                if (fresh != null && fresh.epoch() > sharedEpoch) {
                    restore(fresh.state());
                    sharedEpoch = fresh.epoch();
                    sharedChanges = fresh.changes();
                    publish();
                }
                if (readAt - sharedReadAt > 0) {
                    sharedReadAt = readAt;
                }
                pendingIssuer = issuer;
                pendingAbort = abort;
                pendingNotices = notices;
                writtenEpoch = 0;
                try {
                    status = body.getAsInt();
                    epoch = writtenEpoch;
                } finally {
                    pendingNotices = null;
                }
            }
        } finally {
            s.unlock();
        }
        if (epoch > 0) {
            s.awaitOthers(epoch);
        }
        return status;
    }

    /**
     * The saved state could not be read: refuse every command to the namespace (Reservation Conflict) rather than
     * start with no registrants, which would let a host the saved reservation fences write again.
     */
    public synchronized void refuseAll(String why) {
        refusedBecause = why;
        held = Held.UNKNOWN;
    }

    /** Why every command is refused (the saved state could not be taken back), or null. */
    public String refusedBecause() {
        return refusedBecause;
    }

    /** While set, nothing is enforced: the subsystem offers no reservations (see Subsystem#reservationsUnavailable). */
    private volatile boolean suspended;

    /**
     * Stops enforcing the reservation (or enforces it again): a subsystem that offers no reservations refuses the
     * commands that could release one, so one taken before (a saved state, a controller ID range set later) must not
     * fence hosts that can do nothing about it. The state is kept, and enforced again when they are offered again.
     */
    public synchronized void suspend(boolean on) {
        if (suspended != on) {
            suspended = on;
            publish();
        }
    }

    /** Whether any host is registered or a reservation is held. */
    public boolean inUse() {
        State s = state;
        return s.type() != 0 || !s.registrants().isEmpty();
    }

    public boolean persistThroughPowerLoss() {
        return state.persistThroughPowerLoss();
    }

    /**
     * Attaches where the state persists and restores what it saved there (registrants, reservation, PTPL on): the
     * namespace came back with the identity it had when saved.
     */
    public synchronized void attach(Store s) throws IOException {
        State saved = s.load(); // one that cannot be read leaves PTPL off and the file as it is, for inspection
        store = s;
        if (saved == null) {
            return;
        }
        registrants.clear();
        saved.registrants().forEach(r -> registrants.put(r.host(), r.key()));
        type = saved.type(); // checked by the store: a type that exists, its holder registered (ReservationStore.checked)
        holder = saved.holder();
        generation = saved.generation();
        persistThroughPowerLoss = true;
        publish();
        LOG.info("namespace {}: restored {} registrant(s) and reservation '{}' saved with Persist Through Power Loss",
                nsid, registrants.size(), Reservations.typeName(type));
    }

    /**
     * Whether a change made now must be written to the store before it completes (PTPL is on, or {@code cptpl} turns
     * it on or off): such a command runs where it may block.
     */
    public boolean changeIsPersisted(int cptpl) {
        return saving || shared != null
                || store != null && (cptpl == Reservations.CPTPL_SET || cptpl == Reservations.CPTPL_CLEAR);
    }

    /** Set Features Reservation Persistence (83h): turns PTPL on or off; Invalid Field when it cannot persist. */
    public int persistThroughPowerLoss(boolean on) {
        return change(null, false, new ArrayList<>(), () -> {
            if (on && !canPersist()) {
                return INVALID_FIELD;
            }
            persistThroughPowerLoss = on;
            return commit(Status.SUCCESS);
        });
    }

    // ---- Reservation Register ----

    public int register(UUID host, int action, boolean ignoreKey, int cptpl, long currentKey, long newKey,
            List<Notice> notices) {
        return change(host, false, notices, () -> registerLocked(host, action, ignoreKey, cptpl, currentKey, newKey,
                notices));
    }

    private int registerLocked(UUID host, int action, boolean ignoreKey, int cptplAsked, long currentKey, long newKey,
            List<Notice> notices) {
        int cptpl = cptplAsked;
        if (cptpl == 1) {
            return INVALID_FIELD; // 01b is reserved
        }
        if (refusedBecause != null) {
            return CONFLICT;
        }
        if (cptpl == Reservations.CPTPL_SET && !canPersist()) {
            // Linux's own nvme_pr_register asks for PTPL on every register; nvmet, which cannot persist either,
            // takes it and keeps the registration in memory. So do we: RESCAP says PTPL is not supported.
            cptpl = Reservations.CPTPL_NO_CHANGE;
        }
        Long key = registrants.get(host);
        int status;
        switch (action) {
            case Reservations.REGISTER:
                if (key != null) {
                    status = key == newKey ? Status.SUCCESS : CONFLICT; // registering the same key again is no error
                } else if (newKey == 0) {
                    status = INVALID_FIELD; // as SPDK: a zero key could never be told from "no key"
                } else {
                    registrants.put(host, newKey);
                    status = Status.SUCCESS;
                }
                break;
            case Reservations.UNREGISTER:
                if (key == null || !ignoreKey && key != currentKey) {
                    return CONFLICT;
                }
                unregister(host, notices);
                status = Status.SUCCESS;
                break;
            case Reservations.REPLACE:
                if (key == null || !ignoreKey && key != currentKey) {
                    return CONFLICT;
                }
                if (newKey == 0) {
                    return INVALID_FIELD;
                }
                registrants.put(host, newKey); // a holder keeps its reservation under the new key
                status = Status.SUCCESS;
                break;
            default:
                return INVALID_FIELD;
        }
        if (status != Status.SUCCESS) {
            return status;
        }
        generation++; // every Register that succeeds counts (GEN of the Report), even one that changed nothing
        if (cptpl != Reservations.CPTPL_NO_CHANGE) {
            persistThroughPowerLoss = cptpl == Reservations.CPTPL_SET;
        }
        return commit(status);
    }

    /**
     * Removes a registrant. A holder's reservation goes with it, except with the all-registrants types while other
     * registrants remain; the registrants left of a registrants-only reservation are told it was released.
     */
    private void unregister(UUID host, List<Notice> notices) {
        registrants.remove(host);
        if (type == 0) {
            return;
        }
        if (Reservations.allRegistrants(type)) {
            if (registrants.isEmpty()) {
                release();
            }
            return;
        }
        if (host.equals(holder)) {
            int was = type;
            release();
            if (Reservations.registrantsOnly(was)) {
                notifyOthers(host, Reservations.NOTICE_RESERVATION_RELEASED, notices);
            }
        }
    }

    private void release() {
        type = 0;
        holder = null;
    }

    private void notifyOthers(UUID except, int notice, List<Notice> notices) {
        for (UUID other : registrants.keySet()) {
            if (!other.equals(except)) {
                notices.add(new Notice(other, notice));
            }
        }
    }

    // ---- Reservation Acquire ----

    public int acquire(UUID host, int action, int newType, long currentKey, long preemptKey, List<Notice> notices) {
        return change(host, action == Reservations.PREEMPT_AND_ABORT, notices, () -> acquireLocked(host, action,
                newType, currentKey, preemptKey, notices));
    }

    private int acquireLocked(UUID host, int action, int newType, long currentKey, long preemptKey,
            List<Notice> notices) {
        if (refusedBecause != null) {
            return CONFLICT;
        }
        Long key = registrants.get(host);
        if (key == null || key != currentKey) {
            return CONFLICT;
        }
        switch (action) {
            case Reservations.ACQUIRE:
                if (type == 0) {
                    take(host, newType);
                    return commit(Status.SUCCESS);
                }
                // Acquiring again what one holds is no error; anything else held is someone's to release first.
                return type == newType && holds(host) ? Status.SUCCESS : CONFLICT;
            case Reservations.PREEMPT:
            case Reservations.PREEMPT_AND_ABORT: {
                int status = preempt(host, newType, preemptKey, notices);
                if (status == Status.SUCCESS) {
                    generation++; // as every preempt that succeeds
                }
                return commit(status);
            }
            default:
                return INVALID_FIELD;
        }
    }

    private boolean holds(UUID host) {
        return type != 0 && (Reservations.allRegistrants(type) ? registrants.containsKey(host) : host.equals(holder));
    }

    private void take(UUID host, int newType) {
        type = newType;
        holder = Reservations.allRegistrants(newType) ? null : host;
    }

    /** Preempt (NVMe Base 2.0 section 8.19.6 and its figure of preempt cases); returns the status. */
    private int preempt(UUID host, int newType, long preemptKey, List<Notice> notices) {
        if (type == 0) {
            // No reservation: preempting only unregisters the registrants with that key.
            return unregisterByKey(preemptKey, null, host, notices) > 0 ? Status.SUCCESS : CONFLICT;
        }
        if (Reservations.allRegistrants(type)) {
            if (preemptKey == 0) {
                // Everyone else goes; the preempting host holds a new reservation of the type it asked for.
                take(host, newType);
                for (UUID other : new ArrayList<>(registrants.keySet())) {
                    if (!other.equals(host)) {
                        registrants.remove(other);
                        notices.add(new Notice(other, Reservations.NOTICE_REGISTRATION_PREEMPTED));
                    }
                }
                return Status.SUCCESS;
            }
            return unregisterByKey(preemptKey, null, host, notices) > 0 ? Status.SUCCESS : CONFLICT;
        }
        long holderKey = registrants.get(holder);
        if (preemptKey == holderKey) {
            // The holder's key: the preempting host takes the reservation (or, holding it, changes its type) and the
            // other registrants with that key go.
            int was = type;
            take(host, newType);
            unregisterByKey(preemptKey, host, host, notices);
            if (was != newType) {
                notifyOthers(host, Reservations.NOTICE_RESERVATION_RELEASED, notices);
            }
            return Status.SUCCESS;
        }
        if (preemptKey == 0) {
            return INVALID_FIELD; // a zero PRKEY names no holder
        }
        return unregisterByKey(preemptKey, null, host, notices) > 0 ? Status.SUCCESS : CONFLICT;
    }

    /** Unregisters the registrants with {@code key} but {@code keep}; tells each but {@code issuer}. Returns how many. */
    private int unregisterByKey(long key, UUID keep, UUID issuer, List<Notice> notices) {
        int removed = 0;
        for (Map.Entry<UUID, Long> r : new ArrayList<>(registrants.entrySet())) {
            UUID other = r.getKey();
            if (r.getValue() == key && !other.equals(keep)) {
                unregister(other, notices);
                if (!other.equals(issuer)) {
                    notices.add(new Notice(other, Reservations.NOTICE_REGISTRATION_PREEMPTED));
                }
                removed++;
            }
        }
        return removed;
    }

    // ---- Reservation Release ----

    public int release(UUID host, int action, int releaseType, long currentKey, List<Notice> notices) {
        return change(host, false, notices, () -> releaseLocked(host, action, releaseType, currentKey, notices));
    }

    private int releaseLocked(UUID host, int action, int releaseType, long currentKey, List<Notice> notices) {
        if (refusedBecause != null) {
            return CONFLICT;
        }
        Long key = registrants.get(host);
        if (key == null || key != currentKey) {
            return CONFLICT;
        }
        switch (action) {
            case Reservations.RELEASE: {
                if (!holds(host)) {
                    return Status.SUCCESS; // nothing held, or held by another: no effect, no error
                }
                if (releaseType != type) {
                    return INVALID_FIELD;
                }
                int was = type;
                release();
                if (was != WRITE_EXCLUSIVE && was != EXCLUSIVE_ACCESS) {
                    notifyOthers(host, Reservations.NOTICE_RESERVATION_RELEASED, notices);
                }
                return commit(Status.SUCCESS);
            }
            case Reservations.CLEAR:
                notifyOthers(host, Reservations.NOTICE_RESERVATION_PREEMPTED, notices);
                release();
                registrants.clear();
                generation++;
                return commit(Status.SUCCESS);
            default:
                return INVALID_FIELD;
        }
    }

    // ---- publishing ----

    /**
     * While PTPL is on (or was just turned off) makes the change durable, then publishes it; returns the status. A
     * change that cannot be saved is undone, so what hosts are told, what is enforced and what a restart restores
     * agree.
     */
    private int commit(int status) {
        State before = state;
        State next = snapshot();
        SharedReservations.Store sh = shared;
        if (sh != null) {
            if (status != Status.SUCCESS) {
                restore(before); // nothing to tell the other targets: a command refused changed nothing
                return status;
            }
            // Shared: every change is written (the state file is where the targets meet); PTPL is its flag.
            try {
                SharedReservations.Snapshot written = sh.write(sharedEpoch, sharedChanges, next, pendingIssuer,
                        pendingAbort, pendingNotices != null ? pendingNotices : List.of());
                sharedEpoch = written.epoch();
                sharedChanges = written.changes();
                writtenEpoch = written.epoch();
            } catch (IOException e) {
                LOG.error("namespace {}: the shared reservation state could not be written: {}; the change is undone",
                        nsid, e.toString());
                restore(before);
                return Status.INTERNAL;
            }
            publish(next);
            return status;
        }
        Store s = store;
        if (s != null && (next.persistThroughPowerLoss() || before.persistThroughPowerLoss())) {
            try {
                if (next.persistThroughPowerLoss()) {
                    s.save(next);
                } else {
                    s.delete(); // PTPL off: a restart starts with no registrants, as a power loss would
                }
            } catch (IOException e) {
                LOG.error("namespace {}: the reservation state could not be saved: {}; the change is undone", nsid,
                        e.toString());
                restore(before);
                return Status.INTERNAL;
            }
        }
        publish(next);
        return status;
    }

    private State snapshot() {
        List<Registrant> list = new ArrayList<>(registrants.size());
        registrants.forEach((h, k) -> list.add(new Registrant(h, k)));
        return new State(generation, type, holder, list, persistThroughPowerLoss);
    }

    private void restore(State s) {
        registrants.clear();
        s.registrants().forEach(r -> registrants.put(r.host(), r.key()));
        generation = s.generation();
        type = s.type();
        holder = s.holder();
        persistThroughPowerLoss = s.persistThroughPowerLoss();
    }

    private void publish() {
        publish(snapshot());
    }

    private void publish(State next) {
        state = next;
        saving = store != null && next.persistThroughPowerLoss();
        held = suspended ? null : refusedBecause != null ? Held.UNKNOWN
                : next.type() == 0 ? null : new Held(next.type(), next.holder(),
                        Set.copyOf(new HashSet<>(registrants.keySet())));
    }
}

package io.nvmeof.tgt.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.reservation.Reservations;
import io.nvmeof.tgt.backend.RamBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, finding 2: reservations of one subsystem exported by two targets (two {@link Subsystem}s here, each with
 * its own namespace object over the same volume identity) shared through one directory. What a host does through one
 * holds through the other as soon as the command completes; a target that cannot read the shared state stops running
 * I/O on the namespace within its lease; a target that does not confirm a change holds it up at most a lease.
 */
class SharedReservationsTest {
    static final String NQN = "nqn.2026-12.io.nvmeof:shared-resv";
    static final UUID VOLUME = UUID.fromString("0e9f4c1a-7d22-4b5e-9a61-3c8d2e4f5a70");
    static final UUID H = NamespaceReservationsTest.A; // the host to be fenced
    static final UUID X = NamespaceReservationsTest.B; // the cluster's survivor
    static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;

    @TempDir
    Path dir;

    private final List<Subsystem> targets = new ArrayList<>();

    /** One target's view: a subsystem sharing its reservations through {@code dir}, with the volume as NSID 1. */
    private NamespaceReservations target() throws Exception {
        Subsystem s = new Subsystem(NQN, Subsystem.Type.NVM, "serial", "model", 8, true);
        s.cntlidRange(1 + 100 * targets.size(), 100 + 100 * targets.size());
        s.shareReservations(new SharedReservations(dir, s));
        Namespace ns = new Namespace(1, new RamBackend(1 << 20), 512, VOLUME);
        s.addNamespace(ns);
        targets.add(s);
        assertEquals(null, s.reservationsUnavailable(), "shared: offered");
        assertTrue(ns.reservations().canPersist(), "PTPL can be turned on: the shared directory keeps it");
        return ns.reservations();
    }

    @AfterEach
    void stop() {
        targets.forEach(Subsystem::stopSharingReservations);
    }

    @Test
    void aHostPreemptedThroughOneTargetIsFencedThroughTheOther() throws Exception {
        NamespaceReservations a = target();
        NamespaceReservations b = target();
        List<NamespaceReservations.Notice> notices = new ArrayList<>();
        assertEquals(Status.SUCCESS, a.register(H, Reservations.REGISTER, false, 0, 0, 0xA1, notices));
        assertEquals(Status.SUCCESS, b.register(X, Reservations.REGISTER, false, 0, 0, 0xB2, notices));
        assertEquals(2, a.state().registrants().size(), "a registration through B is known through A once it completed");
        assertEquals(2, b.state().registrants().size());
        assertEquals(Status.SUCCESS, a.acquire(H, Reservations.ACQUIRE, Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY,
                0xA1, 0, notices));
        assertEquals(Status.SUCCESS, b.checkAccess(X, Opcodes.IO_WRITE), "a registrant writes through B");
        assertEquals(CONFLICT, b.checkAccess(UUID.randomUUID(), Opcodes.IO_WRITE), "a stranger does not, through B");
        // The cluster fences H through B: from the moment it completes, H's writes through A are refused.
        assertEquals(Status.SUCCESS, b.acquire(X, Reservations.PREEMPT_AND_ABORT,
                Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, 0xB2, 0xA1, notices));
        assertEquals(CONFLICT, a.checkAccess(H, Opcodes.IO_WRITE), "H is fenced through A too");
        assertEquals(X, a.state().holder());
        assertEquals(1, a.state().registrants().size());
        assertEquals(a.state(), b.state(), "one state through both");
        // A third target, started now, takes the same state.
        NamespaceReservations c = target();
        assertEquals(CONFLICT, c.checkAccess(H, Opcodes.IO_WRITE));
        assertEquals(Status.SUCCESS, c.checkAccess(X, Opcodes.IO_WRITE));
    }

    @Test
    void aTargetThatCannotReadTheSharedStateStopsWithinItsLeaseAndComesBack() throws Exception {
        NamespaceReservations a = target();
        List<NamespaceReservations.Notice> notices = new ArrayList<>();
        assertEquals(Status.SUCCESS, a.register(X, Reservations.REGISTER, false, 0, 0, 0xB2, notices));
        Path state = stateFile();
        String good = Files.readString(state);
        Files.writeString(state, "{ torn"); // the storage went bad under it
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (a.checkAccess(X, Opcodes.IO_WRITE) == Status.SUCCESS && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(Status.ANA_TRANSITION, a.checkAccess(X, Opcodes.IO_WRITE),
                "no read of the shared state for a lease: I/O stops, retryable, rather than run on a state it lost");
        Files.writeString(state, good);
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (a.checkAccess(X, Opcodes.IO_WRITE) != Status.SUCCESS && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(Status.SUCCESS, a.checkAccess(X, Opcodes.IO_WRITE), "and runs again once it reads it");
    }

    @Test
    void aTargetThatDoesNotConfirmAChangeHoldsItUpOneLeaseAtMost() throws Exception {
        NamespaceReservations a = target();
        List<NamespaceReservations.Notice> notices = new ArrayList<>();
        assertEquals(Status.SUCCESS, a.register(X, Reservations.REGISTER, false, 0, 0, 0xB2, notices));
        // Another target that stopped (SIGSTOP, a partition) after it confirmed epoch 1: it never confirms the next.
        String prefix = stateFile().getFileName().toString().replace(".json", "");
        Files.writeString(dir.resolve(prefix + ".ack-stopped"), "1");
        long start = System.nanoTime();
        assertEquals(Status.SUCCESS, a.register(H, Reservations.REGISTER, false, 0, 0, 0xA1, notices));
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(waitedMs >= TimeUnit.NANOSECONDS.toMillis(SharedReservations.LEASE_NANOS),
                "waited out the stopped target's lease: " + waitedMs + " ms");
        assertTrue(waitedMs < 5_000, "and no longer: " + waitedMs + " ms");
    }

    /** The namespace's state file in the shared directory. */
    private Path stateFile() throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.toString().endsWith(".json")).findFirst().orElseThrow();
        }
    }

    /**
     * Without a shared directory, a controller ID range takes reservations away: and what was held before (a saved
     * state, a range set later) is not enforced while the commands that could release it are refused; it is again
     * once they are offered again.
     */
    @Test
    void aSubsystemExportedBySeveralTargetsWithoutASharedDirectoryOffersNoReservations() {
        Subsystem s = new Subsystem(NQN, Subsystem.Type.NVM, "serial", "model", 8, true);
        Namespace ns = new Namespace(1, new RamBackend(1 << 20), 512, VOLUME);
        s.addNamespace(ns);
        assertEquals(null, s.reservationsUnavailable(), "one target: offered");
        List<NamespaceReservations.Notice> notices = new ArrayList<>();
        assertEquals(Status.SUCCESS, ns.reservations().register(X, Reservations.REGISTER, false, 0, 0, 0xB2, notices));
        assertEquals(Status.SUCCESS, ns.reservations().acquire(X, Reservations.ACQUIRE, Reservations.WRITE_EXCLUSIVE,
                0xB2, 0, notices));
        assertEquals(CONFLICT, ns.reservations().checkAccess(H, Opcodes.IO_WRITE));
        s.cntlidRange(1, 999);
        assertTrue(s.reservationsUnavailable() != null && s.reservationsUnavailable().contains("sharedReservations"),
                String.valueOf(s.reservationsUnavailable()));
        assertEquals(Status.SUCCESS, ns.reservations().checkAccess(H, Opcodes.IO_WRITE),
                "not enforced while nobody could release it");
        s.cntlidRange(Subsystem.CNTLID_MIN, Subsystem.CNTLID_MAX);
        assertEquals(CONFLICT, ns.reservations().checkAccess(H, Opcodes.IO_WRITE), "enforced again once offered");
    }

    /**
     * A target that read seldom (stopped, slow) finds that the state no longer keeps every change since the last one
     * it saw: one of those may have been a Preempt and Abort through another target, so it is handled as one (the
     * hosts the state now fences are waited for before this target confirms).
     */
    @Test
    void changesTrimmedBeforeATargetSawThemCountAsAPossibleAbort() {
        NamespaceReservations r = new NamespaceReservations(1);
        NamespaceReservations.State state = new NamespaceReservations.State(3, 0, null, List.of(), false);
        List<SharedReservations.Change> kept = new ArrayList<>();
        for (long e = 5; e <= 20; e++) {
            kept.add(new SharedReservations.Change(e, "other", null, false, List.of()));
        }
        List<SharedReservations.Change> fresh = r.applyShared(new SharedReservations.Snapshot(20, state, kept),
                System.nanoTime(), "me");
        assertTrue(fresh.get(0).abort() && fresh.get(0).issuer() == null, "epochs 1 to 4 were never seen: " + fresh);
        assertEquals(17, fresh.size(), "and every kept change of the other target's");
        assertEquals(List.of(), r.applyShared(new SharedReservations.Snapshot(20, state, kept), System.nanoTime(), "me"),
                "nothing new the next time");
    }
}

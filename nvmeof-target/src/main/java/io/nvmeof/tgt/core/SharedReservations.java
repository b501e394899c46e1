package io.nvmeof.tgt.core;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reservations shared by every target process that exports one subsystem over shared storage (docs/architecture.md,
 * "Several targets, one subsystem"), kept in a directory all of them reach: a cluster that fences a host through one
 * target must find it fenced through the others (issue 50: a host preempted and aborted through one target kept
 * writing through the other).
 *
 * <p>Per namespace (named by the subsystem and the NGUID, as {@link ReservationStore} names its files) the directory
 * holds the state ({@code .json}, written whole and renamed into place, with an <em>epoch</em> that every change
 * moves on), a lock file ({@code .lock}; a change reads, applies and writes under its POSIX lock, so changes made
 * through different processes are serialized and each starts from the newest state) and one acknowledgement per
 * process ({@code .ack-<member>}: the newest epoch it has applied).
 *
 * <p>Fencing rests on a lease: a process runs a command on a shared namespace only while its last read of the state
 * began less than {@link #LEASE_NANOS} ago; it reads every {@link #REFRESH_MS} ms, applies what changed (a preempt and
 * abort also waits for the preempted hosts' commands it had started), then acknowledges the epoch. A change completes
 * once every process has acknowledged its epoch or the lease plus a margin has passed since it was written: a process
 * that has not read it by then (stopped, cut off from the storage) runs nothing until it does. A process that cannot
 * read the directory for a lease answers I/O to those namespaces with ANA Transition (a host retries or uses another
 * path). The directory must give every reader what the last writer renamed into place (one machine; a cluster file
 * system; NFS without attribute caching, {@code actimeo=0}). When a process starts and no other one has left an
 * acknowledgement, a state without Persist Through Power Loss is dropped, as a power cycle of the whole subsystem.
 */
public final class SharedReservations implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SharedReservations.class);
    /** How long a read of the state lets a process run commands on a shared namespace. */
    public static final long LEASE_NANOS = TimeUnit.MILLISECONDS.toNanos(1000);
    /** How often each process reads the state of its shared namespaces. */
    static final long REFRESH_MS = 100;
    /** What a change waits beyond the lease for a process that did not acknowledge it (clock rates, scheduling). */
    private static final long MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /** An acknowledgement this much older than a state just written belongs to a process gone for good: removed. */
    private static final long STALE_ACK_MS = 30_000;
    /** The changes whose notices a state keeps, for processes that read seldom. */
    private static final int CHANGES_KEPT = 16;
    /** The longest a change waits for the lock another target holds (one stopped while holding it) before failing. */
    private static final long LOCK_WAIT_MS = 10_000;
    /** Waits of a Preempt and Abort made through another target for the fenced hosts' commands started here. */
    private static final java.util.concurrent.ExecutorService FENCE_WAITS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "nvmeof-shared-reservations-fence");
        t.setDaemon(true);
        return t;
    });

    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    /** The state file: the namespace's identity and reservation state, its epoch and the newest changes' notices. */
    record Document(String subsystem, long nsid, String nguid, String uuid, long epoch, long generation, int type,
            String holder, List<ReservationStore.SavedRegistrant> registrants, boolean persistThroughPowerLoss,
            List<Change> changes) {
    }

    /**
     * One change: its epoch, the process that made it, the host that asked for it, whether it aborted (Preempt and
     * Abort), the notices it made.
     */
    record Change(long epoch, String member, String issuer, boolean abort, List<SavedNotice> notices) {
    }

    record SavedNotice(String host, int type) {
    }

    /** The state as read: its epoch, the reservation state, the changes it keeps. */
    public record Snapshot(long epoch, NamespaceReservations.State state, List<Change> changes) {
    }

    private final Path dir;
    private final Subsystem subsystem;
    /** This process among those sharing the directory. */
    private final String member = UUID.randomUUID().toString();
    private final List<Store> stores = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService refresher;
    /** The JVM's own lock per lock file (see {@link Store#lockAndRead}). */
    private static final java.util.concurrent.ConcurrentHashMap<Path, java.util.concurrent.locks.ReentrantLock> JVM_LOCKS =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** Shares {@code subsystem}'s reservations through {@code dir} (created if missing), read every 100 ms. */
    public SharedReservations(Path dir, Subsystem subsystem) throws IOException {
        this.dir = dir;
        this.subsystem = subsystem;
        Files.createDirectories(dir);
        if (!Files.isWritable(dir)) {
            throw new IOException("shared reservation directory " + dir + " is not writable");
        }
        this.refresher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "nvmeof-shared-reservations " + subsystem.nqn());
            t.setDaemon(true);
            return t;
        });
        refresher.scheduleWithFixedDelay(this::refreshAll, REFRESH_MS, REFRESH_MS, TimeUnit.MILLISECONDS);
    }

    public Path directory() {
        return dir;
    }

    /** The shared store of {@code ns}; its state is read when the namespace attaches it. */
    public Store forNamespace(Namespace ns) {
        Store s = new Store(ns);
        stores.add(s);
        return s;
    }

    /**
     * The namespace left the subsystem: its store stops being read (its lease runs out, so nothing more starts on it
     * here), and its acknowledgement goes once what had started can no longer land.
     */
    void forget(Namespace ns) {
        for (Store s : stores) {
            if (s.ns == ns) {
                stores.remove(s);
                s.forgotten = true;
                dropLater(List.of(s));
            }
        }
    }

    /**
     * Stops reading; this process's acknowledgements go when {@code drained} (its I/O on these namespaces stopped: the
     * target is down), else once a lease and the Command Quiesce Time have passed, when nothing of it can still run.
     */
    public void close(boolean drained) {
        refresher.shutdownNow();
        try {
            refresher.awaitTermination(2, TimeUnit.SECONDS); // a refresh under way would write its acknowledgement
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<Store> all = new ArrayList<>(stores);
        stores.clear();
        all.forEach(s -> s.forgotten = true);
        if (drained) {
            all.forEach(Store::dropAck);
        } else {
            dropLater(all);
        }
    }

    @Override
    public void close() {
        close(false);
    }

    private static void dropLater(List<Store> gone) {
        long delayMs = TimeUnit.NANOSECONDS.toMillis(LEASE_NANOS) + TargetCore.COMMAND_QUIESCE_TIME_MS;
        FENCE_WAITS.execute(() -> {
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            gone.forEach(Store::dropAck);
        });
    }

    /** The refresher's turn: every shared namespace's state read, applied when it changed, and acknowledged. */
    private void refreshAll() {
        for (Store s : stores) {
            try {
                s.refresh();
            } catch (IOException | RuntimeException e) {
                s.readFailed(e);
            }
        }
    }

    /** One namespace's state in the directory. */
    public final class Store {
        final Namespace ns;
        private final String prefix;
        private final Path file;
        private final Path lockFile;
        private final Path ack;
        /** The lock of a change under way (a refresher never takes it); guarded by the namespace's reservations. */
        private FileChannel lockChannel;
        private FileLock lock;
        private java.util.concurrent.locks.ReentrantLock jvmLock;
        /** The newest epoch this process acknowledged (the refresher's). */
        private long acked = Long.MIN_VALUE;
        /** Set once this process no longer serves the namespace: no acknowledgement is written any more. */
        volatile boolean forgotten;
        /** The epochs of other targets' Preempt and Abort whose waits run here: none of them is acknowledged yet. */
        private final java.util.concurrent.ConcurrentSkipListSet<Long> fenceWaits =
                new java.util.concurrent.ConcurrentSkipListSet<>();
        private volatile boolean readFailureLogged;

        Store(Namespace ns) {
            this.ns = ns;
            this.prefix = digest(subsystem.nqn()) + "-" + HexFormat.of().formatHex(ns.nguid());
            this.file = dir.resolve(prefix + ".json");
            this.lockFile = dir.resolve(prefix + ".lock");
            this.ack = dir.resolve(prefix + ".ack-" + member);
        }

        public Path file() {
            return file;
        }

        /**
         * The state as it is now, read without the lock (states are renamed into place whole); null when none was
         * written yet. At the first read, when no other process has left an acknowledgement, a state without PTPL
         * is dropped (the whole subsystem went down: a power cycle).
         */
        Snapshot first() throws IOException {
            writeAck(-1); // joining: a change made from now on waits for this process, which has read nothing yet
            Snapshot s = read();
            if (s != null && !s.state().persistThroughPowerLoss() && otherAcks().isEmpty()) {
                LOG.info("subsystem {} namespace {}: no other target shares its reservations now; the state saved"
                        + " without Persist Through Power Loss is dropped, as a power cycle drops it", subsystem.nqn(),
                        ns.nsid());
                Files.deleteIfExists(file);
                s = null;
            }
            writeAck(s == null ? 0 : s.epoch());
            return s;
        }

        /**
         * Takes the change lock (waits for another process's change) and reads the state as it is then. Within one JVM
         * (several targets in one process, as tests run them) a lock of the JVM's comes first: file locks belong to
         * the process, and a second one from the same JVM is refused rather than waited for.
         */
        Snapshot lockAndRead() throws IOException {
            java.util.concurrent.locks.ReentrantLock jvm = JVM_LOCKS.computeIfAbsent(lockFile.toAbsolutePath().normalize(),
                    k -> new java.util.concurrent.locks.ReentrantLock());
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LOCK_WAIT_MS);
            try {
                if (!jvm.tryLock(LOCK_WAIT_MS, TimeUnit.MILLISECONDS)) {
                    throw new IOException("another change of " + file + " in this process held its lock for over "
                            + LOCK_WAIT_MS / 1000 + " s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted waiting for the lock of " + file);
            }
            FileChannel ch;
            try {
                ch = FileChannel.open(lockFile, Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE),
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                try {
                    // Bounded: a target stopped (SIGSTOP) while it holds the lock must not hold this one's change for
                    // good; the host may try again.
                    while ((lock = ch.tryLock()) == null) {
                        if (System.nanoTime() - deadline > 0) {
                            throw new IOException("another target has held the lock of " + file + " for over "
                                    + LOCK_WAIT_MS / 1000 + " s (stopped while changing it?)");
                        }
                        Thread.sleep(5);
                    }
                } catch (IOException | RuntimeException e) {
                    ch.close();
                    throw e;
                } catch (InterruptedException e) {
                    ch.close();
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted waiting for the lock of " + file);
                }
            } catch (IOException | RuntimeException e) {
                jvm.unlock();
                throw e;
            }
            jvmLock = jvm;
            lockChannel = ch;
            try {
                return read();
            } catch (IOException | RuntimeException e) {
                unlock();
                throw e;
            }
        }

        /** Releases the change lock, if held. */
        void unlock() {
            FileChannel ch = lockChannel;
            java.util.concurrent.locks.ReentrantLock jvm = jvmLock;
            lockChannel = null;
            lock = null;
            jvmLock = null;
            if (ch != null) {
                try {
                    ch.close(); // releases the lock
                } catch (IOException e) {
                    LOG.warn("closing {}: {}", lockFile, e.toString());
                }
            }
            if (jvm != null) {
                jvm.unlock();
            }
        }

        /**
         * Writes {@code next} as epoch {@code previous + 1} with the change that made it (the lock held), and releases
         * the lock; returns what it wrote. This process acknowledges it at its next read, as any other.
         */
        Snapshot write(long previous, List<Change> kept, NamespaceReservations.State next, UUID issuer, boolean abort,
                List<NamespaceReservations.Notice> notices) throws IOException {
            try {
                long epoch = previous + 1;
                List<SavedNotice> saved = new ArrayList<>();
                notices.forEach(n -> saved.add(new SavedNotice(n.host().toString(), n.type())));
                List<Change> changes = new ArrayList<>(kept);
                changes.add(new Change(epoch, member, issuer == null ? null : issuer.toString(), abort, saved));
                while (changes.size() > CHANGES_KEPT) {
                    changes.remove(0);
                }
                List<ReservationStore.SavedRegistrant> regs = new ArrayList<>();
                next.registrants().forEach(r -> regs.add(new ReservationStore.SavedRegistrant(r.host().toString(),
                        Long.toHexString(r.key()))));
                Document d = new Document(subsystem.nqn(), ns.nsid(), HexFormat.of().formatHex(ns.nguid()),
                        ns.uuid().toString(), epoch, next.generation(), next.type(),
                        next.holder() == null ? null : next.holder().toString(), regs, next.persistThroughPowerLoss(),
                        changes);
                writeAtomically(file, JSON.writeValueAsBytes(d));
                return new Snapshot(epoch, next, List.copyOf(changes));
            } finally {
                unlock();
            }
        }

        /**
         * Blocks until every other process has acknowledged {@code epoch}, or the lease and a margin have passed
         * since it was written (a process that has not read it by then runs nothing until it does). Off the poll
         * groups: a reservation change's backend thread.
         */
        void awaitOthers(long epoch) {
            long deadline = System.nanoTime() + LEASE_NANOS + MARGIN_NANOS;
            try {
                while (true) {
                    List<String> behind = new ArrayList<>();
                    try {
                        for (Path a : otherAcks()) {
                            if (ackedEpoch(a) < epoch) {
                                behind.add(a.getFileName().toString().substring(prefix.length() + 5));
                            }
                        }
                    } catch (IOException e) {
                        behind.add("(the directory cannot be listed: " + e + ")"); // so the lease is waited out
                    }
                    if (behind.isEmpty()) {
                        return;
                    }
                    if (System.nanoTime() - deadline > 0) {
                        LOG.warn("subsystem {} namespace {}: target(s) {} did not confirm reservation change {} within"
                                + " the lease; they run nothing on it until they have read it", subsystem.nqn(),
                                ns.nsid(), behind, epoch);
                        dropStaleAcks();
                        return;
                    }
                    Thread.sleep(5);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /**
         * The refresher: reads the state, applies a newer epoch, delivers the notices of other processes' changes and
         * waits out their aborts, then acknowledges the epoch (never before: a process waiting for it takes it as
         * "fenced here").
         */
        void refresh() throws IOException {
            if (acked != Long.MIN_VALUE && !Files.exists(ack)) {
                writeAck(-1); // taken away (this process was silent long enough): joining again before reading
            }
            long readAt = System.nanoTime();
            Snapshot s = read();
            List<Change> others = ns.reservations().applyShared(s, readAt, member);
            readFailureLogged = false;
            for (Change c : others) {
                List<NamespaceReservations.Notice> notices = new ArrayList<>();
                c.notices().forEach(n -> notices.add(new NamespaceReservations.Notice(UUID.fromString(n.host()),
                        n.type())));
                subsystem.deliverReservationNotices(ns.nsid(), notices);
                if (c.abort()) {
                    fenceWait(c);
                }
            }
            Long waiting = fenceWaits.isEmpty() ? null : fenceWaits.first();
            long epoch = Math.min(s == null ? 0 : s.epoch(), waiting == null ? Long.MAX_VALUE : waiting - 1);
            if (epoch != acked) {
                writeAck(epoch);
            }
        }

        /**
         * Preempt and Abort through another target (or changes this process missed, which may have been one): the
         * commands of the hosts it fenced that started here finish before this target confirms the change, so the
         * issuer's cluster may write as soon as it completes. Waited off the refresher (it keeps every namespace's
         * lease), holding back only this namespace's acknowledgement.
         */
        private void fenceWait(Change c) {
            long epoch = c.epoch();
            fenceWaits.add(epoch);
            UUID issuer = c.issuer() != null ? UUID.fromString(c.issuer()) : null;
            FENCE_WAITS.execute(() -> {
                try {
                    PreemptedCommands.awaitDone(ns, issuer, subsystem);
                } finally {
                    fenceWaits.remove(epoch);
                }
            });
        }

        void readFailed(Exception e) {
            if (!readFailureLogged) {
                readFailureLogged = true;
                LOG.error("subsystem {} namespace {}: cannot read the shared reservation state {}: {}; its I/O is"
                        + " answered with ANA Transition once the lease runs out", subsystem.nqn(), ns.nsid(), file,
                        e.toString());
            }
        }

        /** The state file, checked field by field (a wrong one fails closed, as a PTPL file); null when there is none. */
        private Snapshot read() throws IOException {
            byte[] bytes;
            try {
                bytes = Files.readAllBytes(file);
            } catch (NoSuchFileException e) {
                return null;
            }
            Document d;
            try {
                d = JSON.readValue(bytes, Document.class);
            } catch (IOException e) {
                throw new IOException("shared reservation state " + file + " cannot be read: " + e.getMessage(), e);
            }
            try {
                if (d.epoch() < 1) {
                    throw new IllegalArgumentException("epoch " + d.epoch() + " is not positive");
                }
                if (d.changes() == null) {
                    throw new IllegalArgumentException("changes is null");
                }
                NamespaceReservations.State state = ReservationStore.checked(new ReservationStore.Document(d.subsystem(),
                        d.nsid(), d.nguid(), d.uuid(), d.generation(), d.type(), d.holder(), d.registrants()),
                        subsystem.nqn(), HexFormat.of().formatHex(ns.nguid()), ns.uuid());
                state = new NamespaceReservations.State(state.generation(), state.type(), state.holder(),
                        state.registrants(), d.persistThroughPowerLoss());
                for (Change c : d.changes()) {
                    if (c == null || c.notices() == null || c.member() == null || c.epoch() < 1
                            || c.epoch() > d.epoch()) {
                        throw new IllegalArgumentException("a change entry is malformed: " + c);
                    }
                    if (c.issuer() != null) {
                        UUID.fromString(c.issuer());
                    }
                    for (SavedNotice n : c.notices()) {
                        if (n == null || n.host() == null || n.type() < 1 || n.type() > 3) {
                            throw new IllegalArgumentException("change " + c.epoch() + " has a malformed notice: " + n);
                        }
                        UUID.fromString(n.host());
                    }
                }
                return new Snapshot(d.epoch(), state, List.copyOf(d.changes()));
            } catch (IllegalArgumentException | NullPointerException e) {
                throw new IOException("shared reservation state " + file + " is not valid: " + e.getMessage(), e);
            }
        }

        private List<Path> otherAcks() throws IOException {
            List<Path> out = new ArrayList<>();
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, prefix + ".ack-*")) {
                for (Path p : ds) {
                    if (!p.equals(ack) && !p.getFileName().toString().endsWith(".tmp")) { // another's write under way
                        out.add(p);
                    }
                }
            }
            return out;
        }

        private long ackedEpoch(Path a) {
            try {
                return Long.parseLong(Files.readString(a).trim());
            } catch (IOException | NumberFormatException e) {
                return -1; // gone meanwhile (its process left), or half written: not acknowledged
            }
        }

        private void writeAck(long epoch) throws IOException {
            if (forgotten) {
                return;
            }
            writeAtomically(ack, Long.toString(epoch).getBytes(StandardCharsets.US_ASCII));
            acked = epoch;
        }

        /** This process's name among those sharing the directory. */
        String member() {
            return member;
        }

        void dropAck() {
            try {
                Files.deleteIfExists(ack);
            } catch (IOException e) {
                LOG.debug("removing {}: {}", ack, e.toString());
            }
        }

        /**
         * Acknowledgements left by processes gone for good (their file is far older than the state just written, on
         * the storage's own clock): removed, so later changes do not wait for them. One that comes back writes its
         * acknowledgement again at its next read.
         */
        private void dropStaleAcks() {
            try {
                FileTime now = Files.getLastModifiedTime(file);
                for (Path a : otherAcks()) {
                    FileTime t = Files.getLastModifiedTime(a);
                    if (now.toMillis() - t.toMillis() > STALE_ACK_MS) {
                        LOG.info("subsystem {} namespace {}: {} has not confirmed a change for over {} s; no longer"
                                + " waited for", subsystem.nqn(), ns.nsid(), a.getFileName(), STALE_ACK_MS / 1000);
                        Files.deleteIfExists(a);
                    }
                }
            } catch (IOException e) {
                LOG.debug("looking for stale acknowledgements: {}", e.toString());
            }
        }
    }

    /** Whole or not at all, through a temporary file of this process's own (several write the same names). */
    private void writeAtomically(Path target, byte[] bytes) throws IOException {
        ReservationStore.writeAtomically(target, target.resolveSibling(target.getFileName() + "." + member + ".tmp"),
                bytes);
    }

    private static String digest(String nqn) {
        return ReservationStore.digest(nqn);
    }
}

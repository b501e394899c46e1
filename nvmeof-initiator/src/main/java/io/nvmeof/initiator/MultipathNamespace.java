package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.LateCompletions;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.AnaState;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;

/**
 * One namespace reached through several controllers (paths) of its subsystem, as Linux's native NVMe multipath
 * ({@code drivers/nvme/host/multipath.c}) presents one: block I/O as on a {@link NamespaceHandle}, each request sent
 * on one usable path and, when that path fails it, sent again on another.
 *
 * <p>Usable paths: a connected controller whose handle is current and whose ANA state for the namespace is optimized
 * or non-optimized ({@link NamespaceHandle#anaState()}). Optimized paths are taken first; non-optimized ones only
 * when no optimized one is usable. Among the paths of the best state the {@link IoPolicy} chooses.
 *
 * <p>Failover: a request that fails with a path status (status code type 3 without DNR: ANA inaccessible, persistent
 * loss, transition), a lost connection, a timeout, a closed controller or a retired handle is sent again on another
 * usable path, never one that failed it in this round. When none is usable it waits (no thread waits for it) until a
 * path becomes usable again (reconnected, its ANA state optimized or non-optimized again: a new round, every path may
 * be tried again). It waits as long as some path's controller reconnects (as Linux requeues while a path may come
 * back: the controller's loss timeout bounds that); with every controller connected and none usable (all
 * inaccessible, say) it waits the failover timeout, then fails with a message naming each path's state; with no path
 * that can come back it fails at once. Every other error (DNR set, media and namespace errors) is returned as it is.
 * Requests a path's controller cannot send now (it reconnects) are not held by that controller, as single-path I/O
 * is: they fail over at once.
 *
 * <p>A request that changes the media (a write, Write Zeroes, Deallocate: anything but reads, compares and
 * flushes) and failed because its path's association was lost (a timeout, a lost connection) may still run on that
 * path's target: a target that was paused (a GC pause, a VM stall, a partition) has it unread in its socket, and runs
 * it when it comes back. Sent again at once on another path, it could land after the caller had been told it was
 * done and had written the same blocks again: older data over newer (Linux's multipath fails over at once and has
 * this window). So such a request waits until the lost association can no longer run anything
 * ({@link NvmeofController#fencedAtNanos()}: TP4129's keep-alive deadline plus the target's Command Quiesce Time, or
 * the quiesce time alone when the target itself ended the connection) before it goes to any path; reads fail over
 * at once. The wait does not count against the failover timeout.
 *
 * <p>Threads, buffers and futures as on {@link NamespaceHandle}: completions run on an I/O thread, or on this
 * namespace's timer thread when a waiting request times out; the callback flavour takes a preallocated request
 * object (no allocation per I/O while fewer than {@code maxOutstanding} requests are outstanding; beyond that each
 * takes a new one); the future flavour allocates its future. A request that fails over or waits allocates (the
 * failure path only). Closing this namespace fails the waiting requests and stops failing over; it does not close
 * the controllers.
 */
public final class MultipathNamespace implements AutoCloseable {
    /** How a path is chosen among the usable ones of the best ANA state (Linux's {@code iopolicy}). */
    public enum IoPolicy {
        /** Each request on the next path in turn ({@code round-robin}). */
        ROUND_ROBIN,
        /** The path whose controller has the fewest requests outstanding ({@code queue-depth}). */
        QUEUE_DEPTH
    }

    /** Paths are told apart by a bit of a long (the paths that failed a request this round). */
    public static final int MAX_PATHS = 64;
    /** Preallocated requests of the callback flavour. */
    private static final int DEFAULT_MAX_OUTSTANDING = 4096;
    /** The most requests waiting for a usable path; more fail at once ({@link IoCallback#ERR_QUEUE_FULL}). */
    private static final int MAX_WAITING = 65536;
    /** The failover timeout when no path's controller reports ANATT. */
    private static final Duration DEFAULT_FAILOVER_TIMEOUT = Duration.ofSeconds(10);

    private final NamespaceHandle[] paths;
    private final IoPolicy policy;
    private final long failoverTimeoutNanos;
    private final int blockSize;
    /** The round-robin policy's last choice: the next request starts after it. Races only skew the turn. */
    private volatile int lastPath = -1;
    private final ManyToManyConcurrentArrayQueue<MultipathIo> pool;
    private final ConcurrentLinkedQueue<MultipathIo> waiting = new ConcurrentLinkedQueue<>();
    private final AtomicInteger waitingCount = new AtomicInteger();
    /**
     * Counts path changes: a request that is about to wait and sees this moved looks for a path again. Atomic: several
     * controllers' threads count at once, and a lost count could let a request miss its wake-up.
     */
    private final AtomicInteger pathChanges = new AtomicInteger();
    private volatile boolean closed;
    /** Times out waiting requests; one daemon thread that sleeps unless a request waits. */
    private final ScheduledExecutorService timer;
    /**
     * The deadline (System.nanoTime) the one expiry task is armed for, or {@link #UNARMED}: one task for every waiting
     * request, armed at the earliest deadline, so that thousands waiting cost one wake-up, not one each.
     */
    private final AtomicLong expiryArmedFor = new AtomicLong(UNARMED);
    private static final long UNARMED = Long.MIN_VALUE;
    /** The shortest the expiry task sleeps: requests whose deadlines fall within it expire together. */
    private static final long EXPIRY_GRANULARITY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private final Runnable pathListener = this::pathsChanged;
    /**
     * Per path: requests it completed for this namespace (done, or an error returned as it is), and path failures it
     * gave that failed over. Adders, not one shared counter: every I/O thread counts, and a contended cache line per
     * completion would cost more than the count.
     */
    private final LongAdder[] completedByPath;
    private final LongAdder[] failedOverByPath;
    private final LongAdder fencedWaits = new LongAdder();

    private MultipathNamespace(NamespaceHandle[] paths, IoPolicy policy, Duration failoverTimeout, int maxOutstanding) {
        this.paths = paths;
        this.policy = policy;
        this.failoverTimeoutNanos = failoverTimeout.toNanos();
        this.blockSize = paths[0].blockSize();
        this.completedByPath = new LongAdder[paths.length];
        this.failedOverByPath = new LongAdder[paths.length];
        for (int p = 0; p < paths.length; p++) {
            completedByPath[p] = new LongAdder();
            failedOverByPath[p] = new LongAdder();
        }
        this.pool = new ManyToManyConcurrentArrayQueue<>(maxOutstanding);
        for (int i = 0; i < maxOutstanding && pool.offer(new MultipathIo(this, true)); i++) {
            // preallocated: the callback flavour takes these, and returns them when done
        }
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "nvmeof-multipath nsid " + paths[0].nsid());
            t.setDaemon(true);
            return t;
        });
        for (NamespaceHandle h : paths) {
            h.controller().addPathListener(pathListener);
        }
    }

    /** {@link #of(List, IoPolicy, Duration)} with {@link IoPolicy#QUEUE_DEPTH} and the default failover timeout. */
    public static MultipathNamespace of(List<NamespaceHandle> paths) {
        return of(paths, IoPolicy.QUEUE_DEPTH, null);
    }

    /**
     * One namespace over {@code paths}: handles of the same namespace on different controllers of one subsystem
     * (same subsystem NQN, same identifiers (NGUID or UUID reported, all equal), same block size).
     *
     * @param failoverTimeout how long a request waits for a usable path when none is; null: twice the longest ANATT
     *                        of the paths' controllers (the longest a group stays in transition), or 10 s without one
     * @throws IllegalArgumentException naming what differs when the handles are not one namespace
     */
    public static MultipathNamespace of(List<NamespaceHandle> paths, IoPolicy policy, Duration failoverTimeout) {
        if (paths.isEmpty() || paths.size() > MAX_PATHS) {
            throw new IllegalArgumentException("a multipath namespace takes 1 to " + MAX_PATHS + " paths, got "
                    + paths.size());
        }
        NamespaceHandle first = paths.get(0);
        NamespaceIdentifiers ids = first.identifiers();
        if (first.nguid().isEmpty() && first.uuid().isEmpty()) {
            throw new IllegalArgumentException("namespace " + first.nsid() + " of " + first.controller().transportId()
                    + " reports neither an NGUID nor a UUID: nothing tells it is the same namespace on the other"
                    + " paths");
        }
        String subnqn = first.controller().info().subnqn();
        int anatt = 0;
        for (int i = 0; i < paths.size(); i++) {
            NamespaceHandle h = paths.get(i);
            String which = "path " + i + " (namespace " + h.nsid() + " of " + h.controller().transportId() + ")";
            if (!h.isCurrent()) {
                throw new IllegalArgumentException(which + " is retired: " + h.retiredBecause().orElse(""));
            }
            if (!subnqn.equals(h.controller().info().subnqn())) {
                throw new IllegalArgumentException(which + " is of subsystem " + h.controller().info().subnqn()
                        + ", path 0 of " + subnqn + ": not the same namespace");
            }
            if (!ids.sameAs(h.identifiers())) {
                throw new IllegalArgumentException(which + " is another namespace than path 0: "
                        + ids.changesTo(h.identifiers()));
            }
            if (h.blockSize() != first.blockSize()) {
                throw new IllegalArgumentException(which + " has blocks of " + h.blockSize() + " bytes, path 0 of "
                        + first.blockSize() + ": not the same namespace");
            }
            for (int j = 0; j < i; j++) {
                NvmeofController other = paths.get(j).controller();
                if (other == h.controller()) {
                    throw new IllegalArgumentException(which + " is through the same controller as path " + j);
                }
                if (other.cntlid() == h.controller().cntlid()) {
                    // One subsystem, two controllers with one ID: two target processes that export it over shared
                    // storage without disjoint ID ranges. Linux refuses the second ("Duplicate cntlid").
                    throw new IllegalArgumentException(which + " has controller ID " + h.controller().cntlid()
                            + ", as path " + j + " (" + other.transportId() + ") has: controllers of one subsystem"
                            + " need distinct IDs; give each target exporting it a disjoint range (cntlidMin/"
                            + "cntlidMax, nvmet's cntlid_min/cntlid_max)");
                }
            }
            anatt = Math.max(anatt, h.controller().info().anaTransitionTimeSeconds());
        }
        Duration timeout = failoverTimeout != null ? failoverTimeout
                : anatt > 0 ? Duration.ofSeconds(2L * anatt) : DEFAULT_FAILOVER_TIMEOUT;
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("failover timeout must not be negative, got " + timeout);
        }
        return new MultipathNamespace(paths.toArray(new NamespaceHandle[0]), policy, timeout,
                DEFAULT_MAX_OUTSTANDING);
    }

    // ---------------------------------------------------------------------------------------------- public API

    public List<NamespaceHandle> paths() { return List.of(paths); }

    public IoPolicy policy() { return policy; }

    public long nsid() { return paths[0].nsid(); }

    public int blockSize() { return blockSize; }

    /** The smallest size any path reports (a namespace grown on one controller before the others). */
    public long blockCount() {
        long n = Long.MAX_VALUE;
        for (NamespaceHandle h : paths) {
            n = Math.min(n, h.blockCount());
        }
        return n;
    }

    /** Largest {@code blocks} one read or write may carry on every path. */
    public int maxBlocksPerIo() {
        int n = Integer.MAX_VALUE;
        for (NamespaceHandle h : paths) {
            n = Math.min(n, h.maxBlocksPerIo());
        }
        return n;
    }

    /** How long a request waits for a usable path when none is. */
    public Duration failoverTimeout() { return Duration.ofNanos(failoverTimeoutNanos); }

    /** Requests path {@code p} completed for this namespace so far (successes and errors returned as they are). */
    public long completedThrough(int p) { return completedByPath[p].sum(); }

    /** Path failures of path {@code p} so far that were sent again on another path (or waited for one). */
    public long failedOverFrom(int p) { return failedOverByPath[p].sum(); }

    /** Requests waiting now: for a usable path, or for a lost association to be fenced before they go elsewhere. */
    public int waitingRequests() { return waitingCount.get(); }

    /** Requests so far that waited for a lost association to be fenced before going to another path. */
    public long fencedWaits() { return fencedWaits.sum(); }

    /** Each path and its state, for messages and logs: "path 0 127.0.0.1:4420 CONNECTED optimized; ...". */
    public String describePaths() {
        StringBuilder b = new StringBuilder();
        for (int p = 0; p < paths.length; p++) {
            NamespaceHandle h = paths[p];
            if (p > 0) {
                b.append("; ");
            }
            b.append("path ").append(p).append(' ').append(h.controller().transportId().traddr()).append(':')
                    .append(h.controller().transportId().trsvcid()).append(' ').append(h.controller().state())
                    .append(", ANA ").append(h.anaState().label());
            if (!h.isCurrent()) {
                b.append(", retired: ").append(h.retiredBecause().orElse(""));
            }
        }
        return b.toString();
    }

    public CompletableFuture<Void> read(long lba, int blocks, ByteBuffer dst) {
        return submitFuture("Read", Opcodes.IO_READ, lba, blocks, HostQueue.DIR_C2H, dst, 0);
    }

    public CompletableFuture<Void> write(long lba, int blocks, ByteBuffer src) {
        return submitFuture("Write", Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src, 0);
    }

    /** Write with Force Unit Access (see {@link NamespaceHandle#writeFua}). */
    public CompletableFuture<Void> writeFua(long lba, int blocks, ByteBuffer src) {
        return submitFuture("Write (FUA)", Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src,
                NamespaceHandle.CDW12_FUA);
    }

    /**
     * Flush through one usable path: what that controller acknowledged is durable. Every path is a controller of one
     * subsystem over the same namespace, so writes acknowledged through another path are too where the target
     * flushes the namespace (not per controller), as Linux sends a flush down one path.
     */
    public CompletableFuture<Void> flush() {
        MultipathIo io = new MultipathIo(this, false);
        BufferSafeFuture f = new BufferSafeFuture("Flush");
        io.prepare("Flush", Opcodes.IO_FLUSH, -1, 0, HostQueue.DIR_NONE, null, 0, 0, null, 0, f);
        dispatch(io, true);
        return f;
    }

    /** Read into {@code dst}; {@code cb} gets {@code context} and the status, as {@link NamespaceHandle#read}. */
    public void read(long lba, int blocks, ByteBuffer dst, IoCallback cb, long context) {
        submitCallback("Read", Opcodes.IO_READ, lba, blocks, HostQueue.DIR_C2H, dst, cb, context);
    }

    /** Write from {@code src}; {@code cb} gets {@code context} and the status, as {@link NamespaceHandle#write}. */
    public void write(long lba, int blocks, ByteBuffer src, IoCallback cb, long context) {
        submitCallback("Write", Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src, cb, context);
    }

    /** Stops listening to the paths and fails the waiting requests ({@link IoCallback#ERR_CLOSED}). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NamespaceHandle h : paths) {
            h.controller().removePathListener(pathListener);
        }
        retryWaiting(false, true); // on the closing thread: its callbacks are told on another
        timer.shutdownNow();
    }

    @Override
    public String toString() {
        return "MultipathNamespace[nsid " + nsid() + ", " + policy + ", " + describePaths() + "]";
    }

    // ---------------------------------------------------------------------------------------------- submission

    private CompletableFuture<Void> submitFuture(String op, int opcode, long lba, int blocks, int dir, ByteBuffer buf,
                                                 int cdw12Flags) {
        int len = checkData(blocks, buf, dir == HostQueue.DIR_C2H);
        MultipathIo io = new MultipathIo(this, false);
        BufferSafeFuture f = new BufferSafeFuture(op);
        io.prepare(op, opcode, lba, blocks, dir, buf, len, cdw12Flags, null, 0, f);
        dispatch(io, true);
        return f;
    }

    private void submitCallback(String op, int opcode, long lba, int blocks, int dir, ByteBuffer buf, IoCallback cb,
                                long context) {
        if (cb == null) {
            throw new NullPointerException("callback");
        }
        int len = checkData(blocks, buf, dir == HostQueue.DIR_C2H);
        MultipathIo io = pool.poll();
        if (io == null) {
            io = new MultipathIo(this, false); // more outstanding than preallocated: this one is garbage when done
        }
        io.prepare(op, opcode, lba, blocks, dir, buf, len, 0, cb, context, null);
        dispatch(io, true);
    }

    private int checkData(int blocks, ByteBuffer buf, boolean intoBuffer) {
        int max = maxBlocksPerIo();
        if (blocks <= 0 || blocks > max) {
            throw new IllegalArgumentException("blocks must be in [1, " + max + "] (the smallest maxBlocksPerIo() of"
                    + " the paths), got " + blocks);
        }
        long len = (long) blocks * blockSize;
        NamespaceHandle.checkBuffer(buf, len, intoBuffer);
        return (int) len;
    }

    /**
     * Sends {@code io} on a usable path it has not failed this round, or makes it wait for one, or fails it when none
     * can come back or its failover time is up. Any thread; never blocks. {@code late}: the caller's own thread (a
     * submission, a close), where a failure is told on another thread, so a callback that submits again does not
     * recurse into itself.
     */
    void dispatch(MultipathIo io, boolean late) {
        while (true) {
            if (closed) {
                end(io, IoCallback.ERR_CLOSED, "multipath namespace closed", late);
                return;
            }
            int changes = pathChanges.get();
            if (io.fencedPaths != 0) {
                long fence = fenceOf(io.fencedPaths);
                if (fence != 0 && fence - System.nanoTime() > 0) {
                    awaitFence(io, fence, changes, late);
                    return;
                }
                io.fencedPaths = 0; // nothing of those associations can run any more: any path may take it
                io.fenceWaitCounted = false;
                io.deadline = 0; // a full failover timeout from here, should it find no usable path
            }
            int p = choosePath(io.failedPaths);
            if (p < 0) {
                awaitPath(io, changes, late);
                return;
            }
            io.path = p;
            io.deadline = 0; // sent on a path: should it fail there, it waits a full failover timeout again
            try {
                paths[p].submitForPath(io.opcode, io.lba, io.blocks, io.dir, io.buf, io.bufOffset, io.length,
                        io.cdw12Flags, io, 0);
                return;
            } catch (IllegalStateException e) {
                // The path refused it outright (its controller has no I/O queues now): as a failure of that path.
                io.failedPaths |= 1L << p;
                io.lastStatus = IoCallback.ERR_TRANSPORT;
                io.lastPathFailure = e.getMessage();
            } catch (RuntimeException e) {
                // Something wrong with the request itself (its buffer, say): no other path would take it either.
                io.lastPathFailure = e.toString();
                end(io, IoCallback.ERR_TRANSPORT, pathName(p) + " refused it: " + e, late);
                return;
            }
        }
    }

    /** An I/O thread: path {@code p} failed {@code io} with {@code status}; fails over or returns it as is. */
    void completed(MultipathIo io, int status) {
        int p = io.path;
        if (status == 0 || !failsOver(status)) {
            completedByPath[p].increment();
            io.finish(status, null);
            return;
        }
        failedOverByPath[p].increment();
        NamespaceHandle h = paths[p];
        AnaState seen = anaStateOf(status);
        if (seen != null && h.controller().reportsAna()) {
            // Not usable until the ANA log says otherwise: the next choice skips it; the log is read soon. A
            // controller that reports no ANA has no log to clear the state again: the path is only failed over.
            h.anaStateSeen(seen);
            h.controller().anaStates.refreshSoon();
        }
        io.failedPaths |= 1L << p;
        if (status < 0 && mayChangeMedia(io.opcode)) {
            io.fencedPaths |= 1L << p; // it may still run on that path's lost association
        }
        io.lastStatus = status;
        io.lastPathFailure = null;
        dispatch(io, false);
    }

    /** Whether a command of {@code opcode} may change the media: all but reads, compares, verifies and flushes. */
    static boolean mayChangeMedia(int opcode) {
        return opcode != Opcodes.IO_READ && opcode != Opcodes.IO_COMPARE && opcode != Opcodes.IO_FLUSH
                && opcode != IO_VERIFY;
    }

    private static final int IO_VERIFY = 0x0C;

    /** The latest {@link NvmeofController#fencedAtNanos()} of the paths in {@code mask}; 0 when none lost one. */
    private long fenceOf(long mask) {
        long latest = 0;
        for (int p = 0; p < paths.length; p++) {
            if ((mask & 1L << p) == 0) {
                continue;
            }
            long f = paths[p].controller().fencedAtNanos();
            if (f != 0 && (latest == 0 || f - latest > 0)) {
                latest = f;
            }
        }
        return latest;
    }

    /**
     * {@code io} may still run on a lost association until {@code fence}: it waits with the requests waiting for a path
     * (never refused for their number: it was outstanding already, and may still land), and looks at the fence again
     * then (it may have moved later meanwhile) and at each path change.
     */
    private void awaitFence(MultipathIo io, long fence, int changesSeen, boolean late) {
        waitingCount.incrementAndGet();
        if (!io.fenceWaitCounted) {
            io.fenceWaitCounted = true; // counted once per failure it waits after
            fencedWaits.increment();
        }
        long now = System.nanoTime();
        waiting.add(io); // from here another thread may own it
        armExpiry(fence, now);
        if (pathChanges.get() != changesSeen || closed) {
            retryWaiting(true, late);
        }
    }

    /** Tells {@code io}'s caller, on another thread when {@code late}. */
    private static void end(MultipathIo io, int status, String why, boolean late) {
        if (late) {
            LateCompletions.execute(() -> io.finish(status, why));
        } else {
            io.finish(status, why);
        }
    }

    /**
     * Whether a failure is the path's, not the request's (Linux's {@code nvme_is_path_error}, lost paths, and the
     * statuses a controller gives a command it did not run because its association is ending: Keep Alive Timer
     * Expired, Command Aborted due to SQ Deletion): such a request is sent again on another path; a caller that got one
     * back had no path that could carry it in time.
     */
    public static boolean failsOver(int status) {
        if (status < 0) {
            return status != IoCallback.ERR_QUEUE_FULL; // timeout, connection lost, closed, namespace gone here
        }
        if (Status.dnr(status)) {
            return false;
        }
        int code = Status.code(status);
        return Status.sct(status) == Status.SCT_PATH || code == Status.KEEP_ALIVE_EXPIRED
                || code == Status.ABORT_SQ_DELETED;
    }

    private static AnaState anaStateOf(int status) {
        switch (Status.code(status)) {
            case Status.ANA_INACCESSIBLE: return AnaState.INACCESSIBLE;
            case Status.ANA_PERSISTENT_LOSS: return AnaState.PERSISTENT_LOSS;
            case Status.ANA_TRANSITION: return AnaState.CHANGE;
            default: return null;
        }
    }

    /**
     * The path for the next request, skipping those in {@code excluded} (bits): among usable optimized paths, else
     * among usable non-optimized ones, as the policy chooses; -1 when none is usable. No lock, no allocation.
     */
    int choosePath(long excluded) {
        int n = paths.length;
        if (policy == IoPolicy.ROUND_ROBIN) {
            // The turn goes on after the last path chosen (Linux's nvme_round_robin_path), so a path out of the turn
            // does not hand its share to the one after it: with three paths and the middle one unusable, the other
            // two take half each, not a third and two thirds.
            int last = lastPath;
            int start = last < 0 || last >= n - 1 ? 0 : last + 1;
            int fallback = -1;
            for (int i = 0; i < n; i++) {
                int p = start + i < n ? start + i : start + i - n;
                if ((excluded & 1L << p) != 0) {
                    continue;
                }
                AnaState s = usableState(p);
                if (s == AnaState.OPTIMIZED) {
                    lastPath = p;
                    return p;
                }
                if (s == AnaState.NON_OPTIMIZED && fallback < 0) {
                    fallback = p;
                }
            }
            if (fallback >= 0) {
                lastPath = fallback;
            }
            return fallback;
        }
        int best = -1;
        boolean bestOptimized = false;
        int bestDepth = Integer.MAX_VALUE;
        for (int p = 0; p < n; p++) {
            if ((excluded & 1L << p) != 0) {
                continue;
            }
            AnaState s = usableState(p);
            if (s == null) {
                continue;
            }
            boolean optimized = s == AnaState.OPTIMIZED;
            if (bestOptimized && !optimized) {
                continue;
            }
            int depth = paths[p].controller().outstanding();
            if (best < 0 || optimized && !bestOptimized || depth < bestDepth) {
                best = p;
                bestOptimized = optimized;
                bestDepth = depth;
            }
        }
        return best;
    }

    /** The ANA state of path {@code p} when it is usable (connected, current, optimized or non-optimized); else null. */
    private AnaState usableState(int p) {
        return usableStateOf(paths[p]);
    }

    private static AnaState usableStateOf(NamespaceHandle h) {
        if (!h.isCurrent() || !h.controller().isConnected()) {
            return null;
        }
        AnaState s = h.anaState(); // read once: the choice and its reason are the same state
        return s == AnaState.OPTIMIZED || s == AnaState.NON_OPTIMIZED ? s : null;
    }

    /**
     * Whether a multipath namespace may send requests on {@code path} now: its controller connected, its handle
     * current, its ANA state optimized or non-optimized (what callers that check paths, such as the loader, must agree
     * with).
     */
    public static boolean usable(NamespaceHandle path) {
        return usableStateOf(path) != null;
    }

    /** Whether some path may still become usable: its handle current and its controller not failed or closed. */
    private boolean anyPathMayRecover() {
        for (NamespaceHandle h : paths) {
            ControllerState s = h.controller().state();
            if (h.isCurrent() && (s == ControllerState.CONNECTED || s == ControllerState.RECONNECTING)) {
                return true;
            }
        }
        return false;
    }

    /** Whether some path's controller is reconnecting: a request waits for it past its failover timeout. */
    private boolean anyPathReconnecting() {
        for (NamespaceHandle h : paths) {
            if (h.isCurrent() && h.controller().state() == ControllerState.RECONNECTING) {
                return true;
            }
        }
        return false;
    }

    // ---------------------------------------------------------------------------------------------- waiting

    /** No path for {@code io} now: it waits for a path change or its deadline, or fails when neither can help. */
    private void awaitPath(MultipathIo io, int changesSeen, boolean late) {
        long now = System.nanoTime();
        if (!anyPathMayRecover()) {
            end(io, noPathStatus(io), "no path can serve it any more (" + describePaths() + ")", late);
            return;
        }
        if (io.deadline == 0 || now - io.deadline >= 0 && anyPathReconnecting()) {
            // A first wait, or a path still reconnects: (another) full failover timeout.
            io.deadline = now + failoverTimeoutNanos;
            if (io.deadline == 0) {
                io.deadline = 1; // 0 means "not waiting yet"
            }
        } else if (now - io.deadline >= 0) {
            end(io, noPathStatus(io), "no usable path within the failover timeout of "
                    + TimeUnit.NANOSECONDS.toMillis(failoverTimeoutNanos) + " ms (" + describePaths() + ")", late);
            return;
        }
        if (waitingCount.incrementAndGet() > MAX_WAITING) {
            waitingCount.decrementAndGet();
            end(io, IoCallback.ERR_QUEUE_FULL, MAX_WAITING + " requests already wait for a usable path ("
                    + describePaths() + ")", late);
            return;
        }
        long deadline = io.deadline;
        waiting.add(io); // from here another thread may own it: only the local copy of its deadline is read
        armExpiry(deadline, now);
        if (pathChanges.get() != changesSeen || closed) {
            retryWaiting(true, late); // a path changed while this one was choosing: it may have missed the wake-up
        }
    }

    /**
     * Makes sure the expiry task runs by {@code deadline}: arms it unless it already is for an earlier time. A task
     * armed for a later time is superseded (it still runs, and finds little to do).
     */
    private void armExpiry(long deadline, long now) {
        while (true) {
            long armed = expiryArmedFor.get();
            if (armed != UNARMED && armed - deadline <= 0) {
                return;
            }
            if (expiryArmedFor.compareAndSet(armed, deadline)) {
                schedule(() -> expireWaiting(deadline), Math.max(deadline - now, EXPIRY_GRANULARITY_NANOS));
                return;
            }
        }
    }

    private static int noPathStatus(MultipathIo io) {
        return io.lastStatus != 0 ? io.lastStatus : IoCallback.ERR_TRANSPORT;
    }

    private void schedule(Runnable task, long delayNanos) {
        try {
            timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed: close() fails the waiting requests itself
        }
    }

    /**
     * The timer thread, at the deadline the task was armed for: each waiting request looks again, those past their
     * deadline fail, the rest wait again and re-arm the task for the earliest of theirs.
     */
    private void expireWaiting(long armedFor) {
        expiryArmedFor.compareAndSet(armedFor, UNARMED);
        retryWaiting(false, false);
    }

    /** A path of some controller may have changed (any thread; must not block): waiting requests look again. */
    private void pathsChanged() {
        pathChanges.incrementAndGet();
        retryWaiting(true, false);
    }

    /**
     * Sends each waiting request again (as many as wait now; those that still find no path wait again).
     * {@code newRound}: a path changed, so paths that failed a request may be tried again.
     */
    private void retryWaiting(boolean newRound, boolean late) {
        for (int n = waitingCount.get(); n > 0; n--) {
            MultipathIo io = waiting.poll();
            if (io == null) {
                return;
            }
            waitingCount.decrementAndGet();
            if (newRound) {
                io.failedPaths = 0;
            }
            dispatch(io, late);
        }
    }

    /** Takes back a preallocated request once its caller was told. */
    void recycle(MultipathIo io) {
        pool.offer(io);
    }

    /** A path, for messages: "path 1 (127.0.0.1:4420)". */
    String pathName(int p) {
        NamespaceHandle h = paths[p];
        return "path " + p + " (" + h.controller().transportId().traddr() + ":"
                + h.controller().transportId().trsvcid() + ")";
    }
}

package io.nvmeof.tgt.core;

import io.nvmeof.uring.IoUring;
import io.nvmeof.uring.UringException;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One poll group's io_uring for the file and block namespaces of its queues (SPDK's uring bdev keeps one per thread
 * group the same way): reads, writes and flushes are prepared as commands run, handed to the kernel together by
 * {@link #poll()} (one {@code io_uring_enter} per batch), and completed on the same thread when {@link #poll()} reaps
 * them. Nothing blocks: requests the ring has no room for wait here, never spinning on the ring or dropping them.
 *
 * <p>Each namespace waits in a line of its own (as SPDK queues per bdev channel and nvmet sends bios to each device's
 * own queue), and room in the ring goes round the namespaces that wait, one request each in turn, so a slow device only
 * slows itself (issue 50: 250 reads of a 50-IOPS device queued ahead of a fast namespace's read made it wait 2 s). A
 * namespace has at most its depth in the ring ({@link Namespace#deviceQueueDepth()} when set, else what its device
 * takes, {@link io.nvmeof.tgt.backend.BlockBackend#deviceRequestLimit()}), and at most a fair share of the ring while
 * others use it too; and the last eighth of the ring is kept for namespaces that have fewer than
 * {@link #GUARANTEED} requests in it, so one that comes while another fills the ring goes in at once.
 *
 * <p>The poll group calls {@link #poll()} while {@link #busy()}: an RDMA poll group in its polling loop, a NVMe/TCP
 * event loop through the task {@code schedulePoll} queues (it runs after the loop's current batch of reads, so the
 * commands of one batch go in with one system call).
 *
 * <p>A request in the ring keeps its slot and its data buffer until its completion is reaped: the kernel may write
 * the buffer until then. A queue that closes meanwhile leaves it here as an orphan ({@link #orphan}), counted as its
 * controller's and namespace's backend work, and released when the kernel is done with it; requests that only wait
 * here are withdrawn (they never reach the device).
 */
public final class StorageRing implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageRing.class);
    /** Requests in flight to the device per poll group when nothing else is asked (SPDK's aio bdev: 128). */
    public static final int DEFAULT_DEPTH = 128;

    /** The device request a command needs. */
    public enum Op { READ, WRITE }

    static final byte OP_READ = 1;
    static final byte OP_WRITE = 2;
    static final byte OP_FLUSH = 3;

    /** What a request's completion does, on its queue's thread: its status from the kernel's result. */
    @FunctionalInterface
    public interface Done {
        void done(Request request, int result);
    }

    private final IoUring ring;
    private final int depth;
    private final Request[] byTag;
    private final int[] freeTags;
    private int freeCount;
    /**
     * Per namespace: its requests in the ring and its line of those waiting for room, oldest first. An entry stays
     * while its namespace lives (none is made per I/O); requests without a namespace share one.
     */
    private final java.util.IdentityHashMap<Namespace, NamespaceShare> shares = new java.util.IdentityHashMap<>();
    private final NamespaceShare noNamespace = new NamespaceShare(null);
    /** The shares with requests in their line, in turn: the next room in the ring goes to the first that may take it. */
    private final ArrayDeque<NamespaceShare> backlogged = new ArrayDeque<>();
    /** Requests in the lines, all namespaces together. */
    private int lined;
    /** Shares with requests in the ring or in their line: the ring's fair share is its room divided among them. */
    private int activeShares;
    /** Slots only namespaces with fewer than {@link #GUARANTEED} requests in the ring may take: an eighth. */
    private final int reserve;
    /** A namespace with fewer than this many requests in the ring may take a reserved slot. */
    static final int GUARANTEED = 4;
    /** Runs {@link #poll()} soon on this poll group's thread (TCP: the event loop's task queue); null: polled anyway. */
    private final Runnable schedulePoll;
    private boolean pollScheduled;
    private final IoUring.Completions completions = this::completed;
    private boolean submitFailureLogged;
    private volatile boolean closing;
    /** Device requests completed through this ring, for tests and statistics. */
    private long completedRequests;

    /**
     * @param depth        requests in flight to the device at most
     * @param schedulePoll runs {@link #pollFromTask()} soon on this thread, or null where the owner polls every turn
     */
    public StorageRing(int depth, Runnable schedulePoll) throws UringException {
        this.ring = IoUring.open(depth);
        this.depth = Math.min(depth, ring.submissionEntries());
        this.byTag = new Request[this.depth];
        this.freeTags = new int[this.depth];
        for (int i = 0; i < this.depth; i++) {
            freeTags[i] = this.depth - 1 - i;
        }
        this.freeCount = this.depth;
        this.reserve = this.depth / 8;
        this.schedulePoll = schedulePoll;
        // fsync and fallocate cannot complete inline: the kernel's workers for them stay few per poll group.
        ring.limitWorkers(4, 4);
    }

    public int depth() {
        return depth;
    }

    /** Reads {@code length} bytes at {@code offset} of {@code fd} into memory at {@code address}. */
    public void read(Request r, int fd, long address, int length, long offset, Done done) {
        start(r, OP_READ, fd, address, length, offset, 0, done);
    }

    /** Writes; {@code rwFlags} {@link IoUring#RWF_DSYNC} makes it durable before it completes (FUA). */
    public void write(Request r, int fd, long address, int length, long offset, int rwFlags, Done done) {
        start(r, OP_WRITE, fd, address, length, offset, rwFlags, done);
    }

    /** fdatasync: every write completed before it is durable when it completes. */
    public void flush(Request r, int fd, Done done) {
        start(r, OP_FLUSH, fd, 0, 0, 0, 0, done);
    }

    /** One namespace's part of this ring (see {@link #shares}). */
    static final class NamespaceShare {
        final Namespace ns;
        int inRing;
        final ArrayDeque<Request> line = new ArrayDeque<>();
        /** Whether it is in {@link #backlogged}. */
        boolean backlogged;

        NamespaceShare(Namespace ns) {
            this.ns = ns;
        }
    }

    private void start(Request r, byte op, int fd, long address, int length, long offset, int flags, Done done) {
        r.ringOp = op;
        r.ringFd = fd;
        r.ringAddress = address;
        r.ringLength = length;
        r.ringOffset = offset;
        r.ringFlags = flags;
        r.ringDone = done;
        r.ring = this;
        NamespaceShare share = r.ns != null ? shareOf(r.ns) : noNamespace;
        if (share.inRing == 0 && share.line.isEmpty()) {
            activeShares++;
        }
        r.ringShare = share;
        // In its namespace's line, behind its others: the next poll prepares it, just before it submits, so it is
        // checked against its controller's keep-alive as late as possible (see poll).
        share.line.addLast(r);
        lined++;
        if (!share.backlogged) {
            share.backlogged = true;
            backlogged.addLast(share);
        }
        if (schedulePoll != null && !pollScheduled) {
            pollScheduled = true;
            schedulePoll.run();
        }
    }

    private NamespaceShare shareOf(Namespace ns) {
        NamespaceShare share = shares.get(ns);
        if (share == null) { // the namespace's first request on this poll group
            if (shares.size() >= 64) {
                shares.values().removeIf(idle -> idle.inRing == 0 && idle.line.isEmpty()); // removed namespaces'
            }
            share = new NamespaceShare(ns);
            shares.put(ns, share);
        }
        return share;
    }

    /** A request of {@code share} left it (completed, withdrawn or refused): the share may stop counting as active. */
    private void left(NamespaceShare share) {
        if (share.inRing == 0 && share.line.isEmpty()) {
            activeShares--;
        }
    }

    /**
     * Whether {@code share} may put one more request into the ring now: below its namespace's depth and its fair share
     * of the ring, and, for the last reserved slots, below {@link #GUARANTEED}.
     */
    private boolean mayEnter(NamespaceShare share) {
        int held = share.inRing;
        if (held >= depthOf(share)) {
            return false;
        }
        if (held < GUARANTEED) {
            return true;
        }
        if (freeCount <= reserve) {
            return false;
        }
        int fair = Math.max(GUARANTEED, (depth - reserve) / Math.max(1, activeShares));
        return held < fair;
    }

    /** The most of its namespace's requests the ring takes at once: its own depth, else its device's, else the ring's. */
    private int depthOf(NamespaceShare share) {
        Namespace ns = share.ns;
        if (ns == null) {
            return depth;
        }
        int own = ns.deviceQueueDepth();
        if (own > 0) {
            return own;
        }
        int device = ns.backend().deviceRequestLimit();
        return device > 0 ? device : depth;
    }

    /**
     * Moves waiting requests into the ring as its room allows, one per backlogged namespace in turn; a request whose
     * controller may no longer run (ended, or the target stalled past its keep-alive deadline since it was taken:
     * SIGSTOP, a GC or VM pause) is refused instead and never reaches the device.
     */
    private void fill() {
        long now = 0;
        int passed = 0; // backlogged shares looked at since one last moved: a whole round of none, and the rest wait
        while (freeCount > 0 && !backlogged.isEmpty() && passed < backlogged.size()) {
            NamespaceShare share = backlogged.pollFirst();
            Request r = share.line.peekFirst();
            if (r == null) {
                share.backlogged = false; // its line was withdrawn meanwhile
                continue;
            }
            if (!mayEnter(share)) {
                backlogged.addLast(share);
                passed++;
                continue;
            }
            if (now == 0) {
                now = System.nanoTime();
            }
            Controller c = r.sq().controller();
            boolean ended = c != null && !c.mayRun(now);
            int access = ended || c == null || r.ns == null ? io.nvmeof.protocol.Status.SUCCESS
                    : r.ns.reservations().checkAccess(c.hostUuid(), r.cmd.opcode(), now);
            if (ended || access != io.nvmeof.protocol.Status.SUCCESS) {
                // Its host has given it up, and may have written the same blocks through another path since. Or a
                // reservation taken while it waited fences its host (Preempt and Abort: it never started, so it is
                // aborted rather than waited for), or the namespace's shared reservations were not read for a lease
                // (another target may have fenced its host meanwhile): retried once read again, or elsewhere.
                boolean stillHere = share.line.peekFirst() == r; // else withdrawn by its queue's close under the check
                if (stillHere) {
                    share.line.pollFirst();
                    lined--;
                }
                requeue(share);
                if (stillHere) {
                    refuse(r, ended ? -1 : access);
                }
                passed = 0;
                continue;
            }
            if (!prepare(r)) {
                backlogged.addFirst(share); // the submission queue is full: the next poll goes on from here
                return;
            }
            share.line.pollFirst();
            lined--;
            share.inRing++;
            requeue(share);
            passed = 0;
        }
    }

    /** Back at the end of the turn while its line has requests. */
    private void requeue(NamespaceShare share) {
        if (share.line.isEmpty()) {
            share.backlogged = false;
        } else {
            backlogged.addLast(share);
        }
    }

    private boolean prepare(Request r) {
        if (freeCount == 0) {
            return false;
        }
        int tag = freeTags[freeCount - 1];
        boolean taken = switch (r.ringOp) {
            case OP_READ -> ring.read(r.ringFd, r.ringAddress, r.ringLength, r.ringOffset, tag);
            case OP_WRITE -> ring.write(r.ringFd, r.ringAddress, r.ringLength, r.ringOffset, r.ringFlags, tag);
            default -> ring.fdatasync(r.ringFd, tag);
        };
        if (!taken) {
            return false;
        }
        freeCount--;
        byTag[tag] = r;
        r.ringTag = tag;
        return true;
    }

    private long submissions;

    /**
     * Reaps what the kernel completed (their requests complete here), moves waiting requests into the ring as room
     * allows, and submits what is prepared. Returns the number of completions reaped.
     */
    public int poll() {
        int reaped = ring.reap(completions);
        if (lined > 0) {
            fill();
        }
        if (ring.prepared() > 0) {
            try {
                if (ring.submit() > 0) { // 0: the kernel refused for now (EAGAIN, EBUSY): not activity
                    submissions++;
                }
            } catch (UringException e) {
                // Errors of single requests come back as their completions; this is the ring itself (EBADF, EFAULT):
                // nothing can be submitted, and the prepared requests stay for the next turn.
                if (!submitFailureLogged) {
                    submitFailureLogged = true;
                    LOG.error("io_uring_enter failed; file and block I/O of this poll group waits: {}", e.getMessage());
                }
            }
        }
        return reaped;
    }

    /**
     * The poll {@code schedulePoll} asked for: polls, and returns the completions reaped. The owner decides what comes
     * next while the ring is {@link #busy()}: poll again soon ({@link #pollQueued()}), or sleep until the ring's
     * eventfd fires; a request that comes meanwhile asks for a poll of its own.
     */
    public int pollFromTask() {
        pollScheduled = false;
        return poll();
    }

    /** System calls that sent requests to the devices so far (an owner tells a poll that submitted by it). */
    public long submissions() {
        return submissions;
    }

    /** The owner has queued the next poll itself: requests that come before it need not ask for one. */
    public void pollQueued() {
        pollScheduled = true;
    }

    /** Whether a poll is queued: asked for by a request, or queued by the owner ({@link #pollQueued()}). */
    public boolean pollIsQueued() {
        return pollScheduled;
    }

    /** Whether completions wait to be reaped (one memory read; for an owner about to sleep). */
    public boolean hasCompletions() {
        return ring.hasCompletions();
    }

    /** The ring's eventfd, signaled for each completion while {@link #eventFdEnabled} is on. */
    public int eventFd() throws UringException {
        return ring.eventFd();
    }

    /** See {@link IoUring#eventFdEnabled}. */
    public void eventFdEnabled(boolean on) {
        ring.eventFdEnabled(on);
    }

    /** Sleeps on the eventfd for up to {@code timeoutMs} (from a thread that waits for the owner); see IoUring. */
    public boolean awaitCompletion(int timeoutMs) throws UringException {
        return ring.awaitCompletion(timeoutMs);
    }

    /** Ends an {@link #awaitCompletion} early, from any thread. */
    public void wake() {
        ring.wake();
    }

    /** Whether requests are in the ring or wait for it. */
    public boolean busy() {
        return ring.inFlight() > 0 || ring.prepared() > 0 || lined > 0;
    }

    /** Requests submitted to the device and not yet reaped, plus those prepared for the next submission. */
    public int inFlight() {
        return ring.inFlight() + ring.prepared();
    }

    /** Requests waiting in their namespaces' lines: for room in the ring, or held back by their namespace's depth. */
    public int waiting() {
        return lined;
    }

    /** Device requests completed through this ring since it was set up. */
    public long completedRequests() {
        return completedRequests;
    }

    private void completed(long userData, int result) {
        completedRequests++;
        int tag = (int) userData;
        Request r = byTag[tag];
        byTag[tag] = null;
        freeTags[freeCount++] = tag;
        r.ringTag = -1;
        r.ring = null;
        NamespaceShare share = r.ringShare;
        if (share != null) {
            r.ringShare = null;
            share.inRing--;
            left(share);
            if (!share.line.isEmpty() && !share.backlogged) {
                share.backlogged = true; // it was at its depth: its next may go in at the next fill
                backlogged.addLast(share);
            }
        }
        if (r.ringOrphan) {
            r.ringOrphan = false;
            orphanDone(r);
            return;
        }
        if (!closing) { // at the end, on another thread: the requests' queues are gone with their poll group
            r.ringDone.done(r, result);
        }
    }

    /**
     * A request taken out of its line before it reached the ring: completed with {@code status}, or, -1, unanswered
     * (its controller has ended: {@link TargetCore#endUnanswered}).
     */
    private void refuse(Request r, int status) {
        r.ring = null;
        NamespaceShare share = r.ringShare;
        if (share != null) {
            r.ringShare = null;
            left(share);
        }
        if (status < 0) {
            TargetCore.endUnanswered(r);
        } else {
            r.complete(status);
        }
    }

    /**
     * Withdraws a request that waits here and has not reached the ring (an Abort, its queue closing): it never reaches
     * the device. False when it is in the ring already, or not here.
     */
    boolean withdraw(Request r) {
        if (r.ringTag >= 0) {
            return false;
        }
        NamespaceShare share = r.ringShare;
        if (share == null || !share.line.remove(r)) {
            return false;
        }
        lined--;
        r.ringShare = null;
        left(share); // an emptied line leaves the turn when fill comes to it
        r.ring = null;
        return true;
    }

    /**
     * Its queue closed while the kernel has the request: the request stays here until its completion, counted as
     * backend work of its controller and namespace (a reset, the host's next association and the namespace's removal
     * wait for it), then is released. Only for a request in the ring ({@code ringTag >= 0}).
     */
    static void orphan(Request r) {
        r.ringOrphan = true;
        if (r.ns != null && !r.ns.enterBackend()) {
            LOG.warn("namespace {} was retired with I/O still in the kernel", r.ns.nsid()); // not expected: it held it
            r.ringOrphanNs = null;
        } else {
            r.ringOrphanNs = r.ns;
        }
        Controller c = r.sq().controller();
        r.ringOrphanController = c;
        if (c != null) {
            c.backendWorkStarted();
        }
    }

    private static void orphanDone(Request r) {
        Namespace ns = r.ringOrphanNs;
        Controller c = r.ringOrphanController;
        r.ringOrphanNs = null;
        r.ringOrphanController = null;
        if (ns != null) {
            ns.exitBackend();
        }
        if (c != null) {
            c.backendWorkDone();
        }
        r.sq().release(r); // the kernel is done with its buffer: now it may go back to its pool
    }

    /**
     * Waits for what the kernel still has (its memory may be written until then) and releases the ring; at the poll
     * group's end, when no queue uses it any more.
     */
    @Override
    public void close() throws UringException {
        closing = true;
        while (ring.inFlight() > 0) {
            ring.submitAndWait(1);
            ring.reap(completions);
        }
        ring.close();
    }
}

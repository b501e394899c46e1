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
 * them. Nothing blocks: a full ring leaves requests waiting here in their order, never spinning on the ring or dropping
 * them; the device sees up to {@link #depth()} requests of this poll group at once, and up to a namespace's own
 * {@link Namespace#deviceQueueDepth()} of that namespace's (the rest wait in their namespace's order, without holding
 * up other namespaces' requests).
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
    /** Requests the ring had no room for, oldest first. */
    private final ArrayDeque<Request> waiting;
    /**
     * Per namespace with a queue depth of its own: its requests in the ring or waiting for room ({@code inRing}), and
     * those held back by its depth, oldest first. An entry stays while its namespace lives (none is made per I/O).
     */
    private final java.util.IdentityHashMap<Namespace, NamespaceShare> shares = new java.util.IdentityHashMap<>();
    /** Requests held back by their namespace's depth, all namespaces together. */
    private int heldBack;
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
        this.waiting = new ArrayDeque<>(this.depth);
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
        int inRing;
        final ArrayDeque<Request> heldBack = new ArrayDeque<>();
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
        int limit = r.ns != null ? r.ns.deviceQueueDepth() : 0;
        NamespaceShare share = limit > 0 ? shareOf(r.ns) : null;
        if (share != null && (share.inRing >= limit || !share.heldBack.isEmpty())) {
            share.heldBack.addLast(r); // in order behind the namespace's others
            heldBack++;
        } else {
            enter(r, share);
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
                shares.values().removeIf(idle -> idle.inRing == 0 && idle.heldBack.isEmpty()); // removed namespaces'
            }
            share = new NamespaceShare();
            shares.put(ns, share);
        }
        return share;
    }

    /**
     * In line for the ring, counted in its namespace's share (if any): the next {@link #poll} prepares it, just before
     * it submits, so a request is checked against its controller's keep-alive as late as possible (see {@link #poll}).
     */
    private void enter(Request r, NamespaceShare share) {
        r.ringShare = share;
        if (share != null) {
            share.inRing++;
        }
        waiting.addLast(r); // in order behind those already waiting
    }

    /** A request of {@code share} left the ring (completed, or withdrawn while waiting): its next held back may enter. */
    private void left(NamespaceShare share) {
        share.inRing--;
        Request next = share.heldBack.pollFirst();
        if (next != null) {
            heldBack--;
            enter(next, share);
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

    /**
     * Reaps what the kernel completed (their requests complete here), moves waiting requests into the ring as room
     * allows, and submits what is prepared. Returns the number of completions reaped.
     */
    public int poll() {
        int reaped = ring.reap(completions);
        if (!waiting.isEmpty()) {
            long now = System.nanoTime();
            while (!waiting.isEmpty()) {
                Request r = waiting.peekFirst();
                io.nvmeof.tgt.core.Controller c = r.sq().controller();
                if (c != null && !c.mayRun(now)) {
                    // Its controller ended, or the target stalled past its keep-alive deadline between taking the
                    // command and here (SIGSTOP, a GC or VM pause): its host has given it up, and may have written the
                    // same blocks through another path since. It never reaches the device.
                    waiting.pollFirst();
                    refuse(r);
                    continue;
                }
                if (!prepare(r)) {
                    break;
                }
                waiting.pollFirst();
            }
        }
        if (ring.prepared() > 0) {
            try {
                ring.submit();
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
        return ring.inFlight() > 0 || ring.prepared() > 0 || !waiting.isEmpty() || heldBack > 0;
    }

    /** Requests submitted to the device and not yet reaped, plus those prepared for the next submission. */
    public int inFlight() {
        return ring.inFlight() + ring.prepared();
    }

    /** Requests waiting for room in the ring, or held back by their namespace's queue depth. */
    public int waiting() {
        return waiting.size() + heldBack;
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
            left(share); // before the completion runs: it may start the namespace's next request
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

    /** A request taken out of line before it reached the ring: completed as aborted, its share's next may go in. */
    private void refuse(Request r) {
        r.ring = null;
        NamespaceShare share = r.ringShare;
        if (share != null) {
            r.ringShare = null;
            left(share);
        }
        r.complete(io.nvmeof.protocol.Status.ABORT_SQ_DELETED);
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
        if (waiting.remove(r)) {
            r.ringShare = null;
            if (share != null) {
                left(share);
            }
        } else if (r.ns != null && (share = shares.get(r.ns)) != null && share.heldBack.remove(r)) {
            heldBack--;
        } else {
            return false;
        }
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

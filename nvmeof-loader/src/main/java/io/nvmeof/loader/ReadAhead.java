package io.nvmeof.loader;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.plan.EpochPlan;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The loader's data path: reads an epoch plan's groups ahead of the consumer into one buffer of fixed size, and hands
 * out where each sample landed.
 *
 * <p>The buffer is a ring. Groups take space in plan order and give it back in plan order, once every sample of the
 * group has been released (samples released out of order only delay the space's return). Reads are issued in plan
 * order, at most {@code readsInFlight} per controller, as the initiator's zero-allocation flavour: the context names
 * the group's slot, the completion decrements the group's pending count. Nothing here allocates per sample or per read.
 *
 * <p>A part over several paths is read through its {@link MultipathNamespace}; its reads are limited per route (the
 * set of controllers a part's reads may take: one controller, or all its paths') to what the route's controllers
 * keep in flight together.
 *
 * <p>Threads: one consuming thread allocates groups ({@link #fill}) and waits for them ({@link #await}); reads are
 * issued by whichever thread finds room first, the consumer after allocating or an I/O thread after a completion (one
 * at a time, by a compare-and-set flag, never a lock), so a completion starts the next read on the I/O thread without
 * waking the consumer; the consumer is woken only when the group it waits for is complete. {@link #release} may be
 * called from any thread.
 */
final class ReadAhead implements IoCallback, EpochPlan.RunVisitor {
    static final int RING = 1 << 16;
    private static final int MASK = RING - 1;
    /** How long the consumer spins before it parks, waiting for a read. */
    private static final int SPINS = 32;
    /** A safety net only: the consumer is woken by the completion it waits for, or by a release. */
    private static final long PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * The consumer, when it must wait, waits for up to this many groups to be read at once (fewer wake-ups), and for
     * no more than the reads one controller keeps in flight.
     */
    private static final int WAKE_AFTER = 32;
    private final int wakeAfter;

    private final NvmeofDataset ds;
    private final ReconnectCheck reconnects;
    final ByteBuffer arena;
    private final ByteBuffer readView;
    final ByteBuffer userView;
    private final int capacity;
    private final NamespaceHandle[] partNs;
    /** By part: null where it has one path. */
    private final MultipathNamespace[] partMultipath;
    /** By part: its route (index into {@link #ctrlInFlight}). */
    private final int[] partCtrl;
    private final int[] partChunk;
    private final int[] partBlock;
    private final List<NvmeofController> controllers;
    /** Reads in flight by route: a part's controllers (one, or its paths'). */
    private final java.util.concurrent.atomic.AtomicIntegerArray ctrlInFlight;
    private final int[] ctrlLimit;

    // Groups, by plan group index & MASK.
    private final AtomicIntegerArray gPending = new AtomicIntegerArray(RING);
    private final AtomicIntegerArray gStatus = new AtomicIntegerArray(RING);
    private final AtomicIntegerArray gUnreleased = new AtomicIntegerArray(RING);
    /**
     * The {@link ReconnectCheck} stamp every read of the group completed under, {@link #UNSTAMPED} before the first,
     * {@link #MIXED} when they differ: whether the group's bytes may be handed out.
     */
    private final AtomicIntegerArray gStamp = new AtomicIntegerArray(RING);
    static final int UNSTAMPED = -1;
    static final int MIXED = -2;
    private final int[] gSpan = new int[RING];
    // Runs, by sequence number & MASK.
    private final int[] rPart = new int[RING];
    private final int[] rArena = new int[RING];
    private final int[] rSlot = new int[RING];
    private final long[] rStart = new long[RING];
    private final long[] rEnd = new long[RING];
    private final boolean[] rLast = new boolean[RING];
    // Where each sample landed, by storage position & MASK.
    private final int[] sArena = new int[RING];

    // Consumer-thread state.
    private EpochPlan plan;
    private int nextGroup;
    private int tailGroup;
    private long runHead;
    private long runIssue;
    /** {@link #runIssue} as the consumer may read it. */
    private volatile long runsIssued;
    private long runIssueNext = -1;
    private int arenaHead;
    private long used;
    private int cursor;
    private int allocSlot;

    private volatile Thread waiter;
    private volatile boolean waiting;
    /** The group slot the consumer waits for (-1: none), so completions of other groups do not wake it. */
    private volatile int awaited = -1;
    /** Runs allocated, published to issuers; written by the consumer only. */
    private volatile long runsPublished;
    /** One issuer at a time: 0 free, 1 taken. */
    private final java.util.concurrent.atomic.AtomicInteger issuing = new java.util.concurrent.atomic.AtomicInteger();
    /** Set by {@link #drain}: completions stop issuing. */
    private volatile boolean stopped;

    // Statistics (consumer thread writes; others read racily).
    long reads;
    long readBytes;
    long waitNanos;
    long parks;
    long awaits;

    ReadAhead(NvmeofDataset ds, int capacity, int readsInFlight) {
        this.ds = ds;
        this.reconnects = ds.reconnects();
        this.capacity = capacity;
        this.arena = ByteBuffer.allocateDirect(capacity);
        this.readView = arena.duplicate();
        this.userView = arena.asReadOnlyBuffer();
        this.controllers = ds.controllers();
        int parts = ds.parts().size();
        partNs = new NamespaceHandle[parts];
        partMultipath = new MultipathNamespace[parts];
        partCtrl = new int[parts];
        partChunk = new int[parts];
        partBlock = new int[parts];
        List<List<NvmeofController>> routes = new ArrayList<>();
        for (int p = 0; p < parts; p++) {
            NamespaceHandle ns = ds.parts().get(p).namespace();
            partNs[p] = ns;
            partMultipath[p] = ds.multipath(p);
            List<NvmeofController> route = new ArrayList<>();
            for (NamespaceHandle path : partMultipath[p] != null ? partMultipath[p].paths() : List.of(ns)) {
                route.add(path.controller());
            }
            if (!routes.contains(route)) {
                routes.add(route);
            }
            partCtrl[p] = routes.indexOf(route);
            partBlock[p] = ns.blockSize();
            partChunk[p] = chunkBytes(ds, p);
        }
        ctrlInFlight = new AtomicIntegerArray(routes.size());
        ctrlLimit = new int[routes.size()];
        for (int r = 0; r < ctrlLimit.length; r++) {
            // A route's paths share its reads: a failover sends them all down the paths left, whose queues hold the
            // overflow in order (they do not fail it).
            for (NvmeofController ctrl : routes.get(r)) {
                ctrlLimit[r] += readsInFlight > 0 ? readsInFlight
                        : Math.max(1, ctrl.ioQueueCount() * Math.max(1, ctrl.queueDepth() - 1));
            }
        }
        int least = Integer.MAX_VALUE;
        for (int limit : ctrlLimit) {
            least = Math.min(least, limit);
        }
        wakeAfter = Math.max(1, Math.min(WAKE_AFTER, least));
        for (NvmeofController c : controllers) {
            c.registerBuffer(arena);
        }
    }

    int capacity() { return capacity; }

    /** The largest read issued to part {@code part}: its maximum transfer (every path's), at most 4 MiB. */
    static int chunkBytes(NvmeofDataset ds, int part) {
        MultipathNamespace mp = ds.multipath(part);
        NamespaceHandle ns = ds.parts().get(part).namespace();
        int maxBlocks = mp != null ? mp.maxBlocksPerIo() : ns.maxBlocksPerIo();
        return (int) Math.min(4L << 20, (long) maxBlocks * ns.blockSize());
    }

    // ------------------------------------------------------------------------------------------- iterations

    /** Starts reading {@code plan} from emission index {@code from}; the previous iteration must be finished. */
    void start(EpochPlan plan, int from) {
        if (plan.maxGroupBytes() > capacity) {
            throw new IllegalArgumentException(plan.groupSize() == 1
                    ? "a sample of " + plan.maxGroupBytes() + " bytes does not fit the prefetch buffer of " + capacity
                    + " bytes; raise prefetchBytes"
                    : "a window of " + plan.groupSize() + " samples needs up to " + plan.maxGroupBytes()
                    + " bytes of buffer, more than the prefetch buffer of " + capacity
                    + " bytes; raise prefetchBytes or lower window");
        }
        if (plan.groupSize() > RING / 2) {
            throw new IllegalArgumentException("window must be at most " + RING / 2 + " samples, got " + plan.groupSize());
        }
        this.plan = plan;
        int g0 = plan.size() == 0 ? 0 : Math.min(from, plan.size()) / plan.groupSize();
        nextGroup = g0;
        tailGroup = g0;
        runHead = 0;
        runsPublished = 0;
        runIssue = 0;
        runsIssued = 0;
        runIssueNext = -1;
        arenaHead = 0;
        used = 0;
        stopped = false;
    }

    /** Whether group {@code g} holds its data (every read done). Issues more reads on the way. */
    boolean ready(int g) {
        return g < nextGroup && gPending.get(g & MASK) == 0;
    }

    /**
     * Waits until group {@code g} is read, issuing reads as room appears.
     *
     * @return false if it cannot be read because the buffer is full of samples not released within
     *         {@code releaseTimeoutNanos}
     */
    boolean await(int g, long releaseTimeoutNanos) {
        fill();
        if (ready(g)) {
            return true;
        }
        awaits++;
        long t0 = System.nanoTime();
        long stuckSince = 0;
        try {
            waiter = Thread.currentThread();
            // Wake once for several groups, not once per group: the reads go on without the consumer (completions
            // issue the next ones), and a wake-up costs more than a sample.
            int target = g + Math.max(0, Math.min(wakeAfter - 1, (nextGroup - 1 - g) / 2));
            awaited = target & MASK;
            while (true) {
                fill();
                if (enough(g, target)) {
                    return true;
                }
                if (g >= nextGroup && !readsPending()) {
                    // Nothing in flight and no room: only a release can help.
                    long now = System.nanoTime();
                    if (stuckSince == 0) {
                        stuckSince = now;
                    } else if (now - stuckSince > releaseTimeoutNanos) {
                        return false;
                    }
                }
                // Spin a little, looking only (a consumer sharing a core with the I/O thread must not eat its time),
                // then sleep until the completion of the awaited group wakes this thread.
                for (int i = 0; i < SPINS && !enough(g, target); i++) {
                    Thread.onSpinWait();
                }
                if (enough(g, target)) {
                    continue;
                }
                waiting = true;
                if (!enough(g, target)) {
                    parks++;
                    LockSupport.parkNanos(this, PARK_NANOS);
                }
                waiting = false;
            }
        } finally {
            waiting = false;
            awaited = -1;
            waitNanos += System.nanoTime() - t0;
        }
    }

    /**
     * Whether the consumer may go on: group {@code g} is read, and so is {@code target} (or {@code target} still
     * waits for room to be issued, which only the consumer can free, or {@code g} failed).
     */
    private boolean enough(int g, int target) {
        return ready(g) && (target == g || ready(target) || !fullyIssued[target & MASK] || gStatus.get(g & MASK) != 0);
    }

    private boolean readsPending() {
        for (int g = tailGroup; g < nextGroup; g++) {
            if (gPending.get(g & MASK) != 0) {
                return true;
            }
        }
        return false;
    }

    /** The status of group {@code g}'s reads: 0, or the first failure. */
    int status(int g) { return gStatus.get(g & MASK); }

    /** The stamp group {@code g}'s reads completed under (its group must be ready): {@link #MIXED} if not one. */
    int stamp(int g) { return gStamp.get(g & MASK); }

    /** Adds a read of group {@code g} completed under {@code stamp}. */
    void stamp(int g, int stamp) {
        int slot = g & MASK;
        while (true) {
            int was = gStamp.get(slot);
            if (was == stamp || was == MIXED
                    || gStamp.compareAndSet(slot, was, was == UNSTAMPED ? stamp : MIXED)) {
                return;
            }
        }
    }

    /**
     * Reads ready group {@code g}'s samples again, in place, one by one from the consumer's thread (a rare path: its
     * reads went through an association that is gone unchecked); the caller checks the stamps around it.
     */
    void reread(int g) throws java.io.IOException {
        for (int p = plan.groupStart(g); p < plan.groupEnd(g); p++) {
            ByteBuffer dst = readView.duplicate();
            dst.position(sArena[p & MASK]);
            ds.readInto(plan.storage(p), dst);
        }
        gStatus.set(g & MASK, 0);
    }

    /** Where the sample at storage position {@code p} lies in the buffer (its group must be ready). */
    int offsetOf(int p) { return sArena[p & MASK]; }

    /** Releases the sample at storage position {@code p}; any thread. */
    void release(int p) {
        int slot = (p / plan.groupSize()) & MASK;
        if (gUnreleased.decrementAndGet(slot) == 0 && waiting) {
            LockSupport.unpark(waiter);
        }
    }

    /**
     * Waits for every read still in flight (an iteration ends, or is abandoned midway), at most {@code timeoutNanos}.
     *
     * @return false if some did not complete: the buffer may still be written into and must not be used again
     */
    boolean drain(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        stopped = true;
        // Take the issuing flag from any I/O thread that holds it, then stop issuing: runs not yet started are
        // dropped, a run partly issued is cut short.
        while (!issuing.compareAndSet(0, 1)) {
            Thread.onSpinWait();
        }
        try {
            runIssue = runHead;
            runsIssued = runHead;
            for (int g = tailGroup; g < nextGroup; g++) {
                int slot = g & MASK;
                // The issuing token of a group whose last run was never (fully) issued.
                if (!fullyIssued[slot]) {
                    fullyIssued[slot] = true;
                    gPending.decrementAndGet(slot);
                }
            }
        } finally {
            issuing.set(0);
        }
        while (readsPending()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(PARK_NANOS);
        }
        return true;
    }

    /** Ends the buffer's registrations; only after a successful {@link #drain}. */
    void close() {
        for (NvmeofController c : controllers) {
            try {
                c.deregisterBuffer(arena);
            } catch (RuntimeException e) {
                // The controller may be closed already; its registrations went with it.
            }
        }
    }

    // ------------------------------------------------------------------------------------------- reading ahead

    private final boolean[] fullyIssued = new boolean[RING];

    /**
     * Gives back the space of released groups, allocates what now fits, and issues reads when the I/O threads will
     * not: a submission from this thread is handed over to the queue's I/O thread (a wake-up), one from a completion
     * is sent at once, so while enough reads are in flight their completions issue the new ones.
     */
    void fill() {
        reclaim();
        while (nextGroup < plan.groupCount() && allocate(nextGroup)) {
            nextGroup++;
        }
        if (fewInFlight()) {
            issue();
        }
    }

    /** Whether the next run's controller has under a quarter of its reads in flight (completions may not refill it). */
    private boolean fewInFlight() {
        long next = runsIssued;
        if (next >= runsPublished) {
            return false;
        }
        int ctrl = partCtrl[rPart[(int) (next & MASK)]];
        return ctrlInFlight.get(ctrl) <= ctrlLimit[ctrl] / 4;
    }

    private void reclaim() {
        while (tailGroup < nextGroup) {
            int slot = tailGroup & MASK;
            if (gUnreleased.get(slot) != 0 || gPending.get(slot) != 0) {
                break;
            }
            used -= gSpan[slot];
            tailGroup++;
        }
        if (tailGroup == nextGroup) {
            // Empty: start again at the buffer's beginning.
            used = 0;
            arenaHead = 0;
        }
    }

    private boolean allocate(int g) {
        if (g - tailGroup >= RING - 1) {
            return false;
        }
        int first = plan.groupStart(g);
        int end = plan.groupEnd(g);
        if (end - plan.groupStart(tailGroup) > RING || runHead - runsIssued + (end - first) > RING) {
            return false;
        }
        int bytes = (int) plan.groupBytes(g);
        int base = arenaHead;
        int span = bytes;
        if (base + bytes > capacity) {
            span = capacity - base + bytes;
            base = 0;
        }
        if (used + span > capacity) {
            return false;
        }
        int slot = g & MASK;
        gSpan[slot] = span;
        gStatus.set(slot, 0);
        gStamp.set(slot, UNSTAMPED);
        gUnreleased.set(slot, end - first);
        fullyIssued[slot] = false;
        gPending.set(slot, 1); // the issuing token, removed once the group's last read is issued
        used += span;
        arenaHead = base + bytes == capacity ? 0 : base + bytes;
        cursor = base;
        allocSlot = slot;
        long before = runHead;
        plan.forEachRun(g, this);
        if (runHead == before) {
            throw new IllegalStateException("group " + g + " has no reads");
        }
        rLast[(int) ((runHead - 1) & MASK)] = true;
        runsPublished = runHead; // the runs' fields are written before they are published
        return true;
    }

    /** One run of the group being allocated: where it goes in the buffer, and where its samples land. */
    @Override
    public void run(int part, long alignedStart, long alignedEnd, int firstPos, int endPos) {
        int r = (int) (runHead & MASK);
        rPart[r] = part;
        rStart[r] = alignedStart;
        rEnd[r] = alignedEnd;
        rArena[r] = cursor;
        rSlot[r] = allocSlot;
        rLast[r] = false;
        for (int p = firstPos; p < endPos; p++) {
            sArena[p & MASK] = cursor + (int) (ds.start(plan.storage(p)) - alignedStart);
        }
        cursor += (int) (alignedEnd - alignedStart);
        runHead++;
    }

    /** Issues what room allows; whoever takes the flag issues for everyone. Any thread. */
    private void issue() {
        while (!stopped && canIssue() && issuing.compareAndSet(0, 1)) {
            try {
                issueHeld();
            } finally {
                issuing.set(0);
            }
            // A completion may have made room while the flag was held and seen it taken: look again.
        }
    }

    /** Whether a published run waits and its controller has room (a racy hint; the flag holder decides). */
    private boolean canIssue() {
        long next = runsIssued;
        if (next >= runsPublished) {
            return false;
        }
        int ctrl = partCtrl[rPart[(int) (next & MASK)]];
        return ctrlInFlight.get(ctrl) < ctrlLimit[ctrl];
    }

    private void issueHeld() {
        long published = runsPublished;
        while (runIssue < published && !stopped) {
            int r = (int) (runIssue & MASK);
            int part = rPart[r];
            int ctrl = partCtrl[part];
            if (ctrlInFlight.get(ctrl) >= ctrlLimit[ctrl]) {
                return;
            }
            long pos = runIssueNext >= 0 ? runIssueNext : rStart[r];
            int len = (int) Math.min(partChunk[part], rEnd[r] - pos);
            int slot = rSlot[r];
            int bs = partBlock[part];
            readView.position(rArena[r] + (int) (pos - rStart[r]));
            gPending.incrementAndGet(slot);
            ctrlInFlight.incrementAndGet(ctrl);
            try {
                if (partMultipath[part] != null) {
                    partMultipath[part].read(pos / bs, len / bs, readView, this, ((long) slot << 32) | ctrl);
                } else {
                    partNs[part].read(pos / bs, len / bs, readView, this, ((long) slot << 32) | ctrl);
                }
            } catch (RuntimeException e) {
                gPending.decrementAndGet(slot);
                ctrlInFlight.decrementAndGet(ctrl);
                throw e;
            }
            reads++;
            readBytes += len;
            pos += len;
            if (pos >= rEnd[r]) {
                if (rLast[r]) {
                    fullyIssued[slot] = true;
                    gPending.decrementAndGet(slot);
                }
                runIssue++;
                runsIssued = runIssue;
                runIssueNext = -1;
            } else {
                runIssueNext = pos;
            }
        }
    }

    /** A read completed (an I/O thread): issue the next ones here, and wake the consumer if this was its group. */
    @Override
    public void onComplete(long context, int status) {
        int slot = (int) (context >>> 32);
        int ctrl = (int) context;
        if (status != 0) {
            gStatus.compareAndSet(slot, 0, status);
        }
        stamp(slot, reconnects.stamp()); // before the group can be seen complete
        ctrlInFlight.decrementAndGet(ctrl);
        int left = gPending.decrementAndGet(slot);
        if (!stopped) {
            issue();
        }
        if (left == 0 && waiting && awaited == slot) {
            LockSupport.unpark(waiter);
        }
    }

    /** The namespace and byte offset a failed group's sample was read from, for messages. */
    String where(int sample) {
        int part = ds.part(sample);
        return "part " + (part + 1) + " (nsid " + partNs[part].nsid() + " of " + partNs[part].controller().transportId()
                + ") at byte " + ds.start(sample);
    }
}

package io.nvmeof.tgt.core;

import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The target's memory limit, shared by every queue ({@link TargetLimits#maxMemory}): what connected queues reserved
 * at Connect (request slots and transport buffers) plus the data buffers of their commands in flight. Data that does
 * not fit waits, as SPDK's requests wait for a shared buffer (its {@code num_shared_buffers}) rather than the process
 * growing; the waiting queues are woken as memory is given back. Each queue's own limit is kept by its
 * {@link SubmissionQueue}.
 *
 * <p>Forward progress: Connect admits a queue only while the reservations leave room for one largest transfer, so a
 * command that waits always fits once the commands in flight complete.
 *
 * <p>Queues whose host has proved nothing yet (discovery controllers, which any host NQN may open, and queues that must
 * still authenticate) reserve from a small allowance of their own: at most {@link #untrustedLimit} in all and
 * {@link #perSourceLimit} per source address ({@link SourceAddress}; where it is unknown only the total applies), so a flood from one address, keyless or
 * naming a real host, cannot take the memory that allowed and authenticated hosts connect with (issue 51). Such a
 * queue reserves only what it needs to authenticate ({@link SubmissionQueue#UNTRUSTED_POOL} request slots) and takes
 * the rest, from the whole budget, once it has ({@link #promote}).
 */
public final class MemoryBudget {
    /** A queue's fixed cost besides its request slots: pipeline, handlers, small-PDU slabs (measured, see docs). */
    public static final long QUEUE_BASE_BYTES = 16 << 10;
    /** One request slot: the Request with its SQE and CQE buffers, flyweights and SGL view (measured, see docs). */
    public static final long REQUEST_SLOT_BYTES = 1 << 10;

    private final long limit;
    private final long headroom;
    private final AtomicLong used = new AtomicLong();
    private final ConcurrentLinkedQueue<Runnable> waiting = new ConcurrentLinkedQueue<>();
    private final LongAdder refusedConnects = new LongAdder();
    private final LongAdder waits = new LongAdder();
    private final long untrustedLimit;
    private final long perSourceLimit;
    private final AtomicLong untrustedUsed = new AtomicLong();
    /** Untrusted bytes by source; an entry goes when its source holds nothing (updated atomically per key). */
    private final java.util.concurrent.ConcurrentHashMap<Object, Long> bySource =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final LongAdder refusedUntrusted = new LongAdder();
    private final ConcurrentLinkedQueue<Runnable> waitingUntrusted = new ConcurrentLinkedQueue<>();

    /**
     * @param limit    bytes in all
     * @param headroom what reservations must leave free for data: the largest transfer
     */
    public MemoryBudget(long limit, long headroom) {
        this(limit, headroom, limit / 8, limit / 64);
    }

    /**
     * @param untrustedLimit what queues whose host proved nothing yet may reserve in all
     * @param perSourceLimit what they may reserve from one source address
     */
    public MemoryBudget(long limit, long headroom, long untrustedLimit, long perSourceLimit) {
        this.limit = limit;
        this.headroom = headroom;
        this.untrustedLimit = untrustedLimit;
        this.perSourceLimit = perSourceLimit;
    }

    /** What queues whose host proved nothing yet may reserve in all. */
    public long untrustedLimit() { return untrustedLimit; }

    /** What they may reserve from one source address. */
    public long perSourceLimit() { return perSourceLimit; }

    /** Bytes such queues hold now. */
    public long untrustedUsed() { return untrustedUsed.get(); }

    /** Connects of such queues refused because their allowance (in all or their source's) was taken. */
    public long refusedUntrusted() { return refusedUntrusted.sum(); }

    /** Bytes such queues from {@code source} (see {@link SourceAddress}) hold now. */
    public long untrustedUsedBy(Object source) {
        Long held = bySource.get(source);
        return held == null ? 0 : held;
    }

    /**
     * Reserves a queue whose host has proved nothing yet, from the allowance of its source and the total one, and
     * within the whole budget as {@link #reserveQueue} does. Returns null when reserved, else why not.
     */
    String reserveUntrusted(long bytes, Object source) {
        return reserveUntrusted(bytes, source, false);
    }

    /**
     * @param evicted the caller has just evicted a queue of a heavier source (see TargetCore.evictUntrustedFor): the
     *                total may be exceeded by this reservation until that queue's close gives its memory back
     */
    String reserveUntrusted(long bytes, Object source, boolean evicted) {
        if (!tryAdd(untrustedUsed, bytes, evicted ? Long.MAX_VALUE : untrustedLimit)) {
            refusedUntrusted.increment();
            return "connections that have not authenticated (and discovery connections) hold their allowance of "
                    + untrustedLimit + " bytes";
        }
        if (source != SourceAddress.UNKNOWN && !addForSource(source, bytes)) {
            untrustedUsed.addAndGet(-bytes);
            refusedUntrusted.increment();
            return "connections from " + source + " that have not authenticated (and discovery connections) hold"
                    + " that address's allowance of " + perSourceLimit + " bytes";
        }
        if (!reserveQueue(bytes)) {
            unaccount(bytes, source);
            return "the target's memory limit of " + limit + " bytes is held by other connections (" + used() + " bytes"
                    + " in use)";
        }
        return null;
    }

    /** {@link #chargeUntrusted}: charged. */
    static final int CHARGED = 0;
    /** {@link #chargeUntrusted}: the untrusted allowance (the source's or the total) is taken. */
    static final int UNTRUSTED_FULL = 1;
    /** {@link #chargeUntrusted}: the whole limit is taken. */
    static final int FULL = 2;

    /**
     * Charges command data of a queue whose host proved nothing yet: within its source's and the total untrusted
     * allowance as well as the whole limit. Where it does not fit now, the caller waits on the list the answer names
     * ({@link #awaitUntrustedMemory} or {@link #awaitMemory}), so such queues never take the wake-ups of trusted ones.
     */
    int chargeUntrusted(long bytes, Object source) {
        if (!tryAdd(untrustedUsed, bytes, untrustedLimit)) {
            return UNTRUSTED_FULL;
        }
        if (source != SourceAddress.UNKNOWN && !addForSource(source, bytes)) {
            untrustedUsed.addAndGet(-bytes);
            return UNTRUSTED_FULL;
        }
        if (!chargeData(bytes)) {
            unaccount(bytes, source);
            return FULL;
        }
        return CHARGED;
    }

    /** Charges such a queue's data that is here already, even beyond the limits (see {@link #chargeForced}). */
    void chargeUntrustedForced(long bytes, Object source) {
        untrustedUsed.addAndGet(bytes);
        if (source != SourceAddress.UNKNOWN) {
            bySource.merge(source, bytes, Long::sum);
        }
        chargeForced(bytes);
    }

    /**
     * Whether {@code bytes} more from {@code source} would fit its address's share and the whole limit: only then is a
     * queue of another address worth evicting for them (see TargetCore.evictUntrustedFor).
     */
    boolean fitsBesidesTheTotal(long bytes, Object source) {
        return untrustedUsedBy(source) + bytes <= perSourceLimit && used() + bytes <= limit - headroom;
    }

    /** Whether {@code bytes} more would go beyond the total untrusted allowance (not only a source's). */
    boolean untrustedTotalFull(long bytes) {
        return untrustedUsed.get() + bytes > untrustedLimit;
    }

    /** The source holding most of the untrusted allowance now, or null when none holds any. */
    Object heaviestUntrustedSource() {
        Object heaviest = null;
        long most = 0;
        for (Map.Entry<Object, Long> e : bySource.entrySet()) {
            if (e.getValue() > most) {
                most = e.getValue();
                heaviest = e.getKey();
            }
        }
        return heaviest;
    }

    /** Gives back what {@link #reserveUntrusted} or {@link #chargeUntrusted} took. */
    void releaseUntrusted(long bytes, Object source) {
        forgetUntrusted(bytes, source);
        release(bytes);
    }

    /**
     * A queue that has proved its host: it stops counting against the untrusted allowance and takes {@code more}
     * bytes of the whole budget for its real buffers. False (nothing changed) when they do not fit.
     */
    boolean promote(long untrustedBytes, Object source, long more) {
        if (more > 0 && !tryTake(more, limit - headroom)) {
            refusedConnects.increment();
            return false;
        }
        forgetUntrusted(untrustedBytes, source);
        return true;
    }

    /** Untrusted bytes given back: counted off, and a queue waiting for the untrusted allowance woken. */
    private void forgetUntrusted(long bytes, Object source) {
        unaccount(bytes, source);
        wakeOneUntrusted();
    }

    /** Counts untrusted bytes off (a refused reservation undone: nobody is woken, or two could wake each other). */
    private void unaccount(long bytes, Object source) {
        untrustedUsed.addAndGet(-bytes);
        if (source != SourceAddress.UNKNOWN) {
            bySource.computeIfPresent(source, (k, held) -> held - bytes <= 0 ? null : held - bytes);
        }
    }

    /** Asks for {@code wake} to run once untrusted memory is given back (see {@link #awaitMemory}). */
    public void awaitUntrustedMemory(Runnable wake) {
        waits.increment();
        waitingUntrusted.add(wake);
    }

    /** Wakes one queue waiting for the untrusted allowance. */
    public void wakeOneUntrusted() {
        Runnable r = waitingUntrusted.poll();
        if (r != null) {
            r.run();
        }
    }

    private boolean addForSource(Object source, long bytes) {
        boolean[] added = {false};
        bySource.compute(source, (k, held) -> {
            long now = held == null ? 0 : held;
            if (now + bytes > perSourceLimit) {
                return held;
            }
            added[0] = true;
            return now + bytes;
        });
        return added[0];
    }

    private static boolean tryAdd(AtomicLong counter, long bytes, long ceiling) {
        long u;
        do {
            u = counter.get();
            if (u + bytes > ceiling) {
                return false;
            }
        } while (!counter.compareAndSet(u, u + bytes));
        return true;
    }

    /** What a queue with {@code slots} request slots and {@code transportBytes} of its own buffers reserves. */
    public static long queueReservation(int slots, long transportBytes) {
        return QUEUE_BASE_BYTES + slots * REQUEST_SLOT_BYTES + transportBytes;
    }

    public long limit() { return limit; }

    /** Bytes reserved and charged now. */
    public long used() { return used.get(); }

    /** Connects refused because the target's memory was taken. */
    public long refusedConnects() { return refusedConnects.sum(); }

    /** Commands that had to wait for memory another queue held. */
    public long waits() { return waits.sum(); }

    /** Reserves a connecting queue's fixed memory, leaving room for one largest transfer; false when it does not fit. */
    boolean reserveQueue(long bytes) {
        if (!tryTake(bytes, limit - headroom)) {
            refusedConnects.increment();
            return false;
        }
        return true;
    }

    /** Charges command data; false when it does not fit now (the caller waits, see {@link #awaitMemory}). */
    boolean chargeData(long bytes) {
        return tryTake(bytes, limit);
    }

    /** Charges data that is here already (see {@code SubmissionQueue.chargeDataArrived}), even beyond the limit. */
    void chargeForced(long bytes) {
        used.addAndGet(bytes);
    }

    private boolean tryTake(long bytes, long ceiling) {
        return tryAdd(used, bytes, ceiling);
    }

    /** Gives back a reservation or a charge, and wakes a waiting queue if any. */
    void release(long bytes) {
        used.addAndGet(-bytes);
        wakeOne();
    }

    /**
     * Asks for {@code wake} to run once memory is given back. The caller must try its charge again after this call:
     * memory freed in between woke nobody.
     */
    public void awaitMemory(Runnable wake) {
        waits.increment();
        waiting.add(wake);
    }

    /** Wakes one waiting queue; a woken queue that got memory passes the turn on (see the transport). */
    public void wakeOne() {
        if (!waiting.isEmpty()) {
            Runnable r = waiting.poll();
            if (r != null) {
                r.run();
            }
        }
    }
}

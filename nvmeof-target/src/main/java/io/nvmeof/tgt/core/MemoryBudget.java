package io.nvmeof.tgt.core;

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

    /**
     * @param limit    bytes in all
     * @param headroom what reservations must leave free for data: the largest transfer
     */
    public MemoryBudget(long limit, long headroom) {
        this.limit = limit;
        this.headroom = headroom;
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
        long u;
        do {
            u = used.get();
            if (u + bytes > ceiling) {
                return false;
            }
        } while (!used.compareAndSet(u, u + bytes));
        return true;
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

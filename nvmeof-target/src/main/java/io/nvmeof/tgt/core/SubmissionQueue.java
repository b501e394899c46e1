package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.tgt.transport.TransportQueue;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The core's view of one queue (admin or I/O): its ID and size once connected, SQ head tracking for flow control, its
 * controller, its request pool and its counters. Only the queue's poll-group thread touches it, so nothing here is
 * locked or atomic.
 */
public final class SubmissionQueue {
    private final TargetCore core;
    private final TransportQueue transport;
    private Request[] requests;
    private int[] free;
    private int freeCount;
    private final int maxPoolSize;

    private int qid = -1;
    private int size;
    private int sqhd;
    private boolean flowControlDisabled;
    private Controller controller;
    /** DH-HMAC-CHAP on this queue, when its host must authenticate; null otherwise. Queue thread only. */
    private io.nvmeof.tgt.auth.QueueAuthentication authentication;
    /** An Authentication Send or Receive of this queue is running (off the poll group): one at a time. */
    private boolean authenticationBusy;

    /** Bytes this queue holds against the memory limits: its reservation plus its commands' charged data. */
    private long memoryHeld;
    /** The fixed part of {@link #memoryHeld}, reserved at Connect. */
    private long memoryReserved;
    private final MemoryBudget budget;
    private final long memoryLimit;
    /** Whether {@link #memoryReserved} is from the untrusted allowance (see {@link #promote}). */
    private boolean untrusted;
    /** The source address this queue's untrusted memory is counted under (see {@link SourceAddress}). */
    private Object source;
    /** Why the last {@link #reserveMemory} answered {@link #OVER_UNTRUSTED_LIMIT}. */
    private String refusal;
    /** The Connect taken and not yet released, whatever its end (see FabricsCommands.parse). Only on this thread. */
    private Request connectRequest;

    /** {@link #chargeData}: charged; over this queue's limit (wait for its own commands); over the target's. */
    public static final int CHARGED = 0;
    public static final int OVER_QUEUE_LIMIT = 1;
    public static final int OVER_TARGET_LIMIT = 2;
    /** A queue whose host proved nothing yet found its allowance taken (see {@link MemoryBudget}). */
    public static final int OVER_UNTRUSTED_LIMIT = 3;
    /**
     * Request slots of a queue whose host has proved nothing yet: the authentication commands go one at a time, and a
     * discovery controller's host keeps a Keep Alive, a few Asynchronous Event Requests and a log page in flight.
     */
    public static final int UNTRUSTED_POOL = 16;

    // Counters for the SMART log; written by this queue's thread only.
    long readCommands;
    long writeCommands;
    long bytesRead;
    long bytesWritten;
    /** Per-namespace counters, indexed by NSID (made the first time this queue sees a namespace). */
    private IoStatistics[] nsStats = new IoStatistics[0];
    /** NSIDs beyond this are not counted per namespace (the array stays small). */
    private static final int MAX_COUNTED_NSID = 4096;

    /**
     * @param poolSize request slots: more than the largest queue, because a host may send a new command as soon as it
     *     sees a completion, before the transport has finished sending it.
     */
    public SubmissionQueue(TargetCore core, TransportQueue transport, int poolSize) {
        this(core, transport, poolSize, poolSize);
    }

    /**
     * A pool that starts with {@code initialPool} requests and grows at Connect to twice the queue's size (as Linux
     * nvmet-tcp sizes its commands), at most {@code maxPoolSize}: a connection that never connects costs little.
     */
    public SubmissionQueue(TargetCore core, TransportQueue transport, int initialPool, int maxPoolSize) {
        this.core = core;
        this.transport = transport;
        this.maxPoolSize = maxPoolSize;
        this.budget = core.memory();
        this.memoryLimit = core.limits().maxConnectionMemory();
        this.requests = new Request[0];
        this.free = new int[0];
        grow(Math.min(initialPool, maxPoolSize));
    }

    /** Adds requests up to {@code poolSize}; existing ones (possibly in use) keep their slots. */
    private void grow(int poolSize) {
        int old = requests.length;
        if (poolSize <= old) {
            return;
        }
        requests = java.util.Arrays.copyOf(requests, poolSize);
        int[] f = new int[poolSize];
        // New slots are taken last (free is a stack): the lowest free slot is on top.
        int n = 0;
        // One slab for the new slots' SQEs and CQEs (see Request): one native allocation per growth, not two per slot.
        int entry = Command.LENGTH + Completion.LENGTH;
        ByteBuffer slab = ByteBuffer.allocateDirect((poolSize - old) * entry);
        for (int i = poolSize - 1; i >= old; i--) {
            int at = (i - old) * entry;
            requests[i] = new Request(this, i, new UnsafeBuffer(slab, at, Command.LENGTH),
                    new UnsafeBuffer(slab, at + Command.LENGTH, Completion.LENGTH));
            f[n++] = i;
        }
        core.requestsAllocated(poolSize - old);
        System.arraycopy(free, 0, f, n, freeCount);
        free = f;
        freeCount += n;
    }

    public TargetCore core() { return core; }

    public void countRead(long bytes) {
        readCommands++;
        bytesRead += bytes;
    }

    public void countWrite(long bytes) {
        writeCommands++;
        bytesWritten += bytes;
    }
    /** Queue thread: a command on {@code ns} completed (called by the core for I/O queues). */
    void recordIo(Namespace ns, int opcode, int bytes, int status, long latencyNs) {
        long nsid = ns.nsid();
        if (nsid > MAX_COUNTED_NSID) {
            return;
        }
        int i = (int) nsid;
        IoStatistics st = i < nsStats.length ? nsStats[i] : null;
        if (st == null || st.ns != ns) {
            st = newStats(ns, i);
        }
        st.record(opcode, bytes, status, latencyNs);
    }

    /** First command on a namespace (or a new namespace under a reused NSID): not on the per-command path. */
    private IoStatistics newStats(Namespace ns, int i) {
        if (i >= nsStats.length) {
            nsStats = java.util.Arrays.copyOf(nsStats, Math.max(i + 1, 2 * nsStats.length));
        }
        IoStatistics old = nsStats[i];
        if (old != null) {
            old.ns.retire(old);
        }
        IoStatistics st = new IoStatistics(ns);
        nsStats[i] = st;
        return st;
    }

    /** Another thread: this queue's counters for {@code ns}, or null (read racily). */
    IoStatistics statsFor(Namespace ns) {
        IoStatistics[] a = nsStats;
        long nsid = ns.nsid();
        IoStatistics st = nsid < a.length ? a[(int) nsid] : null;
        return st != null && st.ns == ns ? st : null;
    }

    public TransportQueue transport() { return transport; }
    public int qid() { return qid; }
    public int size() { return size; }
    public boolean connected() { return controller != null; }
    public boolean connectInFlight() { return connectRequest != null; }
    public void connectTaken(Request connect) { connectRequest = connect; }
    public Controller controller() { return controller; }
    public boolean flowControlDisabled() { return flowControlDisabled; }
    public io.nvmeof.tgt.auth.QueueAuthentication authentication() { return authentication; }
    public void authentication(io.nvmeof.tgt.auth.QueueAuthentication a) { authentication = a; }
    /** Whether commands other than Connect and the authentication commands must wait for DH-HMAC-CHAP. */
    public boolean awaitsAuthentication() { return authentication != null && !authentication.authenticated(); }
    public boolean authenticationBusy() { return authenticationBusy; }
    public void authenticationBusy(boolean busy) { authenticationBusy = busy; }

    void bind(Controller controller, int qid, int size, boolean disableFlowControl) {
        grow(poolFor(size));
        this.controller = controller;
        this.qid = qid;
        this.size = size;
        this.flowControlDisabled = disableFlowControl;
    }

    /**
     * Connect: reserves what a queue of {@code entries} costs (its request slots and the transport's own buffers),
     * before anything else changes. Returns {@link #CHARGED}, {@link #OVER_QUEUE_LIMIT} when the queue could not run
     * one largest transfer within the per-connection limit, {@link #OVER_TARGET_LIMIT} when the target's memory is
     * taken by other queues, or {@link #OVER_UNTRUSTED_LIMIT} (see {@link #refusal}).
     *
     * @param untrusted whether the queue's host has proved nothing yet: it then reserves only
     *                  {@link #UNTRUSTED_POOL} slots, from the untrusted allowance, until {@link #promote}
     */
    public int reserveMemory(int entries, boolean untrusted) {
        long bytes = reservationFor(entries);
        if (bytes + core.limits().maxTransferSize() > memoryLimit) {
            return OVER_QUEUE_LIMIT;
        }
        if (untrusted) {
            bytes = MemoryBudget.queueReservation(untrustedPool(entries), transport.bufferedBytes());
            Object source = SourceAddress.of(transport.peerAddress());
            String why = budget.reserveUntrusted(bytes, source);
            if (why != null && budget.untrustedTotalFull(bytes) && core.evictUntrustedFor(source, bytes)) {
                why = budget.reserveUntrusted(bytes, source, true); // a heavier source gave one up for it
            }
            if (why != null) {
                refusal = why;
                return OVER_UNTRUSTED_LIMIT;
            }
            this.untrusted = true;
            this.source = source;
            core.untrustedQueues().add(source, this);
        } else if (!budget.reserveQueue(bytes)) {
            return OVER_TARGET_LIMIT;
        }
        memoryReserved += bytes;
        memoryHeld += bytes;
        return CHARGED;
    }

    /** Why the last {@link #reserveMemory} answered {@link #OVER_UNTRUSTED_LIMIT}. */
    public String refusal() {
        return refusal;
    }

    /** Whether this queue holds only the untrusted allowance's few slots (its host has proved nothing yet). */
    public boolean untrusted() {
        return untrusted;
    }

    /**
     * The queue's host has proved itself: it takes its real reservation from the whole budget and grows its pool to
     * its size. False (nothing changed) when the target's memory is taken; the caller ends the queue. Only on this
     * queue's thread.
     */
    public boolean promote() {
        if (!untrusted) {
            return true;
        }
        long full = reservationFor(size);
        long more = Math.max(0, full - memoryReserved);
        if (!budget.promote(memoryReserved, source, more)) {
            return false;
        }
        untrusted = false;
        core.untrustedQueues().remove(source, this);
        memoryReserved += more;
        memoryHeld += more;
        grow(poolFor(size));
        transport.requestFreed(); // reading may have waited for one of its few slots
        return true;
    }

    private int poolFor(int entries) {
        return untrusted ? untrustedPool(entries) : Math.min(2 * entries, maxPoolSize);
    }

    private int untrustedPool(int entries) {
        return Math.min(Math.min(2 * entries, maxPoolSize), UNTRUSTED_POOL);
    }

    /** What {@link #reserveMemory} takes for a queue of {@code entries}. */
    public long reservationFor(int entries) {
        return MemoryBudget.queueReservation(Math.min(2 * entries, maxPoolSize), transport.bufferedBytes());
    }

    /** The largest queue (entries) whose reservation and one largest transfer fit the per-connection limit. */
    public int largestQueueWithin() {
        long room = memoryLimit - core.limits().maxTransferSize() - MemoryBudget.QUEUE_BASE_BYTES
                - transport.bufferedBytes();
        return (int) Math.max(0, Math.min(maxPoolSize / 2, room / MemoryBudget.REQUEST_SLOT_BYTES / 2));
    }

    /** Gives back a reservation a Connect took but could not use (it failed after reserving). */
    public void unreserveMemory() {
        if (memoryReserved > 0) {
            memoryHeld -= memoryReserved;
            if (untrusted) {
                budget.releaseUntrusted(memoryReserved, source);
                core.untrustedQueues().remove(source, this);
            } else {
                budget.release(memoryReserved);
            }
            memoryReserved = 0;
            untrusted = false;
        }
    }

    /**
     * Charges {@code bytes} of data buffer for {@code r} against this queue's and the target's limits, or says which
     * limit it is over (nothing charged; the transport waits and tries again). Only on this queue's thread.
     */
    public int chargeData(Request r, int bytes) {
        if (memoryHeld + bytes > memoryLimit) {
            return OVER_QUEUE_LIMIT;
        }
        if (untrusted) {
            int c = budget.chargeUntrusted(bytes, source);
            if (c != MemoryBudget.CHARGED) {
                return c == MemoryBudget.UNTRUSTED_FULL ? OVER_UNTRUSTED_LIMIT : OVER_TARGET_LIMIT;
            }
        } else if (!budget.chargeData(bytes)) {
            return OVER_TARGET_LIMIT;
        }
        memoryHeld += bytes;
        r.chargedBytes += bytes;
        if (untrusted) {
            r.untrustedBytes += bytes;
        }
        return CHARGED;
    }

    /**
     * Charges data that is here already and cannot wait (in-capsule data copied out of the receive buffer, at most the
     * in-capsule size per command): counted, so other commands wait for it, even beyond the limits.
     */
    public void chargeDataArrived(Request r, int bytes) {
        if (untrusted) {
            budget.chargeUntrustedForced(bytes, source);
            r.untrustedBytes += bytes;
        } else {
            budget.chargeForced(bytes);
        }
        memoryHeld += bytes;
        r.chargedBytes += bytes;
    }

    /**
     * Takes {@code r}'s data charge off it, to be given back with {@link #releaseCharge} once its data has left: how
     * a transport keeps the data of a queue whose host proved nothing counted until that host has read it (a peer
     * that never reads must not pin memory the limits do not see). Returns the charge, the untrusted part in the high
     * 32 bits. Only on this queue's thread.
     */
    public long detachCharge(Request r) {
        long held = (long) r.untrustedBytes << 32 | r.chargedBytes & 0xFFFF_FFFFL;
        r.chargedBytes = 0;
        r.untrustedBytes = 0;
        return held;
    }

    /** Gives back a charge {@link #detachCharge} took off its request. Only on this queue's thread. */
    public void releaseCharge(long held) {
        giveBack((int) held, (int) (held >>> 32));
    }

    private void giveBack(int charged, int untrustedPart) {
        if (charged == 0) {
            return;
        }
        memoryHeld -= charged;
        if (untrustedPart > 0) {
            budget.releaseUntrusted(untrustedPart, source);
        }
        if (charged > untrustedPart) {
            budget.release(charged - untrustedPart);
        }
        transport.memoryFreed();
    }

    /** Bytes this queue holds now against the limits. */
    public long memoryHeld() {
        return memoryHeld;
    }

    /** Takes a free request for a new capsule, or null when the host has more commands outstanding than allowed. */
    public Request acquire() {
        if (freeCount == 0) {
            return null;
        }
        Request r = requests[free[--freeCount]];
        r.reset();
        r.inUse = true;
        return r;
    }

    public Request request(int slot) {
        return slot >= 0 && slot < requests.length ? requests[slot] : null;
    }

    /** Requests free in the pool now. Only on this queue's thread. */
    public int freeRequests() {
        return freeCount;
    }

    public int poolSize() {
        return requests.length;
    }

    /** The most requests this queue's pool may grow to (bounds the SQSIZE a Connect may ask for). */
    public int maxPoolSize() {
        return maxPoolSize;
    }

    /** Returns a request to the pool, releasing its data. */
    public void release(Request r) {
        if (!r.inUse) {
            return;
        }
        r.releaseData();
        r.inUse = false;
        if (r == connectRequest) {
            connectRequest = null; // answered, whichever way: a refused Connect may be sent again
        }
        free[freeCount++] = r.slot();
        if (untrusted && freeCount == 1) {
            transport.requestFreed(); // its reading may wait for a slot (an untrusted queue has few)
        }
        releaseCharge(detachCharge(r));
    }

    /**
     * Whether a request in flight here still uses {@code ns}, or its transport still sends read data from the
     * namespace's memory. Only on this queue's thread.
     */
    boolean holds(Namespace ns) {
        for (Request r : requests) {
            // A Flush of all namespaces (no namespace of its own) may still come to this one.
            if (r.inUse && (r.ns == ns || r.ns == null && r.flushesAllNamespaces())) {
                return true;
            }
        }
        return transport.sendsFrom(ns);
    }

    /**
     * Aborts the command with {@code cid} outstanding here if it has not started: work still waiting for the backend
     * executor, a command the transport holds back before its data moves (for memory, a buffer or its turn to fetch
     * host data), or (admin queue) a parked Asynchronous Event Request. It completes with Command Abort Requested.
     * Returns whether it was aborted; a command already running, or none with that CID, is left alone. Only on this
     * queue's thread.
     *
     * @param abortCommand the Abort itself, which may carry the same CID on the admin queue and is never its own target
     */
    public boolean abort(int cid, Request abortCommand) {
        for (Request r : requests) {
            if (r.inUse && r != abortCommand && r.cmd.cid() == cid) {
                BackendTicket t = r.backendTicket;
                if (t != null && t.abortable() && t.withdraw()) {
                    r.backendTicket = null;
                    r.complete(Status.ABORT_REQUESTED);
                    return true;
                }
                StorageRing ring = r.ring;
                if (ring != null && ring.withdraw(r)) { // waited for room in the ring: never reached the device
                    r.complete(Status.ABORT_REQUESTED);
                    return true;
                }
                if (transport.withdrawWaiting(r)) {
                    r.complete(Status.ABORT_REQUESTED);
                    return true;
                }
                if (qid == 0 && controller != null && controller.abortAer(r)) {
                    return true;
                }
            }
        }
        return false;
    }

    public int inUse() {
        return requests.length - freeCount;
    }

    /**
     * Releases every outstanding request (connection gone). Backend work not yet started is withdrawn: its host sees
     * the command fail (a timeout, a lost connection) and may write the same blocks again through another queue, so it
     * must never run later. Work already running finishes; its controller counts it until then.
     */
    public void releaseAll() {
        for (Request r : requests) {
            BackendTicket t = r.backendTicket;
            if (t != null) {
                r.backendTicket = null; // a running one's late completion is dropped
                t.withdraw();
            }
            StorageRing ring = r.ring;
            if (ring != null && !ring.withdraw(r)) {
                // The kernel has it and may still write its buffer: released when its completion comes.
                StorageRing.orphan(r);
                continue;
            }
            release(r);
        }
    }

    /** Advances SQ head for a fetched command and returns the value for the CQE. */
    int advanceHead() {
        if (flowControlDisabled || size == 0) {
            return Completion.SQHD_FLOW_CONTROL_DISABLED;
        }
        sqhd = sqhd + 1 == size ? 0 : sqhd + 1;
        return sqhd;
    }

    int sqhd() {
        return flowControlDisabled || size == 0 ? Completion.SQHD_FLOW_CONTROL_DISABLED : sqhd;
    }

    /** Called by the transport when the connection has closed: unbinds from the controller. */
    public void closed() {
        if (authentication != null) {
            authentication.queueClosed();
        }
        IoStatistics[] a = nsStats;
        nsStats = new IoStatistics[0];
        for (IoStatistics st : a) {
            if (st != null) {
                st.ns.retire(st);
            }
        }
        releaseAll();
        unreserveMemory();
        core.queueClosed(this);
    }
}

package io.nvmeof.tgt.core;

import io.nvmeof.tgt.backend.BlockBackend;
import java.nio.ByteBuffer;
import java.util.UUID;

/** A namespace: a backend exported in fixed-size logical blocks, with its identifiers. */
public final class Namespace {
    private final long nsid;
    private final NamespaceReservations reservations;
    private final BlockBackend backend;
    private final int blockShift;
    /** Changes only by {@link #grow}; read on the data path (a plain load on x86). */
    private volatile long blockCount;
    private final UUID uuid;
    private final byte[] nguid;
    /** Backend threads one namespace's space changes may take at once (a file's fallocate calls serialize anyway). */
    static final int SPACE_THREADS = 2;
    /** Backend threads one namespace's flushes may take at once (FUA writes of many queues each need one). */
    static final int FLUSH_THREADS = 4;
    /**
     * Backend threads one namespace's reads and writes may take at once where no io_uring serves them (it is
     * unavailable): the requests the device sees at once.
     */
    static final int DATA_THREADS = 8;

    public Namespace(long nsid, BlockBackend backend, int blockSize, UUID uuid) {
        this(nsid, backend, blockSize, uuid, null);
    }

    /** @param nguid 16 bytes, or null for the UUID's bytes */
    public Namespace(long nsid, BlockBackend backend, int blockSize, UUID uuid, byte[] nguid) {
        if (nsid < 1 || nsid > 0xFFFF_FFFEL) {
            throw new IllegalArgumentException("NSID must be 1..0xFFFFFFFE, got " + nsid);
        }
        if (blockSize != 512 && blockSize != 4096) {
            throw new IllegalArgumentException("block size must be 512 or 4096, got " + blockSize);
        }
        this.nsid = nsid;
        this.reservations = new NamespaceReservations(nsid);
        this.backend = backend;
        this.spaceLane = new BackendLane("namespace " + nsid + " space", SPACE_THREADS);
        this.flushLane = new BackendLane("namespace " + nsid + " flush", FLUSH_THREADS);
        this.dataLane = new BackendLane("namespace " + nsid + " data", DATA_THREADS);
        this.blockShift = Integer.numberOfTrailingZeros(blockSize);
        this.blockCount = backend.sizeBytes() >>> blockShift;
        if (blockCount == 0) {
            throw new IllegalArgumentException("namespace " + nsid + " is smaller than one block");
        }
        this.uuid = uuid;
        if (nguid != null && nguid.length != 16) {
            throw new IllegalArgumentException("NGUID must be 16 bytes, got " + nguid.length);
        }
        this.nguid = nguid != null ? nguid.clone()
                : ByteBuffer.allocate(16).putLong(uuid.getMostSignificantBits()).putLong(uuid.getLeastSignificantBits()).array();
    }

    /** Space changes (Write Zeroes, Deallocate) that may block run here, off the poll groups. */
    private final BackendLane spaceLane;
    /** Flushes (and the flush of a FUA write) that may block run here: never behind the space changes. */
    private final BackendLane flushLane;
    /** Reads and writes that may block and have no io_uring to go to. */
    private final BackendLane dataLane;
    /**
     * Backend work in flight on this namespace off the poll groups (queued or running); closed once the namespace's
     * backend is retired: from then on no work may start on it.
     */
    private final io.nvmeof.tgt.backend.UseCount backendUsers = new io.nvmeof.tgt.backend.UseCount();

    /** Device requests of this namespace in flight at once per poll group; 0: as many as the poll group's ring. */
    private volatile int deviceQueueDepth;

    public long nsid() { return nsid; }

    /** The ANA group (1..{@link AnaGroups#MAX_GROUP_ID}); read per I/O command. */
    private volatile int anaGroup = 1;

    public int anaGroup() { return anaGroup; }

    /**
     * Puts the namespace in ANA group {@code group}. May change live (then tell the hosts: {@link
     * AnaGroups#namespaceMoved}); commands already parsed keep the state they were checked against.
     */
    public Namespace anaGroup(int group) {
        AnaGroups.checkGroupId(group);
        anaGroup = group;
        return this;
    }

    /** Its registrants and reservation, shared by every controller of the subsystem. */
    public NamespaceReservations reservations() { return reservations; }

    /** See {@link #limitDeviceQueue}. */
    public int deviceQueueDepth() { return deviceQueueDepth; }

    /**
     * At most {@code depth} of this namespace's reads, writes and flushes at the device at once per poll group (its
     * ring); more wait in their order. May change live (an import): requests already in the ring stay, and the new
     * depth holds for those that come.
     */
    public Namespace limitDeviceQueue(int depth) {
        if (depth < 1) {
            throw new IllegalArgumentException("queue depth must be at least 1, got " + depth);
        }
        this.deviceQueueDepth = depth;
        return this;
    }
    public BlockBackend backend() { return backend; }
    BackendLane spaceLane() { return spaceLane; }
    BackendLane flushLane() { return flushLane; }
    BackendLane dataLane() { return dataLane; }

    /** Counts a use of the backend off the poll groups; false once retired (then the backend must not be used). */
    private volatile boolean deviceErrorLogged;

    /** True the first time a device request of this namespace fails (to log it once), false after. */
    public boolean noteDeviceError() {
        if (deviceErrorLogged) {
            return false;
        }
        deviceErrorLogged = true;
        return true;
    }

    boolean enterBackend() {
        return backendUsers.enter();
    }

    void exitBackend() {
        backendUsers.exit(); // retiring waits for no user (retireBackendIfIdle): the last one out closes nothing
    }

    /**
     * Flushes the backend off the poll groups (a Flush of all namespaces, a controller's shutdown), unless the
     * namespace was retired meanwhile: removed and drained, its backend flushed and closed as it was retired.
     */
    public void flushBackend() throws java.io.IOException {
        if (!enterBackend()) {
            return;
        }
        try {
            backend.flush();
        } finally {
            exitBackend();
        }
    }

    /** Backend work queued or running off the poll groups on this namespace now. */
    public long backendWorkInFlight() {
        return backendUsers.users();
    }

    /**
     * Retires the namespace's backend if no work off the poll groups uses it: afterwards none can start, and the
     * caller may close it. False (nothing changed) while some is queued or running.
     */
    public boolean retireBackendIfIdle() {
        return backendUsers.closeIfUnused();
    }
    public int blockSize() { return 1 << blockShift; }
    public int blockShift() { return blockShift; }
    public long blockCount() { return blockCount; }
    public long sizeBytes() { return blockCount << blockShift; }
    public UUID uuid() { return uuid; }

    /**
     * Grows the namespace to {@code newSizeBytes} (rounded down to whole blocks) through its backend; the caller then
     * tells the hosts (Namespace Attribute Changed), which re-read Identify Namespace.
     */
    public synchronized void grow(long newSizeBytes) throws java.io.IOException {
        long blocks = newSizeBytes >>> blockShift;
        if (blocks < blockCount) {
            throw new IllegalArgumentException("namespace " + nsid + " has " + sizeBytes() + " bytes; namespaces grow,"
                    + " never shrink (a host may still address the end)");
        }
        backend.grow(blocks << blockShift);
        blockCount = blocks;
    }

    /**
     * Measures the backend again ({@link BlockBackend#measureSizeBytes}); when it holds fewer blocks than the namespace
     * (it shrank underneath: a truncated file, a smaller device), the namespace shrinks to what is left, so I/O past
     * that end is refused with LBA Out of Range, and this returns the blocks it had: the caller tells the hosts
     * (Namespace Attribute Changed), as nvmet's revalidation does. -1 when nothing changed. Growth is never taken
     * here: {@link #grow} does it when the administrator asks.
     */
    public synchronized long revalidate() throws java.io.IOException {
        long blocks = backend.measureSizeBytes() >>> blockShift;
        if (blocks >= blockCount) {
            return -1;
        }
        long before = blockCount;
        blockCount = blocks;
        return before;
    }

    /** NGUID: as configured, else the UUID's 16 bytes, big endian as printed. */
    public byte[] nguid() {
        return nguid.clone();
    }

    /** EUI-64: the first 8 bytes of the NGUID. */
    public byte[] eui64() {
        byte[] e = new byte[8];
        System.arraycopy(nguid(), 0, e, 0, 8);
        return e;
    }

    /** Counts of queues that closed (or moved on from this namespace); under this monitor. */
    private IoStatistics retired;

    /** A queue's counts for this namespace, folded in when the queue closes. */
    synchronized void retire(IoStatistics st) {
        if (retired == null) {
            retired = new IoStatistics(this);
        }
        retired.add(st);
    }

    /** The totals of closed queues plus {@code live} (the open queues' counts), as a value. */
    synchronized NamespaceStatistics statistics(Iterable<IoStatistics> live) {
        IoStatistics sum = new IoStatistics(this);
        if (retired != null) {
            sum.add(retired);
        }
        for (IoStatistics st : live) {
            sum.add(st);
        }
        return sum.snapshot(nsid);
    }
}

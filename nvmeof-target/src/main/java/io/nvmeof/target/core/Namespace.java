package io.nvmeof.target.core;

import io.nvmeof.target.backend.BlockBackend;
import java.nio.ByteBuffer;
import java.util.UUID;

/** A namespace: a backend exported in fixed-size logical blocks, with its identifiers. */
public final class Namespace {
    private final long nsid;
    private final BlockBackend backend;
    private final int blockShift;
    /** Changes only by {@link #grow}; read on the data path (a plain load on x86). */
    private volatile long blockCount;
    private final UUID uuid;
    private final byte[] nguid;

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
        this.backend = backend;
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

    public long nsid() { return nsid; }
    public BlockBackend backend() { return backend; }
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

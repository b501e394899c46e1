package io.nvmeof.rdma;

import java.nio.ByteBuffer;

/**
 * A protection domain: memory registrations, queue pairs and shared receive queues that may be used together.
 * Close everything created from it first (the verbs refuse to free a PD that is still in use: EBUSY).
 */
public final class ProtectionDomain implements AutoCloseable {
    private final RdmaDevice device;
    private long pd;

    ProtectionDomain(RdmaDevice device, long pd) {
        this.device = device;
        this.pd = pd;
    }

    public RdmaDevice device() {
        return device;
    }

    /** The struct ibv_pd pointer. */
    public long address() {
        return pd;
    }

    /**
     * Registers a direct buffer's whole capacity. The region keeps a reference to the buffer: a registered direct
     * buffer must not be garbage collected (its memory would be freed while the device may still DMA into it).
     */
    public MemoryRegion register(ByteBuffer directBuffer, int access) throws RdmaException {
        if (!directBuffer.isDirect()) {
            throw new IllegalArgumentException("only direct buffers can be registered");
        }
        long addr = com.sun.jna.Pointer.nativeValue(com.sun.jna.Native.getDirectBufferPointer(directBuffer));
        return register(addr, directBuffer.capacity(), access, directBuffer, false);
    }

    /** Registers [address, address + length); 64-bit lengths (over 4 GiB) are fine. The caller owns the memory. */
    public MemoryRegion register(long address, long length, int access) throws RdmaException {
        return register(address, length, access, null, false);
    }

    /**
     * Allocates {@code length} bytes of page-aligned anonymous memory (mmap; transparent huge pages advised when
     * {@code hugePages}) and registers it. The memory is unmapped when the region is closed.
     */
    public MemoryRegion allocateRegistered(long length, int access, boolean hugePages) throws RdmaException {
        long[] out = new long[1];
        RdmaLibrary.check(NvrNative.nvr_alloc_pages(length, hugePages ? 1 : 0, out), "mmap(" + length + ")");
        try {
            return register(out[0], length, access, null, true);
        } catch (RdmaException | RuntimeException e) {
            NvrNative.nvr_free_pages(out[0], length);
            throw e;
        }
    }

    private MemoryRegion register(long address, long length, int access, ByteBuffer owner, boolean ownsPages)
            throws RdmaException {
        long[] out = new long[4];
        RdmaLibrary.check(NvrNative.nvr_reg_mr(requireOpen(), address, length, access, out),
                "ibv_reg_mr(" + length + " bytes at 0x" + Long.toHexString(address) + ")");
        return new MemoryRegion(out[0], out[1], out[2], (int) out[3], (int) (out[3] >>> 32), owner, ownsPages);
    }

    /** A shared receive queue of at least {@code maxWr} receive buffers (one SGE each). */
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr) throws RdmaException {
        long[] out = new long[2];
        RdmaLibrary.check(NvrNative.nvr_create_srq(requireOpen(), maxWr, out), "ibv_create_srq(" + maxWr + ")");
        return new SharedReceiveQueue(out[0], (int) out[1]);
    }

    long requireOpen() {
        if (pd == 0) {
            throw new IllegalStateException("protection domain closed");
        }
        return pd;
    }

    @Override
    public synchronized void close() throws RdmaException {
        if (pd != 0) {
            // On failure (EBUSY: registrations or queue pairs still use it) the handle stays, so close can be retried.
            RdmaLibrary.check(NvrNative.nvr_dealloc_pd(pd), "ibv_dealloc_pd");
            pd = 0;
        }
    }
}

package io.nvmeof.rdma;

import com.sun.jna.Pointer;

import java.nio.ByteBuffer;

/**
 * Registered memory: the device may read and write [address, address + length) as the access flags allow. lkey goes
 * into local work requests; rkey (with an address inside the region) is what a peer needs for RDMA READ/WRITE.
 */
public final class MemoryRegion implements AutoCloseable {
    private long mr;
    private final long address;
    private final long length;
    private final int lkey;
    private final int rkey;
    /** A registered direct buffer, kept reachable while registered (see ProtectionDomain.register). */
    private final ByteBuffer owner;
    private final boolean ownsPages;

    MemoryRegion(long mr, long address, long length, int lkey, int rkey, ByteBuffer owner, boolean ownsPages) {
        this.mr = mr;
        this.address = address;
        this.length = length;
        this.lkey = lkey;
        this.rkey = rkey;
        this.owner = owner;
        this.ownsPages = ownsPages;
    }

    public long address() {
        return address;
    }

    /** The registered length in bytes (64-bit: regions over 4 GiB are allowed). */
    public long length() {
        return length;
    }

    public int lkey() {
        return lkey;
    }

    public int rkey() {
        return rkey;
    }

    /** True when {@code [addr, addr + len)} lies inside this region. */
    public boolean contains(long addr, long len) {
        return addr >= address && len >= 0 && addr - address <= length - len;
    }

    /**
     * A direct ByteBuffer over [address + offset, +len) (no copy), for filling and checking data. The view does not
     * keep the region alive.
     */
    public ByteBuffer slice(long offset, int len) {
        if (offset < 0 || !contains(address + offset, len)) {
            throw new IndexOutOfBoundsException("offset " + offset + " length " + len + " outside " + length);
        }
        return new Pointer(address + offset).getByteBuffer(0, len);
    }

    /** The registered direct buffer, or null when the region was registered by address or allocated. */
    public ByteBuffer buffer() {
        return owner;
    }

    /** The struct ibv_mr pointer. */
    public long handle() {
        return mr;
    }

    /** Deregisters (and unmaps memory this region allocated). */
    @Override
    public synchronized void close() throws RdmaException {
        if (mr != 0) {
            // The pages are freed only once the NIC can no longer reach them: if deregistration fails, both stay
            // (a leak, never memory the NIC may still write), and close can be retried.
            RdmaLibrary.check(NvrNative.nvr_dereg_mr(mr), "ibv_dereg_mr");
            mr = 0;
            if (ownsPages) {
                NvrNative.nvr_free_pages(address, length);
            }
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[addr=0x" + Long.toHexString(address) + ", length=" + length + ", lkey=0x"
                + Integer.toHexString(lkey) + ", rkey=0x" + Integer.toHexString(rkey) + "]";
    }
}

package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.MemoryRegion;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.RdmaException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.agrona.BufferUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The memory registrations of one controller's protection domain, looked up by address on every I/O without a lock:
 * a copy-on-write array sorted by start address, replaced (under a lock) only when a registration comes or goes.
 *
 * <p>Buffers get here three ways: {@link #allocate} (registered at birth), {@link #register} (the caller's own), or
 * on first use by an I/O ({@link #registerOnFirstUse}), bounded by {@link #AUTO_LIMIT} so a caller that allocates a
 * new buffer per I/O cannot pin unbounded memory; past the bound an I/O registers its range for itself and drops the
 * registration when it completes (slow, and logged once).
 */
final class RegistrationCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RegistrationCache.class);
    /** Buffers registered on first use and kept until close. */
    static final int AUTO_LIMIT = 256;
    static final int ACCESS = Access.LOCAL_AND_REMOTE;

    /** One registration: [start, end) with its keys. */
    record Entry(long start, long end, int lkey, int rkey, MemoryRegion region, ByteBuffer owner, boolean auto) {
        boolean contains(long address, long length) {
            return address >= start && address + length <= end;
        }
    }

    private static final Entry[] NONE = new Entry[0];

    private final ProtectionDomain pd;
    private volatile Entry[] entries = NONE;
    private int autoCount;
    private boolean warnedFull;
    private boolean closed;
    /** One-off registrations not yet released; the protection domain outlives them. */
    private int temporaries;
    /** Closing the protection domain waits for the last temporary registration. */
    private boolean closePdWhenIdle;

    RegistrationCache(ProtectionDomain pd) {
        this.pd = pd;
    }

    static long address(ByteBuffer direct) {
        return BufferUtil.address(direct);
    }

    /** The registration covering [address, address + length), or null. Lock-free. */
    Entry find(long address, long length) {
        return find(entries, address, length);
    }

    /** In {@code e}, sorted by start address: the last-starting registration that covers the range, or null. */
    static Entry find(Entry[] e, long address, long length) {
        int lo = 0;
        int hi = e.length - 1;
        int at = -1;
        while (lo <= hi) { // last entry with start <= address
            int mid = (lo + hi) >>> 1;
            if (e[mid].start <= address) {
                at = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        // Registrations may overlap (a caller registers a slice of a registered buffer): look further down too.
        for (int i = at; i >= 0; i--) {
            if (e[i].contains(address, length)) {
                return e[i];
            }
        }
        return null;
    }

    /** A new direct buffer, registered until close. */
    ByteBuffer allocate(int bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes);
        add(b, false);
        return b;
    }

    void register(ByteBuffer direct) {
        if (find(address(direct), direct.capacity()) == null) {
            add(direct, false);
        }
    }

    synchronized void deregister(ByteBuffer direct) {
        List<Entry> keep = new ArrayList<>(Arrays.asList(entries));
        for (Entry e : entries) {
            if (e.owner == direct) {
                keep.remove(e);
                if (e.auto) {
                    autoCount--;
                }
                close(e);
            }
        }
        entries = keep.toArray(NONE);
    }

    /**
     * For an I/O on a direct buffer that no registration covers: registers the whole buffer and keeps it, or returns
     * null when {@link #AUTO_LIMIT} buffers were already registered that way.
     */
    synchronized Entry registerOnFirstUse(ByteBuffer direct, long address, long length) {
        Entry e = find(address, length);
        if (e != null) {
            return e;
        }
        if (autoCount >= AUTO_LIMIT) {
            if (!warnedFull) {
                warnedFull = true;
                LOG.warn("{} direct buffers were registered with the RDMA device on first use; further unregistered"
                        + " buffers are registered per I/O, which is slow. Reuse buffers, or allocate them with"
                        + " NvmeofController.allocateBuffer() / register them with registerBuffer()", AUTO_LIMIT);
            }
            return null;
        }
        autoCount++;
        return add(direct, true);
    }

    /**
     * A registration of exactly one I/O's range, for {@link #releaseTemporary} when the I/O completes. Synchronized
     * with {@link #close}: a submitter racing the controller's close either registers before it (and its request is
     * swept, releasing the registration) or is refused, never registering on a freed protection domain.
     */
    synchronized MemoryRegion registerTemporary(long address, long length) {
        if (closed) {
            throw new IllegalStateException("the controller is closed");
        }
        try {
            MemoryRegion mr = pd.register(address, length, ACCESS);
            temporaries++;
            return mr;
        } catch (RdmaException e) {
            throw new NvmeofException("RDMA memory registration of " + length + " bytes failed: " + e.getMessage()
                    + " (locked-memory limit? check 'ulimit -l')", e);
        }
    }

    private synchronized Entry add(ByteBuffer direct, boolean auto) {
        if (closed) {
            throw new IllegalStateException("the controller is closed");
        }
        MemoryRegion mr;
        try {
            mr = pd.register(direct, ACCESS);
        } catch (RdmaException e) {
            if (auto) {
                autoCount--;
            }
            throw new NvmeofException("RDMA memory registration of a " + direct.capacity() + "-byte buffer failed: "
                    + e.getMessage() + " (locked-memory limit? check 'ulimit -l')", e);
        }
        Entry n = new Entry(mr.address(), mr.address() + mr.length(), mr.lkey(), mr.rkey(), mr, direct, auto);
        Entry[] old = entries;
        Entry[] next = Arrays.copyOf(old, old.length + 1);
        int i = old.length;
        while (i > 0 && next[i - 1].start > n.start) {
            next[i] = next[i - 1];
            i--;
        }
        next[i] = n;
        entries = next;
        return n;
    }

    int size() {
        return entries.length;
    }

    private static void close(Entry e) {
        try {
            e.region.close();
        } catch (RdmaException ex) {
            LOG.debug("ibv_dereg_mr: {}", ex.toString());
        }
    }

    /** Ends a {@link #registerTemporary} registration; the last one after {@link #close} closes the domain. */
    synchronized void releaseTemporary(MemoryRegion mr) {
        try {
            mr.close();
        } catch (RdmaException e) {
            LOG.debug("ibv_dereg_mr: {}", e.toString());
        }
        if (--temporaries == 0 && closePdWhenIdle) {
            closePd();
        }
    }

    /** Deregisters every cached buffer and refuses new registrations. */
    @Override
    public synchronized void close() {
        closed = true;
        for (Entry e : entries) {
            close(e);
        }
        entries = NONE;
    }

    /**
     * After {@link #close}: closes the protection domain now, or when the last temporary registration a racing
     * submitter still holds is released (a domain with registrations cannot be deallocated).
     */
    synchronized void closeProtectionDomain() {
        if (temporaries == 0) {
            closePd();
        } else {
            LOG.debug("{} one-off registrations outstanding; the protection domain closes after them", temporaries);
            closePdWhenIdle = true;
        }
    }

    private void closePd() {
        closePdWhenIdle = false;
        try {
            pd.close();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("ibv_dealloc_pd: {}", e.toString());
        }
    }
}

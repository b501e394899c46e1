package io.nvmeof.target.backend;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A namespace held in off-heap memory, in chunks allocated on first write so that a large, mostly empty namespace
 * costs only what is written. Unwritten chunks read as zeroes; deallocating a whole chunk frees it, unless a
 * transport sends from it directly ({@link #pinnedRegion}: the chunk is then zeroed instead, since the NIC may be
 * registered on it).
 */
public final class RamBackend implements BlockBackend {
    static final int CHUNK_SHIFT = 21; // 2 MiB
    static final int CHUNK_SIZE = 1 << CHUNK_SHIFT;

    /** Source of zeroes for reads of never-written chunks and for zeroing ranges. */
    private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(CHUNK_SIZE).asReadOnlyBuffer();

    private final long size;
    private final AtomicReferenceArray<ByteBuffer> chunks;
    /** 1 for chunks handed out by {@link #pinnedRegion}: they stay at their address for the backend's life. */
    private final AtomicIntegerArray pinned;

    public RamBackend(long sizeBytes) {
        if (sizeBytes <= 0) {
            throw new IllegalArgumentException("RAM namespace size must be positive, got " + sizeBytes);
        }
        long count = (sizeBytes + CHUNK_SIZE - 1) >>> CHUNK_SHIFT;
        if (count > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("RAM namespace too large: " + sizeBytes);
        }
        this.size = sizeBytes;
        this.chunks = new AtomicReferenceArray<>((int) count);
        this.pinned = new AtomicIntegerArray((int) count);
    }

    @Override
    public long sizeBytes() {
        return size;
    }

    /** Number of bytes of chunk memory allocated now (for tests and the admin view). */
    public long allocatedBytes() {
        long n = 0;
        for (int i = 0; i < chunks.length(); i++) {
            if (chunks.get(i) != null) {
                n += CHUNK_SIZE;
            }
        }
        return n;
    }

    private ByteBuffer chunkForWrite(int index) {
        ByteBuffer c = chunks.get(index);
        if (c == null) {
            ByteBuffer fresh = ByteBuffer.allocateDirect(CHUNK_SIZE);
            c = chunks.compareAndExchange(index, null, fresh);
            if (c == null) {
                c = fresh;
            }
        }
        return c;
    }

    @Override
    public void read(long offset, ByteBuffer dst) {
        int pos = dst.position();
        int remaining = dst.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = Math.min(remaining, CHUNK_SIZE - within);
            ByteBuffer c = chunks.get(index);
            dst.put(pos, c == null ? ZEROES : c, c == null ? 0 : within, n);
            pos += n;
            offset += n;
            remaining -= n;
        }
        dst.position(pos);
    }

    @Override
    public void write(long offset, ByteBuffer src) {
        int pos = src.position();
        int remaining = src.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = Math.min(remaining, CHUNK_SIZE - within);
            chunkForWrite(index).put(within, src, pos, n);
            pos += n;
            offset += n;
            remaining -= n;
        }
        src.position(pos);
    }

    @Override
    public ByteBuffer pinnedRegion(long offset, int length) {
        int index = (int) (offset >>> CHUNK_SHIFT);
        int within = (int) (offset & (CHUNK_SIZE - 1));
        if (length <= 0 || within + length > CHUNK_SIZE || offset + length > size) {
            return null;
        }
        if (chunks.get(index) == null) {
            return null; // never written (or freed): nothing to pin
        }
        // Pin, then look again: a deallocation after the pin zeroes the chunk instead of freeing it, and one that
        // freed it meanwhile leaves null here. (One that checked the pin just before it was set may still drop the
        // chunk after this look; the caller then holds an orphan its registration keeps alive, with the old bytes:
        // a read racing a deallocate of the same blocks.)
        if (pinned.get(index) == 0) {
            pinned.set(index, 1);
        }
        return chunks.get(index);
    }

    @Override
    public java.util.List<ByteBuffer> pinnedRegions() {
        java.util.List<ByteBuffer> out = new java.util.ArrayList<>();
        for (int i = 0; i < chunks.length(); i++) {
            ByteBuffer c = chunks.get(i);
            if (pinned.get(i) != 0 && c != null) {
                out.add(c);
            }
        }
        return out;
    }

    @Override
    public int pinnedRegionOffset(long offset) {
        return (int) (offset & (CHUNK_SIZE - 1));
    }

    @Override
    public void flush() {
        // Memory is as durable as it gets; nothing to do.
    }

    /** Zeroing more than this much memory goes off the poll group (a whole-namespace Write Zeroes takes seconds). */
    static final long ZEROING_OFF_POLL_GROUP = 16L << 20;

    @Override
    public boolean mayBlock(long bytes) {
        return bytes > ZEROING_OFF_POLL_GROUP;
    }

    @Override
    public void writeZeroes(long offset, long length) {
        zero(offset, length, false);
    }

    @Override
    public void deallocate(long offset, long length) {
        zero(offset, length, true);
    }

    private void zero(long offset, long length, boolean release) {
        while (length > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = (int) Math.min(length, CHUNK_SIZE - within);
            ByteBuffer c = chunks.get(index);
            if (c != null) {
                if (release && n == CHUNK_SIZE && pinned.get(index) == 0) {
                    chunks.set(index, null);
                } else {
                    c.put(within, ZEROES, 0, n);
                }
            }
            offset += n;
            length -= n;
        }
    }

    @Override
    public String describe() {
        return "ram";
    }

    @Override
    public void close() {
        for (int i = 0; i < chunks.length(); i++) {
            chunks.set(i, null);
        }
    }
}

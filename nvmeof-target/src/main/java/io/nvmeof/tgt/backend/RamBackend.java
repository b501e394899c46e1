package io.nvmeof.tgt.backend;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A namespace held in memory, addressed in 2 MiB chunks.
 *
 * <p><b>Up front</b> (the default, as SPDK's Malloc bdev): all of the namespace's memory is committed when it is
 * created, so no write pays for first-touch page faults and zeroing on the data path (a fresh namespace served random
 * writes 5x slower than a written one when memory came on first write), and the memory in use is what the admin
 * asked for from the start. Creation is refused, saying so, when the system has less memory available.
 *
 * <p><b>Sparse</b> (an option): memory is committed when a chunk is first written, so a large, mostly empty namespace
 * costs only what is written; unwritten chunks read as zeroes, and deallocating a whole chunk gives its memory back,
 * unless a transport sends from it directly ({@link #pinnedRegion}: the chunk is then zeroed instead, since the NIC
 * may be registered on it).
 *
 * <p>On Linux the memory is one mapping at a huge-page boundary with transparent huge pages asked for
 * ({@link AnonymousMemory}), however large the namespace: a sparse one makes its chunks' buffers as they are first
 * written, so neither the kernel's mappings nor the Java heap grow with its size. Elsewhere each chunk is a Java
 * direct buffer. How much sparse namespaces may promise together is bounded ({@link SparseMemoryLimit}).
 */
public final class RamBackend implements BlockBackend {
    private static final Logger LOG = LoggerFactory.getLogger(RamBackend.class);
    static final int CHUNK_SHIFT = 21; // 2 MiB: a transparent huge page
    static final int CHUNK_SIZE = 1 << CHUNK_SHIFT;
    private static final int CHUNKS_PER_SLAB = AnonymousMemory.Region.SLAB / CHUNK_SIZE;
    /** Committing more than this up front is logged with the time it took (a 64 GiB namespace takes seconds). */
    private static final long LOG_ABOVE = 1L << 30;

    /** Chunk states (sparse): holds data; handed out for zero copy; memory being given back. */
    private static final int WRITTEN = 1;
    private static final int PINNED = 2;
    private static final int RELEASING = 4;
    /**
     * One writer copying into the chunk (sparse): counted above the state bits, so that giving the chunk's memory
     * back waits until no write is half done in it. A deallocation that gave the memory back under a writer lost the
     * part copied before and kept the rest, hidden while the chunk read as unwritten and showing again in blocks
     * nobody wrote once a later write elsewhere marked the chunk written.
     */
    private static final int WRITER = 8;

    /**
     * Writers take turns per 64 KiB stripe (a multiple of every block size, so no block spans two): two writes of the
     * same block from two poll groups at once, each a plain memory copy, otherwise left it half of each, both
     * acknowledged, for good; NVMe promises that one block is written atomically (AWUN 0). The stripes share a fixed
     * table of lock words (hashed by stripe number, one per cache line, so poll groups writing elsewhere do not share a
     * line); an unrelated stripe that hashes alike only waits for one copy. Uncontended, a write pays one
     * compare-and-set per stripe it touches. Reads take no turn: one beside a write may see a mix while the write is in
     * flight, which NVMe allows (and the integrity checker counts).
     */
    static final int STRIPE_SHIFT = 16;
    private static final int STRIPE_SIZE = 1 << STRIPE_SHIFT;
    private static final int STRIPE_LOCKS = 1024;
    /** Ints between two lock words: 64 bytes, a cache line. */
    private static final int LOCK_SPACING = 16;

    /** Source of zeroes for reads of never-written chunks and for zeroing ranges. */
    private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(CHUNK_SIZE).asReadOnlyBuffer();

    private final long size;
    private final boolean sparse;
    /** The namespace's one mapping ({@link AnonymousMemory}); null where chunks are Java direct buffers. */
    private final AnonymousMemory.Region region;
    /** The chunks' memory (views of the region, kept once made); null for a sparse chunk not yet written. */
    private final AtomicReferenceArray<ByteBuffer> chunks;
    /** Per chunk: {@link #WRITTEN}, {@link #PINNED}, {@link #RELEASING} bits. */
    private final AtomicIntegerArray state;
    /** Where a sparse namespace's size is counted until {@link #close}; null when not counted. */
    private final SparseMemoryLimit limit;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    /** The stripes' lock words ({@link #STRIPE_SHIFT}): 0 free, 1 taken. */
    private final AtomicIntegerArray stripeLocks = new AtomicIntegerArray(STRIPE_LOCKS * LOCK_SPACING);

    /** A namespace of {@code sizeBytes} with its memory committed up front. */
    public RamBackend(long sizeBytes) {
        this(sizeBytes, false);
    }

    /**
     * @param sparse commit memory on first write instead of now
     * @throws IllegalArgumentException for a size that is not positive, or memory up front that the system does not
     *                                  have available
     */
    public RamBackend(long sizeBytes, boolean sparse) {
        this(sizeBytes, sparse, null);
    }

    /**
     * @param limit where a sparse namespace's size is counted against what all of them may promise (null: not
     *              counted); a namespace beyond it is refused before any memory is taken
     */
    public RamBackend(long sizeBytes, boolean sparse, SparseMemoryLimit limit) {
        this(sizeBytes, sparse, AnonymousMemory.available(), limit);
    }

    RamBackend(long sizeBytes, boolean sparse, boolean mapped) {
        this(sizeBytes, sparse, mapped, null);
    }

    private RamBackend(long sizeBytes, boolean sparse, boolean mapped, SparseMemoryLimit limit) {
        if (sizeBytes <= 0) {
            throw new IllegalArgumentException("RAM namespace size must be positive, got " + sizeBytes);
        }
        long count = (sizeBytes + CHUNK_SIZE - 1) >>> CHUNK_SHIFT;
        if (count > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("RAM namespace too large: " + sizeBytes);
        }
        long committed = count << CHUNK_SHIFT;
        if (!sparse) {
            long available = AnonymousMemory.availableBytes();
            if (available >= 0 && committed > available) {
                throw new IllegalArgumentException(refusal(committed, "the system has " + (available >> 20)
                        + " MiB available"));
            }
        } else if (limit != null) {
            limit.take(sizeBytes); // before anything is allocated: the chunk tables alone grow with the size
        }
        this.size = sizeBytes;
        this.sparse = sparse;
        this.limit = sparse ? limit : null;
        long t0 = System.nanoTime();
        AnonymousMemory.Region mapping = null;
        try {
            this.chunks = new AtomicReferenceArray<>((int) count);
            this.state = new AtomicIntegerArray((int) count);
            if (mapped) {
                mapping = AnonymousMemory.reserve(committed);
            }
            if (!sparse) {
                if (mapping != null) {
                    if (committed > LOG_ABOVE) {
                        LOG.info("RAM namespace: committing {} MiB up front", committed >> 20);
                    }
                    mapping.populate();
                }
                for (int i = 0; i < count; i++) {
                    chunks.set(i, newChunk(mapping, i)); // committed: the data path never makes one
                }
            }
        } catch (OutOfMemoryError e) {
            if (mapping != null) {
                mapping.releaseAll(); // unmapped once unreachable
            }
            if (this.limit != null) {
                this.limit.giveBack(sizeBytes);
            }
            throw new IllegalArgumentException(refusal(committed, e.getMessage()), e);
        }
        this.region = mapping;
        if (!sparse && committed > LOG_ABOVE) {
            LOG.info("RAM namespace: {} MiB committed up front in {} ms", committed >> 20,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        }
    }

    private static String refusal(long bytes, String why) {
        return "a RAM namespace of " + (bytes >> 20) + " MiB takes its memory up front, but " + why
                + ": ask for less, or make it sparse (memory on first write: \"sparse\": true, or --sparse)";
    }

    /**
     * Chunk {@code index}'s memory: a view of {@code mapping} (which keeps it mapped), or without one a new direct
     * buffer (zeroed).
     */
    private static ByteBuffer newChunk(AnonymousMemory.Region mapping, int index) {
        if (mapping == null) {
            return ByteBuffer.allocateDirect(CHUNK_SIZE);
        }
        return mapping.slab(index / CHUNKS_PER_SLAB).slice((index % CHUNKS_PER_SLAB) << CHUNK_SHIFT, CHUNK_SIZE);
    }

    @Override
    public long sizeBytes() {
        return size;
    }

    /** Whether memory is committed on first write rather than up front. */
    public boolean sparse() {
        return sparse;
    }

    /** Bytes of memory committed now (for tests and the admin view). */
    public long allocatedBytes() {
        long n = 0;
        for (int i = 0; i < chunks.length(); i++) {
            if (chunks.get(i) != null && (!sparse || (state.get(i) & WRITTEN) != 0)) {
                n += CHUNK_SIZE;
            }
        }
        return n;
    }

    /** The chunk to read: null where it reads as zeroes (never written, given back, or closed). */
    private ByteBuffer chunkForRead(int index) {
        if (sparse && (state.get(index) & WRITTEN) == 0) {
            return null;
        }
        return chunks.get(index);
    }

    /**
     * Enters chunk {@code index} to write into it: marks it as holding data and (sparse) counts the writer until
     * {@link #endWrite}, so its memory is not given back meanwhile. Returns the chunk; null once closed.
     */
    private ByteBuffer beginWrite(int index) {
        if (!sparse) {
            return chunks.get(index);
        }
        while (true) {
            int s = state.get(index);
            if ((s & RELEASING) != 0) {
                Thread.onSpinWait(); // a deallocation is giving this chunk's memory back: one madvise
                continue;
            }
            if ((s & WRITTEN) == 0 && chunks.get(index) == null && !closed.get()) {
                // First write (or first since its memory went back, for direct buffers): once per chunk's life.
                chunks.compareAndSet(index, null, newChunk(region, index));
            }
            if (state.compareAndSet(index, s, (s | WRITTEN) + WRITER)) {
                return chunks.get(index);
            }
        }
    }

    private void endWrite(int index) {
        if (sparse) {
            state.getAndAdd(index, -WRITER);
        }
    }

    @Override
    public void read(long offset, ByteBuffer dst) {
        int pos = dst.position();
        int remaining = dst.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = Math.min(remaining, CHUNK_SIZE - within);
            ByteBuffer c = chunkForRead(index);
            dst.put(pos, c == null ? ZEROES : c, c == null ? 0 : within, n);
            pos += n;
            offset += n;
            remaining -= n;
        }
        dst.position(pos);
    }

    /** Takes the turn of the stripe holding {@code offset} among writers; returns what {@link #unlockStripe} takes. */
    private int lockStripe(long offset) {
        int slot = (int) ((offset >>> STRIPE_SHIFT) & (STRIPE_LOCKS - 1)) * LOCK_SPACING;
        int spins = 0;
        while (!stripeLocks.compareAndSet(slot, 0, 1)) {
            // Held for one copy of at most a stripe; yield only if its holder seems descheduled.
            if (++spins % 1024 == 0) {
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
        return slot;
    }

    private void unlockStripe(int slot) {
        stripeLocks.setRelease(slot, 0);
    }

    /** Copies {@code n} bytes of {@code src} into chunk {@code c} at {@code within}, a stripe at a time in turn. */
    private void copyInTurn(ByteBuffer c, int within, ByteBuffer src, int pos, int n, long offset) {
        while (n > 0) {
            int piece = Math.min(n, STRIPE_SIZE - (within & (STRIPE_SIZE - 1)));
            int turn = lockStripe(offset);
            try {
                c.put(within, src, pos, piece);
            } finally {
                unlockStripe(turn);
            }
            offset += piece;
            within += piece;
            pos += piece;
            n -= piece;
        }
    }

    @Override
    public void write(long offset, ByteBuffer src) {
        int pos = src.position();
        int remaining = src.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = Math.min(remaining, CHUNK_SIZE - within);
            ByteBuffer c = beginWrite(index);
            try {
                if (c != null) { // null: closed (the namespace was removed; its data is gone)
                    copyInTurn(c, within, src, pos, n, offset);
                }
            } finally {
                endWrite(index);
            }
            pos += n;
            offset += n;
            remaining -= n;
        }
        src.position(pos);
    }

    /** The chunk that holds {@code length} bytes at {@code offset} in one piece, or -1 when none does. */
    private int chunkHolding(long offset, int length) {
        int within = (int) (offset & (CHUNK_SIZE - 1));
        if (length <= 0 || within + length > CHUNK_SIZE || offset + length > size) {
            return -1;
        }
        return (int) (offset >>> CHUNK_SHIFT);
    }

    @Override
    public ByteBuffer pinnedRegion(long offset, int length) {
        int index = chunkHolding(offset, length);
        if (index < 0) {
            return null;
        }
        // Pinned only while it holds data; from then on a deallocation zeroes it rather than giving its memory
        // back, which would leave a NIC registered on pages the namespace no longer uses.
        int s = state.get(index);
        while ((s & PINNED) == 0) {
            if (sparse && (s & WRITTEN) == 0 || (s & RELEASING) != 0) {
                return null; // never written, or being given back: nothing to pin
            }
            if (state.compareAndSet(index, s, s | PINNED)) {
                break;
            }
            s = state.get(index);
        }
        return chunks.get(index);
    }

    @Override
    public ByteBuffer readableRegion(long offset, int length) {
        int index = chunkHolding(offset, length);
        if (index < 0) {
            return null;
        }
        int s = state.get(index);
        if (sparse && (s & WRITTEN) == 0 || (s & RELEASING) != 0) {
            return null; // never written (reads as zeroes: the copy path has them), or being given back
        }
        // A chunk is a view of its slab, which stays mapped while any view of it is reachable: the caller's reference
        // keeps the memory valid even if a deallocation or close gives it back meanwhile.
        return chunks.get(index);
    }

    @Override
    public java.util.List<ByteBuffer> pinnedRegions() {
        java.util.List<ByteBuffer> out = new java.util.ArrayList<>();
        for (int i = 0; i < chunks.length(); i++) {
            ByteBuffer c = chunks.get(i);
            if ((state.get(i) & PINNED) != 0 && c != null) {
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

    /** Zeroes the range; of a sparse namespace, whole chunks not pinned give their memory back. */
    @Override
    public void deallocate(long offset, long length) {
        zero(offset, length, sparse);
    }

    private void zero(long offset, long length, boolean release) {
        while (length > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_SIZE - 1));
            int n = (int) Math.min(length, CHUNK_SIZE - within);
            if (!(release && n == CHUNK_SIZE && release(index))) {
                ByteBuffer c = chunkForRead(index);
                if (c != null) {
                    zeroInPlace(c, offset, within, n);
                }
            }
            offset += n;
            length -= n;
        }
    }

    /** Zeroes {@code n} bytes at {@code within} of chunk {@code c} a stripe at a time, in turn with the writers. */
    private void zeroInPlace(ByteBuffer c, long offset, int within, int n) {
        while (n > 0) {
            int piece = Math.min(n, STRIPE_SIZE - (within & (STRIPE_SIZE - 1)));
            int turn = lockStripe(offset);
            try {
                c.put(within, ZEROES, 0, piece);
            } finally {
                unlockStripe(turn);
            }
            offset += piece;
            within += piece;
            n -= piece;
        }
    }

    /**
     * Gives a written, unpinned sparse chunk's memory back, once the writes copying into it have left (new ones wait
     * meanwhile), so the deallocation lands wholly before or wholly after each of them; false when it is pinned (zero it
     * instead).
     */
    private boolean release(int index) {
        int s = state.get(index);
        while (true) {
            if (s == 0) {
                return true; // nothing written: already zeroes
            }
            if ((s & PINNED) != 0) {
                return false; // pinned: zero in place
            }
            if ((s & RELEASING) != 0) {
                // Another deallocation is giving it back: once it has, the chunk reads as zeroes, which is this one's
                // result too. Zeroing in place meanwhile would tear a write that lands as soon as it is done.
                while ((state.get(index) & RELEASING) != 0) {
                    Thread.onSpinWait();
                }
                return true;
            }
            if (state.compareAndSet(index, s, s | RELEASING)) {
                break;
            }
            s = state.get(index);
        }
        while (state.get(index) >= WRITER) {
            Thread.onSpinWait(); // a write is copying into it: a memcpy of at most one chunk
        }
        ByteBuffer c = chunks.get(index);
        if (region != null) {
            if (c != null && !AnonymousMemory.release(c, 0, CHUNK_SIZE)) {
                c.put(0, ZEROES, 0, CHUNK_SIZE);
            }
        } else {
            chunks.set(index, null);
        }
        state.set(index, 0);
        return true;
    }

    @Override
    public String describe() {
        return sparse ? "ram (sparse)" : "ram";
    }

    /**
     * Gives the memory back now (the mapping is unmapped once no view of it is left) and, for a sparse namespace, its
     * size to the limit it was counted against. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (int i = 0; i < chunks.length(); i++) {
            chunks.set(i, null);
        }
        if (region != null) {
            region.releaseAll();
        }
        if (limit != null) {
            limit.giveBack(size);
        }
    }
}

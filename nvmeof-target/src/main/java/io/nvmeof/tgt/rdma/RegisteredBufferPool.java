package io.nvmeof.tgt.rdma;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Command data buffers carved once from one memory region that the RDMA transport registers once, so every buffer the
 * core fills or reads is already addressable by the NIC (one lkey for all). Buffers come in a few size classes; each
 * is a Netty {@link ByteBuf} that returns itself to its class's free stack when released, so the data path allocates
 * nothing and never registers memory.
 *
 * <p>A pool belongs to one poll-group thread: allocation and release are plain array operations, unsynchronised.
 * When a class is exhausted a larger class serves the request; when all are, {@link #tryAllocate} returns null and
 * the transport holds the command until a buffer comes back.
 */
public final class RegisteredBufferPool extends AbstractByteBufAllocator {
    private final ByteBuffer region;
    private final long regionAddress;
    private final int[] classSizes;
    private final Buffer[][] free;
    private final int[] freeCount;
    private volatile long lkey;
    private Thread owner;

    /**
     * @param region direct memory to carve (the caller registers it and tells {@link #lkey(long)})
     * @param classSizes ascending buffer sizes, e.g. 4 KiB, 128 KiB, 1 MiB
     * @param classCounts how many buffers of each size
     */
    public RegisteredBufferPool(ByteBuffer region, int[] classSizes, int[] classCounts) {
        super(true);
        if (!region.isDirect()) {
            throw new IllegalArgumentException("the region must be direct memory");
        }
        if (classSizes.length != classCounts.length || classSizes.length == 0) {
            throw new IllegalArgumentException("one count per size class");
        }
        long needed = 0;
        for (int i = 0; i < classSizes.length; i++) {
            if (i > 0 && classSizes[i] <= classSizes[i - 1]) {
                throw new IllegalArgumentException("size classes must ascend: " + Arrays.toString(classSizes));
            }
            needed += (long) classSizes[i] * classCounts[i];
        }
        if (needed > region.capacity()) {
            throw new IllegalArgumentException("the region holds " + region.capacity() + " bytes; the classes need " + needed);
        }
        this.region = region;
        this.regionAddress = io.netty.util.internal.PlatformDependent.directBufferAddress(region);
        this.classSizes = classSizes.clone();
        this.free = new Buffer[classSizes.length][];
        this.freeCount = new int[classSizes.length];
        int offset = 0;
        for (int c = 0; c < classSizes.length; c++) {
            free[c] = new Buffer[classCounts[c]];
            for (int i = 0; i < classCounts[c]; i++) {
                ByteBuffer slice = region.duplicate().clear().position(offset).limit(offset + classSizes[c]).slice();
                free[c][i] = new Buffer(this, slice, c, offset);
                offset += classSizes[c];
            }
            freeCount[c] = classCounts[c];
        }
    }

    /** Memory key of the region's registration, for local SGEs. */
    public long lkey() {
        return lkey;
    }

    public void lkey(long key) {
        this.lkey = key;
    }

    public ByteBuffer region() {
        return region;
    }

    public long regionAddress() {
        return regionAddress;
    }

    public int largestBuffer() {
        return classSizes[classSizes.length - 1];
    }

    /** Free buffers of class {@code c} now (for tests and statistics). */
    public int available(int c) {
        return freeCount[c];
    }

    public int classes() {
        return classSizes.length;
    }

    /** A buffer of at least {@code length} bytes with reader and writer index 0, or null when none is free. */
    public ByteBuf tryAllocate(int length) {
        assert checkThread();
        for (int c = 0; c < classSizes.length; c++) {
            if (classSizes[c] >= length && freeCount[c] > 0) {
                Buffer b = free[c][--freeCount[c]];
                b.reuse();
                return b;
            }
        }
        return null;
    }

    private boolean checkThread() {
        Thread t = Thread.currentThread();
        if (owner == null) {
            owner = t;
        }
        return owner == t;
    }

    private void giveBack(Buffer b) {
        assert checkThread();
        free[b.sizeClass][freeCount[b.sizeClass]++] = b;
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        ByteBuf b = tryAllocate(initialCapacity);
        if (b == null) {
            throw new IllegalStateException("no registered buffer of " + initialCapacity + " bytes is free");
        }
        return b;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return UnpooledByteBufAllocator.DEFAULT.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }

    /** A slice of the region that goes back to the pool instead of being freed. */
    static final class Buffer extends UnpooledUnsafeDirectByteBuf {
        private final RegisteredBufferPool pool;
        final int sizeClass;
        /** Offset of this buffer in the registered region. */
        final int regionOffset;

        Buffer(RegisteredBufferPool pool, ByteBuffer slice, int sizeClass, int regionOffset) {
            super(pool, slice, slice.capacity());
            this.pool = pool;
            this.sizeClass = sizeClass;
            this.regionOffset = regionOffset;
        }

        void reuse() {
            resetRefCnt();
            clear();
        }

        @Override
        protected void deallocate() {
            pool.giveBack(this);
        }
    }
}

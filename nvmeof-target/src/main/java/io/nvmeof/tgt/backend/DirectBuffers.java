package io.nvmeof.tgt.backend;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * Data buffers that direct I/O can use as they are: pooled, direct, and aligned to 4 KiB (address and size), which is
 * at least what any device or file system here asks (statx DIOALIGN: 512 on ext4 and most devices). NVMe/TCP places
 * the data of namespaces served direct in these, so the device DMAs straight into the buffer the socket then sends
 * from; a buffer from elsewhere is copied into one of these first.
 */
public final class DirectBuffers {
    public static final int ALIGNMENT = 4096;

    private static final PooledByteBufAllocator ALLOCATOR = new PooledByteBufAllocator(true,
            0, Math.max(1, Runtime.getRuntime().availableProcessors()),
            PooledByteBufAllocator.defaultPageSize(), PooledByteBufAllocator.defaultMaxOrder(),
            PooledByteBufAllocator.defaultSmallCacheSize(), PooledByteBufAllocator.defaultNormalCacheSize(),
            true, ALIGNMENT);

    private DirectBuffers() {
    }

    /** A buffer of {@code length} readable bytes (contents undefined), aligned for direct I/O. */
    public static ByteBuf allocate(int length) {
        ByteBuf b = ALLOCATOR.directBuffer(length, length);
        b.writerIndex(length);
        return b;
    }

    /** The allocator, for transports that place data buffers themselves. */
    public static PooledByteBufAllocator allocator() {
        return ALLOCATOR;
    }
}

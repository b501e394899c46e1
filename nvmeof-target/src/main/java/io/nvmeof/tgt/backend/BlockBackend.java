package io.nvmeof.tgt.backend;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Storage behind a namespace, addressed in bytes. Calls come from poll-group threads, several at once for different
 * queues, so implementations are thread-safe without a lock per I/O. Buffers are read from or filled between their
 * position and limit.
 */
public interface BlockBackend extends AutoCloseable {
    long sizeBytes();

    /** Fills {@code dst} (position to limit) with bytes from {@code offset}. */
    void read(long offset, ByteBuffer dst) throws IOException;

    /** Stores {@code src} (position to limit) at {@code offset}. */
    void write(long offset, ByteBuffer src) throws IOException;

    /** Makes every completed write durable. */
    void flush() throws IOException;

    void writeZeroes(long offset, long length) throws IOException;

    /** Deallocates a range; afterwards it reads as zeroes (Identify Namespace DLFEAT says so). */
    void deallocate(long offset, long length) throws IOException;

    /**
     * For zero-copy reads: the backend's own memory holding {@code length} bytes at {@code offset} in one piece, or
     * null when it has none (files; never-written or region-straddling ranges), in which case the caller reads
     * through a copy. A returned region is pinned: it is never freed or moved while the backend lives (deallocating
     * it zeroes it instead), so a transport may register it once and let the NIC send straight from it. The bytes
     * begin {@link #pinnedRegionOffset} bytes into the region.
     */
    default ByteBuffer pinnedRegion(long offset, int length) {
        return null;
    }

    /**
     * For zero-copy sends that end within a short time: the backend's own memory holding {@code length} bytes at
     * {@code offset} in one piece, or null when it has none (as {@link #pinnedRegion}). Unlike a pinned region it stays
     * free to be given back by a deallocation (it then reads as zeroes), but its memory stays mapped for as long as the
     * caller holds the returned buffer, so a send from it never reads freed memory. The bytes begin {@link
     * #pinnedRegionOffset} bytes into the region.
     */
    default ByteBuffer readableRegion(long offset, int length) {
        return null;
    }

    /**
     * The descriptor the poll group's io_uring reads and writes (direct or through the page cache), or null when this
     * backend is read and written through its own methods (RAM; a file where even the native helper is missing). Where
     * a poll group has no ring, a backend with a descriptor is still read and written through its own methods, which
     * must then use the descriptor the same way (direct or not).
     */
    default RingFile ringFile() {
        return null;
    }

    /**
     * Whether {@link #read} and {@link #write} may wait for a device (a file's system calls): then they run on backend
     * threads, never on a poll group. RAM: false.
     */
    default boolean ioMayBlock() {
        return false;
    }

    /**
     * The device's physical block size in bytes (BLKPBSZGET): writes of whole physical blocks avoid a read-modify-write
     * in the device. 0 where unknown (RAM, files).
     */
    default int physicalBlockSize() {
        return 0;
    }

    /** The device's discard granularity in bytes (sysfs {@code queue/discard_granularity}); 0 where unknown. */
    default int discardGranularity() {
        return 0;
    }

    /** Every region {@link #pinnedRegion} has handed out, so a transport can drop its registrations of them. */
    default java.util.List<ByteBuffer> pinnedRegions() {
        return java.util.List.of();
    }

    /**
     * Where the bytes at {@code offset} begin inside the region {@link #pinnedRegion} or {@link #readableRegion}
     * returned for it.
     */
    default int pinnedRegionOffset(long offset) {
        return 0;
    }

    /**
     * Whether a flush, or zeroing or deallocating {@code bytes}, may take long enough to stall a poll group (file
     * system calls, fdatasync, zeroing gigabytes of memory). Such work runs in its namespace's backend lanes instead.
     */
    default boolean mayBlock(long bytes) {
        return false;
    }

    /**
     * Grows the backend to {@code newSizeBytes} (never shrinks: data would be lost under a host that still addresses
     * it). Called while I/O runs; afterwards {@link #sizeBytes} reports the new size.
     *
     * @throws UnsupportedOperationException when this kind of backend has a fixed size
     */
    default void grow(long newSizeBytes) throws IOException {
        throw new UnsupportedOperationException(describe() + " has a fixed size");
    }

    /** The smallest unit the device reads and writes (a block device's logical block size); 0 for files, RAM. */
    default int logicalBlockSize() {
        return 0;
    }

    /**
     * How many requests the device behind this backend takes at once (a block device's {@code nr_requests}, that of the
     * device a file's file system is on), or 0 where unknown or unlimited: what a namespace has in its poll group's
     * ring at most when no queue depth is configured for it. Read on the data path: a field, not a lookup.
     */
    default int deviceRequestLimit() {
        return 0;
    }

    /**
     * Measures the storage again and returns the bytes it holds now: a file's length, a device's capacity. Either may
     * shrink under the target (a file cut with {@code truncate}, a loop device re-read with {@code losetup -c}); a
     * backend adopts a smaller size here ({@link #sizeBytes} reports it after), never a larger one (growing is
     * {@link #grow}'s). A backend whose size cannot change underneath returns {@link #sizeBytes}.
     */
    default long measureSizeBytes() throws IOException {
        return sizeBytes();
    }

    /** A short description for logs and the CLI, e.g. {@code ram} or the file path. */
    String describe();

    @Override
    void close() throws IOException;

    /**
     * Closes a backend whose namespace no host has seen (refused after it was opened, or an import undone), undoing
     * what opening it did: a file backend removes the file it created and cuts back one it grew.
     */
    default void discard() throws IOException {
        close();
    }
}

package io.nvmeof.tgt.backend;

/**
 * A backend's descriptor that the poll group's io_uring reads and writes asynchronously, so a file or block namespace
 * never blocks a poll group. {@code direct}: opened with O_DIRECT (no page cache, the device DMAs into the buffer),
 * which needs memory addresses aligned to {@code memoryAlignment} and offsets and lengths to {@code offsetAlignment};
 * otherwise a descriptor through the page cache ({@code "bufferedIo": true}, or a file system that refuses O_DIRECT),
 * which takes any buffer (both alignments 1) and which the kernel serves from the cache or its own workers.
 */
public record RingFile(int fd, int memoryAlignment, int offsetAlignment, boolean direct) {
    /** A descriptor through the page cache. */
    public static RingFile buffered(int fd) {
        return new RingFile(fd, 1, 1, false);
    }

    /** Whether a transfer of {@code length} bytes at {@code offset}, to or from {@code address}, can go as it is. */
    public boolean fits(long address, long offset, int length) {
        return (address & (memoryAlignment - 1)) == 0 && (offset & (offsetAlignment - 1)) == 0
                && (length & (offsetAlignment - 1)) == 0;
    }
}

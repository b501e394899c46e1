package io.nvmeof.tgt.backend;

/**
 * A backend's descriptor opened for direct I/O (O_DIRECT: no page cache, the device DMAs into the buffer), which the
 * poll group's io_uring reads and writes asynchronously, and what direct I/O needs: memory addresses aligned to
 * {@code memoryAlignment}, offsets and lengths to {@code offsetAlignment}.
 */
public record DirectIo(int fd, int memoryAlignment, int offsetAlignment) {
    /** Whether a transfer of {@code length} bytes at {@code offset}, to or from {@code address}, can go direct. */
    public boolean fits(long address, long offset, int length) {
        return (address & (memoryAlignment - 1)) == 0 && (offset & (offsetAlignment - 1)) == 0
                && (length & (offsetAlignment - 1)) == 0;
    }
}

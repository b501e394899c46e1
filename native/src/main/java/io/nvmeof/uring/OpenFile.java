package io.nvmeof.uring;

import java.nio.file.Path;

/**
 * A file or block device opened for a namespace's I/O by descriptor (for {@link IoUring}), with what the target must
 * know of it: its size, its logical and physical block sizes, the alignment direct I/O needs of memory and offsets,
 * and whether the device is read-only. Opening never creates: the caller has made the file with its own checks.
 *
 * <p>{@link #close()} closes the descriptor; the caller closes it only when no request on it is in flight.
 */
public final class OpenFile implements AutoCloseable {
    private static final int OPEN_WRITE = 1;
    private static final int OPEN_DIRECT = 2;
    private static final int OPEN_EXCLUSIVE = 4;
    private static final int OPEN_NOFOLLOW = 8;

    // Indexes of nvu_open's long[] (nvmeof_uring.c)
    private static final int FILE_IS_BLOCK_DEVICE = 0;
    private static final int FILE_SIZE = 1;
    private static final int FILE_LOGICAL_BLOCK = 2;
    private static final int FILE_PHYSICAL_BLOCK = 3;
    private static final int FILE_DIO_MEM_ALIGN = 4;
    private static final int FILE_DIO_OFFSET_ALIGN = 5;
    private static final int FILE_READ_ONLY = 6;
    private static final int FILE_DEV_MAJOR = 8;
    private static final int FILE_DEV_MINOR = 9;

    private static final int SPACE_PUNCH_HOLE = 1;
    private static final int SPACE_ZERO_RANGE = 2;
    private static final int SPACE_BLKDISCARD = 3;
    private static final int SPACE_BLKZEROOUT = 4;

    /** How to open: for writing, with O_DIRECT, exclusively (a block device nobody else holds), not through a link. */
    public record Mode(boolean write, boolean direct, boolean exclusive, boolean noFollow) {
        int bits() {
            return (write ? OPEN_WRITE : 0) | (direct ? OPEN_DIRECT : 0) | (exclusive ? OPEN_EXCLUSIVE : 0)
                    | (noFollow ? OPEN_NOFOLLOW : 0);
        }
    }

    private final Path path;
    private final Mode mode;
    private final int fd;
    private final long[] info;
    private boolean closed;

    private OpenFile(Path path, Mode mode, int fd, long[] info) {
        this.path = path;
        this.mode = mode;
        this.fd = fd;
        this.info = info;
    }

    /**
     * Opens {@code path}, which must be a regular file or a block device. EBUSY: a block device opened exclusively is
     * mounted or held by another exporter; EINVAL: neither a file nor a block device, or O_DIRECT refused by its file
     * system (tmpfs before 6.6); EROFS/EACCES: a read-only device opened for writing.
     */
    public static OpenFile open(Path path, Mode mode) throws UringException {
        if (!UringLibrary.helperReady()) {
            UringLibrary.requireAvailable(); // says why
        }
        long[] info = new long[UringNative.nvu_file_info_length()];
        int fd = UringNative.nvu_open(path.toString(), mode.bits(), info);
        if (fd < 0) {
            throw new UringException("open " + path, -fd);
        }
        return new OpenFile(path, mode, fd, info);
    }

    public Path path() { return path; }
    public Mode mode() { return mode; }
    /** The descriptor, for {@link IoUring} requests. */
    public int fd() { return fd; }
    public boolean isBlockDevice() { return info[FILE_IS_BLOCK_DEVICE] != 0; }
    /** Bytes: a block device's whole size, a file's length when it was opened. */
    public long sizeBytes() { return info[FILE_SIZE]; }
    /** A block device's logical block size (BLKSSZGET); 512 for a file. */
    public int logicalBlockSize() { return (int) info[FILE_LOGICAL_BLOCK]; }
    /** A block device's physical block size (BLKPBSZGET); a file's st_blksize. */
    public int physicalBlockSize() { return (int) info[FILE_PHYSICAL_BLOCK]; }
    /** What O_DIRECT needs of a buffer's address (statx DIOALIGN for files where the kernel says; else the block). */
    public int directMemoryAlignment() { return (int) info[FILE_DIO_MEM_ALIGN]; }
    /** What O_DIRECT needs of offsets and lengths. */
    public int directOffsetAlignment() { return (int) info[FILE_DIO_OFFSET_ALIGN]; }
    /** A block device marked read-only (BLKROGET). */
    public boolean isReadOnly() { return info[FILE_READ_ONLY] != 0; }
    /** The device's major:minor (a block device's own; a file's file system's), for /sys/dev/block lookups. */
    public String deviceNumber() { return info[FILE_DEV_MAJOR] + ":" + info[FILE_DEV_MINOR]; }

    /**
     * Deallocates a range: punches a hole in a file (EOPNOTSUPP where its file system cannot), discards on a block
     * device (BLKDISCARD; EOPNOTSUPP where the device cannot). Blocks: run it off the poll groups.
     */
    public void deallocate(long offset, long length) throws UringException {
        space(isBlockDevice() ? SPACE_BLKDISCARD : SPACE_PUNCH_HOLE, offset, length);
    }

    /** Zeroes a range: FALLOC_FL_ZERO_RANGE on a file, BLKZEROOUT on a block device. Blocks. */
    public void zeroRange(long offset, long length) throws UringException {
        space(isBlockDevice() ? SPACE_BLKZEROOUT : SPACE_ZERO_RANGE, offset, length);
    }

    private void space(int op, long offset, long length) throws UringException {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("offset " + offset + " and length " + length + " must not be negative");
        }
        int r = UringNative.nvu_space(fd, op, offset, length);
        if (r < 0) {
            throw new UringException((op == SPACE_BLKDISCARD || op == SPACE_PUNCH_HOLE ? "deallocate " : "zero ")
                    + offset + "+" + length + " of " + path, -r);
        }
    }

    @Override
    public synchronized void close() throws UringException {
        if (closed) {
            return;
        }
        closed = true;
        int r = UringNative.nvu_close(fd);
        if (r < 0) {
            throw new UringException("close " + path, -r);
        }
    }

    @Override
    public String toString() {
        return path + (isBlockDevice() ? " (block device, " : " (file, ") + sizeBytes() + " bytes, logical block "
                + logicalBlockSize() + ", physical " + physicalBlockSize() + ")";
    }
}

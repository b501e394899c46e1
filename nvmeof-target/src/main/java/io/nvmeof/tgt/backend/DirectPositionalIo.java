package io.nvmeof.tgt.backend;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * {@code pread}/{@code pwrite} on a namespace's O_DIRECT descriptor, for the reads and writes that do not go through a
 * poll group's io_uring (a poll group without a ring, zeroes written where the file system cannot zero a range): they
 * must not go through the page cache either. A buffered write beside the ring's direct ones leaves dirty pages the
 * kernel cannot drop when a direct write covers them; it then records EIO on the file ("Page cache invalidation
 * failure on direct I/O"), and the next fsync fails. Data goes through an aligned bounce buffer: backend threads only,
 * never a poll group.
 */
final class DirectPositionalIo {
    private static final boolean BOUND = bind();

    private DirectPositionalIo() {
    }

    private static boolean bind() {
        if (!Platform.isLinux()) {
            return false;
        }
        try {
            Native.register(DirectPositionalIo.class, NativeLibrary.getInstance(Platform.C_LIBRARY_NAME));
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    /** JNA's direct mapping: the libc functions of these names, the buffer as an address. */
    private static native long pread(int fd, long buf, long count, long offset) throws LastErrorException;

    private static native long pwrite(int fd, long buf, long count, long offset) throws LastErrorException;

    /** Whether libc's pread and pwrite are bound here. */
    static boolean available() {
        return BOUND;
    }

    /** Reads {@code dst.remaining()} bytes at {@code offset}; a read cut short by the end of the file throws. */
    static void read(int fd, long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        ByteBuf bounce = DirectBuffers.allocate(length);
        try {
            long address = bounce.memoryAddress();
            long n = call(false, fd, address, length, offset);
            if (n < length) {
                // Only at the end of the file or device (direct reads are not cut short otherwise): it shrank.
                throw new PastEndOfStorageException("the storage ends at " + (offset + n) + ", before the"
                        + " namespace's end");
            }
            bounce.getBytes(0, dst);
        } finally {
            bounce.release();
        }
    }

    /** Writes {@code src.remaining()} bytes at {@code offset}. */
    static void write(int fd, long offset, ByteBuffer src) throws IOException {
        int length = src.remaining();
        ByteBuf bounce = DirectBuffers.allocate(length);
        try {
            bounce.setBytes(0, src.duplicate());
            long address = bounce.memoryAddress();
            long n = call(true, fd, address, length, offset);
            if (n < length) {
                // A direct write cut short: the device or file system is out of space (as the ring's writes read it);
                // writing the rest would be unaligned.
                throw new IOException("pwrite of " + length + " bytes at " + offset + " wrote " + n
                        + ": out of space (ENOSPC)");
            }
            src.position(src.limit());
        } finally {
            bounce.release();
        }
    }

    private static long call(boolean write, int fd, long address, int count, long offset) throws IOException {
        while (true) {
            try {
                return write ? pwrite(fd, address, count, offset) : pread(fd, address, count, offset);
            } catch (LastErrorException e) {
                if (e.getErrorCode() == 4) { // EINTR
                    continue;
                }
                throw new IOException((write ? "pwrite" : "pread") + " of " + count + " bytes at " + offset
                        + " failed: errno " + e.getErrorCode() + " (" + errnoName(e.getErrorCode()) + ")", e);
            }
        }
    }

    private static String errnoName(int errno) {
        return switch (errno) {
            case 5 -> "EIO";
            case 28 -> "ENOSPC";
            case 22 -> "EINVAL";
            case 9 -> "EBADF";
            case 6 -> "ENXIO";
            case 19 -> "ENODEV";
            default -> "errno " + errno;
        };
    }
}

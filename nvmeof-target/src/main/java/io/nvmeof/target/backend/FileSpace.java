package io.nvmeof.target.backend;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import java.io.IOException;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Space management of a file or block device through {@code fallocate(2)}, as Linux nvmet's file backend does it:
 * Deallocate punches a hole ({@code FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE}), Write Zeroes zeroes a range in the
 * file system's metadata ({@code FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE}); neither writes the zeroes themselves.
 * Java has no call for either, so libc is bound through JNA on a descriptor of its own. Where the call or the file
 * system cannot do it, each method returns false and the caller writes zeroes instead.
 */
final class FileSpace implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FileSpace.class);
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int FALLOC_FL_KEEP_SIZE = 0x01;
    private static final int FALLOC_FL_PUNCH_HOLE = 0x02;
    private static final int FALLOC_FL_ZERO_RANGE = 0x10;
    private static final int EOPNOTSUPP = 95;
    private static final int ENOSYS = 38;
    private static final boolean BOUND = bind();

    private volatile int fd;
    private volatile boolean punchWorks = true;
    private volatile boolean zeroRangeWorks = true;

    private static boolean bind() {
        if (!Platform.isLinux()) {
            return false;
        }
        try {
            Native.register(FileSpace.class, NativeLibrary.getInstance(Platform.C_LIBRARY_NAME));
            return true;
        } catch (Throwable t) {
            LOG.info("fallocate is not available ({}); file namespaces write zeroes to deallocate", t.toString());
            return false;
        }
    }

    private static native int open(String path, int flags) throws LastErrorException;
    private static native int close(int fd) throws LastErrorException;
    private static native int fallocate(int fd, int mode, long offset, long length) throws LastErrorException;

    /** Opens {@code path} for space management; without fallocate the methods below only return false. */
    FileSpace(Path path) throws IOException {
        int d = -1;
        if (BOUND) {
            try {
                d = open(path.toString(), O_RDWR | O_CLOEXEC);
            } catch (LastErrorException e) {
                throw new IOException("open(" + path + ") for fallocate: errno " + e.getErrorCode());
            }
        }
        fd = d;
    }

    /** Deallocates {@code [offset, offset + length)}; afterwards it reads as zeroes. False: not done, write zeroes. */
    boolean punchHole(long offset, long length) throws IOException {
        if (fd < 0 || !punchWorks) {
            return false;
        }
        return call(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length, "PUNCH_HOLE");
    }

    /** Makes {@code [offset, offset + length)} read as zeroes without writing them. False: not done, write zeroes. */
    boolean zeroRange(long offset, long length) throws IOException {
        if (fd < 0 || !zeroRangeWorks) {
            return false;
        }
        return call(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, offset, length, "ZERO_RANGE");
    }

    private boolean call(int mode, long offset, long length, String what) throws IOException {
        try {
            fallocate(fd, mode, offset, length);
            return true;
        } catch (LastErrorException e) {
            if (e.getErrorCode() == EOPNOTSUPP || e.getErrorCode() == ENOSYS) {
                // This file system cannot (tmpfs before 6.x has no ZERO_RANGE, some have no holes): remember it.
                if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) {
                    punchWorks = false;
                } else {
                    zeroRangeWorks = false;
                }
                LOG.info("fallocate({}) is not supported here; writing zeroes instead", what);
                return false;
            }
            throw new IOException("fallocate(" + what + ", " + offset + ", " + length + ") failed: errno " + e.getErrorCode());
        }
    }

    @Override
    public synchronized void close() {
        int d = fd;
        fd = -1;
        if (d >= 0) {
            try {
                close(d);
            } catch (LastErrorException e) {
                LOG.debug("close({}): errno {}", d, e.getErrorCode());
            }
        }
    }
}

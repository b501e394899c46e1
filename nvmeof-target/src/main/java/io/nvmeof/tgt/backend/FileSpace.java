package io.nvmeof.tgt.backend;

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
    /** The fallocate modes of a Deallocate and a Write Zeroes, keeping the size. */
    static final int PUNCH_HOLE = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
    static final int ZERO_RANGE = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
    static final int EOPNOTSUPP = 95;
    static final int ENOSYS = 38;

    /** The three system calls used, so a test can stand in for the kernel. */
    interface Syscalls {
        int open(String path, int flags) throws LastErrorException;
        int close(int fd) throws LastErrorException;
        int fallocate(int fd, int mode, long offset, long length) throws LastErrorException;
    }

    /** libc through JNA's direct mapping; null where it cannot be bound (not Linux). */
    static final Syscalls LIBC = Libc.bind();

    private static final class Libc implements Syscalls {
        static Syscalls bind() {
            if (!Platform.isLinux()) {
                return null;
            }
            try {
                Native.register(Natives.class, NativeLibrary.getInstance(Platform.C_LIBRARY_NAME));
                return new Libc();
            } catch (Throwable t) {
                LOG.info("fallocate is not available ({}); file namespaces write zeroes to deallocate", t.toString());
                return null;
            }
        }

        @Override public int open(String path, int flags) { return Natives.open(path, flags); }
        @Override public int close(int fd) { return Natives.close(fd); }
        @Override public int fallocate(int fd, int mode, long offset, long length) {
            return Natives.fallocate(fd, mode, offset, length);
        }
    }

    /** JNA's direct mapping: each method binds the libc function of its name. */
    private static final class Natives {
        static native int open(String path, int flags) throws LastErrorException;
        static native int close(int fd) throws LastErrorException;
        static native int fallocate(int fd, int mode, long offset, long length) throws LastErrorException;
    }

    private final Syscalls sys;
    private final int fd;
    /**
     * Calls using {@link #fd}: the descriptor is closed by whoever leaves it unused once {@link #close} was asked. Closing it under a call in progress would let a file opened
     * meanwhile take the same number, and the call would punch a hole in that file.
     */
    private final UseCount users = new UseCount();
    private volatile boolean punchWorks = true;
    private volatile boolean zeroRangeWorks = true;

    /** Opens {@code path} for space management; without fallocate the methods below only return false. */
    FileSpace(Path path) throws IOException {
        this(path, LIBC);
    }

    FileSpace(Path path, Syscalls sys) throws IOException {
        this.sys = sys;
        int d = -1;
        if (sys != null) {
            try {
                d = sys.open(path.toString(), O_RDWR | O_CLOEXEC);
            } catch (LastErrorException e) {
                throw new IOException("open(" + path + ") for fallocate: errno " + e.getErrorCode());
            }
        }
        fd = d;
        if (d < 0) {
            users.close(); // nothing to manage: every call answers "not done"
        }
    }

    /** Deallocates {@code [offset, offset + length)}; afterwards it reads as zeroes. False: not done, write zeroes. */
    boolean punchHole(long offset, long length) throws IOException {
        if (!punchWorks) {
            return false;
        }
        return call(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length, "PUNCH_HOLE");
    }

    /** Makes {@code [offset, offset + length)} read as zeroes without writing them. False: not done, write zeroes. */
    boolean zeroRange(long offset, long length) throws IOException {
        if (!zeroRangeWorks) {
            return false;
        }
        return call(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, offset, length, "ZERO_RANGE");
    }

    private boolean call(int mode, long offset, long length, String what) throws IOException {
        if (!users.enter()) {
            return false; // closed (or never opened): the caller writes zeroes, which a closed backend refuses
        }
        try {
            sys.fallocate(fd, mode, offset, length);
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
        } finally {
            if (users.exit()) {
                closeDescriptor(); // close() was asked while this call ran: the last one out closes
            }
        }
    }

    /** Closes the descriptor now, or (a call is using it) as that call returns. Idempotent. */
    @Override
    public void close() {
        if (users.close()) {
            closeDescriptor();
        }
    }

    private void closeDescriptor() {
        try {
            sys.close(fd);
        } catch (LastErrorException e) {
            LOG.debug("close({}): errno {}", fd, e.getErrorCode());
        }
    }
}

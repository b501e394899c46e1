package io.nvmeof.target.backend;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Anonymous memory for RAM namespaces from {@code mmap(2)}, bound through JNA: Java's direct buffers cannot ask for
 * transparent huge pages ({@code MADV_HUGEPAGE}, needed where THP is in {@code madvise} mode), give back part of a
 * buffer ({@code MADV_DONTNEED}), or skip the zeroing the kernel already did. A mapping is unmapped by a
 * {@link Cleaner} once its buffer and every view of it are unreachable (views keep their root buffer alive), so no
 * code can touch unmapped memory. Without Linux or JNA, {@link #available()} is false and the callers fall back to
 * {@link ByteBuffer#allocateDirect}.
 *
 * <p>Only creation and release call into libc; the data path reads and writes the buffers.
 */
final class AnonymousMemory {
    private static final Logger LOG = LoggerFactory.getLogger(AnonymousMemory.class);
    static final int HUGE_PAGE = 2 << 20;
    private static final int PAGE = 4096;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MAP_NORESERVE = 0x4000;
    private static final int MADV_DONTNEED = 4;
    private static final int MADV_HUGEPAGE = 14;
    private static final int MADV_POPULATE_WRITE = 23; // Linux 5.14
    private static final int EINVAL = 22;
    private static final Cleaner UNMAPPER = Cleaner.create();
    private static final boolean BOUND = bind();
    private static volatile boolean populateWorks = true;

    private AnonymousMemory() {
    }

    private static boolean bind() {
        if (!Platform.isLinux() || !Platform.is64Bit()) {
            return false;
        }
        try {
            Native.register(AnonymousMemory.class, NativeLibrary.getInstance(Platform.C_LIBRARY_NAME));
            return true;
        } catch (Throwable t) {
            LOG.info("mmap is not available ({}); RAM namespaces use Java direct buffers", t.toString());
            return false;
        }
    }

    private static native long mmap(long addr, long length, int prot, int flags, int fd, long offset)
            throws LastErrorException;
    private static native int munmap(long addr, long length) throws LastErrorException;
    private static native int madvise(long addr, long length, int advice) throws LastErrorException;

    static boolean available() {
        return BOUND;
    }

    /**
     * Maps {@code bytes} (a multiple of {@link #HUGE_PAGE}) of zeroed memory at a huge-page boundary, asking for
     * transparent huge pages. Nothing is committed until touched ({@code MAP_NORESERVE}); see {@link #populate}.
     */
    static ByteBuffer map(int bytes) {
        if (bytes <= 0 || bytes % HUGE_PAGE != 0) {
            throw new IllegalArgumentException("mapping size " + bytes + " is not a positive multiple of 2 MiB");
        }
        long span = (long) bytes + HUGE_PAGE; // room to move the start to a huge-page boundary
        long raw;
        try {
            raw = mmap(0, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        } catch (LastErrorException e) {
            throw new OutOfMemoryError("mmap of " + bytes + " bytes failed: errno " + e.getErrorCode());
        }
        long start = (raw + HUGE_PAGE - 1) & -(long) HUGE_PAGE;
        try {
            if (start > raw) {
                munmap(raw, start - raw);
            }
            long end = raw + span;
            if (end > start + bytes) {
                munmap(start + bytes, end - (start + bytes));
            }
        } catch (LastErrorException e) {
            LOG.debug("trimming a mapping: errno {}", e.getErrorCode()); // the slack stays mapped, unused
        }
        try {
            madvise(start, bytes, MADV_HUGEPAGE);
        } catch (LastErrorException e) {
            LOG.debug("MADV_HUGEPAGE: errno {} (THP disabled here); small pages", e.getErrorCode());
        }
        ByteBuffer buffer = new Pointer(start).getByteBuffer(0, bytes);
        final long address = start;
        UNMAPPER.register(buffer, () -> {
            try {
                munmap(address, bytes);
            } catch (LastErrorException e) {
                LOG.warn("munmap of a RAM namespace's memory failed: errno {}", e.getErrorCode());
            }
        });
        return buffer;
    }

    /** Commits every page of {@code buffer} now (the first-touch cost off the data path). */
    static void populate(ByteBuffer buffer) {
        if (populateWorks) {
            try {
                madvise(address(buffer), buffer.capacity(), MADV_POPULATE_WRITE);
                return;
            } catch (LastErrorException e) {
                if (e.getErrorCode() != EINVAL) {
                    throw new OutOfMemoryError("committing " + buffer.capacity() + " bytes failed: errno "
                            + e.getErrorCode());
                }
                populateWorks = false; // a kernel before 5.14: touch each page instead
            }
        }
        touch(buffer);
    }

    /** Writes a zero into each page, which commits it (memory already zero stays zero). */
    private static void touch(ByteBuffer buffer) {
        for (int at = 0; at < buffer.capacity(); at += PAGE) {
            buffer.put(at, (byte) 0);
        }
    }

    /**
     * Gives {@code [offset, offset + length)} of a mapped buffer back to the kernel; it reads as zeroes afterwards and
     * is committed again when written. False when not done (the caller then writes zeroes).
     */
    static boolean release(ByteBuffer buffer, int offset, int length) {
        if (!BOUND || offset % PAGE != 0 || length % PAGE != 0) {
            return false;
        }
        try {
            madvise(address(buffer) + offset, length, MADV_DONTNEED);
            return true;
        } catch (LastErrorException e) {
            LOG.debug("MADV_DONTNEED: errno {}", e.getErrorCode());
            return false;
        }
    }

    private static long address(ByteBuffer buffer) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(buffer));
    }

    /**
     * Bytes of memory the system can still give without swapping ({@code MemAvailable} of {@code /proc/meminfo}),
     * or -1 where it is not known.
     */
    static long availableBytes() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/meminfo"));
            for (String line : lines) {
                if (line.startsWith("MemAvailable:")) {
                    String[] f = line.split("\\s+");
                    return Long.parseLong(f[1]) * 1024;
                }
            }
        } catch (Exception e) {
            LOG.debug("reading /proc/meminfo: {}", e.toString());
        }
        return -1;
    }
}

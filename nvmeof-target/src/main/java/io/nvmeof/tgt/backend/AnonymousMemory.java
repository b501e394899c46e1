package io.nvmeof.tgt.backend;

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
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Anonymous memory for RAM namespaces from {@code mmap(2)}, bound through JNA: Java's direct buffers cannot ask for
 * transparent huge pages ({@code MADV_HUGEPAGE}, needed where THP is in {@code madvise} mode), give back part of a
 * buffer ({@code MADV_DONTNEED}), or skip the zeroing the kernel already did. A namespace's memory is one mapping
 * ({@link Region}), unmapped by a {@link Cleaner} once nothing can reach it any more, so no code can touch unmapped
 * memory. Without Linux or JNA, {@link #available()} is false and the callers fall back to
 * {@link ByteBuffer#allocateDirect}.
 *
 * <p>Only creation and release call into libc, and a region's buffer onto each GiB the first time it is used; the
 * data path reads and writes the buffers.
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
     * Maps {@code bytes} (a positive multiple of {@link #HUGE_PAGE}) of zeroed memory at a huge-page boundary, asking
     * for transparent huge pages: one mapping however large (one entry against {@code vm.max_map_count}), of which
     * nothing is committed until touched ({@code MAP_NORESERVE}); see {@link Region#populate}.
     */
    static Region reserve(long bytes) {
        if (bytes <= 0 || bytes % HUGE_PAGE != 0) {
            throw new IllegalArgumentException("mapping size " + bytes + " is not a positive multiple of 2 MiB");
        }
        long span = bytes + HUGE_PAGE; // room to move the start to a huge-page boundary
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
        return new Region(start, bytes);
    }

    /**
     * One mapping from {@link #reserve}, handed out as buffers of up to {@link #SLAB} bytes ({@link #slab}; a
     * ByteBuffer holds under 2 GiB), each made on first use. The mapping is unmapped by a {@link Cleaner} once the
     * region and every buffer onto it, views included, are unreachable, so no code can touch unmapped memory.
     */
    static final class Region {
        /** The largest buffer onto a region. */
        static final int SLAB = 1 << 30;

        private final long address;
        private final long bytes;
        private final Unmapper unmapper;
        private final AtomicReferenceArray<ByteBuffer> slabs;

        private Region(long address, long bytes) {
            this.address = address;
            this.bytes = bytes;
            this.unmapper = new Unmapper(address, bytes);
            this.slabs = new AtomicReferenceArray<>((int) ((bytes + SLAB - 1) / SLAB));
            UNMAPPER.register(this, unmapper::drop);
        }

        long bytes() {
            return bytes;
        }

        /** The buffer onto bytes {@code [index * SLAB, (index + 1) * SLAB)} (fewer for the last one). */
        ByteBuffer slab(int index) {
            ByteBuffer b = slabs.get(index);
            if (b == null) {
                long at = (long) index * SLAB;
                ByteBuffer made = new Pointer(address + at).getByteBuffer(0, Math.min(SLAB, bytes - at));
                unmapper.hold();
                UNMAPPER.register(made, unmapper::drop); // a buffer that loses the race below is dropped alone
                b = slabs.compareAndSet(index, null, made) ? made : slabs.get(index);
            }
            return b;
        }

        /** Commits every page now (the first-touch cost off the data path). */
        void populate() {
            if (populateWorks) {
                try {
                    madvise(address, bytes, MADV_POPULATE_WRITE);
                    return;
                } catch (LastErrorException e) {
                    if (e.getErrorCode() != EINVAL) {
                        throw new OutOfMemoryError("committing " + bytes + " bytes failed: errno " + e.getErrorCode());
                    }
                    populateWorks = false; // a kernel before 5.14: touch each page instead
                }
            }
            for (int i = 0; i < slabs.length(); i++) {
                touch(slab(i));
            }
        }

        /** Gives all of the region's memory back to the kernel now; it reads as zeroes, and is committed if written. */
        void releaseAll() {
            try {
                madvise(address, bytes, MADV_DONTNEED);
            } catch (LastErrorException e) {
                LOG.debug("MADV_DONTNEED: errno {}", e.getErrorCode());
            }
        }
    }

    /** Unmaps a region once nothing holds it: the region itself and each of its slabs hold it. */
    private static final class Unmapper {
        private final long address;
        private final long bytes;
        private final java.util.concurrent.atomic.AtomicInteger holds = new java.util.concurrent.atomic.AtomicInteger(1);

        Unmapper(long address, long bytes) {
            this.address = address;
            this.bytes = bytes;
        }

        void hold() {
            holds.incrementAndGet();
        }

        void drop() {
            if (holds.decrementAndGet() == 0) {
                try {
                    munmap(address, bytes);
                } catch (LastErrorException e) {
                    LOG.warn("munmap of a RAM namespace's memory failed: errno {}", e.getErrorCode());
                }
            }
        }
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

package io.nvmeof.cpu;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.stream.Stream;

/**
 * Which CPUs a thread of this process may run on: glibc's {@code sched_getaffinity} and {@code sched_setaffinity}
 * through JNA. Called when threads start and by a once-a-second sweep, never per I/O.
 */
public final class Affinity {
    /** Longs (64 CPUs each) of the CPU mask handed to the kernel: room for {@link CpuList#MAX_CPU}. */
    private static final int MASK_LONGS = (CpuList.MAX_CPU + 1) / 64;

    private static final String UNAVAILABLE;

    static {
        String why = null;
        try {
            if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
                why = "CPU affinity is set only on Linux";
            } else {
                Native.register(Affinity.class, "c");
            }
        } catch (Throwable e) { // no JNA native part for this platform, or no libc to bind
            why = "CPU affinity cannot be set here: " + e.getMessage();
        }
        UNAVAILABLE = why;
    }

    private Affinity() {
    }

    private static native int sched_getaffinity(int tid, long size, long[] mask) throws LastErrorException;

    private static native int sched_setaffinity(int tid, long size, long[] mask) throws LastErrorException;

    /** Null where affinity can be read and set; otherwise why not. */
    public static String unavailable() {
        return UNAVAILABLE;
    }

    /** The CPUs thread {@code tid} (0: the calling thread) may run on. */
    public static CpuList of(int tid) throws IOException {
        requireAvailable();
        long[] mask = new long[MASK_LONGS];
        try {
            sched_getaffinity(tid, mask.length * 8L, mask);
        } catch (LastErrorException e) {
            throw new IOException("cannot read the CPUs of thread " + tid + ": " + e.getMessage(), e);
        }
        return CpuList.of(BitSet.valueOf(mask));
    }

    /** The CPUs this process may run on: those of the calling thread (set by {@code taskset}, cgroups, ...). */
    public static CpuList allowed() throws IOException {
        return of(0);
    }

    /**
     * Keeps thread {@code tid} (0: the calling thread) to {@code cpus}.
     *
     * @throws IOException when the kernel refuses, e.g. a CPU outside this process's cgroup, or the thread ended
     */
    public static void set(int tid, CpuList cpus) throws IOException {
        requireAvailable();
        long[] mask = new long[MASK_LONGS];
        long[] bits = cpus.bits().toLongArray();
        System.arraycopy(bits, 0, mask, 0, Math.min(bits.length, mask.length));
        try {
            sched_setaffinity(tid, mask.length * 8L, mask);
        } catch (LastErrorException e) {
            throw new IOException("cannot keep thread " + tid + " to CPUs " + cpus + ": " + e.getMessage(), e);
        }
    }

    /** The kernel's id of the calling thread (what {@code /proc/self/task} lists and {@code ps -L} shows). */
    public static int currentThreadId() throws IOException {
        // /proc/thread-self links to PID/task/TID: no syscall number to hard-code per architecture.
        Path link = Files.readSymbolicLink(Path.of("/proc/thread-self"));
        return Integer.parseInt(link.getFileName().toString());
    }

    /** The ids of this process's threads now (a thread may end before the caller uses its id). */
    public static List<Integer> threadIds() throws IOException {
        List<Integer> ids = new ArrayList<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            tasks.forEach(p -> ids.add(Integer.parseInt(p.getFileName().toString())));
        }
        return ids;
    }

    private static void requireAvailable() throws IOException {
        if (UNAVAILABLE != null) {
            throw new IOException(UNAVAILABLE);
        }
    }
}

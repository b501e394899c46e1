package io.nvmeof.tgt.backend;

import java.lang.management.ManagementFactory;
import java.util.Locale;

/**
 * How much memory the sparse RAM namespaces of a target may promise together ({@code maxSparseMemory}): their sizes,
 * counted when each is created and given back when it is closed. A sparse namespace commits memory as it is written,
 * so the promise may exceed the machine's memory, but not without bound: writing more than the machine has ends the
 * process (the kernel's OOM killer), and a namespace's bookkeeping grows with its size (a 64 TiB one took the target
 * down while being created). By default the limit is {@value #DEFAULT_MULTIPLE} times the machine's memory (the
 * container's, where it has a limit).
 */
public final class SparseMemoryLimit {
    /** The default limit, in multiples of the machine's memory. */
    public static final int DEFAULT_MULTIPLE = 4;

    private final long limit;
    /** How the limit came about, for refusals: "maxSparseMemory 8.0 GiB" or "... 4 times this machine's ...". */
    private final String origin;
    private long promised;

    private SparseMemoryLimit(long limit, String origin) {
        this.limit = limit;
        this.origin = origin;
    }

    /** The limit {@code maxSparseMemory} gives, in bytes; null: the default. */
    public static SparseMemoryLimit of(Long configured) {
        if (configured != null) {
            if (configured < 0) {
                throw new IllegalArgumentException("maxSparseMemory must not be negative, got " + configured);
            }
            return new SparseMemoryLimit(configured, "maxSparseMemory (" + describe(configured) + ")");
        }
        long machine = physicalMemory();
        long limit = machine > Long.MAX_VALUE / DEFAULT_MULTIPLE ? Long.MAX_VALUE : machine * DEFAULT_MULTIPLE;
        return new SparseMemoryLimit(limit, "maxSparseMemory (" + describe(limit) + " by default: "
                + DEFAULT_MULTIPLE + " times this machine's " + describe(machine) + " of memory)");
    }

    /** The machine's (or the container's) memory. */
    static long physicalMemory() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
    }

    public long limit() {
        return limit;
    }

    /** What the sparse namespaces open now promise. */
    public synchronized long promised() {
        return promised;
    }

    /** Counts a new sparse namespace of {@code bytes}; refuses it, saying what to do, beyond the limit. */
    synchronized void take(long bytes) {
        if (bytes > limit - promised) {
            throw new IllegalArgumentException("a sparse RAM namespace of " + describe(bytes) + " would bring what"
                    + " sparse RAM namespaces promise to " + describe(promised + bytes) + ", more than " + origin
                    + (promised > 0 ? " (" + describe(promised) + " promised already)" : "") + ": ask for less, remove"
                    + " another sparse namespace, or raise maxSparseMemory in the target's configuration (a host"
                    + " that writes more than the machine's memory ends the target)");
        }
        promised += bytes;
    }

    synchronized void giveBack(long bytes) {
        promised -= bytes;
    }

    /** {@code bytes} in the largest binary unit it reaches, to one decimal: "64.0 TiB", "4.0 MiB". */
    static String describe(long bytes) {
        String[] units = {"EiB", "PiB", "TiB", "GiB", "MiB", "KiB"};
        for (int i = 0; i < units.length; i++) {
            int shift = 60 - 10 * i;
            if (bytes >= 1L << shift) {
                return String.format(Locale.ROOT, "%.1f %s", bytes / (double) (1L << shift), units[i]);
            }
        }
        return bytes + " bytes";
    }
}

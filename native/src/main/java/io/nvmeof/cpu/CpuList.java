package io.nvmeof.cpu;

import java.util.BitSet;
import java.util.stream.IntStream;

/**
 * A set of CPU numbers in the Linux cpulist form that {@code taskset -c}, {@code /proc/PID/status}'s
 * {@code Cpus_allowed_list} and SPDK's {@code --cpumask [..]} use: {@code 0-3,8,10-11}.
 */
public final class CpuList {
    /** The highest CPU number accepted (the kernel's default NR_CPUS on x86-64 distributions is 8192). */
    public static final int MAX_CPU = 8191;

    private final BitSet cpus;

    private CpuList(BitSet cpus) {
        this.cpus = cpus;
    }

    /** The CPUs set in {@code cpus} (copied). */
    public static CpuList of(BitSet cpus) {
        return new CpuList((BitSet) cpus.clone());
    }

    public static CpuList of(int... cpus) {
        BitSet set = new BitSet();
        for (int c : cpus) {
            set.set(check(c, String.valueOf(c)));
        }
        return new CpuList(set);
    }

    /**
     * Parses {@code 0-3,8}; blanks around the parts are allowed.
     *
     * @throws IllegalArgumentException naming the part that is not a CPU number or a range of them
     */
    public static CpuList parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("no CPUs given: write them as a list such as 0-3,8");
        }
        BitSet set = new BitSet();
        for (String raw : text.split(",", -1)) {
            String part = raw.strip();
            int dash = part.indexOf('-');
            int first;
            int last;
            try {
                if (dash < 0) {
                    first = last = Integer.parseInt(part);
                } else {
                    first = Integer.parseInt(part.substring(0, dash).strip());
                    last = Integer.parseInt(part.substring(dash + 1).strip());
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("'" + part + "' in CPU list '" + text
                        + "' is not a CPU number or a range such as 0-3");
            }
            check(first, part);
            check(last, part);
            if (last < first) {
                throw new IllegalArgumentException("the range '" + part + "' in CPU list '" + text + "' runs backwards");
            }
            set.set(first, last + 1);
        }
        return new CpuList(set);
    }

    private static int check(int cpu, String part) {
        if (cpu < 0 || cpu > MAX_CPU) {
            throw new IllegalArgumentException("CPU '" + part + "' is not from 0 to " + MAX_CPU);
        }
        return cpu;
    }

    public int size() {
        return cpus.cardinality();
    }

    public boolean isEmpty() {
        return cpus.isEmpty();
    }

    public boolean contains(int cpu) {
        return cpu >= 0 && cpus.get(cpu);
    }

    /** The CPUs in ascending order. */
    public int[] toArray() {
        return cpus.stream().toArray();
    }

    public IntStream stream() {
        return cpus.stream();
    }

    /** The CPUs of this list that {@code other} lacks. */
    public CpuList minus(CpuList other) {
        BitSet set = (BitSet) cpus.clone();
        set.andNot(other.cpus);
        return new CpuList(set);
    }

    /** Whether every CPU of this list is in {@code other}. */
    public boolean within(CpuList other) {
        return minus(other).isEmpty();
    }

    BitSet bits() {
        return (BitSet) cpus.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CpuList l && l.cpus.equals(cpus);
    }

    @Override
    public int hashCode() {
        return cpus.hashCode();
    }

    /** The cpulist form, ranges folded: {@code 0-3,8}. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        int first = cpus.nextSetBit(0);
        while (first >= 0) {
            int end = cpus.nextClearBit(first);
            if (s.length() > 0) {
                s.append(',');
            }
            s.append(first);
            if (end - 1 > first) {
                s.append('-').append(end - 1);
            }
            first = cpus.nextSetBit(end);
        }
        return s.toString();
    }
}

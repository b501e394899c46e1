package io.nvmeof.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Another process's CPU time, user + system of all its threads, from {@code /proc/PID/stat} (fields 14 and 15, in
 * USER_HZ ticks: 100 per second on every Linux architecture). The target's CPU per I/O does not depend on the load
 * generator, so bench reports it next to its own when given the target's PID.
 */
final class ProcessCpu {
    private static final double TICKS_PER_SECOND = 100;
    private final long pid;
    private final Path stat;

    private ProcessCpu(long pid) {
        this.pid = pid;
        this.stat = Path.of("/proc", Long.toString(pid), "stat");
    }

    /** The process {@code pid}, checked now so that a wrong PID fails before the benchmark, not after it. */
    static ProcessCpu of(long pid) {
        if (pid <= 0) {
            throw new IllegalArgumentException("--target-pid must be a process ID, got " + pid);
        }
        ProcessCpu p = new ProcessCpu(pid);
        p.seconds();
        return p;
    }

    /** CPU seconds the process has used so far. */
    double seconds() {
        String text;
        try {
            text = Files.readString(stat);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("--target-pid " + pid + ": no such process on this machine ("
                    + stat + " is missing); give the local target's PID, e.g. $(pgrep -f 'nvmeof.jar target')");
        } catch (IOException e) {
            throw new IllegalArgumentException("--target-pid " + pid + ": cannot read " + stat + ": " + e.getMessage());
        }
        // The command name (field 2) is in parentheses and may hold spaces or ')': count fields after the last ')'.
        String[] f = text.substring(text.lastIndexOf(')') + 2).trim().split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / TICKS_PER_SECOND; // utime, stime: fields 14, 15
    }
}

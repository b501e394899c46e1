package io.nvmeof.netty;

import java.util.concurrent.TimeUnit;

/**
 * How many lines of one kind may be logged: at most {@link #PER_WINDOW} a minute. For events anyone who reaches a
 * listener can cause (failed handshakes, refused Connects): the log must not be theirs to fill. The first line after
 * a quiet spell says how many were left out.
 */
public final class LogAllowance {
    public static final int PER_WINDOW = 20;
    private static final long WINDOW = TimeUnit.MINUTES.toNanos(1);
    private long windowStart = System.nanoTime();
    private int logged;
    private long dropped;

    /** -1: do not log this one; else how many were left out before it. */
    public synchronized long admit() {
        long now = System.nanoTime();
        if (now - windowStart > WINDOW) {
            windowStart = now;
            logged = 0;
        }
        if (logged >= PER_WINDOW) {
            dropped++;
            return -1;
        }
        logged++;
        long d = dropped;
        dropped = 0;
        return d;
    }

    /** What to add to a line {@link #admit} let through with {@code leftOut}. */
    public static String leftOut(long leftOut, String what) {
        return leftOut > 0 ? " (" + leftOut + " more " + what + " not logged in the last minute)" : "";
    }
}

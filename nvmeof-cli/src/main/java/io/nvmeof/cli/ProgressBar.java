package io.nvmeof.cli;

import io.nvmeof.loader.imports.ImportProgress;
import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress on standard error: one line redrawn in place on a terminal (bar, percent, bytes, rate, ETA, what is being
 * worked on), or a line every 10 % and at least every 10 s when stderr is a file or a pipe.
 */
final class ProgressBar implements ImportProgress {
    private final PrintStream err = System.err;
    private final boolean tty = System.console() != null;
    private String phase = "";
    private long total;
    private long done;
    private long t0;
    private long lastDraw;
    private int lastTenth = -1;

    @Override
    public synchronized void phase(String name, long totalBytes) {
        finishLine();
        phase = name;
        total = totalBytes;
        done = 0;
        t0 = System.nanoTime();
        lastDraw = 0;
        lastTenth = -1;
    }

    @Override
    public synchronized void advanced(long bytes, String detail) {
        done += bytes;
        long now = System.nanoTime();
        int tenth = total > 0 ? (int) (done * 10 / total) : 0;
        if (tty ? now - lastDraw > 100_000_000L || done >= total : tenth != lastTenth || now - lastDraw > 10_000_000_000L) {
            lastDraw = now;
            lastTenth = tenth;
            draw(detail);
        }
    }

    private void draw(String detail) {
        double secs = Math.max(1e-3, (System.nanoTime() - t0) / 1e9);
        double rate = done / secs;
        double pct = total > 0 ? Math.min(100.0, done * 100.0 / total) : 100.0;
        long eta = rate > 0 && total > done ? (long) ((total - done) / rate) : 0;
        String line = String.format(Locale.ROOT, "%s %s %5.1f%% %s/%s %s/s ETA %ds %s", phase, bar(pct), pct, size(done),
                size(total), size((long) rate), eta, detail == null ? "" : detail);
        if (tty) {
            err.print("\r" + line + "\u001b[K");
        } else {
            err.println(line);
        }
        err.flush();
    }

    private static String bar(double pct) {
        int filled = (int) (pct / 5);
        return "[" + "#".repeat(filled) + ".".repeat(20 - filled) + "]";
    }

    static String size(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1fGiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1fMiB", bytes / (double) (1L << 20));
        }
        if (bytes >= 1L << 10) {
            return String.format(Locale.ROOT, "%.1fKiB", bytes / 1024.0);
        }
        return bytes + "B";
    }

    @Override
    public synchronized void note(String line) {
        finishLine();
        err.println(line);
    }

    synchronized void finishLine() {
        if (tty && lastDraw != 0) {
            err.println();
            lastDraw = 0;
        }
    }
}

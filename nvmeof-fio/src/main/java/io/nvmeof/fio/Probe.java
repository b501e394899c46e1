package io.nvmeof.fio;

import io.nvmeof.initiator.NamespaceHandle;
import java.time.Duration;

/**
 * What the fio engine's {@code setup} asks before fio forks its jobs: each of the job's namespaces' size, block size
 * and largest transfer. It runs as a separate process, so fio's parent never starts a JVM (a JVM does not survive
 * {@code fork}, and fio's {@code process} mode forks after setup). Prints {@code size=B block=B maxio=B}, one line per
 * namespace in the order given, and exits 0, or prints one line on stderr saying what is wrong and exits 1.
 *
 * <p>Arguments: the engine's settings, as {@link FioJob#open} takes them (see {@link JobSettings}).
 */
public final class Probe {
    private Probe() {
    }

    public static void main(String[] args) {
        try {
            JobSettings job = JobSettings.parse(args);
            // Quick and with no reconnecting: this only asks, and fio waits for it before any job starts.
            try (JobSettings.Connected c = job.connect(job.options.toBuilder().ioQueues(1).queueDepth(2)
                    .connectTimeout(Duration.ofSeconds(10)).commandTimeout(Duration.ofSeconds(10))
                    .ctrlLossTimeout(Duration.ZERO).build())) {
                StringBuilder out = new StringBuilder();
                for (NamespaceHandle ns : c.namespaces()) {
                    out.append("size=").append(ns.sizeBytes()).append(" block=").append(ns.blockSize())
                            .append(" maxio=").append((long) ns.maxBlocksPerIo() * ns.blockSize()).append('\n');
                }
                System.out.print(out);
            }
            System.exit(0);
        } catch (Throwable t) {
            String m = t.getMessage() != null ? t.getMessage() : t.toString();
            System.err.println(m.replace('\n', ' '));
            System.exit(1);
        }
    }
}

package io.nvmeof.cli;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The target's own I/O path, run on the started engine before it listens (NvmeTarget.BeforeListening), so that a
 * host's first seconds get the compiled code a warm target runs (issue 53; docs/performance.md, "The first seconds of
 * a connection").
 *
 * <p>Why: a cold target runs its first few hundred thousand I/Os interpreted and then in profiling code while the JIT's
 * optimizing compiler works, on the same cores as the poll groups; QD 32 latencies are milliseconds for about 3 s. The
 * end of that first connection then takes branches the profile never saw (a queue torn down, a socket at its end), so
 * the optimized code of the whole I/O path is thrown away and a second connection pays again. Code compiled in another
 * engine is not enough either: this engine's pools grow the first time they are used, a branch that other engine's
 * profile had long forgotten. So the warm-up exports a private subsystem (a RAM and a file namespace) on a listener of
 * its own on 127.0.0.1 of this very engine and drives it with the project's initiator over loopback: connections that
 * read and write (4 KiB and 128 KiB, queue depth 32 and 1, and the occasional flush, Write Zeroes and deallocate) and
 * end, until a connection passes with the compiler nearly idle, or the time given runs out. It shares the code and the
 * poll groups, not the data: the subsystem, the listener and the temporary file are gone before any host can connect.
 */
final class TargetWarmUp {
    /**
     * Names no one can guess: the subsystem (so it never collides with a configured one) and the one host it admits
     * (a local process that connects to the private listener during the warm-up is refused).
     */
    private static final String NQN_PREFIX = "nqn.2026-12.io.nvmeof:warm-up-";
    /**
     * The queue depths each connection runs at in turn: fio's and SPDK perf's usual 32; nearly the Linux host's 128, so
     * that the pools and buffers that grow with the I/Os in flight grow here (the branch that grows them is then in
     * the compiled code, not a trap that throws it away under the first busy host); and 1.
     */
    private static final int[] QUEUE_DEPTHS = {32, 96, 1};
    private static final int IOS_PER_CONNECTION = 8_000;
    private static final int MIN_CONNECTIONS = 3;
    /** A connection during which the compiler used under this share of the wall time finds the path compiled. */
    private static final double QUIET_COMPILE_SHARE = 0.05;
    /**
     * The private listener's port ID: any is free, since no configured listener is bound yet, and they bind (under
     * their own IDs) only after this one is removed and its ANA states forgotten.
     */
    private static final int PORT_ID = 0xFFFF;

    /** What a warm-up did, for the log line. */
    record Result(double seconds, long ios, int connections, boolean quiet, String skipped) {
        String describe() {
            if (skipped != null) {
                return "warm-up skipped: " + skipped;
            }
            return String.format(Locale.ROOT, "warmed up the I/O path in %.1f s: %,d I/Os over %d connections%s",
                    seconds, ios, connections, quiet ? "" : " (stopped at the time given; the compiler was still busy)");
        }
    }

    private TargetWarmUp() {
    }

    /**
     * Runs on {@code target} for at most {@code budgetSeconds} (a connection under way finishes); never throws for the
     * warm-up's sake: a target that cannot warm up starts cold.
     */
    static Result run(NvmeTarget target, double budgetSeconds) {
        // A disk, where there is one: /tmp is often tmpfs, which refuses O_DIRECT, and would warm the buffered path.
        Path varTmp = Path.of("/var/tmp");
        return run(target, budgetSeconds, Files.isDirectory(varTmp) && Files.isWritable(varTmp) ? varTmp
                : Path.of(System.getProperty("java.io.tmpdir")));
    }

    /** As {@link #run(NvmeTarget, double)}, with the file namespace's temporary file in {@code directory}. */
    static Result run(NvmeTarget target, double budgetSeconds, Path directory) {
        String why = notWorthIt();
        if (why != null) {
            return new Result(0, 0, 0, false, why);
        }
        long start = System.nanoTime();
        long deadline = start + (long) (budgetSeconds * 1e9);
        Path file = null;
        try {
            try {
                file = Files.createTempFile(directory, "nvmeof-warm-up", ".img");
                file.toFile().deleteOnExit(); // Ctrl-C during the warm-up ends the JVM without the finally below
            } catch (java.io.IOException e) {
                file = null; // no place for a file: the RAM namespace alone
            }
            return warmUp(target, start, deadline, file);
        } catch (Exception e) {
            return new Result(0, 0, 0, false, "it failed (" + e + "); the target starts cold");
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (java.io.IOException ignored) {
                    // a temporary file left behind is no reason not to start
                }
            }
        }
    }

    /** Null when the JIT has an optimizing tier to warm; otherwise why not. */
    static String notWorthIt() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return "this JVM has no JIT compiler to warm";
        }
        try {
            var hotspot = ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            String top = hotspot.getVMOption("TieredStopAtLevel").getValue();
            if (Integer.parseInt(top) < 4) {
                return "the JVM runs without its optimizing compiler (-XX:TieredStopAtLevel=" + top + ")";
            }
        } catch (RuntimeException notHotSpot) {
            // another JVM: warm it all the same
        }
        return null;
    }

    private static Result warmUp(NvmeTarget target, long start, long deadline, Path file) throws Exception {
        List<NamespaceConfig> namespaces = new ArrayList<>();
        namespaces.add(new NamespaceConfig(1L, "ram", "64MiB", 4096, null, null));
        if (file != null) {
            namespaces.add(new NamespaceConfig(2L, "file", "64MiB", 4096, file.toString(), null));
        }
        String nqn = NQN_PREFIX + UUID.randomUUID();
        String host = "nqn.2014-08.org.nvmexpress:uuid:" + UUID.randomUUID();
        SubsystemConfig config = new SubsystemConfig(nqn, null, null, null, false, List.of(host), namespaces);
        Subsystem subsystem = target.buildSubsystem(config);
        subsystem.quiet(true);
        target.core().addSubsystem(subsystem);
        int portId = PORT_ID;
        try {
            int port = target.addListener(new ListenerConfig(portId, "tcp", "127.0.0.1", 0, null, null, List.of(nqn),
                    null), portId);
            return drive(new TransportId("tcp", "127.0.0.1", port, nqn), host, start, deadline);
        } finally {
            target.removeListener(portId);
            Subsystem removed = target.core().removeSubsystem(nqn);
            if (removed != null) {
                for (Namespace ns : removed.namespaces()) {
                    target.retire(ns, removed);
                }
            }
        }
    }

    private static Result drive(TransportId id, String host, long start, long deadline) throws Exception {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        ConnectOptions options = ConnectOptions.builder().hostNqn(host).ioQueues(1).queueDepth(128).build();
        long ios = 0;
        int connections = 0;
        while (System.nanoTime() < deadline) {
            long compiledBefore = jit.getTotalCompilationTime();
            long t0 = System.nanoTime();
            try (NvmeofController c = NvmeofController.connect(id, options)) {
                List<NamespaceHandle> namespaces = c.namespaces();
                for (int qd : QUEUE_DEPTHS) {
                    ios += drive(namespaces, qd, qd == 1 ? IOS_PER_CONNECTION / 20 : IOS_PER_CONNECTION, deadline);
                }
                for (NamespaceHandle ns : namespaces) { // the commands hosts send now and then
                    ns.flush().get(10, TimeUnit.SECONDS);
                    ns.writeZeroes(0, 8).get(10, TimeUnit.SECONDS);
                    ns.deallocate(8, 8).get(10, TimeUnit.SECONDS);
                    ios += 3;
                }
            }
            connections++;
            double wallMs = (System.nanoTime() - t0) / 1e6;
            double compileMs = jit.getTotalCompilationTime() - compiledBefore;
            if (connections >= MIN_CONNECTIONS && compileMs < QUIET_COMPILE_SHARE * wallMs) {
                return new Result((System.nanoTime() - start) / 1e9, ios, connections, true, null);
            }
        }
        return new Result((System.nanoTime() - start) / 1e9, ios, connections, false, null);
    }

    /**
     * {@code count} I/Os at queue depth {@code qd} over the namespaces in turn: mostly 4 KiB reads and writes, one in
     * eight 128 KiB (data the target asks for with R2T, and reads of several PDUs). Ends early at the deadline.
     */
    private static long drive(List<NamespaceHandle> namespaces, int qd, int count, long deadline) throws Exception {
        int small = 4096, large = 128 * 1024;
        List<ByteBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < qd; i++) {
            buffers.add(ByteBuffer.allocateDirect(large));
        }
        AtomicLong issued = new AtomicLong();
        AtomicInteger failed = new AtomicInteger();
        CountDownLatch idle = new CountDownLatch(qd);
        IoCallback[] next = new IoCallback[1];
        next[0] = (context, status) -> {
            if (status != 0) {
                failed.compareAndSet(0, status);
            }
            long n = issued.getAndIncrement();
            if (n >= count || failed.get() != 0 || System.nanoTime() > deadline) {
                idle.countDown();
                return;
            }
            NamespaceHandle ns = namespaces.get((int) (n % namespaces.size()));
            int kind = (int) ((n >> 1) & 15);
            int bytes = kind >= 14 ? large : small;
            int blocks = bytes / ns.blockSize();
            long lba = (n * 2_654_435_761L & 0x7fff_ffffL) % (ns.blockCount() - blocks + 1);
            ByteBuffer buf = buffers.get((int) context).clear().limit(bytes);
            if (kind % 2 == 0) {
                ns.read(lba, blocks, buf, next[0], context);
            } else {
                ns.write(lba, blocks, buf, next[0], context);
            }
        };
        for (int slot = 0; slot < qd; slot++) {
            next[0].onComplete(slot, 0);
        }
        if (!idle.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("warm-up I/O did not complete in 60 s");
        }
        if (failed.get() != 0) {
            throw new IllegalStateException("warm-up I/O failed with status 0x" + Integer.toHexString(failed.get()));
        }
        return Math.min(issued.get(), count);
    }
}

package io.nvmeof.conformance;

import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A write-then-verify job over the first {@code bytes} of a namespace, pass after pass: every block is stamped with
 * its LBA and the pass, written in 64 KiB I/Os (all in flight at once, in buffers the controller allocates once so
 * RDMA moves them without a copy), then read back into the same buffers, zeroed first, and checked. It runs while {@code keepGoing} says so, and at least two
 * passes. Used to show that a target going away and coming back costs the caller nothing.
 */
public final class VerifiedJob {
    private final NamespaceHandle ns;
    private final long blocks;
    private final int chunk;
    /** Errors and mismatches (the first ones are enough to say what went wrong). */
    public final List<String> problems = Collections.synchronizedList(new ArrayList<>());
    public int passes;
    private final java.nio.ByteBuffer[] buffers;

    public VerifiedJob(NvmeofController controller, NamespaceHandle ns, long bytes) {
        this.ns = ns;
        this.chunk = Math.max(1, 65536 / ns.blockSize());
        this.blocks = bytes / ns.blockSize() / chunk * chunk;
        this.buffers = new ByteBuffer[(int) (blocks / chunk)];
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = controller.allocateBuffer(chunk * ns.blockSize());
        }
    }

    /** Runs passes until {@code keepGoing} is false (and at least two ran) or {@code limitMs} passes. */
    public void run(BooleanSupplier keepGoing, long limitMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(limitMs);
        while (keepGoing.getAsBoolean() || passes < 2) {
            if (System.nanoTime() > deadline) {
                problems.add("the job did not finish within " + limitMs + " ms (pass " + passes + ")");
                return;
            }
            passes++;
            int pass = passes;
            int bs = ns.blockSize();
            List<CompletableFuture<Void>> io = new ArrayList<>();
            for (long lba = 0; lba < blocks; lba += chunk) {
                ByteBuffer b = buffers[(int) (lba / chunk)];
                for (int i = 0; i < chunk; i++) {
                    b.putLong(i * bs, lba + i).putInt(i * bs + 8, pass);
                }
                io.add(ns.write(lba, chunk, b));
            }
            await(io);
            io.clear();
            for (long lba = 0; lba < blocks; lba += chunk) {
                ByteBuffer b = buffers[(int) (lba / chunk)];
                for (int i = 0; i < chunk * bs; i += 8) {
                    b.putLong(i, 0);
                }
                long first = lba;
                io.add(ns.read(lba, chunk, b).thenRun(() -> {
                    for (int i = 0; i < chunk; i++) {
                        if (b.getLong(i * bs) != first + i || b.getInt(i * bs + 8) != pass) {
                            problems.add("block " + (first + i) + " of pass " + pass + " reads LBA " + b.getLong(i * bs)
                                    + " pass " + b.getInt(i * bs + 8));
                        }
                    }
                }));
            }
            await(io);
        }
    }

    private void await(List<CompletableFuture<Void>> io) {
        for (CompletableFuture<Void> f : io) {
            try {
                f.get(120, TimeUnit.SECONDS);
            } catch (Exception e) {
                problems.add(String.valueOf(e.getCause() != null ? e.getCause() : e));
            }
        }
    }

    public String firstProblems() {
        synchronized (problems) {
            return problems.subList(0, Math.min(5, problems.size())).toString();
        }
    }
}

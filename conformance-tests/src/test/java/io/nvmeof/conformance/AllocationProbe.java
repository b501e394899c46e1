package io.nvmeof.conformance;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.protocol.Status;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts what the data path allocates per I/O, for the NVMe/TCP test in Maven and the NVMe/RDMA check in the guest: a
 * closed loop of commands on the allocation-free callback API, and the bytes that named threads have allocated. It
 * counts bytes, not time, so it does not depend on the machine's speed.
 */
public final class AllocationProbe {
    private AllocationProbe() {
    }

    /**
     * A closed loop of {@code depth} 4 KiB commands (one block of a 4 KiB-block namespace, or 8 of a 512-byte one),
     * each resubmitted from its completion callback, as the bench runs.
     */
    public static final class Loop {
        private final NamespaceHandle ns;
        private final boolean write;
        private final int depth;
        private final int blocks;
        private final long span;
        private final ByteBuffer[] buffers;
        private final AtomicLong remaining = new AtomicLong();
        private final AtomicInteger failed = new AtomicInteger();
        private volatile CountDownLatch done;
        private final IoCallback callback;

        public Loop(NvmeofController c, NamespaceHandle ns, boolean write, int depth) {
            this.ns = ns;
            this.write = write;
            this.depth = depth;
            this.blocks = Math.max(1, 4096 / ns.blockSize());
            this.span = Math.min(ns.blockCount() / blocks, 16_000);
            this.buffers = new ByteBuffer[depth];
            for (int i = 0; i < depth; i++) {
                buffers[i] = c.allocateBuffer(blocks * ns.blockSize());
            }
            callback = (context, status) -> {
                if (status != Status.SUCCESS) {
                    failed.incrementAndGet();
                }
                if (remaining.decrementAndGet() >= this.depth) {
                    submit((int) context);
                } else {
                    done.countDown();
                }
            };
        }

        private void submit(int slot) {
            long lba = (slot * 7919L + remaining.get() * 31) % span * blocks;
            if (write) {
                ns.write(lba, blocks, buffers[slot], callback, slot);
            } else {
                ns.read(lba, blocks, buffers[slot], callback, slot);
            }
        }

        /** Runs {@code ios} commands; fails when they take longer than {@code timeoutSeconds} or any fails. */
        public void run(int ios, long timeoutSeconds) throws InterruptedException {
            remaining.set(ios);
            failed.set(0);
            done = new CountDownLatch(depth);
            for (int i = 0; i < depth; i++) {
                submit(i);
            }
            if (!done.await(timeoutSeconds, TimeUnit.SECONDS)) {
                throw new AssertionError("the loop did not finish " + ios + " I/Os in " + timeoutSeconds + " s");
            }
            if (failed.get() != 0) {
                throw new AssertionError(failed.get() + " I/Os failed");
            }
        }
    }

    /** Bytes allocated so far by the live threads whose names start with {@code prefix}. */
    public static long allocatedBy(String prefix) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith(prefix)) {
                sum += Math.max(0, mx.getThreadAllocatedBytes(t.getId()));
            }
        }
        return sum;
    }
}

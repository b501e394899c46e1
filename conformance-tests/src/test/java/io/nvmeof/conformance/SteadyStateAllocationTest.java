package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.ResourceLeakDetector;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Status;
import io.nvmeof.target.NvmeTarget;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * No allocation per I/O in steady state over NVMe/TCP, on either side: the bytes the target's poll-group threads and
 * the initiator's event-loop thread allocate over many 4 KiB I/Os at queue depth 16, on the allocation-free callback
 * API, divided by the I/Os. A per-I/O object of any kind (a ByteBuffer view, a slice, a lambda) costs at least 16
 * bytes per I/O and fails this; the bound leaves room for what is not per I/O (keep-alive, timers, statistics).
 * It counts bytes, not time, so it does not depend on the machine's speed.
 */
@Timeout(180)
class SteadyStateAllocationTest {
    private static final int DEPTH = 16;
    private static final int WARM_UP = 60_000;
    private static final int MEASURED = 60_000;
    private static final double BOUND_BYTES_PER_IO = 8;

    /** The tests' paranoid leak detector records a stack trace per buffer: off here, as it is in production. */
    private static ResourceLeakDetector.Level leakLevel;

    @BeforeAll
    static void leakDetectionOff() {
        leakLevel = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
    }

    @AfterAll
    static void leakDetectionBack() {
        ResourceLeakDetector.setLevel(leakLevel);
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void readsAndWritesAllocateNothingPerIo(boolean write) throws Exception {
        try (NvmeTarget target = NvmeTarget.start(TestTargets.config(4, null));
             NvmeofController c = NvmeofController.connect(
                     new TransportId("tcp", "127.0.0.1", target.tcpPort(0), TestTargets.NQN),
                     ConnectOptions.builder().queueDepth(DEPTH * 2).build())) {
            NamespaceHandle ns = c.namespace(2); // 4 KiB blocks
            Loop loop = new Loop(ns, c, write);
            loop.run(WARM_UP); // compiled, pools and caches filled
            long[] before = allocated();
            loop.run(MEASURED);
            long[] after = allocated();
            double perIo = (double) (after[0] - before[0]) / MEASURED;
            String where = "bytes allocated per " + (write ? "write" : "read") + " by the target's poll groups and the"
                    + " initiator's event loop: " + String.format("%.1f", perIo) + " (target " + (after[1] - before[1])
                    + " B, initiator " + (after[2] - before[2]) + " B over " + MEASURED + " I/Os)";
            assertTrue(perIo < BOUND_BYTES_PER_IO, where);
            System.out.println(where);
        }
    }

    /** A closed loop of DEPTH commands, each resubmitted from its completion callback, as the bench runs. */
    private static final class Loop {
        final NamespaceHandle ns;
        final boolean write;
        final ByteBuffer[] buffers = new ByteBuffer[DEPTH];
        final AtomicLong remaining = new AtomicLong();
        final AtomicInteger failed = new AtomicInteger();
        volatile CountDownLatch done;
        final IoCallback callback;

        Loop(NamespaceHandle ns, NvmeofController c, boolean write) {
            this.ns = ns;
            this.write = write;
            for (int i = 0; i < DEPTH; i++) {
                buffers[i] = c.allocateBuffer(4096);
            }
            callback = (context, status) -> {
                if (status != Status.SUCCESS) {
                    failed.incrementAndGet();
                }
                if (remaining.decrementAndGet() >= DEPTH) {
                    submit((int) context);
                } else {
                    done.countDown();
                }
            };
        }

        void submit(int slot) {
            long lba = (slot * 7919L + remaining.get() * 31) % 16_000;
            if (write) {
                ns.write(lba, 1, buffers[slot], callback, slot);
            } else {
                ns.read(lba, 1, buffers[slot], callback, slot);
            }
        }

        void run(int ios) throws InterruptedException {
            remaining.set(ios);
            done = new CountDownLatch(DEPTH);
            for (int i = 0; i < DEPTH; i++) {
                submit(i);
            }
            assertTrue(done.await(120, TimeUnit.SECONDS), "the loop finished");
            assertEquals(0, failed.get(), "I/O failed");
        }
    }

    /** {all, target, initiator}: bytes allocated so far by the data-path threads of both sides. */
    private static long[] allocated() {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long target = 0;
        long initiator = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String name = t.getName();
            if (name.startsWith("nvmeof-poll")) {
                target += Math.max(0, mx.getThreadAllocatedBytes(t.getId()));
            } else if (name.startsWith("nvmeof-initiator")) {
                initiator += Math.max(0, mx.getThreadAllocatedBytes(t.getId()));
            }
        }
        return new long[] {target + initiator, target, initiator};
    }
}

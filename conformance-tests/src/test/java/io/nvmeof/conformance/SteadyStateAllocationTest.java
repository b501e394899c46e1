package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.ResourceLeakDetector;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * No allocation per I/O in steady state over NVMe/TCP, on either side: the bytes the target's poll-group threads and
 * the initiator's event-loop thread allocate over many 4 KiB I/Os at queue depths 16 and 64, on the allocation-free callback
 * API, divided by the I/Os. A per-I/O object of any kind (a ByteBuffer view, a slice, a lambda) costs at least 16
 * bytes per I/O and fails this; the bound leaves room for what is not per I/O (keep-alive, timers, statistics).
 * It counts bytes, not time, so it does not depend on the machine's speed.
 */
@Timeout(180)
class SteadyStateAllocationTest {
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

    /**
     * At depth 64 one flush writes more PDUs than Netty recycles in a thread's batch by default (32): the overflow went
     * to a queue that allocates as it cycles.
     */
    @ParameterizedTest(name = "write={0} depth={1}")
    @CsvSource({"false, 16", "true, 16", "false, 64", "true, 64"})
    void readsAndWritesAllocateNothingPerIo(boolean write, int depth) throws Exception {
        try (NvmeTarget target = NvmeTarget.start(TestTargets.config(4, null));
             NvmeofController c = NvmeofController.connect(
                     new TransportId("tcp", "127.0.0.1", target.tcpPort(0), TestTargets.NQN),
                     ConnectOptions.builder().queueDepth(depth * 2).build())) {
            NamespaceHandle ns = c.namespace(2); // 4 KiB blocks
            AllocationProbe.Loop loop = new AllocationProbe.Loop(c, ns, write, depth);
            loop.run(WARM_UP, 120); // compiled, pools and caches filled
            long[] before = allocated();
            loop.run(MEASURED, 120);
            long[] after = allocated();
            double perIo = (double) (after[0] - before[0]) / MEASURED;
            String where = "bytes allocated per " + (write ? "write" : "read") + " at depth " + depth + " by the target's poll groups and the"
                    + " initiator's event loop: " + String.format("%.1f", perIo) + " (target " + (after[1] - before[1])
                    + " B, initiator " + (after[2] - before[2]) + " B over " + MEASURED + " I/Os)";
            assertTrue(perIo < BOUND_BYTES_PER_IO, where);
            System.out.println(where);
        }
    }

    /** {all, target, initiator}: bytes allocated so far by the data-path threads of both sides. */
    private static long[] allocated() {
        long target = AllocationProbe.allocatedBy("nvmeof-poll");
        long initiator = AllocationProbe.allocatedBy("nvmeof-initiator");
        return new long[] {target + initiator, target, initiator};
    }
}

package io.nvmeof.conformance.interop;

import io.nvmeof.conformance.AllocationProbe;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.time.Duration;

/**
 * No allocation per I/O in steady state over NVMe/RDMA, on either side (the NVMe/TCP counterpart is the Maven test
 * {@code SteadyStateAllocationTest}): our target and our initiator in this JVM over Soft-RoCE, a closed loop of 4 KiB
 * reads, then writes, at queue depth 16; the bytes the target's poll groups ({@code nvmeof-rdma-poll-*}) and the
 * initiator's pollers ({@code nvmeof-rdma-host-*}) allocate over the measured I/Os, divided by them. The guest runs
 * it with C1 only, which does no escape analysis: a count with nothing left for scalar replacement to remove. Usage:
 * {@code RdmaAllocationCheck ADDRESS}.
 */
public final class RdmaAllocationCheck extends InteropChecks {
    private static final int DEPTH = 16;
    private static final int WARM_UP = 30_000;
    private static final int MEASURED = 20_000;
    private static final double BOUND_BYTES_PER_IO = 8;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RdmaAllocationCheck ADDRESS");
            System.exit(2);
        }
        RdmaAllocationCheck t = new RdmaAllocationCheck();
        t.run(args[0]);
        t.exit();
    }

    void run(String addr) throws Exception {
        try (NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("rdma", addr, 4420, "256M", 4096, null));
             NvmeofController c = NvmeofController.connect(
                     new TransportId("rdma", addr, target.rdmaPort(0), TargetConfig.DEFAULT_NQN),
                     ConnectOptions.builder().ioQueues(1).queueDepth(2 * DEPTH).commandTimeout(Duration.ofSeconds(60))
                             .connectTimeout(Duration.ofSeconds(30)).build())) {
            for (boolean write : new boolean[] {false, true}) {
                String what = write ? "write" : "read";
                check("no allocation per 4 KiB " + what + " in steady state over NVMe/RDMA, target and initiator", () -> {
                    AllocationProbe.Loop loop = new AllocationProbe.Loop(c, c.namespace(1), write, DEPTH);
                    loop.run(WARM_UP, 600); // compiled, pools and caches filled
                    long targetBefore = AllocationProbe.allocatedBy("nvmeof-rdma-poll");
                    long hostBefore = AllocationProbe.allocatedBy("nvmeof-rdma-host");
                    long t0 = System.nanoTime();
                    loop.run(MEASURED, 600);
                    double seconds = (System.nanoTime() - t0) / 1e9;
                    long targetBytes = AllocationProbe.allocatedBy("nvmeof-rdma-poll") - targetBefore;
                    long hostBytes = AllocationProbe.allocatedBy("nvmeof-rdma-host") - hostBefore;
                    double perIo = (double) (targetBytes + hostBytes) / MEASURED;
                    String figures = String.format("%.1f bytes per %s (target %d B, initiator %d B over %d I/Os, "
                            + "%.0f IOPS)", perIo, what, targetBytes, hostBytes, MEASURED, MEASURED / seconds);
                    System.out.println("NOTE " + figures);
                    require(perIo < BOUND_BYTES_PER_IO, figures);
                });
            }
        }
    }
}

package io.nvmeof.conformance.interop;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The first connections to a freshly started target, made the way SPDK's host makes them: an empty host NQN (what
 * {@code spdk_nvme_perf} sends unless given {@code hostnqn:}) and, over RDMA, at most 1 s of waiting for each RDMA CM
 * event ({@code rdma_cm_event_timeout_ms} in SPDK's {@code lib/nvme/nvme_transport.c}). Each connection identifies
 * the controller and writes and reads back a pattern. Run it before anything else has connected, so the first check
 * meets a cold target. Prints PASS/FAIL lines; exits non-zero on failure.
 * Usage: {@code FirstConnectCheck TRANSPORT ADDRESS PORT SUBNQN NSID}.
 */
public final class FirstConnectCheck extends InteropChecks {
    static final int CONNECTIONS = 5;

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: FirstConnectCheck TRANSPORT ADDRESS PORT SUBNQN NSID");
            System.exit(2);
        }
        FirstConnectCheck t = new FirstConnectCheck();
        t.run(new TransportId(args[0], args[1], Integer.parseInt(args[2]), args[3]), Long.parseLong(args[4]));
        t.exit();
    }

    void run(TransportId id, long nsid) {
        boolean rdma = "rdma".equals(id.trtype());
        ConnectOptions.Builder b = ConnectOptions.builder().hostNqn("").ioQueues(2).queueDepth(32)
                .commandTimeout(Duration.ofSeconds(60));
        if (rdma) {
            b.cmEventTimeout(Duration.ofSeconds(1));
        }
        ConnectOptions options = b.build();
        String how = "with an empty host NQN" + (rdma ? " and SPDK's 1 s wait for each RDMA CM event" : "");
        Random random = new Random(7);
        for (int i = 1; i <= CONNECTIONS; i++) {
            int n = i;
            String name = (i == 1 ? "the first connection to a fresh target" : "connection " + i) + " over " + id.trtype()
                    + " " + how + ": identify, write and read back";
            check(name, () -> {
                long t0 = System.nanoTime();
                try (NvmeofController c = NvmeofController.connect(id, options)) {
                    System.out.printf("connection %d: connected (admin and 2 I/O queues) in %.1f ms%n", n,
                            (System.nanoTime() - t0) / 1e6);
                    require(c.ioQueueCount() == 2, "2 I/O queues, got " + c.ioQueueCount());
                    NamespaceHandle ns = c.namespace(nsid);
                    int blocks = Math.max(1, 8192 / ns.blockSize());
                    int size = blocks * ns.blockSize();
                    long lba = (long) n * blocks;
                    byte[] pattern = new byte[size];
                    random.nextBytes(pattern);
                    ByteBuffer src = c.allocateBuffer(size).put(pattern).flip();
                    ns.write(lba, blocks, src).get(60, TimeUnit.SECONDS);
                    ByteBuffer dst = c.allocateBuffer(size);
                    ns.read(lba, blocks, dst).get(60, TimeUnit.SECONDS);
                    byte[] back = new byte[size];
                    dst.get(back);
                    require(Arrays.equals(pattern, back), size + " bytes at LBA " + lba + " read back differently");
                }
            });
        }
    }
}

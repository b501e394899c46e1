package io.nvmeof.conformance;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.util.List;
import java.util.function.BooleanSupplier;

/** Targets the tests start in-process on an ephemeral loopback port. */
final class TestTargets {
    static final String NQN = "nqn.2026-11.io.nvmeof:test";
    static final String RESTRICTED_NQN = "nqn.2026-11.io.nvmeof:restricted";
    static final String ALLOWED_HOST = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001";

    private TestTargets() {
    }

    static TargetConfig config(int maxIoQueues, String fileBackedPath) {
        NamespaceConfig ram = new NamespaceConfig(1L, "ram", "64MiB", 512, null, null);
        NamespaceConfig ram4k = new NamespaceConfig(2L, "ram", "64MiB", 4096, null, null);
        List<NamespaceConfig> namespaces = fileBackedPath == null ? List.of(ram, ram4k)
                : List.of(ram, ram4k, new NamespaceConfig(3L, "file", "32MiB", 4096, fileBackedPath, null));
        return new TargetConfig(2, maxIoQueues, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SN-TEST-1", "nvmeof-java test", 16, true, null, namespaces),
                        new SubsystemConfig(RESTRICTED_NQN, null, null, null, false, List.of(ALLOWED_HOST),
                                List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null)))));
    }

    static NvmeTarget start() throws IOException {
        return NvmeTarget.start(config(8, null));
    }

    /** Polls until the condition holds or the timeout passes; returns whether it held. */
    static boolean eventually(BooleanSupplier condition, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.getAsBoolean();
    }

    /**
     * Device requests completed by the io_uring of the target's NVMe/TCP I/O queues' poll groups: the most any one
     * has (queues of one poll group share its ring; 0 without one).
     */
    static long ringCompletions(NvmeTarget target) throws Exception {
        long most = 0;
        for (io.nvmeof.tgt.core.Controller c : target.core().controllers()) {
            for (int qid = 1; qid <= c.maxIoQueues(); qid++) {
                io.nvmeof.tgt.core.SubmissionQueue q = c.queue(qid);
                if (q != null && q.transport() instanceof io.nvmeof.tgt.tcp.TcpQueue t) {
                    java.util.concurrent.CompletableFuture<Long> v = new java.util.concurrent.CompletableFuture<>();
                    t.execute(() -> {
                        io.nvmeof.tgt.core.StorageRing ring = t.storageRing();
                        v.complete(ring == null ? 0 : ring.completedRequests());
                    });
                    most = Math.max(most, v.get(5, java.util.concurrent.TimeUnit.SECONDS));
                }
            }
        }
        return most;
    }
}

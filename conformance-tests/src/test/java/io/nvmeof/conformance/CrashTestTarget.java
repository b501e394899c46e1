package io.nvmeof.conformance;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.List;

/**
 * The target that {@link CrashConsistencyTest} kills: its own JVM exporting one file namespace on a free loopback
 * port, which it prints as {@code PORT n} once it listens; it then serves until it is killed.
 */
public final class CrashTestTarget {
    static final String NQN = "nqn.2026-12.io.nvmeof:crash";
    static final int BLOCK = 4096;
    static final String SIZE = "8MiB";

    private CrashTestTarget() {
    }

    public static void main(String[] args) throws Exception {
        NvmeTarget target = NvmeTarget.start(new TargetConfig(1, 2, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "file", SIZE, BLOCK, args[0], null))))));
        System.out.println("PORT " + target.tcpPort(0));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}

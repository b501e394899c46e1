package io.nvmeof.conformance;

import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * One of several target processes that export one subsystem over one shared file (docs/architecture.md, "Several
 * targets, one subsystem"): same NQN, serial and namespace UUID, its own controller ID range of 100.
 */
final class SharedFileTarget {
    static final String NQN = "nqn.2026-12.io.nvmeof:shared-file";
    static final String UUID = "6c1f9a52-58c4-4d0e-9f6b-2d3b7a0e4c11";
    static final int BLOCK = 4096;

    private SharedFileTarget() {
    }

    /** Starts one over {@code file} of {@code size}, its controller IDs from {@code cntlidMin}, logging to {@code log}. */
    static TargetProcess start(Path file, int cntlidMin, String size, Path log) throws Exception {
        return start(file, cntlidMin, size, log, null);
    }

    /** The same, sharing the subsystem's reservations through {@code sharedReservations} (null: not shared). */
    static TargetProcess start(Path file, int cntlidMin, String size, Path log, Path sharedReservations)
            throws Exception {
        return TargetProcess.start(new TargetConfig(1, 2, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SHAREDFILE01", null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "file", size, BLOCK, file.toString(), UUID)),
                        cntlidMin, cntlidMin + 99,
                        sharedReservations != null ? sharedReservations.toString() : null))), log, List.of(), null);
    }
}

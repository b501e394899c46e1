package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.nvmeof.tgt.NvmeTarget;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Tests that share one in-process target ({@link TestTargets#start}) for the whole class, and check when it stops
 * that no Netty buffer was garbage collected without being released.
 */
abstract class SharedTargetTest {
    static NvmeTarget target;
    static int port;

    @BeforeAll
    static void startTarget() throws IOException {
        target = TestTargets.start();
        port = target.tcpPort(0);
    }

    @AfterAll
    static void stopTarget() throws Exception {
        target.close();
        assertEquals(List.of(), LeakTracker.collect(), "Netty buffers garbage collected without release");
    }
}

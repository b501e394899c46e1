package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Busy polling on both sides of NVMe/TCP (target {@code busyPollUs}, initiator {@code busyPoll}): the same data
 * moves, at queue depth 1 (every command finds the other side polling) and with pauses long enough for both to fall
 * back to blocking and be woken again. Speed is measured by the bench (docs/performance.md), not here.
 */
@Timeout(120)
class BusyPollTest {
    @Test
    void pollingOnBothSidesMovesTheSameData() throws Exception {
        TargetConfig cfg = TestTargets.config(4, null).withBusyPollUs(200);
        assertEquals(200, TargetConfig.parse(cfg.toJson()).busyPollUs(), cfg.toJson());
        try (NvmeTarget target = NvmeTarget.start(cfg);
             NvmeofController c = NvmeofController.connect(
                     new TransportId("tcp", "127.0.0.1", target.tcpPort(0), TestTargets.NQN),
                     ConnectOptions.builder().busyPoll(Duration.ofNanos(200_000)).ioQueues(2).build())) {
            assertEquals(200, target.live().export().busyPollUs(), "the export says how the target runs");
            NamespaceHandle ns = c.namespace(1);
            Random rnd = new Random(7);
            for (int i = 0; i < 300; i++) {
                int blocks = 1 + rnd.nextInt(16);
                long lba = rnd.nextInt(100_000);
                byte[] want = new byte[blocks * 512];
                rnd.nextBytes(want);
                ns.write(lba, blocks, ByteBuffer.allocateDirect(want.length).put(want).flip()).get(10, TimeUnit.SECONDS);
                ByteBuffer got = ByteBuffer.allocateDirect(want.length);
                ns.read(lba, blocks, got).get(10, TimeUnit.SECONDS);
                byte[] g = new byte[want.length];
                got.get(0, g);
                assertTrue(java.util.Arrays.equals(want, g), "read back what was written at LBA " + lba);
                if (i % 100 == 99) {
                    Thread.sleep(50); // both sides idle past their 200 us: they block, and the next command wakes them
                }
            }
            List<CompletableFuture<Void>> deep = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                deep.add(ns.read(i * 8L, 8, ByteBuffer.allocateDirect(4096)));
            }
            CompletableFuture.allOf(deep.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aBusyPollTimeOutOfRangeIsRefusedSayingWhatIsAccepted() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(TestTargets.config(4, null).withBusyPollUs(-5)));
        assertTrue(e.getMessage().contains("busyPollUs -5 is not from 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(TestTargets.config(4, null).withBusyPollUs(2_000_000)));
        assertTrue(e.getMessage().contains("to 1000000 (a second)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> ConnectOptions.builder().busyPoll(Duration.ofSeconds(2)));
        assertTrue(e.getMessage().contains("busy-poll time"), e.getMessage());
    }
}

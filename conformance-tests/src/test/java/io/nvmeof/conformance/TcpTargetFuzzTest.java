package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the target's NVMe/TCP PDU stream through the real engine (issue 15): one target with a
 * RAM namespace, and for each input a fresh connection that gets the input's bytes after a prefix the harness sends
 * itself, so that inputs reach every stage of a queue's life. The input's first byte picks the stage:
 * <ul>
 *   <li>0: nothing before (the ICReq is the input's own);
 *   <li>1: an ICReq (the second byte's low two bits are the digests asked for; its upper bits, HPDA);
 *   <li>2: ICReq, admin Connect and CC.EN: the rest is admin, fabrics and discovery commands;
 *   <li>3: a controller's I/O queue, connected (on a second connection that holds the admin queue): I/O commands,
 *       in-capsule data, H2CData for R2Ts.
 * </ul>
 * The rest of the input is sent as it is; then the harness closes its half and reads until the target closes.
 *
 * <p>Invariants, after every input: the target closed the connection (no hang), nothing threw inside the target
 * ({@code TargetCore.internalErrors}), and another host's controller, on another subsystem, still writes and reads its
 * own data back. After all inputs: every queue and controller they made is gone.
 *
 * <p>{@code ./mvnw test} runs the kept inputs (seeds and minimized findings) in
 * {@code src/test/resources/io/nvmeof/conformance/TcpTargetFuzzTestInputs/pduStream/}; {@code JAZZER_FUZZ=1} fuzzes
 * (see docs/reliability.md).
 */
class TcpTargetFuzzTest {
    static final String FUZZ_NQN = "nqn.2026-12.io.nvmeof:fuzz";
    private static final String NEIGHBOUR_NQN = "nqn.2026-12.io.nvmeof:fuzz-neighbour";
    private static final String NEIGHBOUR_HOST = "nqn.2014-08.org.nvmexpress:uuid:0f0f0f0f-1111-2222-3333-444444444444";

    private static NvmeTarget target;
    private static NvmeofController neighbour;
    private static NamespaceHandle neighbourNs;
    private static int baselineQueues;
    private static int baselineControllers;
    private static long executions;
    private static final Random random = new Random(15);

    @BeforeAll
    static void start() throws Exception {
        target = NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(FUZZ_NQN, "SN-FUZZ-1", "fuzz", 8, true, null,
                                List.of(new NamespaceConfig(1L, "ram", "4MiB", 512, null, null),
                                        new NamespaceConfig(2L, "ram", "4MiB", 4096, null, null, null, true))),
                        new SubsystemConfig(NEIGHBOUR_NQN, "SN-FUZZ-2", "neighbour", 8, false, List.of(NEIGHBOUR_HOST),
                                List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null))))));
        neighbour = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NEIGHBOUR_NQN),
                ConnectOptions.builder().hostNqn(NEIGHBOUR_HOST).ioQueues(1).build());
        neighbourNs = neighbour.namespace(1);
        assertTrue(TestTargets.eventually(() -> target.core().liveControllers() == 1, 10_000));
        baselineQueues = target.core().liveQueues();
        baselineControllers = target.core().liveControllers();
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == baselineQueues
                            && target.core().liveControllers() == baselineControllers, 10_000),
                    "after " + executions + " inputs, queues " + target.core().liveQueues() + " (baseline "
                            + baselineQueues + "), controllers " + target.core().liveControllers() + " (baseline "
                            + baselineControllers + ")");
            assertEquals(0, target.core().internalErrors());
        } finally {
            neighbour.close();
            target.close();

        }
    }

    @FuzzTest(maxDuration = "24h") // fuzzing runs as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void pduStream(byte[] input) throws Exception {
        // Jazzer's SSRF detector flags every connect; the harness's own, to the target on loopback, are the point.
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
        }
    }

    private void run(byte[] input) throws Exception {
        executions++;
        int stage = input.length > 0 ? (input[0] & 0xFF) % 4 : 0;
        int options = input.length > 1 ? input[1] & 0xFF : 0;
        byte[] rest = input.length > 2 ? Arrays.copyOfRange(input, 2, input.length) : new byte[0];
        int port = target.tcpPort(0);
        RawTcpHost admin = null;
        try (RawTcpHost host = new RawTcpHost(port)) {
            if (stage == 1) {
                host.initialize(options & 3, (options >>> 2) & 31);
            } else if (stage == 2) {
                enable(host, connect(host, 0, 0xFFFF));
            } else if (stage == 3) {
                admin = new RawTcpHost(port);
                int cntlid = connect(admin, 0, 0xFFFF);
                enable(admin, cntlid);
                connect(host, 1, cntlid);
            }
            host.sendQuietly(rest);
            host.shutdownOutput();
            assertTrue(host.drainUntilClosed(5000), "the target neither answered nor closed the connection in 5 s");
        } finally {
            if (admin != null) {
                admin.close();
            }
        }
        assertEquals(0, target.core().internalErrors(), "an exception inside the target (see the log)");
        neighbourStillWorks();
    }

    /** The harness's own ICReq and Connect; returns the controller ID. */
    static int connect(RawTcpHost h, int qid, int cntlid) throws IOException {
        h.initialize(0);
        Completion c = h.connect(qid, 31, cntlid, FUZZ_NQN, RawTcpHost.HOSTNQN, 0);
        if (c.status() != Status.SUCCESS) {
            throw new AssertionError("the harness's own Connect (qid " + qid + ") failed: 0x"
                    + Integer.toHexString(c.status()));
        }
        return c.dw0() & 0xFFFF;
    }

    static void enable(RawTcpHost h, int cntlid) throws IOException {
        Completion en = h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT);
        if (en.status() != Status.SUCCESS) {
            throw new AssertionError("the harness's own CC.EN failed on controller " + cntlid);
        }
    }

    /** The other host's controller is untouched: a write of fresh data reads back, on a live connection. */
    private static void neighbourStillWorks() throws Exception {
        byte[] data = new byte[4096];
        random.nextBytes(data);
        long lba = (executions % 256) * 8;
        neighbourNs.write(lba, 8, ByteBuffer.allocateDirect(4096).put(data).flip()).get(5, TimeUnit.SECONDS);
        ByteBuffer back = ByteBuffer.allocateDirect(4096);
        neighbourNs.read(lba, 8, back).get(5, TimeUnit.SECONDS);
        byte[] got = new byte[4096];
        back.get(0, got);
        assertArrayEquals(data, got, "the other host's data");
    }
}

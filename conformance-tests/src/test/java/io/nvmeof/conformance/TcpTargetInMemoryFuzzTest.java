package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import io.nvmeof.tgt.tcp.TcpOptions;
import java.io.IOException;
import java.util.Arrays;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The same fuzz target as {@link TcpTargetFuzzTest} (the target's NVMe/TCP PDU stream, inputs in the same layout and
 * the same seeds), with each connection in memory ({@link InMemoryConnection}: the target's own queue on an embedded
 * channel, on this thread) instead of a loopback socket, so that an input costs no system call or thread hand-off: the
 * harness for the long runs. The core is the real one, with RAM namespaces, and no poll groups or timers.
 *
 * <p>Input: byte 0 picks the stage, as in {@link TcpTargetFuzzTest}; byte 1 is the ICReq's digests and HPDA at stage 1,
 * and at the other stages how the rest is cut into reads (0: one read; n: reads of n bytes, so PDUs arrive in pieces,
 * as TCP may deliver them).
 *
 * <p>Invariants, after every input: nothing threw inside the target ({@code TargetCore.internalErrors}); every queue
 * and controller the input opened is gone once its connections end (a leak shows at once, as nothing runs later);
 * another host's controller, on another subsystem and on connections of its own, still writes and reads back its
 * data; no Netty buffer was found unreleased (the leak detector's reports, at the level the build sets).
 */
class TcpTargetInMemoryFuzzTest {
    private static final String NEIGHBOUR_NQN = "nqn.2026-12.io.nvmeof:fuzz-neighbour";
    private static final String NEIGHBOUR_HOST = "nqn.2014-08.org.nvmexpress:uuid:0f0f0f0f-1111-2222-3333-444444444444";
    private static final TcpOptions OPTIONS = new TcpOptions(8192, 32 * 1024);

    private static TargetCore core;
    private static ListenerInfo listener;
    private static InMemoryConnection neighbourAdmin;
    private static InMemoryConnection neighbourIo;
    private static RawTcpHost neighbour;
    private static int baselineQueues;
    private static int baselineControllers;
    private static long executions;
    private static final Random random = new Random(15);

    @BeforeAll
    static void start() throws Exception {
        core = new TargetCore(new TargetLimits(4, 128, 1 << 20));
        Subsystem fuzz = new Subsystem(TcpTargetFuzzTest.FUZZ_NQN, Subsystem.Type.NVM, "SN-FUZZ-1", "fuzz", 8, true);
        fuzz.addNamespace(new Namespace(1, new RamBackend(4 << 20), 512, UUID.randomUUID()));
        fuzz.addNamespace(new Namespace(2, new RamBackend(4 << 20, true), 4096, UUID.randomUUID()));
        core.addSubsystem(fuzz);
        Subsystem other = new Subsystem(NEIGHBOUR_NQN, Subsystem.Type.NVM, "SN-FUZZ-2", "neighbour", 8, false);
        other.allowedHosts().add(NEIGHBOUR_HOST);
        other.addNamespace(new Namespace(1, new RamBackend(1 << 20), 512, UUID.randomUUID()));
        core.addSubsystem(other);
        listener = new ListenerInfo(1, DiscoveryLogEntry.TRTYPE_TCP, DiscoveryLogEntry.ADRFAM_IPV4, "127.0.0.1", "4420",
                Set.of());
        core.addListener(listener);

        neighbourAdmin = connection();
        RawTcpHost admin = neighbourAdmin.host();
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NEIGHBOUR_NQN, NEIGHBOUR_HOST, 0);
        assertEquals(Status.SUCCESS, c.status());
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        neighbourIo = connection();
        neighbour = neighbourIo.host();
        neighbour.initialize(0);
        assertEquals(Status.SUCCESS, neighbour.connect(1, 31, c.dw0() & 0xFFFF, NEIGHBOUR_NQN, NEIGHBOUR_HOST, 0).status());
        baselineQueues = core.liveQueues();
        baselineControllers = core.liveControllers();
    }

    @AfterAll
    static void stop() {
        try {
            assertEquals(baselineControllers, core.liveControllers(), "controllers left after " + executions + " inputs");
            assertEquals(0, core.internalErrors());
        } finally {
            neighbourIo.close();
            neighbourAdmin.close();
            core.stopBackendWork(5_000);
        }
    }

    private static InMemoryConnection connection() {
        return new InMemoryConnection(core, OPTIONS, listener);
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void pduStream(byte[] input) throws Exception {
        executions++;
        int stage = input.length > 0 ? (input[0] & 0xFF) % 4 : 0;
        int options = input.length > 1 ? input[1] & 0xFF : 0;
        byte[] rest = input.length > 2 ? Arrays.copyOfRange(input, 2, input.length) : new byte[0];
        InMemoryConnection conn = connection();
        InMemoryConnection admin = null;
        try {
            RawTcpHost host = conn.host();
            if (stage == 1) {
                host.initialize(options & 3, (options >>> 2) & 31);
            } else if (stage == 2) {
                TcpTargetFuzzTest.enable(host, TcpTargetFuzzTest.connect(host, 0, 0xFFFF));
            } else if (stage == 3) {
                admin = connection();
                RawTcpHost a = admin.host();
                int cntlid = TcpTargetFuzzTest.connect(a, 0, 0xFFFF);
                TcpTargetFuzzTest.enable(a, cntlid);
                TcpTargetFuzzTest.connect(host, 1, cntlid);
            }
            int piece = stage == 1 || options == 0 ? Math.max(1, rest.length) : options;
            for (int at = 0; at < rest.length && conn.isOpen(); at += piece) {
                conn.send(rest, at, Math.min(piece, rest.length - at));
            }
            conn.discardReceived();
        } finally {
            conn.close();
            if (admin != null) {
                admin.close();
            }
        }
        assertEquals(0, core.internalErrors(), "an exception inside the target (see the log)");
        assertEquals(baselineQueues, core.liveQueues(), "a queue outlived its connection");
        assertEquals(baselineControllers, core.liveControllers(), "a controller outlived its admin queue");
        assertEquals(java.util.List.of(), LeakTracker.LEAKS, "a Netty buffer was never released");
        neighbourStillWorks();
        if (executions % 200_000 == 0) {
            // For the long runs' logs: heap after a collection stays flat unless something is kept per input.
            System.gc();
            Runtime rt = Runtime.getRuntime();
            System.out.printf("in-memory fuzz: %,d inputs, heap %d MiB after GC, %d queues, %d controllers%n",
                    executions, (rt.totalMemory() - rt.freeMemory()) >> 20, core.liveQueues(), core.liveControllers());
        }
    }

    /** The other host's controller is untouched: a write of fresh data reads back. */
    private static void neighbourStillWorks() throws IOException {
        byte[] data = new byte[4096];
        random.nextBytes(data);
        long lba = (executions % 256) * 8;
        assertEquals(Status.SUCCESS, neighbour.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, lba, 8, 4096, true), data)
                .status(), "the other host's write");
        RawTcpHost.Reply r = neighbour.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, lba, 8, 4096, false), 4096);
        assertEquals(Status.SUCCESS, r.cqe().status(), "the other host's read");
        assertArrayEquals(data, r.data(), "the other host's data");
    }
}

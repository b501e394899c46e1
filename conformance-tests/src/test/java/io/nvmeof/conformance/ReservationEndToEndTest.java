package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.ReservationNotice;
import io.nvmeof.initiator.ReservationReport;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.reservation.Reservations;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reservations between two hosts (two host NQNs and host IDs) over NVMe/TCP on loopback: access checks, preemption and
 * its notice, a holder that disconnects, the report's layout, and Persist Through Power Loss across a target restart.
 */
class ReservationEndToEndTest {
    static final UUID ID_A = UUID.fromString("0a0a0a0a-1111-2222-3333-444444444444");
    static final UUID ID_B = UUID.fromString("0b0b0b0b-1111-2222-3333-444444444444");
    static final long KEY_A = 0xAAAA_0000_0000_0001L;
    static final long KEY_B = 0xBBBB;
    static final String VOLUME_UUID = "5e5e5e5e-0000-4000-8000-000000000001";

    @TempDir
    Path state;
    NvmeTarget target;
    final List<NvmeofController> hosts = new ArrayList<>();

    static TargetConfig config() {
        TargetConfig base = TestTargets.config(4, null);
        // A RAM namespace with a configured UUID: the same volume after a restart, as far as its identity says.
        TargetConfig.NamespaceConfig ns = new TargetConfig.NamespaceConfig(1L, "ram", "8MiB", 512, null, VOLUME_UUID,
                null, null, null);
        TargetConfig.SubsystemConfig s = new TargetConfig.SubsystemConfig(TestTargets.NQN, "SN-RESV", "resv", 4, true,
                null, List.of(ns));
        return new TargetConfig(base.pollGroups(), base.maxIoQueues(), base.maxQueueSize(), base.maxTransferSize(),
                base.listeners(), List.of(s));
    }

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(config(), state);
    }

    @AfterEach
    void stop() {
        hosts.forEach(NvmeofController::close);
        if (target != null) {
            target.close();
        }
    }

    NvmeofController host(UUID id) {
        NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0),
                TestTargets.NQN), ConnectOptions.builder().hostNqn("nqn.2014-08.org.nvmexpress:uuid:" + id).hostId(id)
                .ioQueues(1).queueDepth(16).build());
        hosts.add(c);
        return c;
    }

    static void get(CompletableFuture<?> f) throws Exception {
        f.get(10, TimeUnit.SECONDS);
    }

    /** The NVMe status the command failed with. */
    static int failure(CompletableFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        return assertInstanceOf(NvmeStatusException.class, e.getCause()).statusCode();
    }

    static CompletableFuture<Void> write(NamespaceHandle ns) {
        return ns.write(0, 1, ByteBuffer.allocateDirect(512));
    }

    static CompletableFuture<Void> read(NamespaceHandle ns) {
        return ns.read(0, 1, ByteBuffer.allocateDirect(512));
    }

    @Test
    void identifyAndCommandEffectsAdvertiseReservations() {
        NvmeofController a = host(ID_A);
        ByteBuffer ctrl = ByteBuffer.wrap(a.identify(Opcodes.CNS_CONTROLLER, 0)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(1 << 5, ctrl.getShort(520) & (1 << 5), "ONCS bit 5: reservations");
        byte[] ns = a.identify(Opcodes.CNS_NAMESPACE, 1);
        assertEquals(0xFF, ns[31] & 0xFF, "RESCAP: PTPL, types 1..6, IEKEY as NVMe 1.3");
        ByteBuffer effects = ByteBuffer.wrap(a.getLogPage(Opcodes.LOG_COMMAND_EFFECTS, 0, 4096, 0))
                .order(ByteOrder.LITTLE_ENDIAN);
        for (int op : new int[] {0x0D, 0x0E, 0x11, 0x15}) {
            assertEquals(1, effects.getInt(1024 + 4 * op) & 1, "CSUPP of I/O opcode " + op);
        }
    }

    /**
     * Review finding (fencing): access was checked only when a command was parsed. A write whose data was still on its
     * way (R2T outstanding) when another host took a Write Exclusive reservation went on to the media once its data
     * arrived; the writer was fenced in name only. It is checked again when the data is in.
     */
    @Test
    void aWriteWhoseDataArrivesAfterTheReservationIsRefused() throws Exception {
        NvmeofController b = host(ID_B);
        NamespaceHandle nsB = b.namespace(1);
        try (RawTcpHost admin = new RawTcpHost(target.tcpPort(0))) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN); // host ID all zeroes: not host B
            try (RawTcpHost queue = new RawTcpHost(target.tcpPort(0))) {
                queue.initialize(0);
                assertEquals(0, queue.connect(1, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                byte[] write = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 128, 128 * 512, false); // 64 KiB: R2T
                RawTcpHost.cmd(write).cid(91);
                int ttag = queue.sendForR2T(write); // the target asks for the data
                get(nsB.reservations().register(0xB, Reservations.CPTPL_NO_CHANGE));
                get(nsB.reservations().acquire(0xB, Reservations.WRITE_EXCLUSIVE));
                queue.send(queue.h2cData(91, ttag, 0, new byte[128 * 512], true));
                Completion c = queue.awaitResponse();
                assertEquals(91, c.cid());
                assertEquals(Status.RESERVATION_CONFLICT, Status.code(c.status()),
                        "the data came after host B's Write Exclusive: refused, not written");
            }
        }
    }

    static byte[] keys(long first, long second) {
        return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(first).putLong(second).array();
    }

    static byte[] reservationSqe(int opcode, int cdw10) {
        byte[] b = RawTcpHost.sqe();
        RawTcpHost.cmd(b).opcode(opcode).nsid(1).cdw10(cdw10);
        RawTcpHost.sgl(b).inCapsule(0, 16);
        return b;
    }

    /**
     * Review finding (fencing): Preempt and Abort completed at once while the preempted host's write was still in
     * flight, so a cluster that took the success as "fenced" could have its own write overwritten by the old one. It
     * completes only once the preempted host's commands for the namespace are done (as nvmet waits for them).
     */
    @Test
    void preemptAndAbortCompletesOnlyOnceThePreemptedHostsCommandsAreDone() throws Exception {
        NvmeofController b = host(ID_B);
        NamespaceHandle nsB = b.namespace(1);
        try (RawTcpHost admin = new RawTcpHost(target.tcpPort(0))) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN); // host A: host ID all zeroes
            try (RawTcpHost queue = new RawTcpHost(target.tcpPort(0))) {
                queue.initialize(0);
                assertEquals(0, queue.connect(1, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                assertEquals(0, queue.execute(reservationSqe(Opcodes.IO_RESERVATION_REGISTER, 0), keys(0, 0xA))
                        .status(), "host A registers");
                assertEquals(0, queue.execute(reservationSqe(Opcodes.IO_RESERVATION_ACQUIRE,
                        Reservations.WRITE_EXCLUSIVE << 8), keys(0xA, 0)).status(), "and holds Write Exclusive");
                get(nsB.reservations().register(0xB, Reservations.CPTPL_NO_CHANGE));
                byte[] write = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 128, 128 * 512, false);
                RawTcpHost.cmd(write).cid(92);
                queue.send(queue.capsule(write, null));
                byte[] r2t = queue.readPdu();
                assertEquals(io.nvmeof.protocol.tcp.PduHeader.TYPE_R2T, r2t[0], "host A's write waits for its data");
                int ttag = new io.nvmeof.protocol.tcp.R2TPdu().<io.nvmeof.protocol.tcp.R2TPdu>wrap(
                        new org.agrona.concurrent.UnsafeBuffer(r2t), 0).ttag();
                CompletableFuture<Void> preempt = nsB.reservations().preempt(0xB, 0xA, Reservations.WRITE_EXCLUSIVE,
                        true);
                Thread.sleep(500);
                assertFalse(preempt.isDone(), "host A's write is still in flight: the preempt has not fenced it yet");
                queue.send(queue.h2cData(92, ttag, 0, new byte[128 * 512], true));
                Completion c = queue.awaitResponse();
                assertEquals(Status.RESERVATION_CONFLICT, Status.code(c.status()), "host A's write did not land");
                get(preempt); // and now host B is told it holds the namespace alone
            }
        }
    }

    @Test
    void writeExclusiveThenPreemptBetweenTwoHosts() throws Exception {
        NvmeofController a = host(ID_A);
        NvmeofController b = host(ID_B);
        NamespaceHandle nsA = a.namespace(1);
        NamespaceHandle nsB = b.namespace(1);
        get(nsA.reservations().register(KEY_A, 0));
        get(nsB.reservations().register(KEY_B, 0));
        get(nsA.reservations().acquire(KEY_A, Reservations.WRITE_EXCLUSIVE));

        assertEquals(Status.RESERVATION_CONFLICT, failure(write(nsB)), "B may not write");
        get(read(nsB));
        get(write(nsA));
        assertEquals(Status.RESERVATION_CONFLICT, failure(nsB.reservations().acquire(KEY_B, Reservations.WRITE_EXCLUSIVE)));
        assertEquals(Status.RESERVATION_CONFLICT, failure(nsB.reservations().register(KEY_B + 1, 0)), "another key");

        ReservationReport report = nsB.reservations().report().get(10, TimeUnit.SECONDS);
        assertEquals(Reservations.WRITE_EXCLUSIVE, report.type());
        assertEquals(2, report.registrantCount());
        assertEquals(2, report.generation(), "two registrations");
        assertTrue(report.registrant(ID_A).holdsReservation());
        assertFalse(report.registrant(ID_B).holdsReservation());
        assertEquals(KEY_A, report.registrant(ID_A).key());
        assertEquals(0xFFFF, report.registrant(ID_B).cntlid());

        // B takes the reservation with A's key: A is unregistered and told so.
        get(nsB.reservations().preempt(KEY_B, KEY_A, Reservations.EXCLUSIVE_ACCESS, false));
        assertEquals(Status.RESERVATION_CONFLICT, failure(read(nsA)), "Exclusive Access, A not registered");
        get(write(nsB));
        assertTrue(TestTargets.eventually(() -> !pending(a).isEmpty(), 5000), "A's notice arrives");
        ReservationNotice n = notices.get(0);
        assertEquals(Reservations.NOTICE_REGISTRATION_PREEMPTED, n.type());
        assertEquals(1, n.nsid());
        assertTrue(n.count() >= 1);
        assertTrue(b.takeReservationNotices().isEmpty(), "never the host that preempted");
        report = nsA.reservations().report().get(10, TimeUnit.SECONDS);
        assertEquals(1, report.registrantCount());
        assertEquals(ID_B, report.registrants().get(0).hostId());

        // Released, anyone may write again.
        assertEquals(Status.INVALID_FIELD, failure(nsB.reservations().release(KEY_B, Reservations.WRITE_EXCLUSIVE)),
                "the wrong type");
        get(nsB.reservations().release(KEY_B, Reservations.EXCLUSIVE_ACCESS));
        get(write(nsA));
    }

    private final List<ReservationNotice> notices = new ArrayList<>();

    private List<ReservationNotice> pending(NvmeofController c) {
        notices.addAll(c.takeReservationNotices());
        return notices;
    }

    @Test
    void aHolderThatDisconnectsKeepsItsRegistrationAndReservation() throws Exception {
        NvmeofController a = host(ID_A);
        get(a.namespace(1).reservations().register(KEY_A, 0));
        get(a.namespace(1).reservations().acquire(KEY_A, Reservations.EXCLUSIVE_ACCESS));
        a.close();
        hosts.remove(a);
        assertTrue(TestTargets.eventually(() -> target.core().controllers().isEmpty(), 5000), "A's association ended");

        NamespaceHandle nsB = host(ID_B).namespace(1);
        assertEquals(Status.RESERVATION_CONFLICT, failure(read(nsB)), "A still holds Exclusive Access");
        ReservationReport report = nsB.reservations().report().get(10, TimeUnit.SECONDS);
        assertTrue(report.registrant(ID_A).holdsReservation());

        NamespaceHandle again = host(ID_A).namespace(1);
        get(write(again)); // A, back on a new association, is still the holder
        get(again.reservations().release(KEY_A, Reservations.EXCLUSIVE_ACCESS));
        get(read(nsB));
    }

    @Test
    void persistThroughPowerLossSurvivesARestart() throws Exception {
        NamespaceHandle nsA = host(ID_A).namespace(1);
        get(nsA.reservations().register(KEY_A, Reservations.CPTPL_SET));
        get(nsA.reservations().acquire(KEY_A, Reservations.WRITE_EXCLUSIVE));
        stop();
        hosts.clear();
        target = NvmeTarget.start(config(), state);

        NamespaceHandle nsB = host(ID_B).namespace(1);
        assertEquals(Status.RESERVATION_CONFLICT, failure(write(nsB)), "the restored reservation holds");
        ReservationReport report = nsB.reservations().report().get(10, TimeUnit.SECONDS);
        assertTrue(report.persistThroughPowerLoss());
        assertEquals(Reservations.WRITE_EXCLUSIVE, report.type());
        assertTrue(report.registrant(ID_A).holdsReservation());
        assertEquals(KEY_A, report.registrant(ID_A).key());
        get(write(host(ID_A).namespace(1)));
    }

    @Test
    void theReportIsTheExtendedStructureAndTheOtherIsRefused() throws Exception {
        get(host(ID_A).namespace(1).reservations().register(KEY_A, Reservations.CPTPL_SET));
        try (RawTcpHost admin = new RawTcpHost(target.tcpPort(0))) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            byte[] getPtpl = RawTcpHost.sqe();
            RawTcpHost.cmd(getPtpl).opcode(Opcodes.ADMIN_GET_FEATURES).nsid(1).cdw10(Opcodes.FEAT_RESERVATION_PERSISTENCE);
            Completion ptpl = admin.execute(getPtpl, null);
            assertEquals(Status.SUCCESS, Status.code(ptpl.status()));
            assertEquals(1, ptpl.dw0() & 1, "Get Features 83h: PTPL on");
            try (RawTcpHost io = new RawTcpHost(target.tcpPort(0))) {
                io.initialize(0);
                assertEquals(0, io.connect(1, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                byte[] plain = reportSqe(128, false);
                assertEquals(Status.HOST_ID_INCONSISTENT, Status.code(io.execute(plain, null).status()),
                        "fabrics hosts have 128-bit host IDs: only the extended structure");
                RawTcpHost.Reply reply = io.executeForData(reportSqe(128, true), 128);
                assertEquals(Status.SUCCESS, Status.code(reply.cqe().status()));
                ByteBuffer r = ByteBuffer.wrap(reply.data()).order(ByteOrder.LITTLE_ENDIAN);
                assertEquals(1, r.getInt(0), "GEN, bytes 3:0");
                assertEquals(0, r.get(4), "RTYPE, byte 4: none");
                assertEquals(1, r.getShort(5), "REGCTL, bytes 6:5");
                assertEquals(1, r.get(9), "PTPLS, byte 9");
                assertEquals((short) 0xFFFF, r.getShort(64), "CNTLID, bytes 1:0 of the first registrant");
                assertEquals(0, r.get(66), "RCSTS, byte 2: does not hold");
                assertEquals(KEY_A, r.getLong(72), "RKEY, bytes 15:8");
                byte[] hostId = new byte[16];
                r.get(80, hostId);
                assertArrayEquals(ByteBuffer.allocate(16).putLong(ID_A.getMostSignificantBits())
                        .putLong(ID_A.getLeastSignificantBits()).array(), hostId, "HOSTID, bytes 31:16");
                assertNotNull(reply);
            }
        }
    }

    static byte[] reportSqe(int bytes, boolean extended) {
        byte[] b = RawTcpHost.sqe();
        RawTcpHost.cmd(b).opcode(Opcodes.IO_RESERVATION_REPORT).nsid(1).cdw10(bytes / 4 - 1).cdw11(extended ? 1 : 0);
        RawTcpHost.sgl(b).transportBlock(bytes);
        return b;
    }
}

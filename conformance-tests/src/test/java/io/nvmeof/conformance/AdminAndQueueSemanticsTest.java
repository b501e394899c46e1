package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.identify.NamespaceDescriptor;
import io.nvmeof.protocol.log.ErrorLogEntry;
import io.nvmeof.protocol.log.SmartHealthLog;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.Namespace;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Admin command semantics and queue-level behaviour (SQHD, SQ flow control, C2HData SUCCESS, events, logs). */
class AdminAndQueueSemanticsTest {
    NvmeTarget target;
    int port;

    @BeforeEach
    void start() throws Exception {
        target = TestTargets.start();
        port = target.tcpPort(0);
    }

    @AfterEach
    void stop() {
        target.close();
    }

    NvmeofController connect() {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, TestTargets.NQN),
                ConnectOptions.builder().ioQueues(1).queueDepth(8).build());
    }

    @Test
    void sqHeadAdvancesAndWrapsWithFlowControl() throws Exception {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                // SQSIZE 3 (0-based): a 4-entry queue. The Connect itself was the first entry fetched.
                Completion c = io.connect(1, 3, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(1, c.sqhd());
                int[] heads = new int[6];
                for (int i = 0; i < heads.length; i++) {
                    heads[i] = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), null).sqhd();
                }
                assertArrayEquals(new int[] {2, 3, 0, 1, 2, 3}, heads, "SQHD wraps at the queue size");
            }
        }
    }

    @Test
    void disablingSqFlowControlReportsFfffAndUsesC2HSuccess() throws Exception {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                byte[] sqe = RawTcpHost.connectSqe(1, 31, 0);
                new UnsafeBuffer(sqe).putByte(46, (byte) 0x4); // CATTR: disable SQ flow control
                Completion c = io.execute(sqe, RawTcpHost.connectData(cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN));
                assertEquals(Status.SUCCESS, c.status());
                assertEquals(0xFFFF, c.sqhd());
                byte[] read = RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 8, 4096, false);
                RawTcpHost.cmd(read).cid(77);
                io.send(io.capsule(read, null));
                byte[] pdu = io.readPdu();
                assertEquals(PduHeader.TYPE_C2H_DATA, pdu[0]);
                DataPdu d = new DataPdu().wrap(new UnsafeBuffer(pdu), 0);
                assertEquals(PduHeader.FLAG_DATA_LAST | PduHeader.FLAG_DATA_SUCCESS, d.pduFlags(),
                        "LAST and SUCCESS: no response capsule follows");
                assertEquals(77, d.cccid());
                assertEquals(4096, d.datal());
                // The next thing on the wire is the next command's response, not a CapsuleResp for cid 77.
                Completion next = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, true), null);
                assertEquals(Status.SGL_INVALID_TYPE, Status.code(next.status()), "in-capsule SGL on a read is refused");
                assertEquals(io.cid, next.cid());
            }
        }
    }

    @Test
    void namespaceChangeRaisesAnAsyncEventAndTheChangedList() throws Exception {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            admin.bringUpAdmin(TestTargets.NQN);
            byte[] sf = RawTcpHost.sqe();
            RawTcpHost.cmd(sf).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_ASYNC_EVENT_CONFIG).cdw11(Features.AEC_NS_ATTRIBUTE);
            assertEquals(Status.SUCCESS, admin.execute(sf, null).status());
            byte[] aer = RawTcpHost.sqe();
            RawTcpHost.cmd(aer).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST).cid(500);
            admin.send(admin.capsule(aer, null));
            target.core().subsystem(TestTargets.NQN).addNamespace(
                    new Namespace(5, new RamBackend(1 << 20), 512, UUID.randomUUID()));
            Completion event = admin.awaitResponse();
            assertEquals(500, event.cid());
            assertEquals(Status.SUCCESS, event.status());
            assertEquals(Features.asyncEvent(Features.AER_TYPE_NOTICE, Features.AER_INFO_NS_ATTRIBUTE_CHANGED, 0x04), event.dw0());
        }
        try (NvmeofController c = connect()) {
            assertEquals(List.of(1L, 2L, 5L), c.namespaces().stream().map(n -> n.nsid()).toList());
        }
    }

    /**
     * A discovery controller that enabled Discovery Log Page Change notices (as the Linux host's persistent discovery
     * controller does) hears of a host-list change and a new subsystem; one notice until the log is read again.
     */
    @Test
    void discoveryLogChangesRaiseANoticeOnTheDiscoveryController() throws Exception {
        try (RawTcpHost disc = new RawTcpHost(port)) {
            disc.bringUpAdmin(io.nvmeof.protocol.fabrics.Nqn.DISCOVERY);
            RawTcpHost.Reply id = disc.executeForData(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), 4096);
            long oaes = ByteBuffer.wrap(id.data()).order(ByteOrder.LITTLE_ENDIAN).getInt(92) & 0xFFFF_FFFFL;
            assertEquals(1L << 31, oaes, "OAES: Discovery Log Page Change Notices");
            byte[] sf = RawTcpHost.sqe();
            RawTcpHost.cmd(sf).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_ASYNC_EVENT_CONFIG)
                    .cdw11(Features.AEC_DISCOVERY_LOG_CHANGE | Features.AEC_NS_ATTRIBUTE);
            assertEquals(Status.SUCCESS, disc.execute(sf, null).status());
            byte[] gf = RawTcpHost.sqe();
            RawTcpHost.cmd(gf).opcode(Opcodes.ADMIN_GET_FEATURES).cdw10(Opcodes.FEAT_ASYNC_EVENT_CONFIG);
            assertEquals(Features.AEC_DISCOVERY_LOG_CHANGE, disc.execute(gf, null).dw0(), "only what a discovery controller sends");

            byte[] aer = RawTcpHost.sqe();
            RawTcpHost.cmd(aer).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST).cid(600);
            disc.send(disc.capsule(aer, null));
            target.live().addHost(TestTargets.NQN, "nqn.2026-12.io.example:another-host");
            Completion event = disc.awaitResponse();
            assertEquals(600, event.cid());
            int notice = Features.asyncEvent(Features.AER_TYPE_NOTICE, Features.AER_INFO_DISCOVERY_LOG_CHANGED,
                    Opcodes.LOG_DISCOVERY);
            assertEquals(notice, event.dw0());

            // Masked until the host reads the log: the next change waits for that read.
            byte[] aer2 = RawTcpHost.sqe();
            RawTcpHost.cmd(aer2).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST).cid(601);
            disc.send(disc.capsule(aer2, null));
            target.live().removeHost(TestTargets.NQN, "nqn.2026-12.io.example:another-host");
            byte[] log = RawTcpHost.sqe();
            RawTcpHost.cmd(log).opcode(Opcodes.ADMIN_GET_LOG_PAGE).cdw10(Opcodes.LOG_DISCOVERY | (1024 / 4 - 1) << 16);
            RawTcpHost.sgl(log).transportBlock(1024);
            RawTcpHost.Reply page = disc.executeForData(log, 1024);
            assertEquals(Status.SUCCESS, page.cqe().status(), "the log read completes before any event: none was due");
            target.live().createSubsystem(new io.nvmeof.tgt.config.TargetConfig.SubsystemConfig(
                    "nqn.2026-12.io.example:new", null, null, null, null, null, null));
            Completion second = disc.awaitResponse();
            assertEquals(601, second.cid());
            assertEquals(notice, second.dw0());
        }
    }

    @Test
    void errorAndSmartLogsCountWhatHappened() throws Exception {
        try (NvmeofController c = connect()) {
            ByteBuffer b = ByteBuffer.allocateDirect(4096);
            for (int i = 0; i < 5; i++) {
                c.namespace(1).write(i * 8, 8, b).get(10, TimeUnit.SECONDS);
            }
            c.namespace(1).read(0, 8, b).get(10, TimeUnit.SECONDS);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> c.namespace(1).read(c.namespace(1).blockCount(), 1, b).get(10, TimeUnit.SECONDS));
            assertEquals(Status.LBA_RANGE, ((NvmeStatusException) e.getCause()).statusCode());

            UnsafeBuffer smart = new UnsafeBuffer(c.getLogPage(Opcodes.LOG_SMART_HEALTH, 0xFFFFFFFFL, 512, 0));
            SmartHealthLog s = new SmartHealthLog().wrap(smart, 0);
            assertEquals(5, s.hostWriteCommands());
            assertEquals(1, s.hostReadCommands());
            assertEquals(1, s.dataUnitsWritten(), "20 KiB is one data unit (1000 x 512 B, rounded up)");
            assertTrue(s.errorLogEntries() >= 1);

            UnsafeBuffer err = new UnsafeBuffer(c.getLogPage(Opcodes.LOG_ERROR_INFORMATION, 0, 64, 0));
            ErrorLogEntry entry = new ErrorLogEntry().wrap(err, 0);
            assertTrue(entry.errorCount() >= 1);
            assertEquals(1, entry.sqid());
            assertEquals(Status.LBA_RANGE, entry.statusField() >>> 1 & 0x7FF);
            assertEquals(1, entry.nsid());
        }
    }

    @Test
    void identifyDescriptorsFeaturesAndAbort() throws Exception {
        try (NvmeofController c = connect()) {
            UnsafeBuffer list = new UnsafeBuffer(c.identify(Opcodes.CNS_NAMESPACE_DESCRIPTORS, 1));
            NamespaceDescriptor d = new NamespaceDescriptor().wrap(list, 0);
            assertEquals(NamespaceDescriptor.TYPE_NGUID, d.nidt());
            assertEquals(16, d.nidl());
            d.wrap(list, 20);
            assertEquals(NamespaceDescriptor.TYPE_UUID, d.nidt());
            d.wrap(list, 40);
            assertEquals(NamespaceDescriptor.TYPE_CSI, d.nidt());
            assertEquals(1, d.nidl());
            assertEquals(0, list.getByte(44), "CSI 0: NVM command set");

            UnsafeBuffer active = new UnsafeBuffer(c.identify(Opcodes.CNS_ACTIVE_NAMESPACE_LIST, 1));
            assertEquals(2, active.getInt(0, ByteOrder.LITTLE_ENDIAN), "NSIDs greater than 1");
            assertEquals(0, active.getInt(4, ByteOrder.LITTLE_ENDIAN));

            assertEquals(5000, c.getFeature(Opcodes.FEAT_KEEP_ALIVE_TIMER));
            assertEquals(Features.numberOfQueues(1, 1), c.getFeature(Opcodes.FEAT_NUMBER_OF_QUEUES));
            NvmeStatusException e = assertThrows(NvmeStatusException.class, () -> c.getFeature(0x42));
            assertEquals(Status.INVALID_FIELD, e.statusCode());
            e = assertThrows(NvmeStatusException.class, () -> c.getLogPage(0x33, 0, 512, 0));
            assertEquals(Status.INVALID_LOG_PAGE, e.statusCode());
        }
    }
}

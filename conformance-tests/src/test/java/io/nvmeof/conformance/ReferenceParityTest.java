package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.log.CommandEffectsLog;
import io.nvmeof.protocol.log.FirmwareSlotLog;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Inputs that Linux nvmet and SPDK's target both accept are accepted here too, and the refusals both make are kept,
 * with their status (docs/conformance.md, "Refusals compared with Linux nvmet and SPDK"). One test per changed row,
 * from a raw host that sends exactly the bytes each row names.
 */
class ReferenceParityTest extends SharedTargetTest {
    /** Admin Connect with {@code hostnqn}, CC.EN, and an I/O queue; then a write and a read-back of one block. */
    private static void connectAndDoIo(String hostnqn) throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = new RawTcpHost(port)) {
            admin.initialize(0);
            Completion c = admin.connect(0, 31, 0xFFFF, TestTargets.NQN, hostnqn, 0);
            assertEquals(Status.SUCCESS, c.status(), "admin Connect with host NQN " + Nqn.display(hostnqn));
            int cntlid = c.dw0() & 0xFFFF;
            assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
            io.initialize(0);
            assertEquals(Status.SUCCESS, io.connect(1, 31, cntlid, TestTargets.NQN, hostnqn, 0).status(), "I/O Connect");
            byte[] block = new byte[512];
            Arrays.fill(block, (byte) 0x5A);
            assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 77, 1, 512, true), block).status());
            RawTcpHost.Reply r = io.executeForData(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 77, 1, 512, false), 512);
            assertEquals(Status.SUCCESS, r.cqe().status());
            assertArrayEquals(block, r.data(), "the block written reads back");
        }
    }

    @Test
    void emptyHostNqnIsServedWhereAnyHostIsAllowed() throws IOException {
        connectAndDoIo(""); // what SPDK's host sends unless given hostnqn:
    }

    @Test
    void ourInitiatorWithAnEmptyHostNqn() throws Exception {
        ConnectOptions o = ConnectOptions.builder().hostNqn("").build();
        try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, TestTargets.NQN), o)) {
            NamespaceHandle ns = c.namespace(1);
            byte[] pattern = new byte[4096];
            for (int i = 0; i < pattern.length; i++) {
                pattern[i] = (byte) (i * 7);
            }
            ns.write(800, 8, ByteBuffer.allocateDirect(4096).put(pattern).flip()).get(10, TimeUnit.SECONDS);
            ByteBuffer in = ByteBuffer.allocateDirect(4096);
            ns.read(800, 8, in).get(10, TimeUnit.SECONDS);
            byte[] back = new byte[4096];
            in.get(0, back);
            assertArrayEquals(pattern, back, "4 KiB written with an empty host NQN reads back");
        }
        NvmeStatusException e = assertThrows(NvmeStatusException.class, () -> NvmeofController.connect(
                new TransportId("tcp", "127.0.0.1", port, TestTargets.RESTRICTED_NQN), o).close());
        assertEquals(Status.CONNECT_INVALID_HOST, e.statusCode());
    }

    @Test
    void emptyHostNqnIsRefusedWhereHostsAreListed() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, TestTargets.RESTRICTED_NQN, "", 0);
            assertEquals(Status.CONNECT_INVALID_HOST, Status.code(c.status()), "as nvmet and SPDK: Connect Invalid Host");
            assertTrue(Status.dnr(c.status()));
            assertEquals(1 << 16 | ConnectData.HOSTNQN, c.dw0(), "IATTR=1 (connect data), IPO=512 (HOSTNQN)");
        }
    }

    @Test
    void hostNqnWithBytesOutsidePrintableAsciiIsServed() throws IOException {
        connectAndDoIo("nqn.2014-08.org.example:caf\u00e9\u0001");
    }

    @Test
    void hostNqnBeyond223BytesIsStillRefused() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, TestTargets.NQN, "h".repeat(224), 0);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "the spec's limit, kept as SPDK keeps it");
            assertEquals(1 << 16 | ConnectData.HOSTNQN, c.dw0());
        }
    }

    @Test
    void adminQueueLargerThan32EntriesIsAccepted() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 127, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status(),
                    "SQSIZE 127 (128 entries), as SPDK accepts");
        }
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 128, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "beyond MQES 127");
            assertEquals(44, c.dw0(), "IATTR=0 (SQE), IPO=44 (SQSIZE)");
        }
    }

    @Test
    void ioQueueConnectWithAnotherHostIdIsAccepted() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            io.initialize(0);
            byte[] data = RawTcpHost.connectData(cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN);
            data[ConnectData.HOSTID] = 0x42;
            assertEquals(Status.SUCCESS, io.execute(RawTcpHost.connectSqe(1, 31, 0), data).status(),
                    "nvmet and SPDK compare only the host NQN");
        }
    }

    @Test
    void ioQueueIdBeyondTheGrantedCountButWithinTheControllersIsAccepted() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            byte[] sf = RawTcpHost.sqe();
            RawTcpHost.cmd(sf).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_NUMBER_OF_QUEUES)
                    .cdw11(Features.numberOfQueues(1, 1));
            assertEquals(1, Features.submissionQueues(admin.execute(sf, null).dw0()));
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                assertEquals(Status.SUCCESS, io.connect(8, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status(),
                        "QID 8: beyond the 1 granted, within the controller's 8");
            }
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                Completion c = io.connect(9, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "QID 9 is beyond every queue");
                assertEquals(42, c.dw0(), "IPO=42 (QID)");
            }
        }
    }

    @Test
    void propertyAccessOnAnIoQueueIsAnInvalidOpcode() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            io.initialize(0);
            assertEquals(Status.SUCCESS, io.connect(1, 31, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
            Completion c = io.propertyGet(ControllerRegisters.CSTS, 4);
            assertEquals(Status.INVALID_OPCODE, Status.code(c.status()), "as nvmet and SPDK");
            assertTrue(Status.dnr(c.status()));
        }
    }

    @Test
    void enableWithCssAllIoCommandSetsIsAccepted() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
            assertEquals(Status.SUCCESS, h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT | 6 << 4).status());
            assertEquals(ControllerRegisters.CSTS_RDY, h.propertyGet(ControllerRegisters.CSTS, 4).dw0(), "CSS 6: ready, no CFS");
        }
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
            assertEquals(Status.SUCCESS, h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT | 1 << 4).status());
            assertEquals(ControllerRegisters.CSTS_CFS, h.propertyGet(ControllerRegisters.CSTS, 4).dw0(),
                    "CSS 1 (reserved) is still fatal, as in nvmet");
        }
    }

    @Test
    void discoveryControllerEnablesWithoutQueueEntrySizes() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, Nqn.DISCOVERY, RawTcpHost.HOSTNQN, 0).status());
            assertEquals(Status.SUCCESS, h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_EN).status());
            assertEquals(ControllerRegisters.CSTS_RDY, h.propertyGet(ControllerRegisters.CSTS, 4).dw0(),
                    "IOSQES/IOCQES 0: a discovery controller has no I/O queues to size");
        }
    }

    private static byte[] identifyCs(int cns, long nsid, int csi) {
        byte[] sqe = RawTcpHost.identifySqe(cns, nsid);
        RawTcpHost.cmd(sqe).cdw11(csi << 24);
        return sqe;
    }

    @Test
    void commandSetSpecificIdentifyIsServedForTheNvmCommandSet() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.bringUpAdmin(TestTargets.NQN);
            RawTcpHost.Reply ctrl = h.executeForData(identifyCs(Opcodes.CNS_CS_CONTROLLER, 0, Opcodes.CSI_NVM), 4096);
            assertEquals(Status.SUCCESS, ctrl.cqe().status(), "CNS 06h, CSI NVM");
            assertArrayEquals(new byte[4096], ctrl.data(), "no limits reported");
            Completion zns = h.execute(identifyCs(Opcodes.CNS_CS_CONTROLLER, 0, 2), null);
            assertEquals(Status.INVALID_FIELD, Status.code(zns.status()), "CSI 2 (zoned) is not served");
            assertEquals(Status.SUCCESS, h.execute(identifyCs(Opcodes.CNS_CS_NAMESPACE, 1, Opcodes.CSI_NVM), null).status());
            Completion missing = h.execute(identifyCs(Opcodes.CNS_CS_NAMESPACE, 9, Opcodes.CSI_NVM), null);
            assertEquals(Status.INVALID_NAMESPACE, Status.code(missing.status()));
        }
    }

    private static byte[] getFeature(int fid, int cdw11, int length) {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_GET_FEATURES).cdw10(fid).cdw11(cdw11);
        RawTcpHost.sgl(sqe).transportBlock(length);
        return sqe;
    }

    @Test
    void volatileWriteCacheAndHostIdentifierFeatures() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.bringUpAdmin(TestTargets.NQN);
            Completion vwc = h.execute(getFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE, 0, 0), null);
            assertEquals(Status.SUCCESS, vwc.status());
            assertEquals(1, vwc.dw0(), "write cache enabled, as Identify's VWC says");
            RawTcpHost.Reply hostId = h.executeForData(getFeature(Opcodes.FEAT_HOST_IDENTIFIER, 1, 16), 16);
            assertEquals(Status.SUCCESS, hostId.cqe().status());
            assertArrayEquals(RawTcpHost.HOSTID, hostId.data(), "the 128-bit host ID from Connect");
            Completion noExhid = h.execute(getFeature(Opcodes.FEAT_HOST_IDENTIFIER, 0, 16), null);
            assertEquals(Status.INVALID_FIELD, Status.code(noExhid.status()), "a 64-bit host ID does not exist on fabrics");
            byte[] set = RawTcpHost.sqe();
            RawTcpHost.cmd(set).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_HOST_IDENTIFIER).cdw11(1);
            assertEquals(Status.COMMAND_SEQUENCE_ERROR, Status.code(h.execute(set, null).status()),
                    "the host ID comes with Connect, as nvmet and SPDK answer");
        }
    }

    private static byte[] getLog(int lid, int length) {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_GET_LOG_PAGE).nsid(0xFFFF_FFFFL).cdw10(lid | (length / 4 - 1) << 16);
        RawTcpHost.sgl(sqe).transportBlock(length);
        return sqe;
    }

    @Test
    void firmwareSlotAndCommandEffectsLogs() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.bringUpAdmin(TestTargets.NQN);
            RawTcpHost.Reply id = h.executeForData(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), 4096);
            assertEquals(IdentifyController.LPA_COMMAND_EFFECTS,
                    id.data()[IdentifyController.LPA] & IdentifyController.LPA_COMMAND_EFFECTS, "LPA bit 1");

            RawTcpHost.Reply fw = h.executeForData(getLog(Opcodes.LOG_FIRMWARE_SLOT, 512), 512);
            assertEquals(Status.SUCCESS, fw.cqe().status());
            assertEquals(1, fw.data()[FirmwareSlotLog.AFI], "slot 1 active");
            assertEquals("0.1.0   ", new String(fw.data(), FirmwareSlotLog.FRS1, 8, StandardCharsets.US_ASCII),
                    "FRS1: Identify's firmware revision, space padded");

            RawTcpHost.Reply fx = h.executeForData(getLog(Opcodes.LOG_COMMAND_EFFECTS, 4096), 4096);
            assertEquals(Status.SUCCESS, fx.cqe().status());
            UnsafeBuffer l = new UnsafeBuffer(fx.data());
            CommandEffectsLog log = new CommandEffectsLog().wrap(l, 0);
            assertEquals(CommandEffectsLog.CSUPP, log.admin(Opcodes.ADMIN_IDENTIFY));
            assertEquals(0, log.admin(Opcodes.ADMIN_CREATE_SQ), "no I/O queue creation on fabrics");
            assertEquals(CommandEffectsLog.CSUPP, log.io(Opcodes.IO_READ));
            assertEquals(CommandEffectsLog.CSUPP | CommandEffectsLog.LBCC, log.io(Opcodes.IO_WRITE));
            assertEquals(CommandEffectsLog.CSUPP | CommandEffectsLog.LBCC, log.io(Opcodes.IO_DATASET_MANAGEMENT));
            assertEquals(3, l.getInt(1028, java.nio.ByteOrder.LITTLE_ENDIAN), "IOCS[01h] at byte 1028: CSUPP and LBCC");
            assertEquals(1, l.getInt(4 * Opcodes.ADMIN_KEEP_ALIVE, java.nio.ByteOrder.LITTLE_ENDIAN), "ACS[18h] at byte 96");
        }
    }
}

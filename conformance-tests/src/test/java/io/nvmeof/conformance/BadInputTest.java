package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.io.IOException;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Malformed and hostile input from a raw host: each case gets the outcome the NVMe/TCP and NVMe-oF specifications
 * call for, and afterwards the target still serves a well-behaved connection and holds no resources for the bad one.
 */
class BadInputTest extends SharedTargetTest {
    /** After every case: a good host still gets served, and nothing is left of closed connections. */
    @AfterEach
    void targetStillServesAndLeaksNothing() throws Exception {
        try (RawTcpHost good = new RawTcpHost(port)) {
            good.bringUpAdmin(TestTargets.NQN);
            Completion id = good.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null);
            assertEquals(Status.SUCCESS, id.status(), "a well-behaved host is still served");
        }
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == 0 && target.core().liveControllers() == 0, 5000),
                "queues " + target.core().liveQueues() + ", controllers " + target.core().liveControllers() + " left over");
    }

    private static int fes(byte[] term) {
        return new UnsafeBuffer(term).getShort(8, ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
    }

    private static long fei(byte[] term) {
        return new UnsafeBuffer(term).getInt(10, ByteOrder.LITTLE_ENDIAN) & 0xFFFFFFFFL;
    }

    /** Expects a C2HTermReq with the given FES (and FEI when >= 0), then the connection closed. */
    private static void expectTermination(RawTcpHost h, int fes, long fei) throws IOException {
        byte[] pdu = h.readPdu();
        assertEquals(PduHeader.TYPE_C2H_TERM_REQ, pdu[0], "expected C2HTermReq, got " + PduHeader.typeName(pdu[0]));
        assertEquals(TermReqPdu.HEADER_LENGTH, pdu[2] & 0xFF, "C2HTermReq HLEN");
        assertEquals(fes, fes(pdu), "FES: " + TermReqPdu.fesName(fes(pdu)));
        if (fei >= 0) {
            assertEquals(fei, fei(pdu), "FEI");
        }
        assertTrue(h.closedByTarget(), "target closes the connection after C2HTermReq");
    }

    @Test
    void wrongPfvInICReq() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.send(RawTcpHost.icReq(1, 0));
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, 8);
        }
    }

    @Test
    void capsuleBeforeICReqIsSequenceError() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.send(h.capsule(RawTcpHost.identifySqe(1, 0), null));
            expectTermination(h, TermReqPdu.FES_PDU_SEQUENCE_ERROR, 0);
        }
    }

    @Test
    void unknownPduType() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            p[0] = 0x0F;
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, 0);
        }
    }

    @Test
    void controllerToHostPduTypeFromHost() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = new byte[R2TPdu.LENGTH];
            new R2TPdu().<R2TPdu>wrap(new UnsafeBuffer(p), 0).init(0, R2TPdu.LENGTH);
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, 0);
        }
    }

    @Test
    void badHlen() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            p[2] = 71;
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.HLEN);
        }
    }

    @Test
    void badPdo() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 1, 512, true), new byte[512]);
            p[3] = 10; // inside the header
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PDO);
        }
    }

    @Test
    void plenBelowHeader() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            new UnsafeBuffer(p).putInt(4, 40, ByteOrder.LITTLE_ENDIAN);
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.PLEN);
        }
    }

    @Test
    void plenBeyondInCapsuleLimit() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            UnsafeBuffer u = new UnsafeBuffer(p);
            u.putByte(3, (byte) CapsuleCommandPdu.HEADER_LENGTH);
            u.putInt(4, 0x7FFF_0000, ByteOrder.LITTLE_ENDIAN); // 2 GiB of "in-capsule data"
            h.send(p);
            expectTermination(h, TermReqPdu.FES_DATA_LIMIT_EXCEEDED, PduHeader.PLEN);
        }
    }

    @Test
    void truncatedPduThenPeerVanishes() throws Exception {
        RawTcpHost h = new RawTcpHost(port);
        h.initialize(0);
        byte[] p = h.capsule(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 8, 4096, true), new byte[4096]);
        h.send(java.util.Arrays.copyOf(p, 100));
        h.close();
        // The @AfterEach check proves the half-received queue was released.
    }

    @Test
    void headerDigestMismatch() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(1);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            p[72] ^= 0x5A;
            h.send(p);
            expectTermination(h, TermReqPdu.FES_HEADER_DIGEST_ERROR, -1);
        }
    }

    @Test
    void dataDigestMismatchFailsOnlyTheCommand() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(3);
            byte[] sqe = RawTcpHost.connectSqe(0, 31, 0);
            RawTcpHost.cmd(sqe).cid(7);
            byte[] p = h.capsule(sqe, RawTcpHost.connectData(0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN));
            p[p.length - 1] ^= 0x01; // corrupt the data digest
            h.send(p);
            Completion c = h.awaitResponse();
            assertEquals(Status.TRANSIENT_TRANSPORT_ERROR, Status.code(c.status()));
            assertEquals(7, c.cid());
            // The queue survives: a correct Connect now succeeds.
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
        }
    }

    @Test
    void digestFlagsDifferingFromNegotiation() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] p = h.capsule(RawTcpHost.identifySqe(1, 0), null);
            p[1] = PduHeader.FLAG_HDGST;
            h.send(p);
            expectTermination(h, TermReqPdu.FES_INVALID_HEADER_FIELD, PduHeader.FLAGS);
        }
    }

    @Test
    void logPageOffsetWithTheTopBitSet() throws IOException {
        for (String nqn : new String[] {TestTargets.NQN, io.nvmeof.protocol.fabrics.Nqn.DISCOVERY}) {
            try (RawTcpHost h = new RawTcpHost(port)) {
                h.bringUpAdmin(nqn);
                int lid = nqn.equals(TestTargets.NQN) ? Opcodes.LOG_SMART_HEALTH : Opcodes.LOG_DISCOVERY;
                byte[] sqe = RawTcpHost.sqe();
                // LPO 8000000000000000h: as a signed long it is negative, and was taken as "within the log".
                RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_GET_LOG_PAGE).cdw10(lid | (512 / 4 - 1) << 16).cdw12(0)
                        .cdw13(0x8000_0000);
                RawTcpHost.sgl(sqe).transportBlock(512);
                Completion c = h.execute(sqe, null);
                assertEquals(Status.INVALID_FIELD, Status.code(c.status()), nqn + ": LPO beyond the log, as nvmet answers");
                assertTrue(Status.dnr(c.status()));
            }
        }
    }

    @Test
    void connectToUnknownNqn() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, "nqn.2026-11.io.nvmeof:nope", RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()));
            assertTrue(Status.dnr(c.status()));
            assertEquals(1 << 16 | 256, c.dw0(), "IATTR=1 (connect data), IPO=256 (SUBNQN)");
        }
    }

    @Test
    void connectFromHostNotAllowed() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, TestTargets.RESTRICTED_NQN, RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.CONNECT_INVALID_HOST, Status.code(c.status()));
            assertEquals(1 << 16 | 512, c.dw0(), "IPO=512 (HOSTNQN)");
        }
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, TestTargets.RESTRICTED_NQN, TestTargets.ALLOWED_HOST, 0);
            assertEquals(Status.SUCCESS, c.status(), "the allowed host connects");
        }
    }

    @Test
    void connectWithBadRecfmtAndAdminQueueSize() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] sqe = RawTcpHost.connectSqe(0, 31, 0);
            new UnsafeBuffer(sqe).putShort(40, (short) 1, ByteOrder.LITTLE_ENDIAN);
            Completion c = h.execute(sqe, RawTcpHost.connectData(0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN));
            assertEquals(Status.CONNECT_INCOMPATIBLE_FORMAT, Status.code(c.status()));
            c = h.connect(0, 0, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "SQSIZE 0");
            assertEquals(44, c.dw0(), "IATTR=0 (SQE), IPO=44 (SQSIZE)");
        }
    }

    @Test
    void ioQueueConnectBeyondTheControllersQueuesAndMqes() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            int cntlid = admin.bringUpAdmin(TestTargets.NQN);
            byte[] sf = RawTcpHost.sqe();
            RawTcpHost.cmd(sf).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_NUMBER_OF_QUEUES)
                    .cdw11(Features.numberOfQueues(2, 2));
            Completion granted = admin.execute(sf, null);
            assertEquals(Status.SUCCESS, granted.status());
            assertEquals(2, Features.submissionQueues(granted.dw0()));
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                Completion c = io.connect(9, 127, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "QID 9 of a controller with 8");
                assertEquals(42, c.dw0(), "IPO=42 (QID)");
            }
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(0);
                Completion c = io.connect(2, 128, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()), "SQSIZE 128 exceeds MQES 127");
                assertEquals(44, c.dw0());
                c = io.connect(2, 127, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
                assertEquals(Status.SUCCESS, c.status());
            }
        }
    }

    @Test
    void ioQueueConnectForControllerThatDoesNotExist() throws IOException {
        try (RawTcpHost io = new RawTcpHost(port)) {
            io.initialize(0);
            Completion c = io.connect(1, 127, 0x1234, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS, Status.code(c.status()));
            assertEquals(1 << 16 | 16, c.dw0(), "IATTR=1, IPO=16 (CNTLID)");
        }
    }

    @Test
    void commandsBeforeConnectAndBeforeEnable() throws IOException {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null);
            assertEquals(Status.COMMAND_SEQUENCE_ERROR, Status.code(c.status()), "Identify before Connect");
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
            c = h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null);
            assertEquals(Status.COMMAND_SEQUENCE_ERROR, Status.code(c.status()), "Identify before CC.EN");
            Completion csts = h.propertyGet(ControllerRegisters.CSTS, 4);
            assertEquals(0, csts.dw0() & 1, "CSTS.RDY is 0 before CC.EN");
            assertEquals(Status.SUCCESS, h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
            csts = h.propertyGet(ControllerRegisters.CSTS, 4);
            assertEquals(1, csts.dw0() & 1, "CSTS.RDY follows CC.EN");
            assertEquals(Status.SUCCESS, h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status());
        }
    }

    /** Brings up an admin queue and one I/O queue; returns the I/O host. */
    private static RawTcpHost ioQueue(RawTcpHost admin) throws IOException {
        int cntlid = admin.bringUpAdmin(TestTargets.NQN);
        RawTcpHost io = new RawTcpHost(port);
        io.initialize(0);
        Completion c = io.connect(1, 127, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0);
        assertEquals(Status.SUCCESS, c.status());
        return io;
    }

    @Test
    void lbaRangePastNamespaceEnd() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = ioQueue(admin)) {
            long blocks = (64L << 20) / 512;
            Completion c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, blocks - 1, 2, 1024, false), null);
            assertEquals(Status.LBA_RANGE, Status.code(c.status()));
            assertTrue(Status.dnr(c.status()));
            c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, blocks - 2, 2, 1024, false), null);
            assertEquals(Status.SUCCESS, c.status(), "the last two blocks are in range");
            c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 9, 0, 1, 512, false), null);
            assertEquals(Status.INVALID_NAMESPACE, Status.code(c.status()));
        }
    }

    @Test
    void sglLengthDisagreesWithBlockCount() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = ioQueue(admin)) {
            Completion c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 2, 512, false), null);
            assertEquals(Status.SGL_INVALID_DATA_LENGTH, Status.code(c.status()));
            c = io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 1, 1024, true), new byte[1024]);
            assertEquals(Status.SGL_INVALID_DATA_LENGTH, Status.code(c.status()), "in-capsule data of the wrong size");
            byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false);
            new UnsafeBuffer(sqe).putByte(39, (byte) 0x20); // SGL type 2 (segment): not supported
            c = io.execute(sqe, null);
            assertEquals(Status.SGL_INVALID_TYPE, Status.code(c.status()));
        }
    }

    @Test
    void h2cDataOutsideTheR2TWindow() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = ioQueue(admin)) {
            byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 32, 16384, false);
            RawTcpHost.cmd(sqe).cid(42);
            io.send(io.capsule(sqe, null));
            byte[] r2t = io.readPdu();
            assertEquals(PduHeader.TYPE_R2T, r2t[0]);
            R2TPdu r = new R2TPdu().wrap(new UnsafeBuffer(r2t), 0);
            assertEquals(42, r.cccid());
            assertEquals(0, r.r2to());
            assertEquals(16384, r.r2tl());
            io.send(io.h2cData(42, r.ttag(), 12288, new byte[8192], true));
            expectTermination(io, TermReqPdu.FES_DATA_OUT_OF_RANGE, -1);
        }
    }

    @Test
    void h2cDataWithUnknownTag() throws IOException {
        try (RawTcpHost admin = new RawTcpHost(port); RawTcpHost io = ioQueue(admin)) {
            io.send(io.h2cData(1, 77, 0, new byte[512], true));
            expectTermination(io, TermReqPdu.FES_INVALID_HEADER_FIELD, -1);
        }
    }

    @Test
    void peerVanishesMidWrite() throws Exception {
        RawTcpHost admin = new RawTcpHost(port);
        RawTcpHost io = ioQueue(admin);
        byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, 256, 131072, false);
        RawTcpHost.cmd(sqe).cid(5);
        io.send(io.capsule(sqe, null));
        byte[] r2t = io.readPdu();
        assertEquals(PduHeader.TYPE_R2T, r2t[0]);
        R2TPdu r = new R2TPdu().wrap(new UnsafeBuffer(r2t), 0);
        io.send(io.h2cData(5, r.ttag(), 0, new byte[65536], false));
        io.close();
        admin.close();
        // @AfterEach: the queue, its half-filled request and the controller are all gone.
    }
}

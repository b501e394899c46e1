package io.nvmeof.protocol;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Submission queue entry layout, NVMe Base "Common Command Format" (64 bytes). */
class CommandTest {
    private final UnsafeBuffer buf = buffer(64);
    private final Command cmd = new Command().wrap(buf, 0);

    @Test
    void lengthIs64() {
        assertEquals(64, cmd.length());
    }

    @Test
    void commonHeaderWriteLandsAtSpecOffsets() {
        cmd.opcode(0x02).cid(0xBEEF).nsid(0x11223344L).psdt(Command.PSDT_SGL);
        assertEquals(0x02, u8(buf, 0));
        assertEquals(0x40, u8(buf, 1), "PSDT=01b is bits 7:6 of byte 1");
        assertEquals(0xEF, u8(buf, 2));
        assertEquals(0xBE, u8(buf, 3));
        assertEquals(0x44, u8(buf, 4));
        assertEquals(0x33, u8(buf, 5));
        assertEquals(0x22, u8(buf, 6));
        assertEquals(0x11, u8(buf, 7));
        assertEquals(8, nonZero(buf, 0, 64));
    }

    @Test
    void psdtKeepsFuseBitsAndFuseIsBits1to0() {
        put8(buf, 1, 0x01); // FUSE = 01b (first fused command)
        cmd.psdt(2);
        assertEquals(0x81, u8(buf, 1));
        assertEquals(2, cmd.psdt());
        assertEquals(1, cmd.fuse());
        cmd.psdt(1);
        assertEquals(0x41, u8(buf, 1));
        cmd.flags(0xC3);
        assertEquals(0xC3, u8(buf, 1));
        assertEquals(3, cmd.psdt());
        assertEquals(3, cmd.fuse());
    }

    @Test
    void decodeHandBuiltHeader() {
        put8(buf, 0, 0x7F);
        put8(buf, 1, 0x40);
        put16(buf, 2, 0x1234);
        put32(buf, 4, 0xFFFFFFFEL);
        put64(buf, 16, 0x0102030405060708L);
        assertEquals(0x7F, cmd.opcode());
        assertEquals(1, cmd.psdt());
        assertEquals(0x40, cmd.flags());
        assertEquals(0x1234, cmd.cid());
        assertEquals(0xFFFFFFFEL, cmd.nsid());
        assertEquals(0x0102030405060708L, cmd.mptr());
        assertEquals(24, cmd.dptrOffset(), "SGL1/DPTR starts at byte 24");
    }

    @Test
    void cdw10To15AtBytes40To60() {
        int[] spec = {40, 44, 48, 52, 56, 60};
        for (int i = 10; i <= 15; i++) {
            buf.setMemory(0, 64, (byte) 0);
            cmd.cdw(i, 0x01020304 + i);
            int at = spec[i - 10];
            assertEquals(0x04 + i, u8(buf, at), "CDW" + i);
            assertEquals(0x03, u8(buf, at + 1));
            assertEquals(0x02, u8(buf, at + 2));
            assertEquals(0x01, u8(buf, at + 3));
            assertEquals(4, nonZero(buf, 0, 64));
            assertEquals(0x01020304 + i, cmd.cdw(i));
        }
        buf.setMemory(0, 64, (byte) 0);
        cmd.cdw10(0x12345634);
        assertEquals(0x34, buf.getByte(40));
        cmd.cdw11(0xAABBCCDD).cdw12(0x11).cdw13(0x22);
        assertEquals(0xDD, u8(buf, 44));
        assertEquals(0xAA, u8(buf, 47));
        assertEquals(0x11, u8(buf, 48));
        assertEquals(0x22, u8(buf, 52));
        put32(buf, 40, 0x80000001L);
        assertEquals(0x80000001, cmd.cdw10());
        put32(buf, 60, 0xCAFEBABEL);
        assertEquals(0xCAFEBABE, cmd.cdw(15));
    }

    @Test
    void slbaIsU64AtCdw10() {
        cmd.slba(0x0123456789ABCDEFL);
        assertEquals(0x0123456789ABCDEFL, le64(buf, 40));
        assertEquals(0xEF, u8(buf, 40));
        assertEquals(0x01, u8(buf, 47));
        put64(buf, 40, 0xFEDCBA9876543210L);
        assertEquals(0xFEDCBA9876543210L, cmd.slba());
    }

    @Test
    void nlbIsZeroBasedInCdw12Low16() {
        cmd.blockCount(1);
        assertEquals(0, le32(buf, 48));
        cmd.blockCount(8);
        assertEquals(7, le16(buf, 48));
        cmd.blockCount(65536);
        assertEquals(0xFFFF, le16(buf, 48));
        assertEquals(0, le16(buf, 50));
        // upper bits of CDW12 (FUA etc.) are kept
        put32(buf, 48, 0x40000000L | 3);
        assertEquals(4, cmd.blockCount());
        assertTrue(cmd.fua());
        cmd.blockCount(16);
        assertEquals(0x4000000FL, le32(buf, 48));
    }

    @Test
    void fuaIsCdw12Bit30AndDeacBit25() {
        put32(buf, 48, 1L << 30);
        assertTrue(cmd.fua());
        assertFalse(cmd.deallocateHint());
        put32(buf, 48, 1L << 31 | 1L << 29);
        assertFalse(cmd.fua());
        put32(buf, 48, 1L << 25);
        assertTrue(cmd.deallocateHint());
        assertFalse(cmd.fua());
    }

    @Test
    void getLogPageSplitsNumdIntoNumdlAndNumdu() {
        // 4 bytes -> NUMD 0
        cmd.logPage(0x02, 4, 0);
        assertEquals(0x02, u8(buf, 40));
        assertEquals(0, le16(buf, 42));
        assertEquals(0, le16(buf, 44));
        // 512 bytes -> NUMD 127 (0x7F) in NUMDL (CDW10 31:16)
        cmd.logPage(0x70, 512, 0);
        assertEquals(0x70, u8(buf, 40));
        assertEquals(0x7F, le16(buf, 42));
        assertEquals(0, le16(buf, 44));
        // 1 MiB -> NUMD 0x3FFFF: NUMDL 0xFFFF, NUMDU 0x0003 (CDW11 15:0)
        cmd.logPage(0x01, 1 << 20, 0x1_0000_0400L);
        assertEquals(0xFFFF, le16(buf, 42));
        assertEquals(0x0003, le16(buf, 44));
        assertEquals(0, le16(buf, 46));
        // LPO: LPOL CDW12, LPOU CDW13
        assertEquals(0x400L, le32(buf, 48));
        assertEquals(0x1L, le32(buf, 52));
        assertEquals(1 << 20, cmd.logPageLength());
        assertEquals(0x1_0000_0400L, cmd.logPageOffset());
        assertEquals(0x01, cmd.logPageId());
    }

    @Test
    void getLogPageDecodeHandBuilt() {
        // LID 0x04, RAE (bit 15), NUMDL 0x0002, NUMDU 0x0001 -> NUMD 0x10002 -> (0x10003)*4 bytes
        put32(buf, 40, 0x0002_8004L);
        put32(buf, 44, 0xFFFF_0001L); // upper 16 bits of CDW11 (LSI) must be ignored
        put32(buf, 48, 0x200);
        put32(buf, 52, 0);
        assertEquals(0x04, cmd.logPageId());
        assertTrue(cmd.retainAsyncEvent());
        assertEquals(0x10003L * 4, cmd.logPageLength());
        assertEquals(0x200, cmd.logPageOffset());
        put32(buf, 40, 0x0002_0004L);
        assertFalse(cmd.retainAsyncEvent());
    }

    @Test
    void identifyCnsIsCdw10Low8() {
        put32(buf, 40, 0x0001_0001L); // CNS 1, CNTID 1 in bits 31:16
        assertEquals(0x01, cmd.cns());
        put32(buf, 40, 0x03);
        assertEquals(0x03, cmd.cns());
    }

    @Test
    void featuresFields() {
        put32(buf, 40, 0x8000_0000L | 0x3 << 8 | 0x07);
        assertEquals(0x07, cmd.featureId());
        assertEquals(3, cmd.featureSelect());
        assertTrue(cmd.saveFeature());
        put32(buf, 40, 0x0B);
        assertFalse(cmd.saveFeature());
        assertEquals(0, cmd.featureSelect());
    }

    @Test
    void datasetManagementFields() {
        put32(buf, 40, 0xFF); // NR 0-based
        put32(buf, 44, 0x4); // AD
        assertEquals(256, cmd.rangeCount());
        assertTrue(cmd.deallocateAttribute());
        put32(buf, 40, 0);
        put32(buf, 44, 0x3);
        assertEquals(1, cmd.rangeCount());
        assertFalse(cmd.deallocateAttribute());
    }

    @Test
    void wrapAtNonZeroOffset() {
        UnsafeBuffer big = buffer(200);
        Command c = new Command().wrap(big, 100);
        c.opcode(1).cid(7).slba(9).blockCount(2);
        assertEquals(1, u8(big, 100));
        assertEquals(7, le16(big, 102));
        assertEquals(9, le64(big, 140));
        assertEquals(1, le16(big, 148));
        c.clear();
        assertEquals(0, nonZero(big, 0, 200));
    }

    @Test
    void opcodesMatchSpec() {
        assertEquals(0x02, Opcodes.ADMIN_GET_LOG_PAGE);
        assertEquals(0x06, Opcodes.ADMIN_IDENTIFY);
        assertEquals(0x08, Opcodes.ADMIN_ABORT);
        assertEquals(0x09, Opcodes.ADMIN_SET_FEATURES);
        assertEquals(0x0A, Opcodes.ADMIN_GET_FEATURES);
        assertEquals(0x0C, Opcodes.ADMIN_ASYNC_EVENT_REQUEST);
        assertEquals(0x18, Opcodes.ADMIN_KEEP_ALIVE);
        assertEquals(0x7F, Opcodes.FABRICS);
        assertEquals(0x00, Opcodes.FCTYPE_PROPERTY_SET);
        assertEquals(0x01, Opcodes.FCTYPE_CONNECT);
        assertEquals(0x04, Opcodes.FCTYPE_PROPERTY_GET);
        assertEquals(0x05, Opcodes.FCTYPE_AUTH_SEND);
        assertEquals(0x06, Opcodes.FCTYPE_AUTH_RECEIVE);
        assertEquals(0x08, Opcodes.FCTYPE_DISCONNECT);
        assertEquals(0x00, Opcodes.IO_FLUSH);
        assertEquals(0x01, Opcodes.IO_WRITE);
        assertEquals(0x02, Opcodes.IO_READ);
        assertEquals(0x05, Opcodes.IO_COMPARE);
        assertEquals(0x08, Opcodes.IO_WRITE_ZEROES);
        assertEquals(0x09, Opcodes.IO_DATASET_MANAGEMENT);
        assertEquals(0x00, Opcodes.CNS_NAMESPACE);
        assertEquals(0x01, Opcodes.CNS_CONTROLLER);
        assertEquals(0x02, Opcodes.CNS_ACTIVE_NAMESPACE_LIST);
        assertEquals(0x03, Opcodes.CNS_NAMESPACE_DESCRIPTORS);
        assertEquals(0x01, Opcodes.LOG_ERROR_INFORMATION);
        assertEquals(0x02, Opcodes.LOG_SMART_HEALTH);
        assertEquals(0x04, Opcodes.LOG_CHANGED_NAMESPACE_LIST);
        assertEquals(0x70, Opcodes.LOG_DISCOVERY);
        assertEquals(0x07, Opcodes.FEAT_NUMBER_OF_QUEUES);
        assertEquals(0x0B, Opcodes.FEAT_ASYNC_EVENT_CONFIG);
        assertEquals(0x0F, Opcodes.FEAT_KEEP_ALIVE_TIMER);
        assertTrue(Opcodes.isHostToController(Opcodes.IO_WRITE));
        assertTrue(Opcodes.isControllerToHost(Opcodes.IO_READ));
        assertTrue(Opcodes.isHostToController(Opcodes.IO_COMPARE));
        assertFalse(Opcodes.isHostToController(Opcodes.IO_FLUSH));
        assertFalse(Opcodes.isControllerToHost(Opcodes.IO_WRITE_ZEROES));
        assertTrue(Opcodes.isHostToController(Opcodes.IO_DATASET_MANAGEMENT));
    }

    @Test
    void featuresNumberOfQueues() {
        int v = Features.numberOfQueues(4, 8);
        assertEquals(3, v & 0xFFFF, "NSQR 0-based in bits 15:0");
        assertEquals(7, v >>> 16, "NCQR 0-based in bits 31:16");
        assertEquals(4, Features.submissionQueues(v));
        assertEquals(8, Features.completionQueues(v));
        assertEquals(0, Features.numberOfQueues(1, 1));
        int max = Features.numberOfQueues(65536, 65536);
        assertEquals(0xFFFFFFFF, max);
        assertEquals(65536, Features.submissionQueues(max));
        assertEquals(65536, Features.completionQueues(max));
        assertEquals(0x0001_0002, Features.numberOfQueues(3, 2));
        assertEquals(1 << 8, Features.AEC_NS_ATTRIBUTE);
        assertEquals(0x04_00_02, Features.asyncEvent(Features.AER_TYPE_NOTICE, Features.AER_INFO_NS_ATTRIBUTE_CHANGED, 0x04));
        assertEquals(0x01_05_07, Features.asyncEvent(0xF, 0x05, 0x01));
    }

    @Test
    void datasetRangeLayout() {
        UnsafeBuffer b = buffer(32);
        DatasetRange r = new DatasetRange().wrap(b, 16);
        assertEquals(16, r.length());
        put32(b, 16, 0xFFFFFFFFL);
        r.set(0x1122334455667788L, 0x1000);
        assertEquals(0, le32(b, 16), "context attributes at 0");
        assertEquals(0x1000, le32(b, 20), "length in blocks at 4");
        assertEquals(0x1122334455667788L, le64(b, 24), "SLBA at 8");
        put32(b, 16, 0x5);
        put32(b, 20, 0xFFFFFFFFL);
        put64(b, 24, 42);
        assertEquals(5, r.contextAttributes());
        assertEquals(0xFFFFFFFFL, r.blocks());
        assertEquals(42, r.slba());
        assertEquals(256, DatasetRange.MAX_RANGES);
    }
}

package io.nvmeof.protocol.log;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import io.nvmeof.protocol.Status;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Log pages: Discovery (70h), Error Information (01h), SMART / Health (02h), Changed Namespace List (04h). */
class LogPageTest {
    @Test
    void discoveryHeader() {
        UnsafeBuffer buf = buffer(3072);
        DiscoveryLogHeader h = new DiscoveryLogHeader().wrap(buf, 0);
        assertEquals(1024, h.length());
        h.genctr(0x0102030405060708L).numrec(2).recfmt(0);
        assertEquals(0x0102030405060708L, le64(buf, 0), "GENCTR");
        assertEquals(2L, le64(buf, 8), "NUMREC");
        assertEquals(0, le16(buf, 16), "RECFMT");
        h.recfmt(0xABCD);
        assertEquals(0xABCD, le16(buf, 16));
        assertEquals(1024, DiscoveryLogHeader.entryOffset(0));
        assertEquals(2048, DiscoveryLogHeader.entryOffset(1));
        assertEquals(3072, DiscoveryLogHeader.entryOffset(2));
        put64(buf, 0, 77);
        put64(buf, 8, 0x1_0000_0001L);
        put16(buf, 16, 1);
        assertEquals(77, h.genctr());
        assertEquals(0x1_0000_0001L, h.numrec());
        assertEquals(1, h.recfmt());
    }

    @Test
    void discoveryEntryWrite() {
        UnsafeBuffer buf = buffer(3072);
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(buf, 2048);
        assertEquals(1024, e.length());
        e.trtype(3).adrfam(1).subtype(2).treq(0x6).portid(0x0102).cntlid(0xFFFF).asqsz(32).eflags(0x3);
        e.trsvcid("4420").subnqn("nqn.2014-08.org.example:a").traddr("192.168.1.1").tsas(0, 0);
        e.tsas(1, 0x11);
        int o = 2048;
        assertEquals(3, u8(buf, o), "TRTYPE");
        assertEquals(1, u8(buf, o + 1), "ADRFAM");
        assertEquals(2, u8(buf, o + 2), "SUBTYPE");
        assertEquals(6, u8(buf, o + 3), "TREQ");
        assertEquals(0x0102, le16(buf, o + 4), "PORTID");
        assertEquals(0xFFFF, le16(buf, o + 6), "CNTLID");
        assertEquals(32, le16(buf, o + 8), "ASQSZ");
        assertEquals(3, le16(buf, o + 10), "EFLAGS");
        assertEquals(0, nonZero(buf, o + 12, o + 32), "reserved");
        assertEquals("4420" + " ".repeat(28), ascii(buf, o + 32, 32), "TRSVCID space padded");
        assertEquals(0, nonZero(buf, o + 64, o + 256), "reserved");
        assertEquals("nqn.2014-08.org.example:a", ascii(buf, o + 256, 25), "SUBNQN");
        assertEquals(0, nonZero(buf, o + 256 + 25, o + 512), "SUBNQN NUL padded");
        assertEquals("192.168.1.1" + " ".repeat(245), ascii(buf, o + 512, 256), "TRADDR space padded");
        assertEquals(0, u8(buf, o + 768), "TSAS[0]");
        assertEquals(0x11, u8(buf, o + 769), "TSAS[1]");
        assertEquals(0, nonZero(buf, 0, 2048), "nothing before entry 1");
    }

    @Test
    void discoveryEntryDecodeHandBuilt() {
        UnsafeBuffer buf = buffer(2048);
        int o = 1024;
        put8(buf, o, 1);
        put8(buf, o + 1, 2);
        put8(buf, o + 2, 3);
        put8(buf, o + 3, 1);
        put16(buf, o + 4, 7);
        put16(buf, o + 6, 9);
        put16(buf, o + 8, 128);
        putAscii(buf, o + 32, "4420");
        putAscii(buf, o + 256, "nqn.2014-08.org.nvmexpress.discovery");
        putAscii(buf, o + 512, "fe80::1");
        put8(buf, o + 768, 1);
        put8(buf, o + 769, 1);
        put8(buf, o + 770, 1);
        DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(buf, DiscoveryLogHeader.entryOffset(0));
        assertEquals(1, e.trtype());
        assertEquals(2, e.adrfam());
        assertEquals(3, e.subtype());
        assertEquals(1, e.treq());
        assertEquals(7, e.portid());
        assertEquals(9, e.cntlid());
        assertEquals(128, e.asqsz());
        assertEquals("4420", e.trsvcid(), "NUL padded accepted");
        assertEquals("nqn.2014-08.org.nvmexpress.discovery", e.subnqn());
        assertEquals("fe80::1", e.traddr());
        assertEquals(1, e.tsas(0));
        assertEquals(1, e.tsas(2));
        buf.setMemory(o + 32, 32, (byte) ' ');
        putAscii(buf, o + 32, "8009");
        assertEquals("8009", e.trsvcid(), "space padded accepted");
    }

    @Test
    void discoveryConstants() {
        assertEquals(1, DiscoveryLogEntry.TRTYPE_RDMA);
        assertEquals(2, DiscoveryLogEntry.TRTYPE_FC);
        assertEquals(3, DiscoveryLogEntry.TRTYPE_TCP);
        assertEquals(254, DiscoveryLogEntry.TRTYPE_LOOP);
        assertEquals(1, DiscoveryLogEntry.ADRFAM_IPV4);
        assertEquals(2, DiscoveryLogEntry.ADRFAM_IPV6);
        assertEquals(1, DiscoveryLogEntry.SUBTYPE_DISCOVERY_REFERRAL);
        assertEquals(2, DiscoveryLogEntry.SUBTYPE_NVM);
        assertEquals(3, DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY);
        assertEquals(2, DiscoveryLogEntry.TREQ_NOT_REQUIRED);
        assertEquals(4, DiscoveryLogEntry.TREQ_DISABLE_SQFLOW);
        assertEquals(0xFFFF, DiscoveryLogEntry.CNTLID_DYNAMIC);
    }

    @Test
    void errorLogEntry() {
        UnsafeBuffer buf = buffer(128);
        ErrorLogEntry e = new ErrorLogEntry().wrap(buf, 64);
        assertEquals(64, e.length());
        e.errorCount(0x0102030405060708L).sqid(3).cid(0xBEEF).status(Status.LBA_RANGE | Status.DNR)
                .parameterErrorLocation(0x0128).lba(0x1122334455667788L).nsid(0xFFFFFFFFL).trtype(3);
        int o = 64;
        assertEquals(0x0102030405060708L, le64(buf, o), "error count");
        assertEquals(3, le16(buf, o + 8), "SQID");
        assertEquals(0xBEEF, le16(buf, o + 10), "CID");
        assertEquals(0x8000 | 0x80 << 1, le16(buf, o + 12), "status field (phase bit 0 clear)");
        assertEquals(0x0128, le16(buf, o + 14), "parameter error location");
        assertEquals(0x1122334455667788L, le64(buf, o + 16), "LBA");
        assertEquals(0xFFFFFFFFL, le32(buf, o + 24), "NSID");
        assertEquals(0, u8(buf, o + 28), "VS");
        assertEquals(3, u8(buf, o + 29), "TRTYPE");
        assertEquals(0, nonZero(buf, 0, 64));

        put64(buf, o, 5);
        put16(buf, o + 8, 1);
        put16(buf, o + 10, 2);
        put16(buf, o + 12, 0x0004);
        put16(buf, o + 14, 0x2A);
        put64(buf, o + 16, 99);
        put32(buf, o + 24, 1);
        put8(buf, o + 29, 1);
        assertEquals(5, e.errorCount());
        assertEquals(1, e.sqid());
        assertEquals(2, e.cid());
        assertEquals(Status.INVALID_FIELD, e.statusField() >> 1);
        assertEquals(0x2A, e.parameterErrorLocation());
        assertEquals(99, e.lba());
        assertEquals(1, e.nsid());
        assertEquals(1, e.trtype());
    }

    @Test
    void smartHealthLog() {
        UnsafeBuffer buf = buffer(512);
        buf.setMemory(0, 512, (byte) 0xEE);
        SmartHealthLog s = new SmartHealthLog().wrap(buf, 0);
        assertEquals(512, s.length());
        s.criticalWarning(0x04).compositeTemperature(0x0142).availableSpare(100).availableSpareThreshold(10);
        s.dataUnitsRead(0x0102030405060708L).dataUnitsWritten(2).hostReadCommands(3).hostWriteCommands(4)
                .powerOnHours(5).errorLogEntries(6);
        assertEquals(0x04, u8(buf, 0), "critical warning");
        assertEquals(0x0142, le16(buf, 1), "composite temperature");
        assertEquals(100, u8(buf, 3), "available spare");
        assertEquals(10, u8(buf, 4), "threshold");
        assertEquals(0x0102030405060708L, le64(buf, 32), "data units read low");
        assertEquals(0, le64(buf, 40), "data units read high");
        assertEquals(2, le64(buf, 48), "data units written");
        assertEquals(0, le64(buf, 56));
        assertEquals(3, le64(buf, 64), "host reads");
        assertEquals(0, le64(buf, 72));
        assertEquals(4, le64(buf, 80), "host writes");
        assertEquals(0, le64(buf, 88));
        assertEquals(5, le64(buf, 128), "power on hours");
        assertEquals(0, le64(buf, 136));
        assertEquals(6, le64(buf, 176), "error log entries");
        assertEquals(0, le64(buf, 184));
        assertEquals(0xEE, u8(buf, 96), "busy time not written");

        put8(buf, 5, 7);
        assertEquals(7, s.percentageUsed());
        put64(buf, 32, 11);
        put64(buf, 48, 12);
        put64(buf, 64, 13);
        put64(buf, 80, 14);
        put64(buf, 128, 15);
        put64(buf, 176, 16);
        put16(buf, 1, 273);
        assertEquals(11, s.dataUnitsRead());
        assertEquals(12, s.dataUnitsWritten());
        assertEquals(13, s.hostReadCommands());
        assertEquals(14, s.hostWriteCommands());
        assertEquals(15, s.powerOnHours());
        assertEquals(16, s.errorLogEntries());
        assertEquals(273, s.compositeTemperature());
        assertEquals(100, s.availableSpare());
        assertEquals(10, s.availableSpareThreshold());
        assertEquals(4, s.criticalWarning());
    }

    @Test
    void smartDataUnits() {
        assertEquals(0, SmartHealthLog.dataUnits(0));
        assertEquals(1, SmartHealthLog.dataUnits(1));
        assertEquals(1, SmartHealthLog.dataUnits(512));
        assertEquals(1, SmartHealthLog.dataUnits(512000));
        assertEquals(2, SmartHealthLog.dataUnits(512001));
        assertEquals(2, SmartHealthLog.dataUnits(1024000));
        assertEquals(3, SmartHealthLog.dataUnits(1024001));
        assertEquals(2098, SmartHealthLog.dataUnits(1L << 30), "2097152 sectors round up to 2098 units");
    }

    @Test
    void changedNamespaceList() {
        UnsafeBuffer buf = buffer(4096);
        ChangedNamespaceList l = new ChangedNamespaceList().wrap(buf, 0);
        assertEquals(4096, l.length());
        l.nsid(0, 1).nsid(1, 0xFFFFFFFFL).nsid(1023, 7);
        assertEquals(1, le32(buf, 0));
        assertEquals(0xFFFFFFFFL, le32(buf, 4));
        assertEquals(7, le32(buf, 4092));
        put32(buf, 8, 42);
        assertEquals(42, l.nsid(2));
        assertEquals(0xFFFFFFFFL, ChangedNamespaceList.OVERFLOW);
        assertEquals(1024, ChangedNamespaceList.MAX_ENTRIES);
    }
}

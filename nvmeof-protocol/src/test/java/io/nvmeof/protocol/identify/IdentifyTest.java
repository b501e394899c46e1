package io.nvmeof.protocol.identify;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** Identify Controller, Identify Namespace (NVM) and Namespace Identification Descriptors. */
class IdentifyTest {
    @Test
    void identifyControllerWriteOffsets() {
        UnsafeBuffer buf = buffer(4096);
        IdentifyController id = new IdentifyController().wrap(buf, 0);
        assertEquals(4096, id.length());
        id.vid(0x1B36).ssvid(0x1AF4).serialNumber("SN123").modelNumber("Model X").firmwareRevision("1.0");
        id.rab(6).cmic(0x0B).mdts(5).cntlid(0x0102).version(0x00010400L).oaes(1 << 8).ctratt(0x80);
        id.controllerType(1).oacs(0x0204).acl(3).aerl(4).frmw(0x3).lpa(0x4).elpe(63).kas(100);
        id.sqes(0x66).cqes(0x44).maxcmd(128).nn(1024).oncs(0x0D).vwc(0x7).sgls(0x0010_0005L).mnan(0x55);
        id.subnqn("nqn.2014-08.org.example:s1");
        id.ioccsz(0x104).iorcsz(1).icdoff(0x0201).fcatt(1).msdbd(1).psd0MaxPower(2500);

        assertEquals(0x1B36, le16(buf, 0), "VID");
        assertEquals(0x1AF4, le16(buf, 2), "SSVID");
        assertEquals("SN123               ", ascii(buf, 4, 20), "SN space padded");
        assertEquals("Model X" + " ".repeat(33), ascii(buf, 24, 40), "MN space padded");
        assertEquals("1.0     ", ascii(buf, 64, 8), "FR space padded");
        assertEquals(6, u8(buf, 72), "RAB");
        assertEquals(0x0B, u8(buf, 76), "CMIC");
        assertEquals(5, u8(buf, 77), "MDTS");
        assertEquals(0x0102, le16(buf, 78), "CNTLID");
        assertEquals(0x00010400L, le32(buf, 80), "VER");
        assertEquals(0x100L, le32(buf, 92), "OAES");
        assertEquals(0x80L, le32(buf, 96), "CTRATT");
        assertEquals(1, u8(buf, 111), "CNTRLTYPE");
        assertEquals(0x0204, le16(buf, 256), "OACS");
        assertEquals(3, u8(buf, 258), "ACL");
        assertEquals(4, u8(buf, 259), "AERL");
        assertEquals(3, u8(buf, 260), "FRMW");
        assertEquals(4, u8(buf, 261), "LPA");
        assertEquals(63, u8(buf, 262), "ELPE");
        assertEquals(100, le16(buf, 320), "KAS");
        assertEquals(0x66, u8(buf, 512), "SQES");
        assertEquals(0x44, u8(buf, 513), "CQES");
        assertEquals(128, le16(buf, 514), "MAXCMD");
        assertEquals(1024L, le32(buf, 516), "NN");
        assertEquals(0x0D, le16(buf, 520), "ONCS");
        assertEquals(7, u8(buf, 525), "VWC");
        assertEquals(0x00100005L, le32(buf, 536), "SGLS");
        assertEquals(0x55L, le32(buf, 540), "MNAN");
        assertEquals("nqn.2014-08.org.example:s1", ascii(buf, 768, 26), "SUBNQN");
        assertEquals(0, nonZero(buf, 768 + 26, 1024), "SUBNQN NUL padded");
        assertEquals(0x104L, le32(buf, 1792), "IOCCSZ");
        assertEquals(1L, le32(buf, 1796), "IORCSZ");
        assertEquals(0x0201, le16(buf, 1800), "ICDOFF");
        assertEquals(1, u8(buf, 1802), "FCATT");
        assertEquals(1, u8(buf, 1803), "MSDBD");
        assertEquals(2500, le16(buf, 2048), "PSD0 MP");
    }

    @Test
    void identifyControllerDecodeHandBuilt() {
        UnsafeBuffer buf = buffer(4096 + 64);
        int o = 64;
        put16(buf, o, 0x8086);
        putAscii(buf, o + 4, "ABCDEFGHIJKLMNOPQRST");
        putAscii(buf, o + 24, "model");
        putAscii(buf, o + 64, "fw");
        put8(buf, o + 77, 9);
        put16(buf, o + 78, 0xFFEE);
        put32(buf, o + 80, 0x00020000L);
        put32(buf, o + 92, 0x100);
        put8(buf, o + 111, 2);
        put16(buf, o + 256, 0x8);
        put8(buf, o + 258, 7);
        put8(buf, o + 259, 3);
        put8(buf, o + 261, 0x6);
        put8(buf, o + 262, 0x3F);
        put16(buf, o + 320, 10);
        put8(buf, o + 512, 0x66);
        put8(buf, o + 513, 0x44);
        put16(buf, o + 514, 0x400);
        put32(buf, o + 516, 0xFFFFFFFEL);
        put16(buf, o + 520, 0x5);
        put16(buf, o + 522, 0x1);
        put8(buf, o + 525, 1);
        put16(buf, o + 528, 0x7);
        put32(buf, o + 536, 0x100005);
        putAscii(buf, o + 768, "nqn.x");
        put32(buf, o + 1792, 260);
        put32(buf, o + 1796, 1);
        put16(buf, o + 1800, 0);
        put8(buf, o + 1802, 1);
        put8(buf, o + 1803, 2);
        IdentifyController id = new IdentifyController().wrap(buf, o);
        assertEquals(0x8086, id.vid());
        assertEquals("ABCDEFGHIJKLMNOPQRST", id.serialNumber());
        assertEquals("model", id.modelNumber(), "NUL padding read as spaces and trimmed");
        assertEquals("fw", id.firmwareRevision());
        assertEquals(9, id.mdts());
        assertEquals(0xFFEE, id.cntlid());
        assertEquals(0x00020000L, id.version());
        assertEquals(0x100L, id.oaes());
        assertEquals(2, id.controllerType());
        assertEquals(8, id.oacs());
        assertEquals(7, id.acl());
        assertEquals(3, id.aerl());
        assertEquals(6, id.lpa());
        assertEquals(0x3F, id.elpe());
        assertEquals(10, id.kas());
        assertEquals(0x66, id.sqes());
        assertEquals(0x44, id.cqes());
        assertEquals(0x400, id.maxcmd());
        assertEquals(0xFFFFFFFEL, id.nn());
        assertEquals(5, id.oncs());
        assertEquals(1, id.fuses());
        assertEquals(1, id.vwc());
        assertEquals(7, id.awupf());
        assertEquals(0x100005L, id.sgls());
        assertEquals("nqn.x", id.subnqn());
        assertEquals(260, id.ioccsz());
        assertEquals(1, id.iorcsz());
        assertEquals(0, id.icdoff());
        assertEquals(1, id.fcatt());
        assertEquals(2, id.msdbd());
    }

    @Test
    void identifyControllerStringsTruncatedAndConstants() {
        UnsafeBuffer buf = buffer(4096);
        IdentifyController id = new IdentifyController().wrap(buf, 0);
        id.serialNumber("0123456789012345678901234");
        assertEquals("01234567890123456789", ascii(buf, 4, 20));
        assertEquals(0, u8(buf, 24), "SN does not spill into MN");
        assertEquals(1, IdentifyController.CNTRLTYPE_IO);
        assertEquals(2, IdentifyController.CNTRLTYPE_DISCOVERY);
        assertEquals(1, IdentifyController.ONCS_COMPARE);
        assertEquals(4, IdentifyController.ONCS_DSM);
        assertEquals(8, IdentifyController.ONCS_WRITE_ZEROES);
        assertEquals(0x100, IdentifyController.OAES_NS_ATTR);
        assertEquals(0x4, IdentifyController.LPA_EXTENDED);
        assertEquals(1, IdentifyController.SGLS_SUPPORTED);
        assertEquals(0x4, IdentifyController.SGLS_KEYED);
        assertEquals(0x100000, IdentifyController.SGLS_OFFSET);
    }

    @Test
    void identifyNamespaceWriteOffsets() {
        UnsafeBuffer buf = buffer(4096);
        IdentifyNamespace ns = new IdentifyNamespace().wrap(buf, 0);
        assertEquals(4096, ns.length());
        byte[] nguid = new byte[16];
        byte[] eui = new byte[8];
        for (int i = 0; i < 16; i++) {
            nguid[i] = (byte) (0x10 + i);
        }
        for (int i = 0; i < 8; i++) {
            eui[i] = (byte) (0xE0 + i);
        }
        ns.nsze(0x0102030405060708L).ncap(0x1111L).nuse(0x2222L).nsfeat(1).nlbaf(1).flbas(1).dlfeat(9);
        ns.nguid(nguid).eui64(eui);
        ns.lbaf(0, 0, 9, 0).lbaf(1, 8, 12, 2);
        assertEquals(0x0102030405060708L, le64(buf, 0), "NSZE");
        assertEquals(0x1111L, le64(buf, 8), "NCAP");
        assertEquals(0x2222L, le64(buf, 16), "NUSE");
        assertEquals(1, u8(buf, 24), "NSFEAT");
        assertEquals(1, u8(buf, 25), "NLBAF");
        assertEquals(1, u8(buf, 26), "FLBAS");
        assertEquals(9, u8(buf, 33), "DLFEAT");
        for (int i = 0; i < 16; i++) {
            assertEquals(0x10 + i, u8(buf, 104 + i), "NGUID");
        }
        for (int i = 0; i < 8; i++) {
            assertEquals(0xE0 + i, u8(buf, 120 + i), "EUI64");
        }
        assertEquals(0, le16(buf, 128), "LBAF0 MS");
        assertEquals(9, u8(buf, 130), "LBAF0 LBADS");
        assertEquals(0, u8(buf, 131), "LBAF0 RP");
        assertEquals(8, le16(buf, 132), "LBAF1 MS");
        assertEquals(12, u8(buf, 134), "LBAF1 LBADS");
        assertEquals(2, u8(buf, 135), "LBAF1 RP");
        assertEquals(4096, ns.blockSize());
        ns.flbas(0);
        assertEquals(512, ns.blockSize());
        assertEquals(0x9, IdentifyNamespace.DLFEAT_READ_ZEROES);
    }

    @Test
    void identifyNamespaceDecodeHandBuilt() {
        UnsafeBuffer buf = buffer(4096);
        put64(buf, 0, 1L << 33);
        put64(buf, 8, 1L << 32);
        put64(buf, 16, 5);
        put8(buf, 24, 0x1);
        put8(buf, 25, 2);
        put8(buf, 26, 0x12); // bit 4 (metadata at end of LBA) set, format index 2
        put8(buf, 33, 0x9);
        put32(buf, 128, 0x00090000L);
        put32(buf, 132, 0x010C0008L);
        put32(buf, 136, 0x000D0000L); // LBAF2: 8 KiB, no metadata
        for (int i = 0; i < 16; i++) {
            put8(buf, 104 + i, 0xC0 + i);
        }
        for (int i = 0; i < 8; i++) {
            put8(buf, 120 + i, 0xD0 + i);
        }
        IdentifyNamespace ns = new IdentifyNamespace().wrap(buf, 0);
        assertEquals(1L << 33, ns.nsze());
        assertEquals(1L << 32, ns.ncap());
        assertEquals(5, ns.nuse());
        assertEquals(1, ns.nsfeat());
        assertEquals(2, ns.nlbaf());
        assertEquals(0x12, ns.flbas());
        assertEquals(9, ns.dlfeat());
        assertEquals(0, ns.lbafMetadataSize(0));
        assertEquals(9, ns.lbafDataSizeShift(0));
        assertEquals(8, ns.lbafMetadataSize(1));
        assertEquals(12, ns.lbafDataSizeShift(1));
        assertEquals(13, ns.lbafDataSizeShift(2));
        assertEquals(8192, ns.blockSize());
        byte[] nguid = new byte[16];
        ns.readNguid(nguid);
        assertEquals((byte) 0xC0, nguid[0]);
        assertEquals((byte) 0xCF, nguid[15]);
        byte[] eui = new byte[8];
        ns.readEui64(eui);
        assertEquals((byte) 0xD0, eui[0]);
        assertEquals((byte) 0xD7, eui[7]);
    }

    @Test
    void namespaceDescriptors() {
        UnsafeBuffer buf = buffer(4096);
        buf.setMemory(0, 64, (byte) 0xEE);
        NamespaceDescriptor d = new NamespaceDescriptor();
        byte[] nguid = new byte[16];
        for (int i = 0; i < 16; i++) {
            nguid[i] = (byte) (i + 1);
        }
        int at = 0;
        at += d.<NamespaceDescriptor>wrap(buf, at).write(NamespaceDescriptor.TYPE_NGUID, nguid);
        assertEquals(20, at, "4 + 16");
        int n = d.<NamespaceDescriptor>wrap(buf, at).write(NamespaceDescriptor.TYPE_CSI, new byte[] {0});
        assertEquals(5, n, "4 + 1");
        assertEquals(2, u8(buf, 0), "NIDT");
        assertEquals(16, u8(buf, 1), "NIDL");
        assertEquals(0, le16(buf, 2), "reserved");
        assertEquals(1, u8(buf, 4), "NID at 4");
        assertEquals(16, u8(buf, 19));
        assertEquals(4, u8(buf, 20));
        assertEquals(1, u8(buf, 21));
        assertEquals(0, le16(buf, 22));
        assertEquals(0, u8(buf, 24));

        NamespaceDescriptor r = new NamespaceDescriptor().wrap(buf, 0);
        assertEquals(2, r.nidt());
        assertEquals(16, r.nidl());
        assertEquals(20, r.length());
        byte[] out = new byte[16];
        r.nid(out);
        assertArrayEquals(nguid, out);
        assertEquals(1, NamespaceDescriptor.TYPE_EUI64);
        assertEquals(2, NamespaceDescriptor.TYPE_NGUID);
        assertEquals(3, NamespaceDescriptor.TYPE_UUID);
        assertEquals(4, NamespaceDescriptor.TYPE_CSI);
    }
}

package io.nvmeof.protocol.fabrics;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import io.nvmeof.protocol.Opcodes;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** NVMe-oF Fabrics commands (Connect, Property Get/Set), Connect data and NQNs. */
class FabricsTest {
    @Test
    void connectCommandLayout() {
        UnsafeBuffer buf = buffer(64);
        FabricsCommand c = new FabricsCommand().wrap(buf, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_CONNECT).recfmt(0x0102).qid(0x0304).sqsize(0x0506).cattr(0x07).kato(0x08090A0BL);
        assertEquals(0x7F, u8(buf, 0));
        assertEquals(0x01, u8(buf, 4), "fctype at byte 4");
        assertEquals(0x0102, le16(buf, 40), "RECFMT");
        assertEquals(0x0304, le16(buf, 42), "QID");
        assertEquals(0x0506, le16(buf, 44), "SQSIZE");
        assertEquals(0x07, u8(buf, 46), "CATTR");
        assertEquals(0, u8(buf, 47));
        assertEquals(0x08090A0BL, le32(buf, 48), "KATO");
        assertEquals(0x0B, u8(buf, 48));
        assertEquals(13, nonZero(buf, 0, 64));
    }

    @Test
    void connectDecodeHandBuilt() {
        UnsafeBuffer buf = buffer(128);
        put8(buf, 64, 0x7F);
        put8(buf, 68, 0x01);
        put16(buf, 104, 0);
        put16(buf, 106, 3);
        put16(buf, 108, 127);
        put8(buf, 110, 0x04);
        put32(buf, 112, 120000);
        FabricsCommand c = new FabricsCommand().wrap(buf, 64);
        assertEquals(0x7F, c.opcode());
        assertEquals(Opcodes.FCTYPE_CONNECT, c.fctype());
        assertEquals(0, c.recfmt());
        assertEquals(3, c.qid());
        assertEquals(127, c.sqsize());
        assertEquals(4, c.cattr());
        assertTrue(c.sqFlowControlDisabled());
        assertEquals(120000, c.kato());
        put8(buf, 110, 0x03);
        assertFalse(c.sqFlowControlDisabled());
        assertEquals(0x4, FabricsCommand.CATTR_DISABLE_SQ_FLOW_CONTROL);
    }

    @Test
    void propertyGetSetLayout() {
        UnsafeBuffer buf = buffer(64);
        FabricsCommand c = new FabricsCommand().wrap(buf, 0);
        c.fctype(Opcodes.FCTYPE_PROPERTY_SET).propertySize(8).propertyOffset(0x14).propertyValue(0x0011223344556677L);
        assertEquals(0x00, u8(buf, 4));
        assertEquals(0x01, u8(buf, 40), "ATTRIB 1 = 8-byte property");
        assertEquals(0x14L, le32(buf, 44), "OFST");
        assertEquals(0x0011223344556677L, le64(buf, 48), "VALUE");
        c.propertySize(4);
        assertEquals(0x00, u8(buf, 40));
        assertEquals(4, c.propertySize());

        buf.setMemory(0, 64, (byte) 0);
        put8(buf, 4, 0x04);
        put8(buf, 40, 0x01);
        put32(buf, 44, 0x1C);
        put64(buf, 48, 0x8000000000000001L);
        assertEquals(Opcodes.FCTYPE_PROPERTY_GET, c.fctype());
        assertEquals(8, c.propertySize());
        assertEquals(0x1C, c.propertyOffset());
        assertEquals(0x8000000000000001L, c.propertyValue());
        put8(buf, 40, 0xF8); // reserved bits 7:3 must not change the size
        assertEquals(4, c.propertySize());
    }

    @Test
    void connectDataLayout() {
        UnsafeBuffer buf = buffer(1024 + 8);
        ConnectData d = new ConnectData().wrap(buf, 8);
        assertEquals(1024, d.length());
        byte[] hostid = new byte[16];
        for (int i = 0; i < 16; i++) {
            hostid[i] = (byte) (0xA0 + i);
        }
        buf.setMemory(8, 1024, (byte) 0x55);
        d.hostId(hostid).cntlid(0xFFFF).subnqn("nqn.2014-08.org.nvmexpress.discovery").hostnqn("nqn.host:x");
        for (int i = 0; i < 16; i++) {
            assertEquals(0xA0 + i, u8(buf, 8 + i));
        }
        assertEquals(0xFFFF, le16(buf, 8 + 16));
        assertEquals("nqn.2014-08.org.nvmexpress.discovery", ascii(buf, 8 + 256, 36));
        for (int i = 36; i < 256; i++) {
            assertEquals(0, u8(buf, 8 + 256 + i), "subnqn NUL padded at " + i);
        }
        assertEquals("nqn.host:x", ascii(buf, 8 + 512, 10));
        assertEquals(0, nonZero(buf, 8 + 512 + 10, 8 + 768));
        assertEquals(0x55, u8(buf, 8 + 768), "nothing written past hostnqn");
        assertEquals(0x55, u8(buf, 8 + 18), "reserved bytes untouched");
    }

    @Test
    void connectDataDecodeHandBuilt() {
        UnsafeBuffer buf = buffer(1024);
        for (int i = 0; i < 16; i++) {
            put8(buf, i, i + 1);
        }
        put16(buf, 16, 0x0102);
        putAscii(buf, 256, "nqn.2024-01.io.test:sub");
        putAscii(buf, 512, "testnqn");
        ConnectData d = new ConnectData().wrap(buf, 0);
        byte[] id = new byte[16];
        d.readHostId(id);
        for (int i = 0; i < 16; i++) {
            assertEquals(i + 1, id[i]);
        }
        assertEquals(0x0102, d.cntlid());
        assertEquals("nqn.2024-01.io.test:sub", d.subnqn());
        assertEquals("testnqn", d.hostnqn());
        assertTrue(d.nqnTerminated(256));
        assertTrue(d.nqnTerminated(512));
        buf.setMemory(512, 256, (byte) 'a');
        assertFalse(d.nqnTerminated(512));
        assertEquals(256, d.hostnqn().length());
        put8(buf, 767, 0);
        assertTrue(d.nqnTerminated(512));
        assertEquals(255, d.hostnqn().length());
    }

    @Test
    void connectDataNqnTooLongRejected() {
        ConnectData d = new ConnectData().wrap(buffer(1024), 0);
        assertThrows(IllegalArgumentException.class, () -> d.subnqn("x".repeat(257)));
        d.subnqn("y".repeat(256));
        assertFalse(d.nqnTerminated(256));
    }

    /** What the admin may create: the spec's two NQN formats only (Connect stays liberal: see nqnValidate). */
    @Test
    void nqnValidateFormat() {
        assertNull(Nqn.validateFormat("nqn.2026-12.com.example:disk1"));
        assertNull(Nqn.validateFormat("nqn.2026-12.com.example"));
        assertNull(Nqn.validateFormat(Nqn.DISCOVERY));
        assertNull(Nqn.validateFormat("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"));
        assertNotNull(Nqn.validateFormat("testnqn"), "no nqn. prefix");
        assertNotNull(Nqn.validateFormat("nqn.26-12.com.example:x"), "year of 2 digits");
        assertNotNull(Nqn.validateFormat("nqn.2026-13.com.example:x"), "month 13");
        assertNotNull(Nqn.validateFormat("nqn.2026-12.:x"), "no domain");
        assertNotNull(Nqn.validateFormat("nqn.2026-12.com.example:"), "empty name after ':'");
        assertNotNull(Nqn.validateFormat("nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"));
        assertNotNull(Nqn.validateFormat("nqn.2026-12.com.example:" + "x".repeat(200)), "over 223 bytes");
        assertNotNull(Nqn.validateFormat("nqn.2026-12.com.example:pool/disk1"), "'/': no configfs directory name");
    }

    @Test
    void nqnValidate() {
        assertNull(Nqn.validate("x".repeat(223)), "223 bytes is the limit");
        assertNotNull(Nqn.validate("x".repeat(224)));
        assertNotNull(Nqn.validate(""));
        assertNotNull(Nqn.validate(null));
        assertNull(Nqn.validate("testnqn"));
        assertNull(Nqn.validate(Nqn.DISCOVERY));
        assertNotNull(Nqn.validate("nqn.2014-08.org.example:caf\u00e9"));
        assertNotNull(Nqn.validate("nqn.2014-08.org.example:\u0001"));
        assertNotNull(Nqn.validate("nqn.2014-08.org.example:a\u007f"));
        assertEquals(223, Nqn.MAX_LENGTH);
    }

    @Test
    void nqnIsConforming() {
        assertTrue(Nqn.isConforming(Nqn.DISCOVERY));
        assertTrue(Nqn.isConforming("nqn.2016-06.io.spdk:cnode1"));
        assertTrue(Nqn.isConforming(Nqn.fromUuid(UUID.fromString("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"))));
        assertEquals("nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
                Nqn.fromUuid(UUID.fromString("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")));
        assertFalse(Nqn.isConforming("testnqn"));
        assertFalse(Nqn.isConforming("nqn.14-08.org.example"));
        assertFalse(Nqn.isConforming("iqn.2014-08.org.example:x"));
        assertEquals("nqn.2014-08.org.nvmexpress.discovery", Nqn.DISCOVERY);
    }
}

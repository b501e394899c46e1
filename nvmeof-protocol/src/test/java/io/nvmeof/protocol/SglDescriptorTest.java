package io.nvmeof.protocol;

import static io.nvmeof.protocol.Raw.*;
import static org.junit.jupiter.api.Assertions.*;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** SGL descriptor, 16 bytes (NVMe Base "SGL Descriptor"), as carried in DPTR at SQE byte 24. */
class SglDescriptorTest {
    private final UnsafeBuffer buf = buffer(64);
    private final Command cmd = new Command().wrap(buf, 0);
    private final SglDescriptor sgl = new SglDescriptor().wrap(buf, cmd.dptrOffset());

    @Test
    void dataBlockAtDptr() {
        assertEquals(16, sgl.length());
        sgl.address(0x0102030405060708L).dataLength(0xA0B0C0D0L).identifier(0x5A);
        assertEquals(0x0102030405060708L, le64(buf, 24), "address at SGL byte 0");
        assertEquals(0x08, u8(buf, 24));
        assertEquals(0xA0B0C0D0L, le32(buf, 32), "length at SGL byte 8");
        assertEquals(0x5A, u8(buf, 39), "identifier at SGL byte 15");
        assertEquals(5, sgl.type());
        assertEquals(0xA, sgl.subtype());
    }

    @Test
    void inCapsuleIdentifierIs01() {
        buf.setMemory(24, 16, (byte) 0xFF);
        sgl.inCapsule(0, 4096);
        assertEquals(0L, le64(buf, 24));
        assertEquals(4096L, le32(buf, 32));
        assertEquals(0, u8(buf, 36));
        assertEquals(0, u8(buf, 37));
        assertEquals(0, u8(buf, 38));
        assertEquals(0x01, u8(buf, 39), "data block (0h) / offset (1h)");
        assertEquals(0x01, SglDescriptor.ID_IN_CAPSULE);
        assertEquals(SglDescriptor.TYPE_DATA_BLOCK, sgl.type());
        assertEquals(SglDescriptor.SUBTYPE_OFFSET, sgl.subtype());
    }

    @Test
    void tcpTransportIdentifierIs5A() {
        buf.setMemory(24, 16, (byte) 0xFF);
        sgl.transportBlock(8192);
        assertEquals(0L, le64(buf, 24));
        assertEquals(8192L, le32(buf, 32));
        assertEquals(0, le16(buf, 36) | u8(buf, 38));
        assertEquals(0x5A, u8(buf, 39), "transport data block (5h) / transport specific (Ah)");
        assertEquals(0x5A, SglDescriptor.ID_TCP_TRANSPORT);
    }

    @Test
    void keyedDataBlock() {
        sgl.keyed(0x1122334455667788L, 0xABCDEF, 0x12345678L, false);
        assertEquals(0x1122334455667788L, le64(buf, 24));
        assertEquals(0xEF, u8(buf, 32), "24-bit length at 8..10");
        assertEquals(0xCD, u8(buf, 33));
        assertEquals(0xAB, u8(buf, 34));
        assertEquals(0x12345678L, le32(buf, 35), "key at 11..14");
        assertEquals(0x78, u8(buf, 35));
        assertEquals(0x40, u8(buf, 39), "keyed data block (4h) / address (0h)");
        sgl.keyed(1, 1, 2, true);
        assertEquals(0x4F, u8(buf, 39), "keyed data block (4h) / invalidate key (Fh)");
        assertEquals(1, le32(buf, 32) & 0xFFFFFF);
        assertEquals(2, le32(buf, 35));
    }

    @Test
    void decodeHandBuiltKeyed() {
        put64(buf, 24, 0xCAFEBABE00000000L);
        put8(buf, 32, 0x00);
        put8(buf, 33, 0x10);
        put8(buf, 34, 0x02); // 0x021000
        put32(buf, 35, 0xFEEDF00DL);
        put8(buf, 39, 0x4F);
        assertEquals(0xCAFEBABE00000000L, sgl.address());
        assertEquals(0x021000, sgl.keyedLength());
        assertEquals(0xFEEDF00DL, sgl.key());
        assertEquals(0x4F, sgl.identifier());
        assertEquals(4, sgl.type());
        assertEquals(0xF, sgl.subtype());
        // The same bytes read as a plain data block length: bytes 8..11
        assertEquals(0x0D021000L, sgl.dataLength());
    }

    @Test
    void typeAndSubtypeConstants() {
        assertEquals(0x0, SglDescriptor.TYPE_DATA_BLOCK);
        assertEquals(0x1, SglDescriptor.TYPE_BIT_BUCKET);
        assertEquals(0x2, SglDescriptor.TYPE_SEGMENT);
        assertEquals(0x3, SglDescriptor.TYPE_LAST_SEGMENT);
        assertEquals(0x4, SglDescriptor.TYPE_KEYED_DATA_BLOCK);
        assertEquals(0x5, SglDescriptor.TYPE_TRANSPORT_DATA_BLOCK);
        assertEquals(0x0, SglDescriptor.SUBTYPE_ADDRESS);
        assertEquals(0x1, SglDescriptor.SUBTYPE_OFFSET);
        assertEquals(0xA, SglDescriptor.SUBTYPE_TRANSPORT_A);
        assertEquals(0xF, SglDescriptor.SUBTYPE_INVALIDATE_KEY);
    }
}

package io.nvmeof.rdma;

import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The batch records are a binary contract between Java (SendBatch, RecvBatch, CompletionBatch) and nvmeof_rdma.h.
 * The first tests pin the byte offsets on the Java side; the native ones feed Java-written descriptors through the
 * helper's own chain builders (nvr_debug_decode_*, the code nvr_post_* uses) and Java-read records through its
 * completion encoder. They need the helper, not a device, so they run on any machine with rdma-core installed.
 */
class DescriptorLayoutTest {

    @Test
    void sendDescriptorBytes() {
        SendBatch b = new SendBatch(4);
        b.rdmaWrite(0x0102030405060708L, 0x1111_2222_3333_4444L, 0x55667788, 0x99AABBCC, 0x0A0B0C0D0E0F1011L,
                0x12131415, SendBatch.SIGNALED | SendBatch.FENCE);
        var buf = b.buffer();
        assertEquals(0x0102030405060708L, buf.getLong(0, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x08, buf.getByte(0)); // little-endian: low byte first
        assertEquals(0x1111_2222_3333_4444L, buf.getLong(8, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x0A0B0C0D0E0F1011L, buf.getLong(16, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x55667788, buf.getInt(24, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x99AABBCC, buf.getInt(28, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x12131415, buf.getInt(32, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0, buf.getInt(36, ByteOrder.LITTLE_ENDIAN));
        assertEquals(SendBatch.OP_RDMA_WRITE, buf.getByte(40));
        assertEquals(SendBatch.SIGNALED | SendBatch.FENCE, buf.getByte(41));
        for (int i = 42; i < 48; i++) {
            assertEquals(0, buf.getByte(i), "reserved byte " + i);
        }
        b.sendWithInvalidate(7, 0x1000, 64, 5, 0xCAFEBABE, SendBatch.INLINE);
        assertEquals(7L, buf.getLong(48, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0xCAFEBABE, buf.getInt(48 + 36, ByteOrder.LITTLE_ENDIAN));
        assertEquals(SendBatch.OP_SEND_WITH_INV, b.opcode(1));
        assertEquals(SendBatch.INLINE, b.flags(1));
        assertEquals(2, b.size());
    }

    @Test
    void recvDescriptorBytes() {
        RecvBatch b = new RecvBatch(2);
        b.add(0xFEDCBA9876543210L, 0x7FFF_0000_1234L, 8192 + 64, 0x42);
        var buf = b.buffer();
        assertEquals(0xFEDCBA9876543210L, buf.getLong(0, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x7FFF_0000_1234L, buf.getLong(8, ByteOrder.LITTLE_ENDIAN));
        assertEquals(8192 + 64, buf.getInt(16, ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x42, buf.getInt(20, ByteOrder.LITTLE_ENDIAN));
    }

    @Test
    void batchesRefuseOverflowAndBadCapacity() {
        SendBatch b = new SendBatch(1);
        b.send(1, 0, 0, 0, 0);
        assertThrows(IllegalStateException.class, () -> b.send(2, 0, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new SendBatch(65));
        assertThrows(IllegalArgumentException.class, () -> new RecvBatch(0));
        b.clear();
        assertEquals(0, b.size());
    }

    @Test
    void helperAgreesOnSizes() {
        assumeTrue(RdmaLibrary.isHelperLoaded(), RdmaLibrary::unavailableReason);
        assertEquals(SendBatch.DESCRIPTOR_SIZE, NvrNative.nvr_send_desc_size());
        assertEquals(RecvBatch.DESCRIPTOR_SIZE, NvrNative.nvr_recv_desc_size());
        assertEquals(CompletionBatch.RECORD_SIZE, NvrNative.nvr_wc_size());
        assertEquals(SendBatch.MAX_BATCH, NvrNative.nvr_max_batch());
        assertEquals(RdmaLibrary.ABI_VERSION, NvrNative.nvr_abi_version());
        assertEquals(5_000_000_000L + 7, NvrNative.nvr_add(5_000_000_000L, 7)); // 64-bit arguments survive the call
    }

    @Test
    void helperBuildsTheSendChainJavaDescribes() {
        assumeTrue(RdmaLibrary.isHelperLoaded(), RdmaLibrary::unavailableReason);
        SendBatch b = new SendBatch(SendBatch.MAX_BATCH);
        b.rdmaWrite(11, 0x10_0000_0000L, 4096, 0x101, 0x7F00_DEAD_0000L, 0x202, 0);
        b.rdmaRead(12, 0x20_0000_0000L, 131072, 0x103, 0x1_2345_6789_ABCDL, 0x204, SendBatch.FENCE);
        b.send(13, 0x30_0000L, 16, 0x105, SendBatch.SIGNALED | SendBatch.SOLICITED);
        b.sendWithInvalidate(14, 0x40_0000L, 16, 0x107, 0xABCD0001, SendBatch.SIGNALED | SendBatch.INLINE);
        b.send(15, 0, 0, 0, 0); // zero-length SEND: no SGE
        long[] out = new long[12 * 5];
        assertEquals(0, NvrNative.nvr_debug_decode_send(b.address(), b.size(), out));
        // libibverbs' enum ibv_wr_opcode: RDMA_WRITE 0, SEND 2, RDMA_READ 4, SEND_WITH_INV 9;
        // enum ibv_send_flags: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8
        assertRow(out, 0, 11, 0, 0, 1, 0x10_0000_0000L, 4096, 0x101, 0x7F00_DEAD_0000L, 0x202, 0, 1);
        assertRow(out, 1, 12, 4, 1, 1, 0x20_0000_0000L, 131072, 0x103, 0x1_2345_6789_ABCDL, 0x204, 0, 2);
        assertRow(out, 2, 13, 2, 2 | 4, 1, 0x30_0000L, 16, 0x105, -1, -1, 0, 3);
        assertRow(out, 3, 14, 9, 2 | 8, 1, 0x40_0000L, 16, 0x107, -1, -1, 0xABCD0001L, 4);
        assertRow(out, 4, 15, 2, 0, 0, 0, 0, 0, -1, -1, 0, -1);
    }

    @Test
    void helperRejectsUnknownOpcodeAndOversizedBatch() {
        assumeTrue(RdmaLibrary.isHelperLoaded(), RdmaLibrary::unavailableReason);
        SendBatch b = new SendBatch(2);
        b.send(1, 0, 0, 0, 0).add(9, 2, 0, 0, 0, 0, 0, 0, 0);
        assertEquals(-22, NvrNative.nvr_debug_decode_send(b.address(), 2, new long[24])); // -EINVAL
        // Over 64 descriptors: refused before the QP pointer is touched (so a dummy QP is safe here).
        assertEquals(-22, NvrNative.nvr_post_send(0xDEAD0000L, b.address(), 65, b.badIndexAddress()));
        assertEquals(0, b.badIndex());
        assertEquals(0, NvrNative.nvr_post_send(0xDEAD0000L, b.address(), 0, b.badIndexAddress()));
    }

    @Test
    void helperBuildsTheRecvChainJavaDescribes() {
        assumeTrue(RdmaLibrary.isHelperLoaded(), RdmaLibrary::unavailableReason);
        RecvBatch b = new RecvBatch(8);
        for (int i = 0; i < 3; i++) {
            b.add(100 + i, 0x5_0000_0000L + 8192L * i, 8192, 0x300 + i);
        }
        long[] out = new long[5 * 3];
        assertEquals(0, NvrNative.nvr_debug_decode_recv(b.address(), 3, out));
        for (int i = 0; i < 3; i++) {
            assertEquals(100 + i, out[5 * i]);
            assertEquals(0x5_0000_0000L + 8192L * i, out[5 * i + 1]);
            assertEquals(8192, out[5 * i + 2]);
            assertEquals(0x300 + i, out[5 * i + 3]);
            assertEquals(i == 2 ? -1 : i + 1, out[5 * i + 4]);
        }
    }

    @Test
    void completionRecordsReadBack() {
        assumeTrue(RdmaLibrary.isHelperLoaded(), RdmaLibrary::unavailableReason);
        CompletionBatch c = new CompletionBatch(16);
        int n = NvrNative.nvr_debug_fill_wc(c.address(), 6, 0x7000_0000_0000_0000L);
        c.count(n);
        assertEquals(6, c.count());
        for (int i = 0; i < 6; i++) {
            assertEquals(0x7000_0000_0000_0000L + i, c.wrId(i));
            assertEquals(i % 3, c.status(i));
            assertEquals((i & 1) == 1 ? CompletionBatch.WC_RECV : CompletionBatch.WC_RDMA_WRITE, c.opcode(i));
            assertEquals(4096 * i, c.byteLength(i));
            assertEquals((i & 1) == 1 ? CompletionBatch.WC_WITH_INV : 0, c.wcFlags(i));
            assertEquals((i & 1) == 1 ? 0xABC00000 + i : 0, c.immOrInvalidatedRkey(i));
            assertEquals(0x100 + i, c.qpNum(i));
        }
        assertEquals(true, CompletionBatch.statusName(CompletionBatch.STATUS_REM_ACCESS_ERR).contains("remote access"));
    }

    private static void assertRow(long[] out, int i, long wrId, long opcode, long flags, long numSge, long addr,
                                  long len, long lkey, long remoteAddr, long rkey, long invRkey, long next) {
        int o = 12 * i;
        assertEquals(wrId, out[o], "wr_id of " + i);
        assertEquals(opcode, out[o + 1], "opcode of " + i);
        assertEquals(flags, out[o + 2], "send_flags of " + i);
        assertEquals(numSge, out[o + 3], "num_sge of " + i);
        assertEquals(addr, out[o + 4], "sge addr of " + i);
        assertEquals(len, out[o + 5], "sge length of " + i);
        assertEquals(lkey, out[o + 6], "lkey of " + i);
        if (remoteAddr != -1) {
            assertEquals(remoteAddr, out[o + 7], "remote_addr of " + i);
            assertEquals(rkey, out[o + 8], "rkey of " + i);
        }
        assertEquals(invRkey, out[o + 9], "invalidate_rkey of " + i);
        assertEquals(next, out[o + 10], "next of " + i);
    }
}

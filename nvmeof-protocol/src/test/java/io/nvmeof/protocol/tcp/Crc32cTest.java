package io.nvmeof.protocol.tcp;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** CRC32C (Castagnoli) digests, checked against published test vectors (RFC 3720 B.4, the "check" value). */
class Crc32cTest {
    private static final byte[] CHECK = "123456789".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZEROS = new byte[32];
    private static final byte[] ONES = filled(32, 0xFF);
    private static final byte[] ASCENDING = ascending();

    private final Crc32c crc = new Crc32c();

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) v);
        return b;
    }

    private static byte[] ascending() {
        byte[] b = new byte[32];
        for (int i = 0; i < 32; i++) {
            b[i] = (byte) i;
        }
        return b;
    }

    private static void assertCrc(long expected, int actual, String what) {
        assertEquals((int) expected, actual, what + String.format(": got 0x%08X", actual));
    }

    private void checkArrayAtOffset(byte[] data, long expected) {
        int off = 13;
        byte[] backing = filled(data.length + off + 7, 0xA5);
        System.arraycopy(data, 0, backing, off, data.length);
        UnsafeBuffer whole = new UnsafeBuffer(backing);
        assertCrc(expected, crc.of(whole, off, data.length), "byte[] index " + off);
        UnsafeBuffer window = new UnsafeBuffer(backing, 5, data.length + off);
        assertCrc(expected, crc.of(window, off - 5, data.length), "byte[] wrapped at 5");
    }

    private void checkDirectAtOffset(byte[] data, long expected) {
        int off = 11;
        ByteBuffer direct = ByteBuffer.allocateDirect(data.length + off + 9);
        for (int i = 0; i < direct.capacity(); i++) {
            direct.put(i, (byte) 0x5A);
        }
        direct.put(off, data);
        UnsafeBuffer window = new UnsafeBuffer(direct, 3, data.length + off);
        assertCrc(expected, crc.of(window, off - 3, data.length), "direct ByteBuffer wrapped at 3");
        UnsafeBuffer whole = new UnsafeBuffer(direct);
        assertCrc(expected, crc.of(whole, off, data.length), "direct ByteBuffer");
        // raw address, no ByteBuffer or array behind the UnsafeBuffer
        UnsafeBuffer raw = new UnsafeBuffer(BufferUtil.address(direct) + off, data.length);
        assertCrc(expected, crc.of(raw, 0, data.length), "raw address");
    }

    private void checkByteBuffer(byte[] data, long expected) {
        ByteBuffer heap = ByteBuffer.wrap(filled(data.length + 20, 1));
        heap.position(6);
        heap.put(data);
        heap.position(6).limit(6 + data.length);
        crc.reset();
        crc.update(heap);
        assertCrc(expected, crc.value(), "update(heap ByteBuffer)");

        ByteBuffer direct = ByteBuffer.allocateDirect(data.length + 20);
        direct.position(4);
        direct.put(data);
        direct.position(4).limit(4 + data.length);
        crc.reset();
        crc.update(direct);
        assertCrc(expected, crc.value(), "update(direct ByteBuffer)");
    }

    private void checkAll(byte[] data, long expected) {
        checkArrayAtOffset(data, expected);
        checkDirectAtOffset(data, expected);
        checkByteBuffer(data, expected);
    }

    @Test
    void checkValue() {
        checkAll(CHECK, 0xE3069283L);
    }

    @Test
    void thirtyTwoZeros() {
        checkAll(ZEROS, 0x8A9136AAL);
    }

    @Test
    void thirtyTwoOnes() {
        checkAll(ONES, 0x62A8AB43L);
    }

    @Test
    void thirtyTwoAscending() {
        checkAll(ASCENDING, 0x46DD794EL);
    }

    @Test
    void incrementalUpdateEqualsOneShot() {
        UnsafeBuffer b = new UnsafeBuffer(CHECK);
        crc.reset();
        crc.update(b, 0, 4);
        crc.update(b, 4, 0);
        crc.update(b, 4, 5);
        assertCrc(0xE3069283L, crc.value(), "split update");
    }

    @Test
    void slicedHeapByteBufferWithArrayOffset() {
        byte[] backing = filled(64, 0x77);
        System.arraycopy(CHECK, 0, backing, 20, CHECK.length);
        ByteBuffer slice = ByteBuffer.wrap(backing).position(16).slice(); // arrayOffset 16
        assertEquals(16, slice.arrayOffset());
        UnsafeBuffer b = new UnsafeBuffer(slice);
        assertCrc(0xE3069283L, crc.of(b, 4, CHECK.length), "heap slice");
        UnsafeBuffer w = new UnsafeBuffer(slice, 2, 30);
        assertCrc(0xE3069283L, crc.of(w, 2, CHECK.length), "heap slice wrapped at 2");
    }

    @Test
    void slicedDirectByteBuffer() {
        ByteBuffer direct = ByteBuffer.allocateDirect(64);
        direct.put(20, CHECK);
        ByteBuffer slice = direct.position(16).slice();
        UnsafeBuffer b = new UnsafeBuffer(slice, 1, 40);
        assertCrc(0xE3069283L, crc.of(b, 3, CHECK.length), "direct slice wrapped at 1");
    }

    @Test
    void largerThanScratchChunkFromRawAddress() {
        int n = 10000;
        ByteBuffer direct = ByteBuffer.allocateDirect(n);
        byte[] data = new byte[n];
        for (int i = 0; i < n; i++) {
            data[i] = (byte) (i * 31 + 7);
        }
        direct.put(0, data);
        java.util.zip.CRC32C ref = new java.util.zip.CRC32C();
        ref.update(data);
        UnsafeBuffer raw = new UnsafeBuffer(BufferUtil.address(direct), n);
        assertEquals((int) ref.getValue(), crc.of(raw, 0, n));
    }
}

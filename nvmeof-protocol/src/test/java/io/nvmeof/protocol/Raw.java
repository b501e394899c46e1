package io.nvmeof.protocol;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Test helpers that read and write raw little-endian bytes one at a time, so that assertions do not depend on the
 * buffer's own multi-byte accessors nor on the offset constants of the code under test.
 */
public final class Raw {
    private Raw() {
    }

    public static UnsafeBuffer buffer(int size) {
        return new UnsafeBuffer(new byte[size]);
    }

    public static int u8(UnsafeBuffer b, int at) {
        return b.getByte(at) & 0xFF;
    }

    public static int le16(UnsafeBuffer b, int at) {
        return u8(b, at) | u8(b, at + 1) << 8;
    }

    public static long le32(UnsafeBuffer b, int at) {
        return (long) le16(b, at) | (long) le16(b, at + 2) << 16;
    }

    public static long le64(UnsafeBuffer b, int at) {
        return le32(b, at) | le32(b, at + 4) << 32;
    }

    public static void put8(UnsafeBuffer b, int at, int v) {
        b.putByte(at, (byte) v);
    }

    public static void put16(UnsafeBuffer b, int at, int v) {
        put8(b, at, v);
        put8(b, at + 1, v >>> 8);
    }

    public static void put32(UnsafeBuffer b, int at, long v) {
        put16(b, at, (int) v);
        put16(b, at + 2, (int) (v >>> 16));
    }

    public static void put64(UnsafeBuffer b, int at, long v) {
        put32(b, at, v);
        put32(b, at + 4, v >>> 32);
    }

    public static void putAscii(UnsafeBuffer b, int at, String s) {
        for (int i = 0; i < s.length(); i++) {
            put8(b, at + i, s.charAt(i));
        }
    }

    public static String ascii(UnsafeBuffer b, int at, int len) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < len; i++) {
            sb.append((char) u8(b, at + i));
        }
        return sb.toString();
    }

    /** Number of non-zero bytes in [from, to). */
    public static int nonZero(UnsafeBuffer b, int from, int to) {
        int n = 0;
        for (int i = from; i < to; i++) {
            if (b.getByte(i) != 0) {
                n++;
            }
        }
        return n;
    }
}

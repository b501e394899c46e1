package io.nvmeof.protocol;

import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.agrona.MutableDirectBuffer;

/**
 * Base of every wire structure: a window onto a buffer at an offset, with no copy and no allocation.
 * All NVMe and NVMe-oF multi-byte fields are little endian.
 */
public abstract class Flyweight {
    protected static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    protected MutableDirectBuffer buffer;
    protected int offset;

    /** Points this flyweight at {@code buffer} starting at {@code offset}; returns this for chaining. */
    @SuppressWarnings("unchecked")
    public <T extends Flyweight> T wrap(MutableDirectBuffer buffer, int offset) {
        this.buffer = buffer;
        this.offset = offset;
        return (T) this;
    }

    public MutableDirectBuffer buffer() {
        return buffer;
    }

    public int offset() {
        return offset;
    }

    /** Size in bytes of the fixed part of this structure. */
    public abstract int length();

    /** Zeroes the fixed part of the structure. */
    public void clear() {
        buffer.setMemory(offset, length(), (byte) 0);
    }

    protected final int u8(int at) {
        return buffer.getByte(offset + at) & 0xFF;
    }

    protected final void u8(int at, int value) {
        buffer.putByte(offset + at, (byte) value);
    }

    protected final int u16(int at) {
        return buffer.getShort(offset + at, LE) & 0xFFFF;
    }

    protected final void u16(int at, int value) {
        buffer.putShort(offset + at, (short) value, LE);
    }

    protected final long u32(int at) {
        return buffer.getInt(offset + at, LE) & 0xFFFF_FFFFL;
    }

    protected final int i32(int at) {
        return buffer.getInt(offset + at, LE);
    }

    protected final void u32(int at, long value) {
        buffer.putInt(offset + at, (int) value, LE);
    }

    protected final long u64(int at) {
        return buffer.getLong(offset + at, LE);
    }

    protected final void u64(int at, long value) {
        buffer.putLong(offset + at, value, LE);
    }

    /** Reads a NUL-terminated (or NUL-padded) ASCII field of at most {@code max} bytes. */
    protected final String nulString(int at, int max) {
        int len = 0;
        while (len < max && buffer.getByte(offset + at + len) != 0) {
            len++;
        }
        byte[] bytes = new byte[len];
        buffer.getBytes(offset + at, bytes);
        // ISO-8859-1 maps every byte to one char: names with bytes outside ASCII stay distinct and can be shown.
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    /** Writes an ASCII field NUL-padded to {@code max} bytes; the value must fit. */
    protected final void nulString(int at, int max, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
        if (bytes.length > max) {
            throw new IllegalArgumentException("field of " + max + " bytes cannot hold " + bytes.length + " bytes: " + value);
        }
        buffer.putBytes(offset + at, bytes);
        buffer.setMemory(offset + at + bytes.length, max - bytes.length, (byte) 0);
    }

    /** Reads a space-padded ASCII field (serial number, model, firmware revision), trimmed. */
    protected final String spaceString(int at, int max) {
        byte[] bytes = new byte[max];
        buffer.getBytes(offset + at, bytes);
        return new String(bytes, StandardCharsets.US_ASCII).replace('\0', ' ').trim();
    }

    /** Writes an ASCII field space-padded to {@code max} bytes, truncating if longer (as Identify strings are). */
    protected final void spaceString(int at, int max, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
        int n = Math.min(bytes.length, max);
        buffer.putBytes(offset + at, bytes, 0, n);
        buffer.setMemory(offset + at + n, max - n, (byte) ' ');
    }
}

package io.nvmeof.loader.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * TFRecord framing, as TensorFlow's {@code tensorflow/core/lib/io/record_writer.cc} writes it: a little-endian u64
 * data length, the masked CRC32C of those 8 bytes, the data, and the masked CRC32C of the data. A mask rotates the CRC
 * right by 15 bits and adds {@code 0xa282ead8}.
 */
public final class TfRecord {
    /** Length and its CRC. */
    public static final int HEADER = 12;
    /** The data's CRC. */
    public static final int FOOTER = 4;
    private static final int MASK_DELTA = 0xa282ead8;

    private TfRecord() {
    }

    public static int mask(int crc) {
        return ((crc >>> 15) | (crc << 17)) + MASK_DELTA;
    }

    public static int maskedCrc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, len);
        return mask((int) c.getValue());
    }

    public static int maskedCrc(ByteBuffer b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate().limit(off + len).position(off));
        return mask((int) c.getValue());
    }

    /**
     * Checks a whole record held in {@code view} at {@code off} ({@code HEADER + dataLength + FOOTER} bytes): why it
     * is corrupt, or null. The loader calls this on every TFRecord sample it reads, with its own scratch objects, so it
     * allocates nothing; {@code view}'s position and limit are changed.
     */
    public static String check(ByteBuffer view, int off, int recordLength, CRC32C crc) {
        long len = view.order(ByteOrder.LITTLE_ENDIAN).getLong(off);
        if (mask(crcOf(view, off, 8, crc)) != view.getInt(off + 8)) {
            return "TFRecord length CRC mismatch (the length field reads " + len + ")";
        }
        if (len != recordLength - HEADER - FOOTER) {
            return "TFRecord length " + len + " differs from the manifest's " + (recordLength - HEADER - FOOTER);
        }
        if (mask(crcOf(view, off + HEADER, (int) len, crc)) != view.getInt(off + HEADER + (int) len)) {
            return "TFRecord data CRC mismatch (" + len + " data bytes)";
        }
        return null;
    }

    /** CRC32C of {@code len} bytes of {@code view} from {@code off}, with {@code crc} as scratch. */
    public static int crcOf(ByteBuffer view, int off, int len, CRC32C crc) {
        view.limit(view.capacity()).position(off).limit(off + len);
        crc.reset();
        crc.update(view);
        view.limit(view.capacity());
        return (int) crc.getValue();
    }

    /** Writes one record's framing around {@code data} (for tests and the dataset generator). */
    public static byte[] frame(byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(HEADER + data.length + FOOTER).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(data.length);
        b.putInt(maskedCrc(b.array(), 0, 8));
        b.put(data);
        b.putInt(maskedCrc(data, 0, data.length));
        return b.array();
    }
}

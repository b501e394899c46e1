package io.nvmeof.loader.format;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Writes a POSIX ustar archive (the dataset generator's shards): a 512-byte header per member, data padded to 512,
 * two zero blocks at the end. Names longer than the 100-byte field get a PAX {@code path} record first.
 */
public final class TarWriter implements AutoCloseable {
    private final OutputStream out;
    private final byte[] header = new byte[TarHeader.BLOCK];
    private long written;

    public TarWriter(OutputStream out) {
        this.out = out;
    }

    public long written() { return written; }

    public void add(String name, byte[] data) throws IOException {
        add(name, data, 0, data.length);
    }

    public void add(String name, byte[] data, int off, int len) throws IOException {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        if (n.length > 100) {
            byte[] record = paxRecord("path", name);
            writeHeader("PaxHeaders/" + Math.abs(name.hashCode()), record.length, TarHeader.TYPE_PAX);
            write(record, 0, record.length);
            pad(record.length);
            writeHeader(name.substring(Math.max(0, name.length() - 99)).replace('/', '_'), len, TarHeader.TYPE_FILE);
        } else {
            writeHeader(name, len, TarHeader.TYPE_FILE);
        }
        write(data, off, len);
        pad(len);
    }

    private static byte[] paxRecord(String key, String value) {
        String body = " " + key + "=" + value + "\n";
        int bodyLen = body.getBytes(StandardCharsets.UTF_8).length;
        int len = bodyLen + 1;
        while (String.valueOf(len).length() + bodyLen != len) {
            len = String.valueOf(len).length() + bodyLen;
        }
        return (len + body).getBytes(StandardCharsets.UTF_8);
    }

    private void writeHeader(String name, long size, byte type) throws IOException {
        java.util.Arrays.fill(header, (byte) 0);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(n, 0, header, 0, Math.min(100, n.length));
        octal(0644, 100, 8);
        octal(0, 108, 8);
        octal(0, 116, 8);
        octal(size, 124, 12);
        octal(0, 136, 12);
        header[156] = type;
        System.arraycopy("ustar\0".getBytes(StandardCharsets.US_ASCII), 0, header, 257, 6);
        header[263] = '0';
        header[264] = '0';
        for (int i = 148; i < 156; i++) {
            header[i] = ' ';
        }
        long sum = 0;
        for (byte b : header) {
            sum += b & 0xFF;
        }
        octal(sum, 148, 7);
        header[155] = ' ';
        write(header, 0, header.length);
    }

    /** {@code len - 1} octal digits and a NUL. */
    private void octal(long v, int off, int len) {
        String s = Long.toOctalString(v);
        if (s.length() > len - 1) {
            throw new IllegalArgumentException(v + " does not fit a " + len + "-byte tar field");
        }
        for (int i = 0; i < len - 1; i++) {
            int d = i - (len - 1 - s.length());
            header[off + i] = (byte) (d < 0 ? '0' : s.charAt(d));
        }
        header[off + len - 1] = 0;
    }

    private void pad(long len) throws IOException {
        int p = (int) (TarHeader.padded(len) - len);
        if (p > 0) {
            write(new byte[p], 0, p);
        }
    }

    private void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
        written += len;
    }

    /** Writes the two end-of-archive blocks (the stream stays open). */
    public void finish() throws IOException {
        write(new byte[2 * TarHeader.BLOCK], 0, 2 * TarHeader.BLOCK);
    }

    @Override
    public void close() throws IOException {
        finish();
        out.close();
    }
}

package io.nvmeof.loader.format;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32C;

/**
 * A shard read once from start to end, for indexing: every byte that passes is added to the shard's CRC32C, and the
 * bytes of sample data also to the current sample's. The indexers never seek backwards, so a shard on a namespace and
 * a local file are read the same way.
 */
public final class ShardInput {
    private final InputStream in;
    private final long size;
    private final byte[] buf = new byte[1 << 20];
    private int bufPos;
    private int bufLen;
    private long position;
    private final CRC32C shardCrc = new CRC32C();

    /** @param size bytes the shard has (reading past them is end of shard even if the stream goes on) */
    public ShardInput(InputStream in, long size) {
        this.in = in;
        this.size = size;
    }

    /** Offset of the next byte within the shard. */
    public long position() { return position; }

    public long size() { return size; }

    public long remaining() { return size - position; }

    /** CRC32C of every byte consumed so far. */
    public int shardCrc() { return (int) shardCrc.getValue(); }

    /**
     * Reads exactly {@code len} bytes into {@code dst}; {@code sampleCrc} (may be null) is updated with them too.
     *
     * @throws EOFException if the shard ends first (the position is then at the end)
     */
    public void readFully(byte[] dst, int off, int len, CRC32C sampleCrc) throws IOException {
        if (len > remaining()) {
            throw new EOFException();
        }
        while (len > 0) {
            fill();
            int n = Math.min(len, bufLen - bufPos);
            System.arraycopy(buf, bufPos, dst, off, n);
            consumed(n, sampleCrc);
            off += n;
            len -= n;
        }
    }

    /** Consumes {@code n} bytes without keeping them (they are still checksummed). */
    public void skip(long n, CRC32C sampleCrc) throws IOException {
        if (n > remaining()) {
            throw new EOFException();
        }
        while (n > 0) {
            fill();
            int k = (int) Math.min(n, bufLen - bufPos);
            consumed(k, sampleCrc);
            n -= k;
        }
    }

    /** Consumes the rest of the shard (checksummed). */
    public void skipToEnd() throws IOException {
        skip(remaining(), null);
    }

    private void consumed(int n, CRC32C sampleCrc) {
        shardCrc.update(buf, bufPos, n);
        if (sampleCrc != null) {
            sampleCrc.update(buf, bufPos, n);
        }
        bufPos += n;
        position += n;
    }

    private void fill() throws IOException {
        if (bufPos < bufLen) {
            return;
        }
        int want = (int) Math.min(buf.length, remaining());
        int n = in.readNBytes(buf, 0, want);
        if (n <= 0) {
            throw new EOFException("the shard's stream ended at " + position + " of " + size + " bytes");
        }
        bufPos = 0;
        bufLen = n;
    }
}

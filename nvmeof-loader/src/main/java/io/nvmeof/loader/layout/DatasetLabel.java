package io.nvmeof.loader.layout;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * The fixed place every dataset namespace is recognised by: its last 4096 bytes. The end, not the start, because a
 * namespace whose backing file is a tar shard keeps the tar at byte 0 and is indexed in place.
 *
 * <pre>
 *   0  magic "NVMEOFDS"        8  version u32 (1)        12 state u32 (1 importing, 2 complete)
 *   16 dataset UUID (16)       32 part index u32         36 part count u32
 *   40 manifest offset u64     48 manifest length u64    56 manifest CRC32C u32
 *   60 shards written u32      64 plan fingerprint u64   72 written at (ms since 1970) u64
 *   80 data end u64            88 dataset name (UTF-8, NUL-padded, 128 bytes)
 *   4092 CRC32C of bytes 0-4091
 * </pre>
 * All little-endian. While an import runs the label says {@code importing}, how many shards of the plan are on the
 * namespace and checked, and the plan's fingerprint, so a second run with the same files continues where the first
 * stopped. The manifest is written before the label that points to it, so a label that says {@code complete} always
 * points to a whole manifest.
 */
public record DatasetLabel(int state, UUID datasetId, int partIndex, int partCount, long manifestOffset,
                           long manifestLength, int manifestCrc, int shardsWritten, long planFingerprint,
                           long writtenAtMs, long dataEnd, String name) {
    public static final int SIZE = 4096;
    public static final int VERSION = 1;
    public static final int IMPORTING = 1;
    public static final int COMPLETE = 2;
    static final byte[] MAGIC = "NVMEOFDS".getBytes(StandardCharsets.US_ASCII);
    private static final int NAME_BYTES = 128;

    public boolean complete() { return state == COMPLETE; }

    /** Where the label lives on a namespace of {@code sizeBytes}: its last 4096 bytes. */
    public static long offsetFor(long sizeBytes) {
        if (sizeBytes < SIZE * 2L) {
            throw new IllegalArgumentException("a namespace of " + sizeBytes + " bytes is too small for a dataset");
        }
        return sizeBytes - SIZE;
    }

    public byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).putInt(VERSION).putInt(state);
        b.putLong(datasetId.getMostSignificantBits()).putLong(datasetId.getLeastSignificantBits());
        b.putInt(partIndex).putInt(partCount).putLong(manifestOffset).putLong(manifestLength).putInt(manifestCrc)
                .putInt(shardsWritten).putLong(planFingerprint).putLong(writtenAtMs).putLong(dataEnd);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        b.put(n, 0, Math.min(n.length, NAME_BYTES));
        CRC32C c = new CRC32C();
        c.update(b.array(), 0, SIZE - 4);
        b.putInt(SIZE - 4, (int) c.getValue());
        return b.array();
    }

    /** Whether {@code b} (at least the first 8 bytes of a label) begins with the label's magic. */
    public static boolean hasMagic(ByteBuffer b) {
        byte[] m = new byte[MAGIC.length];
        b.duplicate().get(m);
        return Arrays.equals(m, MAGIC);
    }

    /**
     * Reads a label.
     *
     * @return null if there is no label (the magic is missing): the namespace holds no dataset
     * @throws IllegalArgumentException if there is one but it is damaged or of a version this reader does not know
     */
    public static DatasetLabel decode(ByteBuffer src) {
        if (src.remaining() < SIZE) {
            throw new IllegalArgumentException("a label is " + SIZE + " bytes, got " + src.remaining());
        }
        ByteBuffer b = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (!hasMagic(b)) {
            return null;
        }
        int base = b.position();
        CRC32C c = new CRC32C();
        c.update(b.duplicate().limit(base + SIZE - 4));
        if ((int) c.getValue() != b.getInt(base + SIZE - 4)) {
            throw new IllegalArgumentException("the dataset label's CRC does not match (a torn or damaged write);"
                    + " import again, or verify the shards");
        }
        b.position(base + 8);
        int version = b.getInt();
        if (version != VERSION) {
            throw new IllegalArgumentException("dataset label version " + version + "; this reader knows " + VERSION);
        }
        int state = b.getInt();
        UUID id = new UUID(b.getLong(), b.getLong());
        int partIndex = b.getInt();
        int partCount = b.getInt();
        long mOff = b.getLong();
        long mLen = b.getLong();
        int mCrc = b.getInt();
        int written = b.getInt();
        long fp = b.getLong();
        long at = b.getLong();
        long dataEnd = b.getLong();
        byte[] n = new byte[NAME_BYTES];
        b.get(n);
        int len = 0;
        while (len < n.length && n[len] != 0) {
            len++;
        }
        if (state != IMPORTING && state != COMPLETE) {
            throw new IllegalArgumentException("dataset label state " + state + " is unknown");
        }
        if (partCount < 1 || partIndex < 0 || partIndex >= partCount || mOff < 0 || mLen < 0 || mLen > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("dataset label has impossible values (part " + partIndex + " of "
                    + partCount + ", manifest at " + mOff + " length " + mLen + ")");
        }
        return new DatasetLabel(state, id, partIndex, partCount, mOff, mLen, mCrc, written, fp, at, dataEnd,
                new String(n, 0, len, StandardCharsets.UTF_8));
    }
}

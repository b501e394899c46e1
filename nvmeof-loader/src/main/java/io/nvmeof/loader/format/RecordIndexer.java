package io.nvmeof.loader.format;

import io.nvmeof.loader.layout.SampleTable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Indexes shards of one record a sample: TFRecord files and fixed-size record files. A sample's key is the shard's
 * name without its extension, a slash and the record's number ({@code train-00003/17}); its one member is
 * {@code data}. A TFRecord sample's range includes the framing, so the loader checks both CRCs on every read.
 */
public final class RecordIndexer {
    public static final String MEMBER = "data";

    private RecordIndexer() {
    }

    /** Key prefix for a shard's records: its name without directory-free extension. */
    static String stem(String shard) {
        int slash = shard.lastIndexOf('/');
        int dot = shard.indexOf('.', slash + 1);
        return dot > slash + 1 ? shard.substring(0, dot) : shard;
    }

    public static IndexResult tfrecord(String shard, ShardInput in, long base, int shardIndex, SampleTable.Builder out,
                                       boolean skipCorrupt) throws IOException {
        List<String> problems = new ArrayList<>();
        byte[] header = new byte[TfRecord.HEADER];
        byte[] footer = new byte[TfRecord.FOOTER];
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        String stem = stem(shard);
        int[] name = {out.nameId(MEMBER)};
        int[] offset = {TfRecord.HEADER};
        int[] length = new int[1];
        int record = 0;
        int samples = 0;
        int skipped = 0;
        while (in.remaining() > 0) {
            long at = in.position();
            if (in.remaining() < TfRecord.HEADER + TfRecord.FOOTER) {
                skipped += fail(shard, at, "truncated TFRecord: " + in.remaining() + " bytes where a record of at least "
                        + (TfRecord.HEADER + TfRecord.FOOTER) + " begins", skipCorrupt, problems);
                in.skipToEnd();
                break;
            }
            in.readFully(header, 0, TfRecord.HEADER, null);
            long len = h.getLong(0);
            if (TfRecord.maskedCrc(header, 0, 8) != h.getInt(8)) {
                // The length cannot be trusted, so nothing after it can be found again.
                skipped += fail(shard, at, "TFRecord length CRC mismatch (the length field reads " + len
                        + "); the rest of the shard is left out", skipCorrupt, problems);
                in.skipToEnd();
                break;
            }
            if (len < 0 || len > in.remaining() - TfRecord.FOOTER) {
                skipped += fail(shard, at, "TFRecord declares " + len + " data bytes but the shard has "
                        + Math.max(0, in.remaining() - TfRecord.FOOTER) + " left (truncated record)", skipCorrupt, problems);
                in.skipToEnd();
                break;
            }
            if (len > SampleTable.MAX_SAMPLE_BYTES - TfRecord.HEADER - TfRecord.FOOTER) {
                throw new CorruptRecordException(shard, at, "a TFRecord of " + len + " bytes; at most "
                        + (SampleTable.MAX_SAMPLE_BYTES - TfRecord.HEADER - TfRecord.FOOTER));
            }
            crc.reset();
            in.skip(len, crc);
            in.readFully(footer, 0, TfRecord.FOOTER, null);
            int dataCrc = (int) crc.getValue();
            int stored = ByteBuffer.wrap(footer).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
            if (TfRecord.mask(dataCrc) != stored) {
                skipped += fail(shard, at, "TFRecord data CRC mismatch (record " + record + ", " + len + " bytes)",
                        skipCorrupt, problems);
                record++;
                continue;
            }
            byte[] key = (stem + "/" + record).getBytes(StandardCharsets.UTF_8);
            length[0] = (int) len;
            out.add(shardIndex, base + at, (int) (len + TfRecord.HEADER + TfRecord.FOOTER), dataCrc, key, name, offset,
                    length);
            record++;
            samples++;
        }
        return new IndexResult(in.position(), in.shardCrc(), samples, skipped, skipped, 0, List.copyOf(problems));
    }

    public static IndexResult fixed(String shard, ShardInput in, long base, int shardIndex, int recordSize,
                                    SampleTable.Builder out, boolean skipCorrupt) throws IOException {
        if (recordSize <= 0 || recordSize > SampleTable.MAX_SAMPLE_BYTES) {
            throw new IllegalArgumentException("record size must be 1 to " + SampleTable.MAX_SAMPLE_BYTES + " bytes, got "
                    + recordSize);
        }
        List<String> problems = new ArrayList<>();
        long whole = in.size() / recordSize;
        long trailing = in.size() % recordSize;
        int skipped = 0;
        if (trailing != 0) {
            skipped += fail(shard, whole * recordSize, "the last " + trailing + " bytes are not a whole record of "
                    + recordSize + " (truncated record)", skipCorrupt, problems);
        }
        if (whole > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("shard " + shard + " has " + whole + " records; at most " + Integer.MAX_VALUE);
        }
        CRC32C crc = new CRC32C();
        String stem = stem(shard);
        int[] name = {out.nameId(MEMBER)};
        int[] offset = {0};
        int[] length = {recordSize};
        for (int r = 0; r < whole; r++) {
            crc.reset();
            long at = in.position();
            in.skip(recordSize, crc);
            byte[] key = (stem + "/" + r).getBytes(StandardCharsets.UTF_8);
            out.add(shardIndex, base + at, recordSize, (int) crc.getValue(), key, name, offset, length);
        }
        in.skipToEnd();
        return new IndexResult(in.position(), in.shardCrc(), (int) whole, skipped, skipped, 0, List.copyOf(problems));
    }

    private static int fail(String shard, long at, String why, boolean skip, List<String> problems) {
        CorruptRecordException e = new CorruptRecordException(shard, at, why);
        if (!skip) {
            throw e;
        }
        problems.add(e.getMessage());
        return 1;
    }
}

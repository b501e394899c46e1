package io.nvmeof.loader.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.loader.layout.SampleTable;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** TFRecord framing against the spec's CRC32C check value and TensorFlow's masking; fixed-size records. */
class RecordIndexerTest {
    @Test
    void crc32cAndTheMaskAreTensorFlows() {
        CRC32C c = new CRC32C();
        c.update("123456789".getBytes(StandardCharsets.US_ASCII));
        assertEquals(0xE3069283, (int) c.getValue(), "the CRC-32C check value (RFC 3720 B.4)");
        int crc = (int) c.getValue();
        // TensorFlow's crc32c::Mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8, in 32-bit unsigned arithmetic.
        long expect = ((((crc & 0xFFFFFFFFL) >>> 15) | ((crc & 0xFFFFFFFFL) << 17)) + 0xa282ead8L) & 0xFFFFFFFFL;
        assertEquals((int) expect, TfRecord.mask(crc));
        byte[] rec = TfRecord.frame("abc".getBytes(StandardCharsets.US_ASCII));
        ByteBuffer b = ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(3, b.getLong(0), "u64 length, little-endian, at byte 0");
        assertEquals(TfRecord.maskedCrc(rec, 0, 8), b.getInt(8), "masked CRC of the length at byte 8");
        assertEquals('a', rec[12], "data at byte 12");
        assertEquals(TfRecord.maskedCrc(rec, 12, 3), b.getInt(15), "masked CRC of the data after it");
        assertNull(TfRecord.check(b, 0, rec.length, new CRC32C()));
    }

    private static byte[] records(int n) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            out.write(TfRecord.frame(("record number " + i + " ").repeat(i + 1).getBytes(StandardCharsets.US_ASCII)));
        }
        return out.toByteArray();
    }

    private static SampleTable tf(byte[] shard, IndexResult[] r, boolean skip) throws IOException {
        SampleTable.Builder b = new SampleTable.Builder();
        r[0] = RecordIndexer.tfrecord("train-00001.tfrecord", new ShardInput(new ByteArrayInputStream(shard), shard.length),
                4096, 0, b, skip);
        return b.build(List.of());
    }

    @Test
    void recordsAreIndexedWithTheirFraming() throws IOException {
        byte[] shard = records(5);
        IndexResult[] r = new IndexResult[1];
        SampleTable t = tf(shard, r, false);
        assertEquals(5, t.sampleCount());
        long at = 0;
        for (int i = 0; i < 5; i++) {
            assertEquals("train-00001/" + i, t.key(i));
            assertEquals(4096 + at, t.start(i), "namespace offset = shard base + record offset");
            int len = ("record number " + i + " ").length() * (i + 1);
            assertEquals(len + 16, t.length(i));
            assertEquals(12, t.memberOffset(i, 0));
            assertEquals(len, t.memberLength(i, 0));
            at += len + 16;
        }
        assertEquals(shard.length, r[0].length());
    }

    @Test
    void eachCorruptionIsNamedWithItsOffset() throws IOException {
        byte[] good = records(4);
        IndexResult[] r = new IndexResult[1];
        SampleTable t = tf(good, r, false);
        long third = t.start(2) - 4096;

        byte[] badData = good.clone();
        badData[(int) third + 20] ^= 1;
        CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> tf(badData, r, false));
        assertEquals(third, e.offset());
        assertTrue(e.reason().contains("data CRC mismatch"), e.getMessage());
        assertEquals(3, tf(badData, r, true).sampleCount(), "skipping leaves out only that record");
        assertEquals(1, r[0].skipped());
        assertEquals(1, r[0].samplesLeftOut());

        byte[] badLength = good.clone();
        badLength[(int) third + 9] ^= 1;
        e = assertThrows(CorruptRecordException.class, () -> tf(badLength, r, false));
        assertTrue(e.reason().contains("length CRC mismatch"), e.getMessage());
        assertEquals(2, tf(badLength, r, true).sampleCount(), "nothing after an untrustworthy length");

        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 3);
        e = assertThrows(CorruptRecordException.class, () -> tf(truncated, r, false));
        assertEquals(t.start(3) - 4096, e.offset());
        assertTrue(e.reason().contains("truncated"), e.getMessage());
    }

    @Test
    void fixedRecordsAndATrailingPartialOne() throws IOException {
        byte[] shard = new byte[4 * 100 + 7];
        SampleTable.Builder b = new SampleTable.Builder();
        CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> RecordIndexer.fixed("f.bin",
                new ShardInput(new ByteArrayInputStream(shard), shard.length), 0, 0, 100, b, false));
        assertEquals(400, e.offset());
        SampleTable.Builder b2 = new SampleTable.Builder();
        IndexResult r = RecordIndexer.fixed("f.bin", new ShardInput(new ByteArrayInputStream(shard), shard.length), 0, 0,
                100, b2, true);
        assertEquals(4, r.samples());
        SampleTable t = b2.build(List.of());
        assertEquals(300, t.start(3));
        assertEquals("f/3", t.key(3));
    }
}

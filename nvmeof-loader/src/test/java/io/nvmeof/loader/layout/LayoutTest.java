package io.nvmeof.loader.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.loader.format.ShardFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The label's and the manifest's byte layouts, and that damaged ones are refused, never read past their end. */
class LayoutTest {
    @Test
    void theLabelIsAtTheDocumentedOffsets() {
        UUID id = UUID.fromString("01234567-89ab-cdef-0123-456789abcdef");
        DatasetLabel l = new DatasetLabel(DatasetLabel.COMPLETE, id, 1, 3, 1 << 20, 777, 0xCAFEBABE, 9, 0x1122334455667788L,
                1_700_000_000_000L, 900_000, "imagenet-mini");
        byte[] b = l.encode();
        ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(4096, b.length);
        assertEquals("NVMEOFDS", new String(b, 0, 8, StandardCharsets.US_ASCII));
        assertEquals(1, le.getInt(8));
        assertEquals(2, le.getInt(12));
        assertEquals(id.getMostSignificantBits(), le.getLong(16));
        assertEquals(1, le.getInt(32));
        assertEquals(3, le.getInt(36));
        assertEquals(1 << 20, le.getLong(40));
        assertEquals(777, le.getLong(48));
        assertEquals(0xCAFEBABE, le.getInt(56));
        assertEquals(9, le.getInt(60));
        assertEquals(0x1122334455667788L, le.getLong(64));
        assertEquals(900_000, le.getLong(80));
        assertEquals("imagenet-mini", new String(b, 88, 13, StandardCharsets.UTF_8));
        assertEquals(l, DatasetLabel.decode(ByteBuffer.wrap(b)));
        assertNull(DatasetLabel.decode(ByteBuffer.allocate(4096)), "no magic: no dataset");
        b[200] ^= 1;
        assertTrue(assertThrows(IllegalArgumentException.class, () -> DatasetLabel.decode(ByteBuffer.wrap(b)))
                .getMessage().contains("CRC"));
        assertEquals((1L << 30) - 4096, DatasetLabel.offsetFor(1L << 30), "the last 4 KiB");
    }

    private static SampleTable table() {
        SampleTable.Builder b = new SampleTable.Builder();
        int jpg = b.nameId("jpg");
        int cls = b.nameId("cls");
        for (int i = 0; i < 3000; i++) {
            byte[] key = ("k/" + i).getBytes(StandardCharsets.UTF_8);
            b.add(i / 1000, 4096L * i, 3000, i * 31, key, new int[] {jpg, cls}, new int[] {512, 2048}, new int[] {1000, 2});
        }
        return b.build(List.of(new ShardEntry("a.tar", ShardFormat.TAR, 0, 4096000, 1, 0, 1000, 0, 0),
                new ShardEntry("b.tar", ShardFormat.TAR, 4096000, 4096000, 2, 1000, 1000, 0, 0),
                new ShardEntry("c.tfrecord", ShardFormat.TFRECORD, 8192000, 4096000, 3, 2000, 1000, 0, 1)));
    }

    @Test
    void theManifestRoundTrips() {
        SampleTable t = table();
        byte[] enc = t.encode();
        assertEquals("NVDSMANI", new String(enc, 0, 8, StandardCharsets.US_ASCII));
        SampleTable d = SampleTable.decode(ByteBuffer.wrap(enc));
        assertEquals(t.shards(), d.shards());
        assertEquals(3000, d.sampleCount());
        for (int i = 0; i < 3000; i += 97) {
            assertEquals(t.key(i), d.key(i));
            assertEquals(t.start(i), d.start(i));
            assertEquals(t.crc32c(i), d.crc32c(i));
            assertEquals(i / 1000, d.shardOf(i));
            assertEquals("cls", d.memberName(i, 1));
            assertEquals(2048, d.memberOffset(i, 1));
        }
    }

    @Test
    void damagedManifestsAreRefusedWithAReason() {
        byte[] enc = table().encode();
        assertThrows(IllegalArgumentException.class, () -> SampleTable.decode(ByteBuffer.wrap(enc, 0, enc.length / 2).slice()));
        Random r = new Random(1);
        for (int round = 0; round < 2000; round++) {
            byte[] b = enc.clone();
            for (int k = 0; k < 1 + r.nextInt(4); k++) {
                b[r.nextInt(Math.min(b.length, 400))] = (byte) r.nextInt();
            }
            try {
                SampleTable.decode(ByteBuffer.wrap(b));
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage() != null);
            }
        }
    }
}

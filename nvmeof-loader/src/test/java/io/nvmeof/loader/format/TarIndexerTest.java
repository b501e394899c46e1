package io.nvmeof.loader.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.loader.layout.SampleTable;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tar indexer against archives GNU tar writes (an independent writer), in its three formats: every member found
 * at the offset where tar put its bytes, grouped into samples as WebDataset groups them.
 */
class TarIndexerTest {
    @TempDir
    Path dir;

    /** Files for 3 samples: one with a long directory name (over 100 bytes), members of odd sizes. */
    private List<String> makeFiles() throws IOException {
        Random r = new Random(7);
        String deep = "d".repeat(60) + "/" + "e".repeat(60);
        List<String> names = List.of("a/000001.jpg", "a/000001.cls", "a/000001.seg.png", "a/000002.jpg", "a/000002.cls",
                deep + "/000003.jpg", deep + "/000003.json");
        for (String n : names) {
            Path p = dir.resolve("src").resolve(n);
            Files.createDirectories(p.getParent());
            byte[] b = new byte[n.endsWith(".jpg") ? 1000 + r.nextInt(3000) : 1 + r.nextInt(40)];
            r.nextBytes(b);
            Files.write(p, b);
        }
        return names;
    }

    private Path gnuTar(String format, List<String> names) throws Exception {
        Path tar = dir.resolve(format + ".tar");
        List<String> cmd = new ArrayList<>(List.of("tar", "--format=" + format, "-cf", tar.toString(), "-C",
                dir.resolve("src").toString(), "--no-recursion"));
        cmd.add("a"); // a directory entry: belongs to no sample
        cmd.addAll(names);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "tar: " + out);
        return tar;
    }

    static SampleTable index(String name, byte[] shard, IndexResult[] result, boolean skip) throws IOException {
        SampleTable.Builder b = new SampleTable.Builder();
        result[0] = TarIndexer.index(name, new ShardInput(new ByteArrayInputStream(shard), shard.length), 0, 0, b, skip, false);
        return b.build(List.of());
    }

    @ParameterizedTest
    @ValueSource(strings = {"gnu", "pax", "ustar"})
    void membersAreWhereGnuTarPutThem(String format) throws Exception {
        List<String> names = makeFiles();
        if (format.equals("ustar")) {
            names = names.subList(0, 5); // ustar cannot hold the long name
        }
        byte[] shard = Files.readAllBytes(gnuTar(format, names));
        IndexResult[] r = new IndexResult[1];
        SampleTable t = index("x.tar", shard, r, false);
        int expectSamples = format.equals("ustar") ? 2 : 3;
        assertEquals(expectSamples, t.sampleCount());
        assertEquals(expectSamples, r[0].samples());
        assertEquals(1, r[0].ignored(), "the directory entry");
        assertEquals(shard.length, r[0].length());
        assertEquals("a/000001", t.key(0));
        assertEquals(List.of("jpg", "cls", "seg.png"), List.of(t.memberName(0, 0), t.memberName(0, 1), t.memberName(0, 2)));
        assertEquals("a/000002", t.key(1));
        if (expectSamples == 3) {
            assertEquals("d".repeat(60) + "/" + "e".repeat(60) + "/000003", t.key(2));
            assertEquals(List.of("jpg", "json"), List.of(t.memberName(2, 0), t.memberName(2, 1)));
        }
        for (int i = 0; i < t.sampleCount(); i++) {
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            for (int m = 0; m < t.memberCount(i); m++) {
                String file = t.key(i) + "." + t.memberName(i, m);
                byte[] want = Files.readAllBytes(dir.resolve("src").resolve(file));
                int at = (int) t.start(i) + t.memberOffset(i, m);
                assertArrayEquals(want, Arrays.copyOfRange(shard, at, at + t.memberLength(i, m)), file);
                assertTrue(at + t.memberLength(i, m) <= t.start(i) + t.length(i), "member inside the sample's range");
                crc.update(want);
                // The member's own ustar header sits just before its data (the loader checks it again).
                assertEquals(null, TarHeader.checksumProblem(shard, at - 512));
                assertEquals(t.memberLength(i, m), TarHeader.size(shard, at - 512));
            }
            assertEquals((int) crc.getValue(), t.crc32c(i), "sample CRC covers its members' data");
        }
        java.util.zip.CRC32C whole = new java.util.zip.CRC32C();
        whole.update(shard);
        assertEquals((int) whole.getValue(), r[0].crc32c());
    }

    @Test
    void aBadHeaderIsNamedOrSkipped() throws Exception {
        byte[] shard = Files.readAllBytes(gnuTar("gnu", makeFiles()));
        IndexResult[] r = new IndexResult[1];
        SampleTable good = index("x.tar", shard, r, false);
        assertEquals(3, good.sampleCount());
        // Damage the header of sample 2's first member (a/000002.jpg).
        int header = (int) good.start(1);
        shard[header + 10] ^= 0x55;
        CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> index("x.tar", shard, r, false));
        assertEquals("x.tar", e.shard());
        assertEquals(header, e.offset());
        assertTrue(e.reason().contains("checksum"), e.getMessage());
        SampleTable skipped = index("x.tar", shard, r, true);
        assertEquals(1, r[0].skipped());
        assertTrue(r[0].problems().get(0).contains("offset " + header), r[0].problems().toString());
        // Neither the sample before the damage (the damaged member may have been its) nor the one found again after
        // it (it may have lost members) is kept whole-looking but partial; the third sample is intact.
        assertEquals(1, skipped.sampleCount(), r[0].problems().toString());
        assertEquals(good.key(2), skipped.key(0));
        assertEquals(good.start(2), skipped.start(0));
        // Issue 30, finding 17: one damaged record, two samples left out, and counted so.
        assertEquals(2, r[0].samplesLeftOut(), r[0].problems().toString());
    }

    /**
     * Damage to the header of a sample's middle member: the members before it and those found again after it are the
     * same sample, left out once and counted once.
     */
    @Test
    void aBadHeaderInsideASampleLosesThatSampleOnly() throws Exception {
        byte[] shard = Files.readAllBytes(gnuTar("gnu", makeFiles()));
        IndexResult[] r = new IndexResult[1];
        SampleTable good = index("x.tar", shard, r, false);
        int middle = (int) good.start(0) + good.memberOffset(0, 1) - 512; // a/000001.cls's header
        shard[middle + 10] ^= 0x55;
        SampleTable skipped = index("x.tar", shard, r, true);
        assertEquals(List.of(good.key(1), good.key(2)), List.of(skipped.key(0), skipped.key(1)));
        assertEquals(1, r[0].skipped());
        assertEquals(1, r[0].samplesLeftOut(), r[0].problems().toString());
    }

    @Test
    void aTruncatedMemberIsNamed() throws Exception {
        byte[] full = Files.readAllBytes(gnuTar("gnu", makeFiles().subList(0, 5)));
        IndexResult[] r = new IndexResult[1];
        SampleTable good = index("x.tar", full, r, false);
        int cut = (int) good.start(1) + good.memberOffset(1, 0) + 100; // inside a/000002.jpg's data
        byte[] shard = Arrays.copyOf(full, cut);
        CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> index("x.tar", shard, r, false));
        assertEquals(good.start(1), e.offset());
        assertTrue(e.reason().contains("truncated member"), e.getMessage());
        SampleTable t = index("x.tar", shard, r, true);
        assertEquals(1, t.sampleCount());
        assertEquals(1, r[0].skipped());
        assertEquals(1, r[0].samplesLeftOut());
    }

    @Test
    void paxRecordsAreParsedAndMalformedOnesRefused() {
        String[] ps = new String[2];
        assertEquals(null, TarIndexer.parsePax("29 path=a/very/long/name.jpg\n11 size=42\n".getBytes(StandardCharsets.UTF_8), ps));
        assertEquals("a/very/long/name.jpg", ps[0]);
        assertEquals("42", ps[1]);
        assertTrue(TarIndexer.parsePax("99 path=x\n".getBytes(StandardCharsets.UTF_8), new String[2]).contains("malformed"));
        assertTrue(TarIndexer.parsePax("11 size=-4\n".getBytes(StandardCharsets.UTF_8), new String[2]).contains("byte count"));
    }

    @Test
    void ourWriterIsReadByGnuTar() throws Exception {
        Path tar = dir.resolve("ours.tar");
        String longName = "x".repeat(120) + "/000001.bin";
        try (TarWriter w = new TarWriter(Files.newOutputStream(tar))) {
            w.add("000000.bin", new byte[700]);
            w.add(longName, "hello".getBytes(StandardCharsets.US_ASCII));
        }
        Process p = new ProcessBuilder("tar", "-tvf", tar.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.contains("000000.bin") && out.contains(longName), out);
    }
}

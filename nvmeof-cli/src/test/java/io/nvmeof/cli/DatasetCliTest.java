package io.nvmeof.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./nvmeof dataset} as a user runs it: an import killed with SIGKILL midway and run again, ls, verify, errors. */
@Timeout(180)
class DatasetCliTest {
    static final String NQN = "nqn.2026-12.io.nvmeof:datasets";

    @TempDir
    Path dir;

    NvmeTarget target;
    String ns1;
    String ns2;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.parse("{\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\","
                + "\"port\":0}],\"subsystems\":[{\"nqn\":\"" + NQN + "\",\"namespaces\":["
                + "{\"nsid\":1,\"backend\":\"ram\",\"size\":\"96MiB\",\"blockSize\":4096},"
                + "{\"nsid\":2,\"backend\":\"ram\",\"size\":\"96MiB\",\"blockSize\":512}]}]}"));
        ns1 = "tcp://127.0.0.1:" + target.tcpPort(0) + "/" + NQN + "/1";
        ns2 = "tcp://127.0.0.1:" + target.tcpPort(0) + "/" + NQN + "/2";
    }

    @AfterEach
    void stop() {
        target.close();
    }

    @Test
    void anImportKilledMidwayResumesAndTheDatasetChecksOut() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 16, 80, 20_000, 80_000, 3, 0);
        DatasetGenerator.generate(dir.resolve("shards"), spec);

        // A separate JVM, killed with SIGKILL once a third of the writing is done.
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                "io.nvmeof.cli.Main", "dataset", "import", "--name", "train", "--ns", ns1, "--ns", ns2,
                dir.resolve("shards").toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        boolean killed = false;
        List<String> seen = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                seen.add(line);
                if (line.startsWith("writing") && percent(line) >= 30) {
                    p.destroyForcibly();
                    killed = true;
                    break;
                }
            }
        }
        p.waitFor(30, TimeUnit.SECONDS);
        assertTrue(killed, "the import was killed midway: " + seen);

        String[] ls = CliTest.run(0, "dataset", "ls", "--ns", ns1, "--ns", ns2);
        assertTrue(ls[0].contains("importing ("), ls[0]);

        String[] again = CliTest.run(0, "dataset", "import", "--name", "train", "--ns", ns1, "--ns", ns2,
                dir.resolve("shards").toString());
        assertTrue(again[0].contains("16 shards, 1280 samples") && again[0].contains("resumed after"), again[0] + again[1]);
        assertTrue(again[1].contains("resuming import"), again[1]);

        JsonNode parts = new ObjectMapper().readTree(CliTest.run(0, "dataset", "ls", "--json", "--ns", ns1, "--ns", ns2)[0]);
        assertEquals(2, parts.size());
        assertEquals(1280, parts.get(0).get("samples").asInt() + parts.get(1).get("samples").asInt());
        assertEquals("complete", parts.get(0).get("state").asText());
        assertEquals(parts.get(0).get("id").asText(), parts.get(1).get("id").asText());

        assertTrue(CliTest.run(0, "dataset", "verify", "--ns", ns1, "--ns", ns2)[0].contains("16 shards, 0 damaged"));
        // One byte changed on the namespace: verify names the shard and the sample, and exits 1.
        String shard = parts.get(1).get("shards").get(2).get("name").asText();
        long offset = parts.get(1).get("shards").get(2).get("offset").asLong();
        try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NQN),
                ConnectOptions.defaults())) {
            NamespaceIo io = new NamespaceIo(c.namespace(2), 1);
            ByteBuffer b = ByteBuffer.allocate(512);
            io.read(offset + 4096, b);
            b.flip();
            b.put(100, (byte) ~b.get(100));
            io.write(offset + 4096, b);
        }
        String[] bad = CliTest.run(1, "dataset", "verify", "--ns", ns2, "--ns", ns1);
        assertTrue(bad[0].contains("shard " + shard) && bad[0].contains("CRC32C of its data"), bad[0]);
        assertTrue(bad[0].contains("1 damaged"), bad[0]);
    }

    /**
     * Reading a dataset back without Java (before: no command did): export writes every sample's members as the tar
     * shards held them, so the extracted source and the export compare equal file by file; cat shows one member.
     */
    @Test
    void exportWritesEverySampleAsTheSourceHeldItAndCatShowsOne() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 3, 20, 100, 9000, 7, 0);
        List<Path> tars = DatasetGenerator.generate(dir.resolve("shards"), spec);
        CliTest.run(0, "dataset", "import", "--name", "small", "--ns", ns1, dir.resolve("shards").toString());
        Path source = java.nio.file.Files.createDirectories(dir.resolve("source"));
        for (Path t : tars) {
            assertEquals(0, new ProcessBuilder("tar", "xf", t.toString(), "-C", source.toString()).inheritIO().start().waitFor());
        }
        Path export = dir.resolve("export");
        String[] out = CliTest.run(0, "dataset", "export", "--ns", ns1, export.toString());
        assertTrue(out[0].contains("small: 60 samples, 120 files in " + export), out[0]);
        List<Path> exported;
        try (var w = java.nio.file.Files.walk(export)) {
            exported = w.filter(java.nio.file.Files::isRegularFile).sorted().toList();
        }
        try (var w = java.nio.file.Files.walk(source)) {
            assertEquals(w.filter(java.nio.file.Files::isRegularFile).count(), exported.size());
        }
        for (Path e : exported) {
            Path src = source.resolve(export.relativize(e).toString());
            assertTrue(java.util.Arrays.equals(java.nio.file.Files.readAllBytes(src), java.nio.file.Files.readAllBytes(e)),
                    "exported " + e + " differs from " + src);
        }
        String[] again = CliTest.run(1, "dataset", "export", "--ns", ns1, export.toString());
        assertTrue(again[1].contains("is not an empty directory"), again[1]);

        String members = CliTest.run(0, "dataset", "cat", "--ns", ns1, "--sample", "0")[0];
        assertTrue(members.contains("sample 0, key ") && members.contains("cls") && members.contains("bin"), members);
        Path one = dir.resolve("one.cls");
        CliTest.run(0, "dataset", "cat", "--ns", ns1, "--sample", "0", "--member", "cls", "-o", one.toString());
        String key = members.substring(members.indexOf("key ") + 4, members.indexOf(", shard"));
        assertTrue(java.util.Arrays.equals(java.nio.file.Files.readAllBytes(source.resolve(key + ".cls")),
                java.nio.file.Files.readAllBytes(one)));
        String[] none = CliTest.run(1, "dataset", "cat", "--ns", ns1, "--sample", "0", "--member", "png");
        assertTrue(none[1].contains("has no member 'png'; it has "), none[1]);
        none = CliTest.run(1, "dataset", "cat", "--ns", ns1, "--sample", "60");
        assertTrue(none[1].contains("--sample 60 is not in the dataset (0 to 59)"), none[1]);
    }

    /**
     * Issue 30, finding 17: {@code --skip-corrupt} says how many samples it left out. One damaged tar header (sample 1's
     * first member) costs sample 0, which may have lost a member, and sample 1, found again after it: two samples for
     * one record, where the summary used to say "1 corrupt records left out".
     */
    @Test
    void skipCorruptCountsTheSamplesItLeavesOut() throws Exception {
        DatasetGenerator.Spec spec = new DatasetGenerator.Spec(ShardFormat.TAR, 1, 10, 1000, 1000, 5, 0);
        Path tar = DatasetGenerator.generate(dir.resolve("bad"), spec).get(0);
        byte[] bytes = java.nio.file.Files.readAllBytes(tar);
        int sample = 512 + 1024 + 512 + 512; // KEY.bin (1000 bytes, padded) and KEY.cls (1 byte), each after its header
        bytes[sample + 10] ^= 0x55;
        java.nio.file.Files.write(tar, bytes);
        String[] out = CliTest.run(0, "dataset", "import", "--skip-corrupt", "--ns", ns1, dir.resolve("bad").toString());
        assertTrue(out[0].contains("1 shards, 8 samples") && out[0].contains("2 samples left out for 1 corrupt record"),
                out[0]);
        assertTrue(out[1].contains("sample00000000 left out") && out[1].contains("sample00000001 follows a damaged"
                + " header"), out[1]);
        JsonNode parts = new ObjectMapper().readTree(CliTest.run(0, "dataset", "ls", "--json", "--ns", ns1)[0]);
        assertEquals(2, parts.get(0).get("shards").get(0).get("samplesLeftOut").asInt(), parts.toString());
    }

    /** A short loader-bench run: its baseline is the loader's own reads replayed, and the ratio is reported. */
    @Test
    void loaderBenchComparesTheLoaderWithItsReadsReplayed() throws Exception {
        String[] out = CliTest.run(0, "loader-bench", "--ns", ns2, "--dataset-size", "2MiB", "--time", "1", "--ramp", "0",
                "--json");
        JsonNode round = new ObjectMapper().readTree(out[0]).get("rounds").get(0);
        assertTrue(round.get("raw").get("workload").asText().startsWith("the loader's"), round.toString());
        assertTrue(round.get("ratio").asDouble() > 0 && round.get("raw").get("iops").asDouble() > 0, round.toString());
    }

    private static int percent(String line) {
        int pct = line.indexOf('%');
        int start = line.lastIndexOf(' ', pct - 1);
        return (int) Double.parseDouble(line.substring(start + 1, pct));
    }

    @Test
    void badInputGetsAClearErrorAndChangesNothing() throws Exception {
        DatasetGenerator.generate(dir.resolve("s"), new DatasetGenerator.Spec(ShardFormat.TFRECORD, 1, 10, 10, 100, 1, 0));
        String shards = dir.resolve("s").toString();
        assertTrue(CliTest.run(1, "dataset", "import", shards)[1].contains("say which namespaces"));
        assertTrue(CliTest.run(1, "dataset", "import", "--ns", ns1, dir.resolve("nothing").toString())[1].contains("does not exist"));
        assertTrue(CliTest.run(1, "dataset", "import", "--ns", ns1, "--format", "fixed", shards)[1].contains("--record-size"));
        assertTrue(CliTest.run(1, "dataset", "import", "--ns", "tcp://127.0.0.1:" + target.tcpPort(0) + "/" + NQN + "/7",
                shards)[1].contains("namespace 7 is not active"));
        assertTrue(CliTest.run(1, "dataset", "import", "--ns", "udp://x/y", shards)[1].contains("not tcp or rdma"));
        assertTrue(CliTest.run(1, "dataset", "import", "--ns", ns1, "--format", "zip", shards)[1].contains("unknown format"));
        assertTrue(CliTest.run(0, "dataset", "ls", "--ns", ns1)[0].contains("no dataset"), "nothing was written");
        String[] noData = CliTest.run(1, "dataset", "verify", "--ns", ns1);
        assertTrue(noData[1].contains("holds no dataset") && noData[1].contains("dataset import"), noData[1]);

        assertTrue(CliTest.run(0, "dataset", "import", "--ns", ns1, shards)[0].contains("10 samples"));
        String[] twice = CliTest.run(1, "dataset", "import", "--ns", ns1, shards);
        assertTrue(twice[1].contains("--force"), twice[1]);
        // A corrupt TFRecord is refused before anything is written, naming the file and the offset.
        java.nio.file.Files.write(dir.resolve("bad.tfrecord"), new byte[] {5, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9, 9, 9, 0, 0, 0, 0});
        String[] corrupt = CliTest.run(1, "dataset", "import", "--ns", ns2, dir.resolve("bad.tfrecord").toString());
        assertTrue(corrupt[1].contains("shard bad.tfrecord, offset 0: TFRecord length CRC mismatch"), corrupt[1]);
        assertTrue(CliTest.run(0, "dataset", "ls", "--ns", ns2)[0].contains("no dataset"));
    }
}

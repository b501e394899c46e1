package io.nvmeof.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 30, finding 14: the target under a running epoch stops and starts again on the same port. A RAM namespace
 * comes back empty (with a new identity, or with the identity a restored configuration gives it): the loader must fail
 * with {@link DatasetChangedException} and never hand out a sample read from the empty namespace (zeros). A
 * file-backed namespace comes back with its data and identity: the epoch goes on to its end, every sample intact.
 */
@Timeout(120)
class TargetRestartTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:restart";
    /** Fixed-size records: nothing in a record tells zeros from data, so only the loader's checks can. */
    private static final DatasetGenerator.Spec SPEC = new DatasetGenerator.Spec(ShardFormat.FIXED, 2, 96, 0, 0, 14, 4096);
    private static final int BEFORE_RESTART = 40;

    @TempDir
    Path dir;

    private NvmeTarget target;

    @AfterEach
    void stop() {
        if (target != null) {
            target.close();
        }
    }

    private NvmeTarget start(int port, String namespace) throws IOException {
        return NvmeTarget.start(TargetConfig.parse("{\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\","
                + "\"port\":" + port + "}],\"subsystems\":[{\"nqn\":\"" + NQN + "\",\"namespaces\":[" + namespace + "]}]}"));
    }

    private static String ram(String uuid) {
        return "{\"nsid\":1,\"backend\":\"ram\",\"size\":\"4MiB\",\"blockSize\":512"
                + (uuid != null ? ",\"uuid\":\"" + uuid + "\"" : "") + "}";
    }

    private String file() {
        return "{\"nsid\":1,\"backend\":\"file\",\"size\":\"4MiB\",\"blockSize\":512,\"path\":\"" + dir.resolve("ns1.img") + "\"}";
    }

    /** Reconnecting quickly, and for long enough to see the target back. */
    private static ConnectOptions reconnecting() {
        return ConnectOptions.builder().ioQueues(2).connectTimeout(Duration.ofSeconds(2))
                .commandTimeout(Duration.ofSeconds(5)).reconnectDelay(Duration.ofMillis(100))
                .ctrlLossTimeout(Duration.ofSeconds(30)).build();
    }

    /** Starts the target on an ephemeral port and imports the dataset; returns its location. */
    private DatasetLocation importDataset(String namespace) throws IOException {
        target = start(0, namespace);
        DatasetLocation loc = LoaderTest.location(target, NQN, 1);
        DatasetGenerator.generate(dir.resolve("src"), SPEC);
        try (NvmeofController c = NvmeofController.connect(loc.transportId(), ConnectOptions.defaults())) {
            DatasetImporter.run(DatasetImporter.scan(List.of(dir.resolve("src")), ShardFormat.FIXED), List.of(c.namespace(1)),
                    LoaderTest.options("restart", SPEC.recordSize()), ImportProgress.SILENT);
        }
        return loc;
    }

    private void restart(DatasetLocation loc, String namespace) throws Exception {
        int port = loc.transportId().trsvcid();
        target.close();
        target = null;
        Thread.sleep(300);
        target = start(port, namespace);
    }

    /** What a consumer saw: samples that were the source's, samples that were not (zeros above all). */
    private static final class Seen {
        int good;
        final List<String> bad = new ArrayList<>();

        void check(SampleView s) {
            ByteBuffer data = s.member(0);
            if (DatasetGenerator.matches(SPEC, LoaderTest.generatorIndex(SPEC, s), data)) {
                good++;
            } else {
                boolean zeros = true;
                for (int i = data.position(); i < data.limit() && zeros; i++) {
                    zeros = data.get(i) == 0;
                }
                bad.add(s.key() + (zeros ? " (zeros)" : " (other bytes)"));
            }
        }
    }

    /**
     * Reads {@link #BEFORE_RESTART} samples, restarts the target with {@code after}, then reads on until the epoch
     * ends or the loader fails; returns what was seen and the failure.
     */
    private RuntimeException readAcrossRestart(DatasetLocation loc, String after, Seen seen, NvmeofDataset ds)
            throws Exception {
        // A small buffer: most of the epoch is read after the restart.
        try (DatasetLoader l = ds.loader().window(8).prefetchBytes(64 << 10).build(); SampleIterator it = l.samples(0)) {
            for (int i = 0; i < BEFORE_RESTART; i++) {
                seen.check(it.next());
            }
            restart(loc, after);
            try {
                while (it.hasNext()) {
                    seen.check(it.next());
                }
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        }
    }

    private void assertFailsWithoutZeros(String namespace, String after) throws Exception {
        DatasetLocation loc = importDataset(namespace);
        Seen seen = new Seen();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            RuntimeException failure = readAcrossRestart(loc, after, seen, ds);
            assertEquals(List.of(), seen.bad, "samples handed out after the target came back empty");
            assertTrue(failure instanceof DatasetChangedException, "the loader fails naming the change, got " + failure);
            String m = failure.getMessage();
            assertTrue(m.contains("nsid 1 of") && m.contains(NQN) && m.contains("gone or changed")
                    && m.contains("checkpoint"), m);
            assertTrue(seen.good >= BEFORE_RESTART, "samples before the restart: " + seen.good);
            // Random access refuses too, rather than read the empty namespace.
            assertThrows(DatasetChangedException.class, () -> ds.read(0));
        }
    }

    @Test
    void aRamTargetRestartedEmptyWithANewIdentityFailsTheLoaderWithoutZeros() throws Exception {
        assertFailsWithoutZeros(ram(null), ram(null));
    }

    /** A restored configuration gives the RAM namespace its old UUID and NGUID back, but not its data. */
    @Test
    void aRamTargetRestartedEmptyWithTheSameIdentityFailsTheLoaderWithoutZeros() throws Exception {
        String uuid = UUID.randomUUID().toString();
        assertFailsWithoutZeros(ram(uuid), ram(uuid));
    }

    @Test
    void aTargetRestartedWithTheSameDataContinuesTheEpoch() throws Exception {
        DatasetLocation loc = importDataset(file());
        Seen seen = new Seen();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            RuntimeException failure = readAcrossRestart(loc, file(), seen, ds);
            if (failure != null) {
                throw new AssertionError("the epoch failed after a restart with the same data", failure);
            }
            assertEquals(List.of(), seen.bad);
            assertEquals(ds.sampleCount(), seen.good, "every sample, each once");
            assertTrue(DatasetGenerator.matches(SPEC, 5, ds.read(5).member(0)));
        }
    }

    /**
     * A group whose reads did not all complete under one checked association (a reconnect came between them, and the
     * association they went through is gone unchecked) is read again before anything of it is handed out. Made so
     * here by scribbling over a read-ahead group and stamping it with an association never checked.
     */
    @Test
    void aGroupReadAcrossAnUncheckedReconnectIsReadAgainBeforeItIsHandedOut() throws Exception {
        DatasetLocation loc = importDataset(file());
        Seen seen = new Seen();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting());
             DatasetLoader l = ds.loader().window(8).prefetchBytes(64 << 10).build(); SampleIterator it = l.samples(0)) {
            seen.check(it.next());
            ReadAhead ra = l.readAhead();
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (!ra.ready(1) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertTrue(ra.ready(1), "the second group is read ahead");
            for (int p = 8; p < 16; p++) {
                for (int i = 0; i < SPEC.recordSize(); i++) {
                    ra.arena.put(ra.offsetOf(p) + i, (byte) 0xEE);
                }
            }
            ra.stamp(1, ra.stamp(1) + 1000);
            assertEquals(ReadAhead.MIXED, ra.stamp(1));
            while (it.hasNext()) {
                seen.check(it.next());
            }
            assertEquals(List.of(), seen.bad);
            assertEquals(ds.sampleCount(), seen.good);
        }
    }
}

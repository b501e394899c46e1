package io.nvmeof.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35 part 4: a dataset whose namespace is reached through two paths is read through both as one multipath
 * namespace; the path the reads go through goes away mid-epoch, and the epoch goes on to its end through the other,
 * every sample intact, no error. The paths are two target instances over one file (as two target processes over one
 * shared backend: same NQN, serial and namespace identifiers, disjoint controller IDs), or two listeners of one target.
 */
@Timeout(120)
class MultipathLoaderTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:loader-multipath";
    /** Fixed-size records: a read that lost its data would show as zeros, not as a damaged record. */
    private static final DatasetGenerator.Spec SPEC = new DatasetGenerator.Spec(ShardFormat.FIXED, 4, 128, 0, 0, 35, 4096);
    private static final int BEFORE_LOSS = 64;

    @TempDir
    Path dir;

    private final List<NvmeTarget> targets = new ArrayList<>();

    @AfterEach
    void stop() {
        for (NvmeTarget t : targets) {
            t.close();
        }
    }

    private NvmeTarget start(String json) throws Exception {
        NvmeTarget t = NvmeTarget.start(TargetConfig.parse(json));
        targets.add(t);
        return t;
    }

    /**
     * A target exporting subsystem {@link #NQN} on one listener, its namespace 1 {@code backend} ("file" over
     * {@code file}, or "ram"), with identifiers and serial fixed so that two such targets are two paths to one
     * namespace as far as the initiator can tell.
     */
    private NvmeTarget startSharing(String backend, Path file, int cntlidMin) throws Exception {
        return startSharing(backend, file, cntlidMin, "optimized");
    }

    /** As {@link #startSharing(String, Path, int)}, its listener's ANA state for group 1 {@code ana}. */
    private NvmeTarget startSharing(String backend, Path file, int cntlidMin, String ana) throws Exception {
        return start("{\"listeners\":[{\"id\":1,\"transport\":\"tcp\",\"address\":\"127.0.0.1\",\"port\":0,"
                + "\"ana\":{\"1\":\"" + ana + "\"}}],"
                + "\"subsystems\":[{\"nqn\":\"" + NQN + "\",\"serial\":\"LOADERMP\",\"cntlidMin\":" + cntlidMin
                + ",\"cntlidMax\":" + (cntlidMin + 99) + ",\"namespaces\":[{\"nsid\":1,\"backend\":\"" + backend
                + "\"," + (file != null ? "\"path\":\"" + file + "\"," : "") + "\"size\":\"8MiB\",\"blockSize\":512,"
                + "\"uuid\":\"0b5e6a1c-3f2d-4c1e-9a57-35a0d1e2f3a4\",\"nguid\":\"35a0d1e2f3a40b5e6a1c3f2d4c1e9a57\"}]}]}");
    }

    /** An 8 MiB file for a file namespace. */
    private Path emptyFile(String name) throws IOException {
        Path file = dir.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8 << 20);
        }
        return file;
    }

    /** Imports {@link #SPEC}'s dataset through the first path of {@code loc} and returns {@code loc}. */
    private DatasetLocation importDataset(DatasetLocation loc) throws Exception {
        DatasetGenerator.generate(dir.resolve("src"), SPEC);
        try (NvmeofController c = NvmeofController.connect(loc.paths().get(0), ConnectOptions.defaults())) {
            DatasetImporter.run(DatasetImporter.scan(List.of(dir.resolve("src")), ShardFormat.FIXED),
                    List.of(c.namespace(1)), LoaderTest.options("multipath", SPEC.recordSize()), ImportProgress.SILENT);
        }
        return loc;
    }

    /** Two target instances over one file; the dataset imported through the first. */
    private DatasetLocation twoTargetsOverOneFile() throws Exception {
        Path file = emptyFile("shared.img");
        NvmeTarget a = startSharing("file", file, 1);
        NvmeTarget b = startSharing("file", file, 100);
        return importDataset(DatasetLocation.parse("tcp://127.0.0.1:" + a.tcpPort(0) + ",127.0.0.1:" + b.tcpPort(0)
                + "/" + NQN + "/1"));
    }

    /** Two listeners (ids 1 and 2) of one target's subsystem with one RAM namespace. */
    private DatasetLocation twoListenersOfOneTarget() throws Exception {
        NvmeTarget t = start("{\"listeners\":["
                + "{\"id\":1,\"transport\":\"tcp\",\"address\":\"127.0.0.1\",\"port\":0},"
                + "{\"id\":2,\"transport\":\"tcp\",\"address\":\"127.0.0.1\",\"port\":0}],"
                + "\"subsystems\":[{\"nqn\":\"" + NQN + "\",\"namespaces\":[{\"nsid\":1,\"backend\":\"ram\","
                + "\"size\":\"8MiB\",\"blockSize\":512}]}]}");
        return importDataset(DatasetLocation.parse("tcp://127.0.0.1:" + t.tcpPort(0) + ",127.0.0.1:" + t.tcpPort(1)
                + "/" + NQN + "/1"));
    }

    /** The lost path reconnects quickly (and fails each time: its listener is gone), as it would in production. */
    private static ConnectOptions reconnecting() {
        return ConnectOptions.builder().ioQueues(2).connectTimeout(Duration.ofSeconds(2))
                .commandTimeout(Duration.ofSeconds(5)).reconnectDelay(Duration.ofMillis(100))
                .ctrlLossTimeout(Duration.ofSeconds(60)).build();
    }

    @Test
    void anEpochGoesOnWhenOneOfTwoTargetsOverOneBackendStops() throws Exception {
        DatasetLocation loc = twoTargetsOverOneFile();
        readEpochLosingFirstPath(loc, () -> targets.get(0).close());
    }

    @Test
    void anEpochGoesOnWhenTheListenerItReadsThroughIsRemoved() throws Exception {
        DatasetLocation loc = twoListenersOfOneTarget();
        readEpochLosingFirstPath(loc, () -> targets.get(0).live().removeListener(1));
    }

    /**
     * Reads an epoch, {@code losePath0} run after {@link #BEFORE_LOSS} samples, then the next epoch and one sample on
     * its own: each epoch sees every sample once, each the source's, and nothing fails.
     */
    private void readEpochLosingFirstPath(DatasetLocation loc, Runnable losePath0) throws Exception {
        List<String> bad = new ArrayList<>();
        int good = 0;
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            MultipathNamespace mp = ds.multipath(0);
            assertNotNull(mp, "two paths: read through a multipath namespace");
            assertEquals(2, ds.controllers().size());
            NvmeofController first = mp.paths().get(0).controller();
            // A small buffer and verified samples: most of the epoch is read, and checked, after the loss.
            try (DatasetLoader l = ds.loader().window(8).prefetchBytes(64 << 10).verify(true).build();
                 SampleIterator it = l.samples(0)) {
                for (int i = 0; i < BEFORE_LOSS; i++) {
                    good += check(it.next(), bad);
                }
                assertTrue(mp.completedThrough(0) > 0, "path 0 (queue-depth takes the first of idle paths) read "
                        + "before it went: " + mp.describePaths());
                long secondBefore = mp.completedThrough(1);
                int stampBefore = ds.reconnects().stamp();
                long lostNanos = System.nanoTime();
                losePath0.run();
                for (int i = 0; i < 8; i++) {
                    good += check(it.next(), bad);
                }
                // The bound on the pause a failover costs: ANATT (10 s) + 1 s. Not a speed check: a loader
                // that waited out the controller's reconnect or the failover timeout would break it.
                long pauseMs = (System.nanoTime() - lostNanos) / 1_000_000;
                assertTrue(pauseMs < 11_000, "the next samples came " + pauseMs + " ms after the loss");
                // Path 0 is down, retrying every 100 ms and failing: no association came up, so nothing read since is
                // checked or read again (a stamp that moved with each attempt kept the loader re-reading).
                int lostAt = first.associationGeneration();
                long until = System.nanoTime() + 10_000_000_000L;
                while (first.associationGeneration() < lostAt + 3 && System.nanoTime() < until) {
                    Thread.sleep(20);
                }
                assertTrue(first.associationGeneration() >= lostAt + 3, "path 0 tried to reconnect: " + first.lastFailure());
                assertEquals(stampBefore, ds.reconnects().stamp(), "failed attempts are no new association");
                while (it.hasNext()) {
                    good += check(it.next(), bad);
                }
                assertNotEquals(ControllerState.CONNECTED, first.state(), "path 0 was lost mid-epoch");
                assertTrue(mp.completedThrough(1) > secondBefore, "path 1 read the rest: " + mp.describePaths());
            }
            assertEquals(List.of(), bad, "samples that were not the source's");
            assertEquals(ds.sampleCount(), good, "every sample of the epoch, each once");
            int second = 0;
            try (DatasetLoader l = ds.loader().build(); SampleIterator it = l.samples(1)) {
                while (it.hasNext()) {
                    second += check(it.next(), bad);
                }
            }
            assertEquals(ds.sampleCount(), second, "the next epoch, through the path left");
            assertEquals(1, check(ds.read(ds.sampleCount() - 1, true), bad), "a sample read on its own");
            assertEquals(List.of(), bad);
        }
    }

    @Test
    void pathsThatDoNotReachTheSameBytesAreRefusedAtConnect() throws Exception {
        // Same NQN, serial and identifiers, so the initiator takes them for one namespace; but the second target's
        // namespace is an empty RAM one, not the file the dataset is on.
        NvmeTarget a = startSharing("file", emptyFile("alone.img"), 1);
        NvmeTarget b = startSharing("ram", null, 100);
        DatasetLocation loc = importDataset(DatasetLocation.parse("tcp://127.0.0.1:" + a.tcpPort(0) + ",127.0.0.1:"
                + b.tcpPort(0) + "/" + NQN + "/1"));
        IOException e = assertThrows(IOException.class, () -> NvmeofDataset.connect(List.of(loc), reconnecting()));
        assertTrue(e.getMessage().contains("path 1 (127.0.0.1:" + b.tcpPort(0) + ")")
                && e.getMessage().contains("holds no dataset label"), e.getMessage());
        // The first path alone is the dataset.
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(new DatasetLocation(loc.paths().get(0), 1)),
                reconnecting())) {
            assertEquals(SPEC.shards() * SPEC.samplesPerShard(), ds.sampleCount());
        }
    }

    /**
     * Review finding 1: a standby path (ANA inaccessible) cannot read its label, at open or at a check, and was passed
     * over while another path's label checked out; an ANA change moves no association, so once it became optimized
     * the multipath namespace sent reads to it and the loader handed them out unchecked. Here the standby is an empty
     * RAM namespace under the dataset's identifiers (a target restarted empty): once it is usable nothing read is
     * handed out before its label is checked, and the check fails the iteration with DatasetChangedException.
     */
    @Test
    void aStandbyPathThatBecomesUsableIsCheckedBeforeItsReadsAreHandedOut() throws Exception {
        NvmeTarget a = startSharing("file", emptyFile("active.img"), 1);
        NvmeTarget b = startSharing("ram", null, 100, "inaccessible");
        DatasetLocation loc = importDataset(DatasetLocation.parse("tcp://127.0.0.1:" + a.tcpPort(0) + ",127.0.0.1:"
                + b.tcpPort(0) + "/" + NQN + "/1"));
        List<String> bad = new ArrayList<>();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            MultipathNamespace mp = ds.multipath(0);
            assertEquals(io.nvmeof.protocol.log.AnaState.INACCESSIBLE, mp.paths().get(1).anaState());
            ReconnectCheck rc = ds.reconnects();
            assertTrue(rc.trusted(rc.stamp()), "the standby takes no reads: the stamp at open is trusted");
            try (DatasetLoader l = ds.loader().window(8).prefetchBytes(64 << 10).build();
                 SampleIterator it = l.samples(0)) {
                for (int i = 0; i < 16; i++) {
                    check(it.next(), bad);
                }
                b.live().setAnaState(1, 1, "optimized");
                long until = System.nanoTime() + 10_000_000_000L;
                while (mp.paths().get(1).anaState() != io.nvmeof.protocol.log.AnaState.OPTIMIZED
                        && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
                assertEquals(io.nvmeof.protocol.log.AnaState.OPTIMIZED, mp.paths().get(1).anaState());
                assertFalse(rc.trusted(rc.stamp()), "a usable path not checked: nothing read now is trusted");
                DatasetChangedException e = assertThrows(DatasetChangedException.class, () -> {
                    while (it.hasNext()) {
                        check(it.next(), bad);
                    }
                });
                assertTrue(e.getMessage().contains("through path 1"), e.getMessage());
            }
            assertEquals(List.of(), bad, "nothing of the empty path was handed out");
            assertThrows(DatasetChangedException.class, () -> ds.read(0));
        }
    }

    /**
     * Review finding 2: a path's label read is held while its controller reconnects (up to its loss timeout), and the
     * check waited inside its lock while the other path served everything. It waits only while the path stays
     * connected on one association; the reader, its read still in flight, is not used again.
     */
    @Test
    void aPathLabelReadGivesUpOnceItsControllerIsLost() throws Exception {
        DatasetLocation loc = twoTargetsOverOneFile();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            NvmeofController first = ds.multipath(0).paths().get(0).controller();
            NamespaceIo before = ds.pathReader(0, 0);
            targets.get(0).close();
            long until = System.nanoTime() + 10_000_000_000L;
            while (first.isConnected() && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertFalse(first.isConnected());
            long t0 = System.nanoTime();
            assertTimeoutPreemptively(Duration.ofSeconds(5),
                    () -> assertThrows(NamespaceIo.GaveUpException.class, () -> ds.reconnects().readPathLabel(ds, 0, 0)));
            assertTrue(System.nanoTime() - t0 < 1_000_000_000L);
            assertNotSame(before, ds.pathReader(0, 0), "its reader, a read in flight, was dropped");
            // The loader reads on through the other path, its check not held.
            try (DatasetLoader l = ds.loader().build(); SampleIterator it = l.samples(0)) {
                List<String> bad = new ArrayList<>();
                int good = 0;
                while (it.hasNext()) {
                    good += check(it.next(), bad);
                }
                assertEquals(ds.sampleCount(), good);
            }
        }
    }

    /**
     * Review finding 4: a reader whose read threw with chunks still in flight went back to the pool, and the next read
     * reused buffers a late chunk would land in. It goes back only once they are done.
     */
    @Test
    void aReaderWithChunksInFlightIsNotReusedUntilTheyAreDone() throws Exception {
        DatasetLocation loc = twoTargetsOverOneFile();
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(new DatasetLocation(loc.paths().get(0), 1)),
                reconnecting())) {
            NamespaceHandle ns = ds.parts().get(0).namespace();
            targets.get(0).close();
            long until = System.nanoTime() + 10_000_000_000L;
            while (ns.controller().isConnected() && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            // The controller holds the read while it reconnects: the reader stops waiting with its chunks in flight.
            NamespaceIo io = ds.reader(0);
            long deadline = System.nanoTime() + 200_000_000L;
            io.patience(() -> System.nanoTime() - deadline < 0);
            assertThrows(NamespaceIo.GaveUpException.class, () -> io.read(0, ByteBuffer.allocate(io.chunkBytes() * 2)));
            assertFalse(io.settled());
            ds.returnReader(0, io);
            assertNotSame(io, ds.reader(0), "a reader with reads in flight is not handed out again");
        }
    }

    /**
     * Review finding 7: a check with no path readable on its own (path 0 connected but ANA inaccessible, path 1 down)
     * failed instead of waiting, as a single path's check does, for a path through the multipath namespace.
     */
    @Test
    void aCheckWithNoPathReadableOnItsOwnWaitsThroughTheMultipathNamespace() throws Exception {
        DatasetLocation loc = twoTargetsOverOneFile();
        NvmeTarget a = targets.get(0);
        int portA = a.tcpPort(0);
        try (NvmeofDataset ds = NvmeofDataset.connect(List.of(loc), reconnecting())) {
            NamespaceHandle path0 = ds.multipath(0).paths().get(0);
            NvmeofController c0 = path0.controller();
            NvmeofController c1 = ds.multipath(0).paths().get(1).controller();
            targets.get(1).close();
            long until = System.nanoTime() + 10_000_000_000L;
            while (c1.isConnected() && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertFalse(c1.isConnected());
            // Path 0 reconnects (a new association: the stamp moves) to a listener that is inaccessible.
            int gen0 = c0.establishedGeneration();
            a.live().addListener(new TargetConfig.ListenerConfig(2, "tcp", "127.0.0.1", 0, null, null, null)); // not its last
            a.live().removeListener(1);
            a.live().addListener(new TargetConfig.ListenerConfig(1, "tcp", "127.0.0.1", portA, null, null, null, null,
                    java.util.Map.of("1", "inaccessible")));
            while (!(c0.establishedGeneration() > gen0 && c0.isConnected()
                    && path0.anaState() == io.nvmeof.protocol.log.AnaState.INACCESSIBLE) && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertTrue(c0.establishedGeneration() > gen0 && c0.isConnected(), c0.state() + ", " + c0.lastFailure());
            assertEquals(io.nvmeof.protocol.log.AnaState.INACCESSIBLE, path0.anaState());
            assertFalse(ds.reconnects().trusted(ds.reconnects().stamp()));
            Thread later = new Thread(() -> {
                try {
                    Thread.sleep(300);
                    a.live().setAnaState(1, 1, "optimized");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            later.start();
            List<String> bad = new ArrayList<>();
            assertEquals(1, check(ds.read(0, true), bad), "read once path 0 is usable, its label checked");
            later.join();
            assertEquals(List.of(), bad);
        }
    }

    /** Review finding 12: one namespace through one controller named twice made a second multipath namespace over it. */
    @Test
    void aNamespaceNamedTwiceIsRefusedAtConnect() throws Exception {
        DatasetLocation loc = twoTargetsOverOneFile();
        for (DatasetLocation again : List.of(loc, new DatasetLocation(loc.paths().get(0), 1),
                new DatasetLocation(List.of(loc.paths().get(1), loc.paths().get(0)), 1))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NvmeofDataset.connect(List.of(loc, again), reconnecting()));
            assertTrue(e.getMessage().contains("give each namespace once"), e.getMessage());
        }
    }

    private static int check(SampleView s, List<String> bad) {
        if (DatasetGenerator.matches(SPEC, LoaderTest.generatorIndex(SPEC, s), s.member(0))) {
            return 1;
        }
        bad.add(s.key());
        return 0;
    }

    @Test
    void aLocationNamesSeveralPathsCommaSeparated() {
        DatasetLocation l = DatasetLocation.parse("tcp://10.0.0.5:4420,[fe80::1]:4421,10.0.0.7/nqn.x:y/3");
        assertEquals(List.of(new TransportId("tcp", "10.0.0.5", 4420, "nqn.x:y"),
                new TransportId("tcp", "fe80::1", 4421, "nqn.x:y"), new TransportId("tcp", "10.0.0.7", 4420, "nqn.x:y")),
                l.paths());
        assertEquals(3, l.nsid());
        assertEquals("tcp://10.0.0.5:4420,[fe80::1]:4421,10.0.0.7:4420/nqn.x:y/3", l.toString());
        assertEquals(l, DatasetLocation.parse(l.toString()));
        assertEquals(l.paths().get(0), l.transportId());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DatasetLocation.parse("tcp://10.0.0.5:4420,/nqn.x:y/1"));
        assertTrue(e.getMessage().contains("no address in one of its comma-separated paths"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> DatasetLocation.parse("tcp://10.0.0.5:4420,10.0.0.5:4420/nqn.x:y/1"));
        assertTrue(e.getMessage().contains("given twice"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> DatasetLocation.parse("tcp://10.0.0.5:4420,10.0.0.6:x/nqn.x:y/1"));
        assertTrue(e.getMessage().contains("port 'x' is not a number"), e.getMessage());
        // Unbracketed IPv6: its last group would pass for a port (fe80::1 read as fe80: port 1 before).
        e = assertThrows(IllegalArgumentException.class, () -> DatasetLocation.parse("tcp://fe80::1/nqn.x:y/1"));
        assertTrue(e.getMessage().contains("IPv6 address in brackets"), e.getMessage());
        // A URL names one subsystem; paths built in Java may not mix subsystems or transports.
        e = assertThrows(IllegalArgumentException.class, () -> new DatasetLocation(List.of(
                new TransportId("tcp", "10.0.0.5", 4420, "nqn.x:y"), new TransportId("tcp", "10.0.0.6", 4420, "nqn.x:z")), 1));
        assertTrue(e.getMessage().contains("of one subsystem over one transport")
                && e.getMessage().contains("nqn.x:z"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new DatasetLocation(List.of(
                new TransportId("tcp", "10.0.0.5", 4420, "nqn.x:y"), new TransportId("rdma", "10.0.0.6", 4420, "nqn.x:y")), 1));
        assertTrue(e.getMessage().contains("of one subsystem over one transport"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new DatasetLocation(List.of(), 1));
        assertTrue(e.getMessage().contains("at least one path"), e.getMessage());
        assertEquals(List.of(new TransportId("tcp", "10.0.0.5", 4420, "nqn.x:y")),
                DatasetLocation.parse("tcp://10.0.0.5/nqn.x:y").paths(), "one path, as before");
    }
}

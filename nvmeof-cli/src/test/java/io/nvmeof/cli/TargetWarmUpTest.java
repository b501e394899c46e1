package io.nvmeof.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.core.ListenerInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The start-up warm-up (issue 53) runs on the real engine before it listens, through a private subsystem and listener,
 * and leaves nothing behind: no subsystem, no listener, no file, no byte written to the configuration's namespaces.
 * How much faster a host's first seconds are is a benchmark's question (docs/bench/ConnectionWarmup.java), not this
 * test's.
 */
class TargetWarmUpTest {
    private static final String CONFIGURED = "nqn.2026-12.io.nvmeof:under-test";

    @TempDir
    Path dir;

    @Test
    void runsItsOwnIoBeforeTheTargetListensAndLeavesNothingBehind() throws Exception {
        Path disk = dir.resolve("disk.img");
        byte[] pattern = new byte[1 << 20];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (i * 31 + 7);
        }
        Files.write(disk, pattern);
        String json = """
                {"listeners": [ { "transport": "tcp", "address": "127.0.0.1", "port": 0 } ],
                 "subsystems": [ { "nqn": "%s", "allowAnyHost": true, "namespaces": [
                     { "nsid": 1, "backend": "ram", "size": "1MiB", "blockSize": 4096 },
                     { "nsid": 2, "backend": "file", "path": "%s", "blockSize": 4096 } ] } ] }
                """.formatted(CONFIGURED, disk);
        Path scratch = Files.createDirectory(dir.resolve("scratch"));
        AtomicReference<TargetWarmUp.Result> result = new AtomicReference<>();
        AtomicReference<List<ListenerInfo>> listenersDuring = new AtomicReference<>();
        AtomicReference<String> intruder = new AtomicReference<>("never found the warm-up's listener");
        try (NvmeTarget target = NvmeTarget.start(TargetConfig.parse(json), null, t -> {
            // Another local process, meanwhile, finds the private listener and tries its subsystem: refused.
            Thread other = new Thread(() -> intrude(t, intruder));
            other.start();
            result.set(TargetWarmUp.run(t, 3, scratch));
            try {
                other.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            listenersDuring.set(List.copyOf(t.core().listeners()));
        })) {
            TargetWarmUp.Result r = result.get();
            assertNull(r.skipped(), r.describe());
            assertTrue(r.connections() >= 1 && r.ios() > 1_000, r.describe());
            assertTrue(r.seconds() < 3 + 30, r.describe()); // the budget, and one connection under way finishing
            assertTrue(listenersDuring.get().isEmpty(), "the warm-up's listener was still bound: " + listenersDuring.get());
            assertTrue(intruder.get().startsWith("refused"), intruder.get());
            assertEquals(List.of(CONFIGURED), target.core().subsystems().stream().filter(x -> !x.isDiscovery())
                    .map(x -> x.nqn()).toList(), "only the configured subsystem is left");
            assertEquals(1, target.core().listeners().size(), target.core().listeners().toString());
            try (Stream<Path> left = Files.list(scratch)) {
                assertEquals(List.of(), left.toList(), "the warm-up's file is left behind");
            }
            // The configuration's namespaces hold what they held: the RAM one zeroes, the file its pattern.
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0),
                    CONFIGURED), ConnectOptions.builder().build())) {
                assertEquals(2, c.namespaces().size());
                assertArrayEquals(new byte[1 << 20], readAll(c.namespace(1)), "the RAM namespace was written");
                assertArrayEquals(pattern, readAll(c.namespace(2)), "the file namespace was written");
            }
        }
        assertArrayEquals(pattern, Files.readAllBytes(disk));
    }

    @Test
    void aJvmWithoutItsOptimizingCompilerIsNotWarmedAndSaysWhy() throws Exception {
        // The test JVM itself has C2; the check reads the option, so a child JVM without it shows the refusal.
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process p = new ProcessBuilder(java.toString(), "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), "io.nvmeof.cli.Main", "target", "--no-admin", "--port", "0",
                "--size", "1MiB").redirectErrorStream(true).start();
        try {
            StringBuilder out = new StringBuilder();
            var reader = p.inputReader();
            CompletableFuture.runAsync(() -> {
                try {
                    String line;
                    while ((line = reader.readLine()) != null) {
                        out.append(line).append('\n');
                        if (line.contains("target running")) {
                            break;
                        }
                    }
                } catch (IOException e) {
                    out.append(e);
                }
            }).get(60, TimeUnit.SECONDS);
            assertTrue(out.toString().contains("warm-up skipped: the JVM runs without its optimizing compiler"
                    + " (-XX:TieredStopAtLevel=1)"), out.toString());
        } finally {
            p.destroy();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Connects, as a host of its own, to the subsystem of the first listener that shows up; says what happened. */
    private static void intrude(NvmeTarget t, AtomicReference<String> outcome) {
        long end = System.nanoTime() + 20_000_000_000L;
        while (System.nanoTime() < end) {
            for (ListenerInfo l : t.core().listeners()) {
                String nqn = l.subsystems().iterator().next();
                try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1",
                        Integer.parseInt(l.trsvcid()), nqn), ConnectOptions.builder().build())) {
                    outcome.set("connected to " + nqn + ": another host used the warm-up's subsystem");
                } catch (Exception e) {
                    outcome.set("refused: " + e.getMessage());
                }
                return;
            }
            Thread.onSpinWait();
        }
    }

    private static byte[] readAll(NamespaceHandle ns) throws Exception {
        byte[] all = new byte[(int) ns.sizeBytes()];
        int step = Math.min(ns.maxBlocksPerIo(), 64);
        ByteBuffer buf = ByteBuffer.allocateDirect(step * ns.blockSize());
        for (long lba = 0; lba < ns.blockCount(); lba += step) {
            int blocks = (int) Math.min(step, ns.blockCount() - lba);
            buf.clear().limit(blocks * ns.blockSize());
            ns.read(lba, blocks, buf).get(10, TimeUnit.SECONDS);
            buf.get(0, all, (int) (lba * ns.blockSize()), blocks * ns.blockSize());
        }
        return all;
    }
}

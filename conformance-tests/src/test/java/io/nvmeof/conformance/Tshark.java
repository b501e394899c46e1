package io.nvmeof.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Drives Wireshark's command-line tools: a loopback capture with dumpcap, then decoding with tshark. */
final class Tshark {
    private Tshark() {
    }

    static void requireInstalled() {
        for (String tool : new String[] {"tshark", "dumpcap"}) {
            if (!onPath(tool)) {
                throw new IllegalStateException(tool + " is not installed; this test decodes our traffic with Wireshark's "
                        + "nvme-tcp dissector. Install it with: apt-get install -y tshark (.ci/run does)");
            }
        }
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** A running capture of TCP traffic on one loopback port. */
    static final class Capture implements AutoCloseable {
        private final Process process;
        final Path file;

        Capture(int port, Path file) throws IOException, InterruptedException {
            this.file = file;
            Path log = Files.createTempFile("dumpcap", ".log");
            process = new ProcessBuilder("dumpcap", "-q", "-i", "lo", "-f", "tcp port " + port, "-w", file.toString())
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long deadline = System.currentTimeMillis() + 15000;
            while (!Files.readString(log).contains("Capturing on")) {
                if (!process.isAlive() || System.currentTimeMillis() > deadline) {
                    throw new IOException("dumpcap did not start: " + Files.readString(log));
                }
                Thread.sleep(50);
            }
            Thread.sleep(200);
        }

        @Override
        public void close() throws InterruptedException {
            Thread.sleep(300); // let the last segments reach the capture
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /** Runs tshark on a capture, decoding {@code port} as NVMe/TCP, and returns its standard output lines. */
    static List<String> decode(Path capture, int port, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("tshark", "-n", "-r", capture.toString(), "-d", "tcp.port==" + port + ",nvme-tcp"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("tshark timed out");
        }
        if (p.exitValue() != 0) {
            throw new IOException("tshark exited " + p.exitValue() + " for " + cmd);
        }
        String s = new String(out, StandardCharsets.UTF_8).trim();
        return s.isEmpty() ? List.of() : List.of(s.split("\n"));
    }
}

package io.nvmeof.conformance;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One of several target processes that export one subsystem over one shared file (docs/architecture.md, "Several
 * targets, one subsystem"): same NQN, serial and namespace UUID, its own controller ID range. It prints
 * {@code PORT n} once it listens, then serves until it is killed; tests pause it (SIGSTOP) and resume it (SIGCONT).
 *
 * <p>Arguments: the file, the first controller ID of its range, the namespace's size.
 */
public final class SharedFileTarget {
    static final String NQN = "nqn.2026-12.io.nvmeof:shared-file";
    static final String UUID = "6c1f9a52-58c4-4d0e-9f6b-2d3b7a0e4c11";
    static final int BLOCK = 4096;

    private SharedFileTarget() {
    }

    public static void main(String[] args) throws Exception {
        int cntlidMin = Integer.parseInt(args[1]);
        NvmeTarget target = NvmeTarget.start(new TargetConfig(1, 2, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SHAREDFILE01", null, 4, true, null,
                        List.of(new NamespaceConfig(1L, "file", args[2], BLOCK, args[0], UUID)),
                        cntlidMin, cntlidMin + 99))));
        System.out.println("PORT " + target.tcpPort(0));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    /** A running target process: its port, and SIGSTOP / SIGCONT / SIGKILL. */
    static final class Process implements AutoCloseable {
        final java.lang.Process process;
        final int port;

        private Process(java.lang.Process process, int port) {
            this.process = process;
            this.port = port;
        }

        /** Starts one in its own JVM over {@code file}, logging to {@code log}. */
        static Process start(Path file, int cntlidMin, String size, Path log) throws Exception {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            java.lang.Process p = new ProcessBuilder(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
                    "-cp", System.getProperty("java.class.path"), SharedFileTarget.class.getName(), file.toString(),
                    Integer.toString(cntlidMin), size).redirectError(log.toFile()).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.US_ASCII));
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (java.io.IOException e) {
                    return null;
                }
            }).get(60, TimeUnit.SECONDS);
            if (line == null || !line.startsWith("PORT ")) {
                p.destroyForcibly();
                throw new IllegalStateException("the target did not start: " + Files.readString(log));
            }
            return new Process(p, Integer.parseInt(line.substring(5).trim()));
        }

        void signal(String sig) throws Exception {
            int rc = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start().waitFor();
            if (rc != 0) {
                throw new IllegalStateException("kill -" + sig + " " + process.pid() + " failed: " + rc);
            }
        }

        void pause() throws Exception {
            signal("STOP");
        }

        void resume() throws Exception {
            signal("CONT");
        }

        @Override
        public void close() throws Exception {
            try {
                resume(); // a stopped process would not die of SIGKILL until continued on some systems
            } catch (Exception e) {
                // gone already
            }
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }
}

package io.nvmeof.conformance;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A target in a JVM of its own, started from a configuration, for faults a process suffers whole: paused with SIGSTOP
 * and continued, killed, placed in a cgroup that throttles a device. The process prints {@code PORT n} (its first
 * listener's port) once it listens, then serves until it is killed.
 */
final class TargetProcess implements AutoCloseable {
    final Process process;
    final int port;

    private TargetProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** The child's side: {@code args[0]} is the configuration file. */
    public static void main(String[] args) throws Exception {
        NvmeTarget target = NvmeTarget.start(TargetConfig.load(Path.of(args[0])));
        System.out.println("PORT " + target.tcpPort(0));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    /**
     * Starts one with {@code config}, written next to {@code log} (where the child's log goes), with these system
     * properties ({@code -Dname=value}); {@code cgroupProcs}, when not null, is a cgroup's {@code cgroup.procs} file the
     * process enters before the JVM starts (so every thread of it is in the cgroup).
     */
    static TargetProcess start(TargetConfig config, Path log, List<String> properties, Path cgroupProcs)
            throws Exception {
        Path file = log.resolveSibling(log.getFileName() + ".json");
        Files.writeString(file, config.toJson());
        List<String> cmd = new ArrayList<>();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        if (cgroupProcs != null) {
            cmd.addAll(List.of("sh", "-c", "echo $$ > \"$0\" && exec \"$@\"", cgroupProcs.toString()));
        }
        cmd.addAll(List.of(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED"));
        cmd.addAll(properties);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), TargetProcess.class.getName(),
                file.toString()));
        Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
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
        return new TargetProcess(p, Integer.parseInt(line.substring(5).trim()));
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
            resume();
        } catch (Exception e) {
            // gone already
        }
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }
}

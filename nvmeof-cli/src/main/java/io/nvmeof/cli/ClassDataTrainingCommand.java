package io.nvmeof.cli;

import io.nvmeof.admin.AdminOptions;
import io.nvmeof.admin.AdminServer;
import io.nvmeof.admin.AdminToken;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * The run the launcher records a class-data archive from (AppCDS, {@code -XX:ArchiveClassesAtExit}): the commands
 * users start most, in one JVM, so that the classes they load (picocli, Jackson, Netty, Vert.x, the HTTP client, the
 * target, the initiator) are mapped from the archive by every later start instead of being read, parsed and verified
 * again. A target on free ports of 127.0.0.1, then {@code admin subsystems}, {@code identify} and a one-second
 * {@code bench} against it, their output dropped. Hidden: it is the launcher's, not a user's.
 */
@Command(name = "class-data-training", hidden = true,
        description = "Runs the commands the launcher's class-data archive is recorded from (internal).")
final class ClassDataTrainingCommand implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
        Path state = Files.createTempDirectory("nvmeof-class-data");
        PrintStream out = System.out;
        PrintStream err = System.err;
        PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream());
        System.setOut(nowhere);
        System.setErr(nowhere);
        // The target as `nvmeof target` starts it (engine, listener, admin API), closed at the end so that the run
        // also works inside a test's JVM.
        NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        try (AdminServer admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0,
                AdminToken.loadOrCreate(state.resolve("admin-token")), List.of(), null))) {
            String p = Integer.toString(target.tcpPort(0));
            int ok = Main.run("admin", "--url", "http://127.0.0.1:" + admin.port(), "--state-dir", state.toString(),
                    "subsystems");
            ok |= Main.run("identify", "-s", p, "-n", TargetConfig.DEFAULT_NQN);
            ok |= Main.run("bench", "-s", p, "-n", TargetConfig.DEFAULT_NQN, "--time", "1", "--ramp", "0", "--qd", "4");
            ok |= Main.run("target", "--print-config");
            return ok == 0 ? 0 : 1;
        } finally {
            target.close();
            System.setOut(out);
            System.setErr(err);
            deleteTree(state);
        }
    }

    private static void deleteTree(Path dir) throws java.io.IOException {
        try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}

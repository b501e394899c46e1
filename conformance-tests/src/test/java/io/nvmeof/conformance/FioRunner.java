package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs Debian's fio (the one installed, unmodified) with the external engine {@code native/target/fio/nvmeof-fio.so}
 * in a test's directory, and hands back its exit code, stdout (the JSON) and stderr.
 */
final class FioRunner {
    static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    static final Path ENGINE = REPO.resolve("native/target/fio/nvmeof-fio.so");

    private final Path dir;

    FioRunner(Path dir) {
        this.dir = dir;
    }

    /** Skips the calling test class, saying why, when the engine or the initiator's jar was not built. */
    static void assumeBuilt() {
        assumeTrue(Files.exists(ENGINE), "the fio engine was not built (" + ENGINE + "): the build said why (no fio, or no"
                + " fio source in ~/.cache/nvmeof-fio; ./test fetches it with apt-get source fio)");
        assumeTrue(Files.exists(REPO.resolve("nvmeof-cli/target/nvmeof.jar")), "nvmeof-cli/target/nvmeof.jar is not built");
    }

    /** fio's exit code, stdout (the JSON when asked) and stderr. */
    record Run(int exit, String out, String err) {
        JsonNode json() throws IOException {
            int start = out.indexOf('{');
            assertTrue(start >= 0, "fio wrote no JSON; stdout: " + out + "\nstderr: " + err);
            return new ObjectMapper().readTree(out.substring(start));
        }
    }

    /** A fio that runs while the test does something to its target. */
    final class Running {
        private final Process process;
        private final Path out;
        private final Path err;

        private Running(Process process, Path out, Path err) {
            this.process = process;
            this.out = out;
            this.err = err;
        }

        boolean alive() {
            return process.isAlive();
        }

        /** Sends {@code signal} (INT, TERM) to fio's main process, as Ctrl-C or kill would. */
        void signal(String signal) throws Exception {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
            assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + signal + " failed");
        }

        /** Waits for fio to end; if it has not within {@code limit}, kills it and fails saying so. */
        Run awaitWithin(Duration limit, String why) throws Exception {
            if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail("fio still ran " + limit.toSeconds() + " s later (" + why + "); killed it. stderr: "
                        + Files.readString(err));
            }
            return new Run(process.exitValue(), Files.readString(out), Files.readString(err));
        }
    }

    Running start(String jobFile, String... args) throws IOException {
        Path job = dir.resolve("job.fio");
        Files.writeString(job, jobFile);
        List<String> cmd = new ArrayList<>(List.of("fio", "--output-format=json"));
        cmd.addAll(List.of(args));
        cmd.add(job.toString());
        Path out = dir.resolve("out.json");
        Path err = dir.resolve("err.txt");
        // In the test's directory: fio writes its verify state files (*-verify.state) where it runs.
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectOutput(out.toFile())
                .redirectError(err.toFile()).start();
        return new Running(p, out, err);
    }

    Run run(String jobFile, String... args) throws Exception {
        return start(jobFile, args).awaitWithin(Duration.ofSeconds(240), "a job that should end by itself");
    }
}

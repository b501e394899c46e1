package io.nvmeof.cli;

import io.nvmeof.protocol.AgronaAccess;
import io.netty.util.ResourceLeakDetector;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code nvmeof}: run a target, or talk to any NVMe-oF target in the style of nvme-cli. */
@Command(name = "nvmeof", mixinStandardHelpOptions = true, version = "nvmeof-java 0.1.0",
        description = "User-space NVMe-over-Fabrics target and initiator.",
        subcommands = {TargetCommand.class, DiscoverCommand.class, IdentifyCommand.class, ReadCommand.class,
                WriteCommand.class, BenchCommand.class, AdminCommand.class, DatasetCommand.class, LoaderBenchCommand.class,
                BenchReportCommand.class, CommandLine.HelpCommand.class, ClassDataTrainingCommand.class})
public final class Main {
    static {
        // Before any command touches Agrona, so `java -jar nvmeof.jar` needs no JVM flag (AgronaAccess).
        AgronaAccess.ensure();
    }

    public static void main(String[] args) {
        io.nvmeof.netty.EventLoops.configureNetty();
        // Netty samples buffers for leak reports by default, which records a stack trace now and then on the data
        // path: garbage per I/O that a storage process should not make. Asked for explicitly, it stays on.
        if (System.getProperty("io.netty.leakDetection.level") == null) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        }
        System.exit(run(args));
    }

    /** Runs a command line and returns its exit code (tests call this). */
    public static int run(String... args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("nvmeof " + cmd.getCommandName() + ": " + describe(e));
            return e instanceof NvmeStatusException ? 2 : 1;
        });
        return cl.execute(args);
    }

    /** One clear line: what failed, the NVMe status name where there is one, what to try. */
    static String describe(Exception e) {
        if (e instanceof NvmeStatusException s) {
            return s.getMessage() + hint(s.status());
        }
        if (e instanceof NvmeofException || e instanceof java.io.IOException || e instanceof IllegalArgumentException
                || e instanceof IllegalStateException || e instanceof io.nvmeof.loader.format.CorruptRecordException) {
            return e.getMessage();
        }
        if (e instanceof java.io.UncheckedIOException u) {
            return u.getCause().getMessage();
        }
        return e.toString();
    }

    /** The initiator's message names what to try for a refused Connect; these are the I/O commands' own. */
    private static String hint(int status) {
        switch (io.nvmeof.protocol.Status.code(status)) {
            case io.nvmeof.protocol.Status.LBA_RANGE:
                return "; the LBA range runs past the namespace's end ('nvmeof identify' shows its size)";
            case io.nvmeof.protocol.Status.INVALID_NAMESPACE:
                return "; no such namespace ('nvmeof identify' lists them)";
            default:
                return "";
        }
    }
}

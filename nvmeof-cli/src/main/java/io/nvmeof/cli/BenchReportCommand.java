package io.nvmeof.cli;

import io.nvmeof.cli.report.BenchReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "bench-report", mixinStandardHelpOptions = true,
        description = "Write DIR/report.md with plots (iops.png, latency.png) from the runs DIR/runs.tsv lists, as"
                + " docs/bench/report.sh writes them: one line per run (configuration, series, reference 1 or 0, its"
                + " fio-format JSON file, the command), the JSON of ./nvmeof bench --json or fio --output-format=json.")
final class BenchReportCommand implements Callable<Integer> {
    @Parameters(paramLabel = "DIR", description = "The directory of runs.tsv and the JSON files")
    Path dir;

    @Option(names = "--title", defaultValue = "nvmeof-java benchmark report", description = "The report's title")
    String title;

    @Option(names = "--preamble", paramLabel = "FILE", description = "Markdown put under the title (the machine, the"
            + " date, how the runs were placed)")
    Path preamble;

    @Override
    public Integer call() throws Exception {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " is not a directory");
        }
        String text = preamble != null ? Files.readString(preamble) : null;
        Path md = BenchReport.load(dir).write(dir, title, text);
        System.out.println(md);
        return 0;
    }
}

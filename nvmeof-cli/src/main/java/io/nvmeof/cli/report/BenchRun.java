package io.nvmeof.cli.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One measured run as {@code docs/bench/report.sh} lists it in {@code runs.tsv}: the configuration it measures (the
 * same for the series compared with each other), the series (ours, or a peer such as fio on the device), whether it is
 * the configuration's reference (the peer the others are given as a ratio of), its fio-format JSON file (relative to
 * the directory) and the command that produced it.
 */
public record BenchRun(String configuration, String series, boolean reference, Path json, String command) {
    static final String HEADER = "configuration\tseries\treference\tjson\tcommand";

    /** Reads {@code runs.tsv}; every line is checked, and a bad one is named with its number. */
    public static List<BenchRun> read(Path tsv) throws IOException {
        List<String> lines = Files.readAllLines(tsv, StandardCharsets.UTF_8);
        if (lines.isEmpty() || !lines.get(0).equals(HEADER)) {
            throw new IllegalArgumentException(tsv + ": the first line must be the header '" + HEADER.replace("\t", "<TAB>")
                    + "'");
        }
        List<BenchRun> runs = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            if (f.length != 5 || f[0].isBlank() || f[1].isBlank() || !(f[2].equals("1") || f[2].equals("0"))
                    || f[3].isBlank()) {
                throw new IllegalArgumentException(tsv + " line " + (i + 1) + ": expected 5 tab-separated fields"
                        + " (configuration, series, reference 1 or 0, json file, command), got: " + line);
            }
            Path dir = tsv.toAbsolutePath().getParent().normalize();
            Path json = dir.resolve(f[3]).normalize();
            if (!json.startsWith(dir)) {
                throw new IllegalArgumentException(tsv + " line " + (i + 1) + ": the JSON file must be inside the"
                        + " report's directory, got " + f[3]);
            }
            runs.add(new BenchRun(f[0], f[1], f[2].equals("1"), json, f[4]));
        }
        if (runs.isEmpty()) {
            throw new IllegalArgumentException(tsv + " lists no runs");
        }
        return runs;
    }
}

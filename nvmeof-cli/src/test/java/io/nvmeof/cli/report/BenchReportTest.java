package io.nvmeof.cli.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The report of docs/bench/report.sh from real output: fio-3.33's JSON of a 1 s io_uring run on a file and
 * {@code nvmeof bench --json} of a 1 s run against a RAM target (src/test/resources/bench-report), the figures read back
 * from the Markdown against the JSON's own numbers, the ratios to each configuration's reference, and the plots as
 * images.
 */
class BenchReportTest {
    @TempDir
    Path dir;

    private void fixture(String name) throws Exception {
        try (InputStream in = getClass().getResourceAsStream("/bench-report/" + name)) {
            Files.copy(in, dir.resolve(name));
        }
    }

    @Test
    void writesTheTableRatiosAndPlotsFromFiosAndTheBenchsJson() throws Exception {
        fixture("fio-device.json");
        fixture("bench-ram.json");
        Files.writeString(dir.resolve("runs.tsv"), BenchRun.HEADER + "\n"
                + "file randread 4k QD4\tfio on the file\t1\tfio-device.json\tfio --name=dev --rw=randread\n"
                + "ram randread 4k QD8\tours, TCP\t1\tbench-ram.json\t./nvmeof bench --qd 8\n"
                + "file randread 4k QD4\tours, TCP\t0\tbench-ram.json\t./nvmeof bench --qd 8\n");
        BenchReport report = BenchReport.load(dir);
        Path md = report.write(dir, "test report", "On a test machine.");
        String text = Files.readString(md);

        FioResult fio = report.result(BenchRun.read(dir.resolve("runs.tsv")).get(0));
        // fio-device.json: read.iops 59060.9, bw 236243 KiB/s, clat p99.9 1318912 ns, usr 5.3 % + sys 70.8 % of
        // 1000 ms over 59120 I/Os.
        assertEquals(59060.9, fio.iops(), 0.1);
        assertEquals(236243 / 1024.0, fio.mibPerSecond(), 0.01);
        assertEquals(1318.912, fio.p999Us(), 0.001);
        assertEquals(0.761 / 59120 * 1e6, fio.hostCpuUsPerIo(), 0.001);
        assertEquals(null, fio.targetCpuUsPerIo());
        // bench-ram.json: 53899.5 IOPS, p50 57983 ns, 15.26 / 15.62 us of CPU per I/O on host and target.
        String benchRatio = String.format(Locale.ROOT, "%.2f", 53899.510899795954 / 59060.939061);
        assertTrue(text.contains("| file randread 4k QD4 | fio on the file * | 59,061 | 230.7 | "), text);
        assertTrue(text.contains("| file randread 4k QD4 | ours, TCP | 53,900 | 210.5 | 58 | "), text);
        assertTrue(text.contains(" | 15.26 | 15.62 | " + benchRatio + " |"), text);
        assertTrue(text.contains("| ram randread 4k QD8 | ours, TCP * | 53,900 |"), text);
        // Listed apart, shown together: a configuration's series sit next to each other.
        assertTrue(text.indexOf("| file randread 4k QD4 | ours, TCP |") < text.indexOf("| ram randread 4k QD8 |"), text);
        assertTrue(text.startsWith("# test report\n\nOn a test machine.\n"), text);
        assertTrue(text.contains("- file randread 4k QD4, fio on the file: `fio --name=dev --rw=randread`"), text);
        for (String png : List.of(BenchReport.IOPS_PNG, BenchReport.LATENCY_PNG)) {
            assertTrue(text.contains("(" + png + ")"), text);
            BufferedImage image = ImageIO.read(dir.resolve(png).toFile());
            assertEquals(1000, image.getWidth(), png);
            assertTrue(image.getHeight() >= 300, png);
        }
    }

    @Test
    void refusesRunsOutsideItsDirectoryAndNamesAMissingResult() throws Exception {
        Files.writeString(dir.resolve("runs.tsv"), BenchRun.HEADER + "\nram\tours\t1\t../../etc/passwd\tx\n");
        IllegalArgumentException outside = assertThrows(IllegalArgumentException.class, () -> BenchReport.load(dir));
        assertTrue(outside.getMessage().contains("line 2: the JSON file must be inside the report's directory"),
                outside.getMessage());
        Files.writeString(dir.resolve("runs.tsv"), BenchRun.HEADER + "\nram\tours\t1\tgone.json\tx\n");
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> BenchReport.load(dir));
        assertTrue(missing.getMessage().startsWith("ram / ours: ") && missing.getMessage().contains("is missing"),
                missing.getMessage());
        Files.writeString(dir.resolve("runs.tsv"), "config\tseries\n");
        IllegalArgumentException header = assertThrows(IllegalArgumentException.class, () -> BenchReport.load(dir));
        assertTrue(header.getMessage().contains("the first line must be the header"), header.getMessage());
    }
}

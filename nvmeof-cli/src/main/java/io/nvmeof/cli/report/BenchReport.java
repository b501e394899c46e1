package io.nvmeof.cli.report;

import java.awt.Color;
import java.io.IOException;
import java.text.DecimalFormat;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * The Markdown report of a set of runs, with two plots drawn by JFreeChart: each series' IOPS as a ratio of its
 * configuration's reference (a peer measured by the same script run, as docs/performance.md gives its figures; a ratio
 * reads the same for 4 KiB and 128 KiB, where IOPS differ tenfold), and the latency percentiles (p50, p99, p99.9, log
 * scale) of each run.
 */
public final class BenchReport {
    public static final String IOPS_PNG = "iops.png";
    public static final String LATENCY_PNG = "latency.png";

    /** Colours told apart in print and by most colour-blind readers (Okabe and Ito's palette). */
    private static final Color[] PALETTE = {new Color(0x0072B2), new Color(0xE69F00), new Color(0x009E73),
            new Color(0xD55E00), new Color(0xCC79A7), new Color(0x56B4E9)};

    private final List<BenchRun> runs;
    private final Map<BenchRun, FioResult> results = new LinkedHashMap<>();

    /** The runs grouped by configuration (in the order each first appears), so a configuration's series sit together. */
    private BenchReport(List<BenchRun> runs) {
        Map<String, List<BenchRun>> byConfiguration = new LinkedHashMap<>();
        for (BenchRun run : runs) {
            byConfiguration.computeIfAbsent(run.configuration(), c -> new ArrayList<>()).add(run);
        }
        this.runs = byConfiguration.values().stream().flatMap(List::stream).toList();
    }

    /** Reads {@code dir/runs.tsv} and the results it names. */
    public static BenchReport load(Path dir) throws IOException {
        BenchReport r = new BenchReport(BenchRun.read(dir.resolve("runs.tsv")));
        for (BenchRun run : r.runs) {
            if (!Files.isRegularFile(run.json())) {
                throw new IllegalArgumentException(run.configuration() + " / " + run.series() + ": " + run.json()
                        + " is missing (did that run fail? its .err file next to it says why)");
            }
            r.results.put(run, FioResult.parse(run.json()));
        }
        return r;
    }

    /** Writes {@code report.md}, {@value #IOPS_PNG} and {@value #LATENCY_PNG} into {@code dir}; returns the report. */
    public Path write(Path dir, String title, String preamble) throws IOException {
        System.setProperty("java.awt.headless", "true");
        ChartUtils.saveChartAsPNG(dir.resolve(IOPS_PNG).toFile(), iopsChart(), 1000, chartHeight());
        ChartUtils.saveChartAsPNG(dir.resolve(LATENCY_PNG).toFile(), latencyChart(), 1000, chartHeight());
        Path md = dir.resolve("report.md");
        Files.writeString(md, markdown(title, preamble), StandardCharsets.UTF_8);
        return md;
    }

    String markdown(String title, String preamble) {
        StringBuilder sb = new StringBuilder("# ").append(title).append("\n\n");
        if (preamble != null && !preamble.isBlank()) {
            sb.append(preamble.strip()).append("\n\n");
        }
        sb.append("Each row is one run. \"vs reference\" is the row's IOPS over the IOPS of its configuration's reference")
                .append(" row (marked *), measured by the same run of the script. CPU is user + system time per I/O: the")
                .append(" bench's whole process and the target's; fio's job thread only (fio's own accounting), so with")
                .append(" our engine the initiator's event-loop thread in fio's process is not in it.\n\n");
        sb.append("| configuration | series | IOPS | MiB/s | p50 us | p99 us | p99.9 us | host CPU us/IO | target CPU us/IO"
                + " | vs reference |\n");
        sb.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (BenchRun run : runs) {
            FioResult r = results.get(run);
            FioResult ref = reference(run.configuration());
            sb.append("| ").append(run.configuration()).append(" | ").append(run.series()).append(run.reference() ? " *" : "")
                    .append(" | ").append(fmt("%,.0f", r.iops())).append(" | ").append(fmt("%,.1f", r.mibPerSecond()))
                    .append(" | ").append(fmt("%,.0f", r.p50Us())).append(" | ").append(fmt("%,.0f", r.p99Us()))
                    .append(" | ").append(fmt("%,.0f", r.p999Us())).append(" | ").append(opt(r.hostCpuUsPerIo()))
                    .append(" | ").append(opt(r.targetCpuUsPerIo())).append(" | ")
                    .append(ref == null || run.reference() ? "" : fmt("%.2f", r.iops() / ref.iops())).append(" |\n");
        }
        sb.append("\n![IOPS per configuration](").append(IOPS_PNG).append(")\n\n![Latency percentiles](")
                .append(LATENCY_PNG).append(")\n\n## Commands\n\n");
        for (BenchRun run : runs) {
            sb.append("- ").append(run.configuration()).append(", ").append(run.series()).append(": `")
                    .append(run.command().replace("`", "'")).append("`\n");
        }
        return sb.toString();
    }

    private FioResult reference(String configuration) {
        for (BenchRun run : runs) {
            if (run.reference() && run.configuration().equals(configuration)) {
                return results.get(run);
            }
        }
        return null;
    }

    private JFreeChart iopsChart() {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (BenchRun run : runs) {
            FioResult ref = reference(run.configuration());
            if (ref != null) {
                data.addValue(results.get(run).iops() / ref.iops(), run.series(), run.configuration());
            }
        }
        JFreeChart chart = new JFreeChart("IOPS as a ratio of each configuration's reference (*)",
                JFreeChart.DEFAULT_TITLE_FONT, barPlot(data, "IOPS / the reference's IOPS"), true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    private JFreeChart latencyChart() {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        for (BenchRun run : runs) {
            FioResult r = results.get(run);
            String column = run.configuration() + " · " + run.series();
            data.addValue(r.p50Us(), "p50", column);
            data.addValue(r.p99Us(), "p99", column);
            data.addValue(r.p999Us(), "p99.9", column);
        }
        CategoryPlot plot = barPlot(data, "completion latency, us");
        LogAxis log = new LogAxis("completion latency, us (log scale)");
        log.setSmallestValue(1);
        log.setTickUnit(new NumberTickUnit(1)); // a tick at each power of ten, written as a number
        log.setNumberFormatOverride(new DecimalFormat("#,##0"));
        plot.setRangeAxis(log);
        JFreeChart chart = new JFreeChart("Latency percentiles", JFreeChart.DEFAULT_TITLE_FONT, plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    private static CategoryPlot barPlot(DefaultCategoryDataset data, String valueLabel) {
        JFreeChart bars = org.jfree.chart.ChartFactory.createBarChart(null, null, valueLabel, data,
                PlotOrientation.HORIZONTAL, true, false, false);
        CategoryPlot plot = bars.getCategoryPlot();
        BarRenderer renderer = (BarRenderer) plot.getRenderer();
        renderer.setBarPainter(new StandardBarPainter());
        renderer.setShadowVisible(false);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        plot.getDomainAxis().setMaximumCategoryLabelWidthRatio(0.45f);
        for (int i = 0; i < data.getRowCount(); i++) {
            renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
        }
        return plot;
    }

    private int chartHeight() {
        List<String> columns = new ArrayList<>();
        runs.forEach(r -> columns.add(r.configuration() + " · " + r.series()));
        return Math.max(300, 120 + 26 * columns.size());
    }

    private static String fmt(String f, double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, f, v);
    }

    private static String opt(Double v) {
        return v == null ? "" : fmt("%.2f", v);
    }

    /** For tests: the parsed result of a run. */
    FioResult result(BenchRun run) {
        return results.get(run);
    }
}

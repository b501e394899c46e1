package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.DatasetLocation;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java programs in README.md and docs/ are what a newcomer copies first: each compiles as written (imports and
 * all) against the libraries, and each runs as a program that depends on them would: {@code java -cp ... Class},
 * with no JVM flag (before, the first buffer failed with Agrona's {@code IllegalAccessError} unless
 * {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} was given), against our target at the port the docs
 * name (4420, here the test target's).
 */
@Timeout(600)
class DocExamplesTest {
    /** The project root: surefire runs in the module's directory. */
    static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    static final Pattern JAVA_BLOCK = Pattern.compile("^```java\\n(.*?)^```", Pattern.MULTILINE | Pattern.DOTALL);
    static final Pattern PUBLIC_CLASS = Pattern.compile("^public class (\\w+)", Pattern.MULTILINE);

    /** A Java block of a document: where it is, and the class it declares. */
    record Example(Path file, int line, String className, String source) {
        @Override
        public String toString() {
            return ROOT.relativize(file) + ":" + line + " (" + className + ")";
        }
    }

    @TempDir
    Path dir;

    private final List<NvmeTarget> targets = new ArrayList<>();

    @AfterEach
    void stop() {
        targets.forEach(NvmeTarget::close);
    }

    static List<Example> examples() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> s = Files.walk(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        List<Example> found = new ArrayList<>();
        for (Path doc : docs) {
            String text = Files.readString(doc);
            Matcher m = JAVA_BLOCK.matcher(text);
            while (m.find()) {
                int line = 1 + (int) text.substring(0, m.start()).chars().filter(c -> c == '\n').count();
                Matcher c = PUBLIC_CLASS.matcher(m.group(1));
                found.add(new Example(doc, line, c.find() ? c.group(1) : null, m.group(1)));
            }
        }
        return found;
    }

    static Example example(String className) throws IOException {
        return examples().stream().filter(e -> className.equals(e.className())).findFirst()
                .orElseThrow(() -> new AssertionError("no Java example declares " + className));
    }

    /**
     * What a program depending on the libraries has on its class path: this test's, without the tests' own classes
     * and the test frameworks.
     */
    static String programClassPath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> !e.endsWith("test-classes"))
                .filter(e -> !e.matches(".*/(junit|jazzer|opentest4j|apiguardian|surefire)[^/]*"))
                .filter(e -> !e.contains("/org/junit/") && !e.contains("/com/code-intelligence/"))
                .collect(Collectors.joining(File.pathSeparator));
    }

    /** Compiles {@code source} as {@code className} into {@code out}; the compiler's messages on failure. */
    static List<String> compile(String className, String source, Path out) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        JavaFileObject unit = new SimpleJavaFileObject(
                java.net.URI.create("string:///" + className + ".java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return source;
            }
        };
        Files.createDirectories(out);
        boolean ok = javac.getTask(null, null, diagnostics, List.of("--release", "17", "-classpath",
                programClassPath(), "-d", out.toString()), null, List.of(unit)).call();
        return ok ? List.of() : diagnostics.getDiagnostics().stream()
                .map(d -> "line " + d.getLineNumber() + ": " + d.getMessage(Locale.ROOT)).collect(Collectors.toList());
    }

    /** The program's output, after it ended with status 0 within 5 minutes. */
    String run(Example e, int port, List<String> properties, String... args) throws Exception {
        Path classes = dir.resolve("classes-" + e.className());
        List<String> errors = compile(e.className(), e.source().replace(":4420", ":" + port).replace(", 4420,", ", " + port + ","), classes);
        assertEquals(List.of(), errors, e + " does not compile");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(properties);
        cmd.addAll(List.of("-cp", classes + File.pathSeparator + programClassPath(), e.className()));
        cmd.addAll(List.of(args));
        assertFalse(cmd.stream().anyMatch(a -> a.startsWith("--add-")), "no JVM flag");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.redirectOutput(dir.resolve(e.className() + ".out").toFile());
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("JDK_JAVA_OPTIONS");
        Process p = pb.start();
        boolean ended = p.waitFor(5, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(dir.resolve(e.className() + ".out"));
        System.out.println("--- " + e + " ---\n" + out);
        assertTrue(ended, e + " did not end in 5 minutes:\n" + out);
        assertEquals(0, p.exitValue(), e + " failed:\n" + out);
        return out;
    }

    /** A target as {@code ./nvmeof target --size SIZE} starts it (the docs' subsystem), on a free port. */
    NvmeTarget target(String size) throws IOException {
        NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, size, 512, null));
        targets.add(t);
        return t;
    }

    static void importInto(NvmeTarget t, Path source, ShardFormat format, String name, int recordSize)
            throws IOException {
        DatasetLocation loc = DatasetLocation.parse("tcp://127.0.0.1:" + t.tcpPort(0) + "/" + TargetConfig.DEFAULT_NQN + "/1");
        try (NvmeofController c = NvmeofController.connect(loc.transportId(), ConnectOptions.defaults())) {
            DatasetImporter.run(DatasetImporter.scan(List.of(source), format), List.of(c.namespace(1)),
                    new DatasetImporter.Options(name, recordSize, true, false, false, false), ImportProgress.SILENT);
        }
    }

    @Test
    void everyJavaProgramInTheDocsCompilesAsWritten() throws Exception {
        List<Example> all = examples();
        List<String> names = all.stream().map(Example::className).collect(Collectors.toList());
        assertTrue(names.containsAll(List.of("HelloNvmeof", "TrainLoop", "TrainLinear")), "the examples: " + all);
        List<String> failures = new ArrayList<>();
        for (Example e : all) {
            if (e.className() == null) {
                failures.add(e + ": not a complete program (no public class), so it cannot be copied and run");
                continue;
            }
            List<String> errors = compile(e.className(), e.source(), dir.resolve("all"));
            if (!errors.isEmpty()) {
                failures.add(e + ": " + String.join("; ", errors));
            }
        }
        assertEquals(List.of(), failures);
    }

    @Test
    void theInitiatorExampleRunsWithAPlainJavaCommand() throws Exception {
        NvmeTarget t = target("64MiB");
        String out = run(example("HelloNvmeof"), t.tcpPort(0), List.of());
        assertTrue(out.contains("status 0: hello, NVMe-oF"), out);
        assertFalse(out.contains("IllegalAccessError"), out);
    }

    @Test
    void theLoaderExampleRunsWithAPlainJavaCommand() throws Exception {
        // A WebDataset as tar writes it: 3 shards of 40 samples, each a .jpg of 1-9 KiB and a .cls label.
        Random r = new Random(3);
        long bytes = 0;
        long labels = 0;
        Path shards = Files.createDirectories(dir.resolve("shards"));
        for (int s = 0; s < 3; s++) {
            Path members = Files.createDirectories(dir.resolve("members-" + s));
            List<String> cmd = new ArrayList<>(List.of("tar", "cf", shards.resolve("shard-" + s + ".tar").toString(),
                    "-C", members.toString()));
            for (int i = 0; i < 40; i++) {
                String key = String.format("%06d", s * 40 + i);
                byte[] jpg = new byte[1024 + r.nextInt(8 * 1024)];
                r.nextBytes(jpg);
                int label = r.nextInt(10);
                Files.write(members.resolve(key + ".jpg"), jpg);
                Files.writeString(members.resolve(key + ".cls"), Integer.toString(label));
                cmd.addAll(List.of(key + ".cls", key + ".jpg"));
                bytes += jpg.length;
                labels += label;
            }
            assertEquals(0, new ProcessBuilder(cmd).inheritIO().start().waitFor(), "tar");
        }
        NvmeTarget t = target("64MiB");
        importInto(t, shards, null, "imagenet-mini", 0);
        String out = run(example("TrainLoop"), t.tcpPort(0), List.of());
        for (int epoch = 0; epoch < 3; epoch++) {
            String expected = String.format("epoch %d: 120 samples, %d bytes of jpg, label sum %d", epoch, bytes, labels);
            assertTrue(out.contains(expected), "'" + expected + "' in:\n" + out);
        }
    }

    @Test
    void theDjlExampleTrainsWithAPlainJavaCommand() throws Exception {
        // 1,024 records of 4 float features and y = w.x + b, little-endian, as the example reads them.
        float[] w = {2f, -3f, 0.5f, 1.5f};
        Random r = new Random(1);
        Path records = Files.createDirectories(dir.resolve("records"));
        for (int s = 0; s < 4; s++) {
            ByteBuffer b = ByteBuffer.allocate(256 * 20).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < 256; i++) {
                float y = 0.25f;
                for (float wi : w) {
                    float x = r.nextFloat() * 2 - 1;
                    b.putFloat(x);
                    y += wi * x;
                }
                b.putFloat(y);
            }
            Files.write(records.resolve("part-" + s + ".bin"), b.array());
        }
        NvmeTarget t = target("8MiB");
        importInto(t, records, ShardFormat.FIXED, "linear", 20);
        // Offline only because this machine may have no network: the engine's library is on the class path.
        String out = run(example("TrainLinear"), t.tcpPort(0), List.of("-Dai.djl.offline=true"));
        Matcher m = Pattern.compile("trained on (\\d+) samples an epoch; final L2 loss ([0-9.]+)").matcher(out);
        assertTrue(m.find(), out);
        assertEquals(1024, Integer.parseInt(m.group(1)));
        float loss = Float.parseFloat(m.group(2));
        assertTrue(loss < 0.05f, "the model learned y = w.x + b: final loss " + loss);
    }
}

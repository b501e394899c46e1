package io.nvmeof.cli;

import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.Sample;
import io.nvmeof.loader.SampleData;
import io.nvmeof.loader.SampleIterator;
import io.nvmeof.loader.SampleView;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code nvmeof dataset cat | export}: a dataset's samples read back without Java, to look at one or to compare all of
 * them with the files they were imported from ({@code diff -r}, {@code sha256sum}). Each shard's CRC32C is checked as
 * the loader reads it.
 */
final class DatasetReadCommands {
    private DatasetReadCommands() {
    }

    @Command(name = "cat", mixinStandardHelpOptions = true,
            description = "Write one sample's member to standard output (or -o FILE); without --member, list its members.")
    static final class Cat implements Callable<Integer> {
        @Mixin
        DatasetCommand.Namespaces where;

        @Option(names = "--sample", required = true, description = "The sample's index (dataset ls --samples N shows them)")
        long sample;

        @Option(names = "--member", description = "The member, e.g. jpg or cls (a fixed-size record has one: data)")
        String member;

        @Option(names = {"-o", "--output"}, defaultValue = "-", description = "Output file, or - for stdout. Default: ${DEFAULT-VALUE}")
        String output;

        @Override
        public Integer call() throws Exception {
            try (NvmeofDataset ds = NvmeofDataset.connect(where.resolve(), where.options(1))) {
                if (sample < 0 || sample >= ds.sampleCount()) {
                    throw new IllegalArgumentException("--sample " + sample + " is not in the dataset (0 to "
                            + (ds.sampleCount() - 1) + ")");
                }
                SampleData s = ds.read(sample);
                if (member == null) {
                    System.out.printf(Locale.ROOT, "sample %d, key %s, shard %s:%n", sample, s.key(), s.shard().name());
                    for (int m = 0; m < s.memberCount(); m++) {
                        System.out.printf(Locale.ROOT, "  %-12s %d bytes%n", name(s, m), s.memberLength(m));
                    }
                    return 0;
                }
                int m = index(s, member);
                if ("-".equals(output)) {
                    write(s.member(m), Channels.newChannel(System.out));
                    System.out.flush();
                } else {
                    try (FileChannel f = FileChannel.open(Path.of(output), StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                        write(s.member(m), f);
                    }
                }
                return 0;
            }
        }
    }

    @Command(name = "export", mixinStandardHelpOptions = true,
            description = "Write every sample's members as files KEY.MEMBER under DIR (as WebDataset's tar members),"
                    + " to compare with the source: diff -r, sha256sum. Progress on stderr.")
    static final class Export implements Callable<Integer> {
        @Mixin
        DatasetCommand.Namespaces where;

        @Parameters(index = "0", paramLabel = "DIR", description = "An empty or new directory")
        Path dir;

        @Override
        public Integer call() throws Exception {
            if (Files.exists(dir) && (!Files.isDirectory(dir) || hasEntries(dir))) {
                throw new IllegalArgumentException(dir + " is not an empty directory: export writes into a new or empty"
                        + " one, so that nothing of yours is overwritten");
            }
            Files.createDirectories(dir);
            Path root = dir.toRealPath();
            ProgressBar bar = new ProgressBar();
            long files = 0;
            try (NvmeofDataset ds = NvmeofDataset.connect(where.resolve(), where.options(2));
                 DatasetLoader loader = ds.loader().verify(true).build();
                 SampleIterator it = loader.samples(0)) {
                bar.phase("export " + ds.name(), ds.dataBytes());
                for (Sample s : it) {
                    long bytes = 0;
                    for (int m = 0; m < s.memberCount(); m++) {
                        bytes += s.memberLength(m);
                        Path file = root.resolve(s.key() + "." + name(s, m)).normalize();
                        if (!file.startsWith(root)) {
                            throw new IllegalArgumentException("sample " + s.index() + "'s key '" + s.key()
                                    + "' would write outside " + dir + "; not exported");
                        }
                        Files.createDirectories(file.getParent());
                        try (FileChannel f = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                            write(s.member(m), f);
                        }
                        files++;
                    }
                    bar.advanced(bytes, s.key());
                }
                bar.finishLine();
                System.out.printf(Locale.ROOT, "%s: %d samples, %d files in %s%n", ds.name(), ds.sampleCount(), files, dir);
                return 0;
            }
        }
    }

    private static boolean hasEntries(Path dir) throws java.io.IOException {
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            return s.findAny().isPresent();
        }
    }

    /** A member's name; a fixed-size record's one member has none in the dataset and is called "data". */
    static String name(SampleView s, int m) {
        String n = s.memberName(m);
        return n == null || n.isEmpty() ? "data" : n;
    }

    static int index(SampleView s, String member) {
        List<String> names = new ArrayList<>();
        for (int m = 0; m < s.memberCount(); m++) {
            if (name(s, m).equals(member)) {
                return m;
            }
            names.add(name(s, m));
        }
        throw new IllegalArgumentException("sample " + s.index() + " has no member '" + member + "'; it has "
                + String.join(", ", names));
    }

    private static void write(ByteBuffer data, WritableByteChannel out) throws java.io.IOException {
        ByteBuffer b = data.duplicate();
        while (b.hasRemaining()) {
            out.write(b);
        }
    }
}

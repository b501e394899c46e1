package io.nvmeof.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.loader.DatasetLocation;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.DatasetVerifier;
import io.nvmeof.loader.imports.InPlaceIndexer;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetLabel;
import io.nvmeof.loader.layout.DatasetPart;
import io.nvmeof.loader.layout.ShardEntry;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code nvmeof dataset}: put training data on namespaces and look at what is there. */
@Command(name = "dataset", mixinStandardHelpOptions = true,
        description = "Import shards (WebDataset tar, TFRecord, fixed-size records) into namespaces as a dataset the"
                + " loader reads; list, verify, read back (cat, export), or index a tar in place.",
        subcommands = {DatasetCommand.Import.class, DatasetCommand.Ls.class, DatasetCommand.Verify.class,
                DatasetCommand.Index.class, DatasetReadCommands.Cat.class, DatasetReadCommands.Export.class})
final class DatasetCommand {

    /**
     * Which namespaces: {@code --ns tcp://HOST:PORT/NQN[/NSID]} (repeatable, any targets), or {@code -a -s -n} with
     * {@code --nsid 1,2}; the connection options (host NQN, digests, timeouts) apply to every one.
     */
    static final class Namespaces {
        @Mixin
        ConnectionOptions conn;

        @Option(names = "--ns", description = "A namespace: tcp://HOST:PORT/SUBNQN[/NSID] (rdma:// for RDMA), or"
                + " SPDK's 'trtype:tcp traddr:.. trsvcid:.. subnqn:.. ns:..'. Repeat for several.")
        List<String> locations = new ArrayList<>();

        @Option(names = {"-n", "--nqn"}, description = "Subsystem NQN (with -a/-s, instead of --ns)")
        String nqn;

        @Option(names = {"-N", "--namespace-id", "--nsid"}, split = ",",
                description = "Namespace IDs with -n (default 1), as nvme-cli's -N/--namespace-id; --nsid too")
        List<Long> nsids = new ArrayList<>();

        List<DatasetLocation> resolve() {
            List<DatasetLocation> out = new ArrayList<>();
            for (String l : locations) {
                out.add(DatasetLocation.parse(l));
            }
            if (nqn != null) {
                TransportId id = new TransportId(conn.transport, conn.address(), conn.port(), nqn);
                for (long n : nsids.isEmpty() ? List.of(1L) : nsids) {
                    out.add(new DatasetLocation(id, n));
                }
            }
            if (out.isEmpty()) {
                throw new IllegalArgumentException("say which namespaces: --ns tcp://HOST:PORT/SUBNQN/NSID (repeatable),"
                        + " or -a HOST -s PORT -n SUBNQN --nsid 1,2");
            }
            return out;
        }

        ConnectOptions options(int ioQueues) {
            return conn.builder().ioQueues(ioQueues).build();
        }

        /** Connects (one controller per subsystem); closing the result closes them. */
        Opened open(int ioQueues) {
            Map<TransportId, NvmeofController> byId = new LinkedHashMap<>();
            List<NamespaceHandle> out = new ArrayList<>();
            try {
                for (DatasetLocation l : resolve()) {
                    NvmeofController c = byId.get(l.transportId());
                    if (c == null) {
                        c = NvmeofController.connect(l.transportId(), options(ioQueues));
                        byId.put(l.transportId(), c);
                    }
                    out.add(c.namespace(l.nsid())); // refused, naming the active ones, if there is no such namespace
                }
            } catch (RuntimeException e) {
                byId.values().forEach(NvmeofController::close);
                throw e;
            }
            return new Opened(List.copyOf(out), List.copyOf(byId.values()));
        }
    }

    /** The namespaces given, in order, and the controllers opened for them. */
    record Opened(List<NamespaceHandle> namespaces, List<NvmeofController> controllers) implements AutoCloseable {
        @Override
        public void close() {
            controllers.forEach(NvmeofController::close);
        }
    }


    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Write shard files (or directories of them) into the namespaces as one dataset, verified by"
                    + " CRC32C; run it again with the same files to resume an interrupted import.")
    static final class Import implements Callable<Integer> {
        @Mixin
        Namespaces where;

        @Parameters(arity = "1..*", paramLabel = "PATH", description = "Shard files, or directories searched for them")
        List<Path> paths;

        @Option(names = "--name", description = "The dataset's name (default: the first path's file name)")
        String name;

        @Option(names = "--format", description = "tar, tfrecord or fixed (default: from each file's extension)")
        String format;

        @Option(names = "--record-size", description = "Bytes per record of --format fixed")
        String recordSize;

        @Option(names = "--no-verify", description = "Do not read each shard back to compare its CRC32C")
        boolean noVerify;

        @Option(names = "--skip-corrupt", description = "Leave corrupt records out of the index (listed) instead of refusing the file")
        boolean skipCorrupt;

        @Option(names = "--restart", description = "Start over even if the namespaces hold an unfinished import of other files")
        boolean restart;

        @Option(names = "--force", description = "Overwrite namespaces that hold a complete dataset")
        boolean force;

        @Override
        public Integer call() throws Exception {
            ShardFormat f = format != null ? ShardFormat.parse(format) : null;
            int rs = recordSize != null ? (int) TargetConfig.parseSize(recordSize) : 0;
            if (f == ShardFormat.FIXED && rs <= 0) {
                throw new IllegalArgumentException("--format fixed needs --record-size BYTES");
            }
            List<DatasetImporter.Source> sources = DatasetImporter.scan(paths, f);
            if (sources.isEmpty()) {
                throw new IllegalArgumentException("no shard files under " + paths + " (.tar, .tfrecord; or give --format)");
            }
            String n = name != null ? name : paths.get(0).toAbsolutePath().normalize().getFileName().toString();
            ProgressBar bar = new ProgressBar();
            try (Opened opened = where.open(2)) {
                List<NamespaceHandle> ns = opened.namespaces();
                DatasetImporter.Result r = DatasetImporter.run(sources, ns,
                        new DatasetImporter.Options(n, rs, !noVerify, skipCorrupt, restart, force), bar);
                bar.finishLine();
                System.out.printf(Locale.ROOT, "imported %s (%s): %d shards, %d samples, %s into %d namespace(s)%s%s%n", n,
                        r.datasetId(), r.shards(), r.samples(), ProgressBar.size(r.bytes()), ns.size(),
                        r.resumedShards() > 0 ? "; resumed after " + r.resumedShards() + " shards" : "",
                        leftOut(r));
                return 0;
            }
        }
    }

    /** What {@code --skip-corrupt} left out, in samples (what a reader misses) and the damaged records that cost them. */
    static String leftOut(DatasetImporter.Result r) {
        if (r.corruptRecords() == 0) {
            return "";
        }
        return "; " + r.samplesLeftOut() + (r.samplesLeftOut() == 1 ? " sample" : " samples") + " left out for "
                + r.corruptRecords() + (r.corruptRecords() == 1 ? " corrupt record" : " corrupt records") + " (listed above)";
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "Show the dataset on the namespaces: parts, shards, samples.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        Namespaces where;

        @Option(names = "--samples", defaultValue = "0", description = "Also list the first N samples of each shard")
        int samples;

        @Option(names = "--json", description = "JSON on stdout")
        boolean json;

        @Override
        public Integer call() throws Exception {
            try (Opened opened = where.open(1)) {
                List<NamespaceHandle> ns = opened.namespaces();
                List<Map<String, Object>> parts = new ArrayList<>();
                for (NamespaceHandle h : ns) {
                    parts.add(describe(h));
                }
                if (json) {
                    System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(parts));
                    return 0;
                }
                for (Map<String, Object> p : parts) {
                    print(p);
                }
                return 0;
            }
        }

        private Map<String, Object> describe(NamespaceHandle h) throws Exception {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("namespace", DatasetPart.describe(h));
            DatasetLabel l = DatasetPart.readLabel(new NamespaceIo(h, 2));
            if (l == null) {
                m.put("state", "no dataset");
                return m;
            }
            m.put("dataset", l.name());
            m.put("id", l.datasetId().toString());
            m.put("part", (l.partIndex() + 1) + " of " + l.partCount());
            m.put("state", l.complete() ? "complete" : "importing (" + l.shardsWritten() + " shards written)");
            if (!l.complete()) {
                return m;
            }
            DatasetPart part = DatasetPart.open(h);
            m.put("samples", part.table().sampleCount());
            m.put("dataBytes", part.table().dataBytes());
            List<Map<String, Object>> shards = new ArrayList<>();
            for (ShardEntry s : part.table().shards()) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("name", s.name());
                e.put("format", s.format().label());
                e.put("offset", s.offset());
                e.put("bytes", s.length());
                e.put("samples", s.sampleCount());
                e.put("crc32c", String.format("%08x", s.crc32c()));
                if (s.samplesLeftOut() > 0) {
                    e.put("samplesLeftOut", s.samplesLeftOut());
                }
                List<String> first = new ArrayList<>();
                for (int i = s.firstSample(); i < s.firstSample() + Math.min(samples, s.sampleCount()); i++) {
                    List<String> members = new ArrayList<>();
                    for (int k = 0; k < part.table().memberCount(i); k++) {
                        members.add(part.table().memberName(i, k) + " " + part.table().memberLength(i, k));
                    }
                    first.add(part.table().key(i) + " " + members);
                }
                if (!first.isEmpty()) {
                    e.put("firstSamples", first);
                }
                shards.add(e);
            }
            m.put("shards", shards);
            return m;
        }

        @SuppressWarnings("unchecked")
        private static void print(Map<String, Object> p) {
            System.out.println(p.get("namespace") + ": " + (p.containsKey("dataset")
                    ? "dataset " + p.get("dataset") + " (" + p.get("id") + "), part " + p.get("part") + ", " + p.get("state")
                    : p.get("state")));
            if (!p.containsKey("shards")) {
                return;
            }
            System.out.printf(Locale.ROOT, "  %d samples, %s in shards%n", p.get("samples"), ProgressBar.size((Long) p.get("dataBytes")));
            System.out.printf(Locale.ROOT, "  %-32s %-8s %12s %10s %8s %s%n", "SHARD", "FORMAT", "OFFSET", "BYTES", "SAMPLES", "CRC32C");
            for (Map<String, Object> s : (List<Map<String, Object>>) p.get("shards")) {
                System.out.printf(Locale.ROOT, "  %-32s %-8s %12d %10d %8d %s%n", s.get("name"), s.get("format"), s.get("offset"),
                        s.get("bytes"), s.get("samples"), s.get("crc32c"));
                if (s.containsKey("firstSamples")) {
                    for (String line : (List<String>) s.get("firstSamples")) {
                        System.out.println("      " + line);
                    }
                }
            }
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Check every shard on the namespaces against its CRC32C; name the damaged samples. Exit 1 if any.")
    static final class Verify implements Callable<Integer> {
        @Mixin
        Namespaces where;

        @Override
        public Integer call() throws Exception {
            ProgressBar bar = new ProgressBar();
            try (NvmeofDataset ds = NvmeofDataset.connect(where.resolve(), where.options(1))) {
                DatasetVerifier.Report r = DatasetVerifier.verify(ds, bar);
                bar.finishLine();
                for (String p : r.problems()) {
                    System.out.println(p);
                }
                System.out.printf(Locale.ROOT, "%s: %d shards, %d damaged%n", ds.name(), r.shards(), r.badShards());
                return r.ok() ? 0 : 1;
            }
        }
    }

    @Command(name = "index", mixinStandardHelpOptions = true,
            description = "Make a dataset of a namespace that already holds a tar shard (a file-backed namespace whose file"
                    + " is the tar), without copying: the index goes after the tar's end.")
    static final class Index implements Callable<Integer> {
        @Mixin
        Namespaces where;

        @Option(names = "--name", defaultValue = "dataset", description = "The dataset's name. Default: ${DEFAULT-VALUE}")
        String name;

        @Option(names = "--shard-name", description = "The shard's name in the manifest (default: nsid-N.tar)")
        String shardName;

        @Option(names = "--skip-corrupt", description = "Leave corrupt members out instead of refusing")
        boolean skipCorrupt;

        @Option(names = "--force", description = "Index again a namespace that holds a dataset")
        boolean force;

        @Override
        public Integer call() throws Exception {
            ProgressBar bar = new ProgressBar();
            try (Opened opened = where.open(1)) {
                List<NamespaceHandle> ns = opened.namespaces();
                if (ns.size() != 1) {
                    throw new IllegalArgumentException("index one namespace at a time (got " + ns.size() + ")");
                }
                NamespaceHandle h = ns.get(0);
                DatasetLabel l = InPlaceIndexer.index(h, shardName != null ? shardName : "nsid-" + h.nsid() + ".tar", name,
                        skipCorrupt, force, bar);
                bar.finishLine();
                System.out.printf(Locale.ROOT, "indexed %s in place: dataset %s (%s), the tar's %s, index at byte %d%n",
                        DatasetPart.describe(h), l.name(), l.datasetId(), ProgressBar.size(l.dataEnd()), l.manifestOffset());
                return 0;
            }
        }
    }
}

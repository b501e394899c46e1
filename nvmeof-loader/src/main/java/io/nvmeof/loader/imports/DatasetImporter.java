package io.nvmeof.loader.imports;

import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.loader.format.IndexResult;
import io.nvmeof.loader.format.RecordIndexer;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.format.ShardInput;
import io.nvmeof.loader.format.TarIndexer;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetLabel;
import io.nvmeof.loader.layout.DatasetPart;
import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * Writes local shard files into one or more namespaces as a dataset: every shard copied whole (4 KiB-aligned), read
 * back and checked against the CRC32C of the source, a manifest and a label on each namespace.
 *
 * <ol>
 *   <li><b>Plan.</b> Shards in name order, each given to the namespace with the fewest bytes so far; offsets follow.
 *       Each file is indexed locally first (so a corrupt one is found before anything is written) and every
 *       namespace is checked to hold its data, manifest and label.</li>
 *   <li><b>Copy.</b> Shard by shard: written, read back, compared, flushed; then the namespace's label records one
 *       more shard done. The label carries the plan's fingerprint: a second run with the same files continues after
 *       the last shard recorded, and a run with other files is refused rather than mixing two datasets.</li>
 *   <li><b>Commit.</b> Each namespace's manifest, flushed, then its label marked complete.</li>
 * </ol>
 */
public final class DatasetImporter {
    static final int ALIGN = 4096;

    /**
     * A local shard file.
     *
     * @param name the name the manifest keeps (its path relative to the imported directory)
     */
    public record Source(Path file, String name, ShardFormat format, long size, long mtimeMs) {
    }

    /**
     * Settings.
     *
     * @param name        the dataset's name (recorded in each label; 128 bytes of UTF-8 at most)
     * @param recordSize  the record size of {@link ShardFormat#FIXED} shards, else 0
     * @param verify      read each shard back and compare its CRC32C (on by default in the CLI)
     * @param skipCorrupt leave corrupt records out of the index (counted, listed) instead of refusing the file
     * @param restart     start over even if the namespaces hold an unfinished import of other files
     * @param force       overwrite namespaces that hold a complete dataset
     */
    public record Options(String name, int recordSize, boolean verify, boolean skipCorrupt, boolean restart,
                          boolean force) {
    }

    /**
     * What an import did.
     *
     * @param corruptRecords damaged records left out ({@link Options#skipCorrupt})
     * @param samplesLeftOut samples left out for them (a damaged tar header may cost the samples on both sides of it)
     * @param problems       one line for each, naming the shard, the offset and what was wrong
     */
    public record Result(UUID datasetId, int shards, long samples, long bytes, int resumedShards, int corruptRecords,
                         int samplesLeftOut, List<String> problems, List<DatasetLabel> labels) {
    }

    private DatasetImporter() {
    }

    /**
     * The shard files under {@code paths} (files, or directories searched recursively), in name order. Files of no
     * known format are left out when {@code format} is null ({@code .tar}, {@code .tfrecord} are recognised);
     * with a format given, every regular file is taken.
     */
    public static List<Source> scan(List<Path> paths, ShardFormat format) throws IOException {
        List<Source> out = new ArrayList<>();
        for (Path p : paths) {
            if (!Files.exists(p)) {
                throw new IOException(p + " does not exist");
            }
            if (Files.isDirectory(p)) {
                List<Path> files;
                try (Stream<Path> s = Files.walk(p)) {
                    files = s.filter(Files::isRegularFile).sorted().toList();
                }
                for (Path f : files) {
                    ShardFormat fmt = format != null ? format : ShardFormat.ofFileName(f.getFileName().toString());
                    if (fmt != null) {
                        out.add(source(f, p.relativize(f).toString(), fmt));
                    }
                }
            } else {
                ShardFormat fmt = format != null ? format : ShardFormat.ofFileName(p.getFileName().toString());
                if (fmt == null) {
                    throw new IOException(p + ": cannot tell its format from its name; give --format tar, tfrecord or fixed");
                }
                out.add(source(p, p.getFileName().toString(), fmt));
            }
        }
        out.sort((a, b) -> a.name().compareTo(b.name()));
        for (int i = 1; i < out.size(); i++) {
            if (out.get(i).name().equals(out.get(i - 1).name())) {
                throw new IOException("two shards are named " + out.get(i).name() + " (" + out.get(i - 1).file() + ", "
                        + out.get(i).file() + "); import them separately or rename one");
            }
        }
        return out;
    }

    private static Source source(Path f, String name, ShardFormat fmt) throws IOException {
        if (name.getBytes(StandardCharsets.UTF_8).length > 65535) {
            throw new IOException(f + ": a shard name is at most 65535 bytes");
        }
        return new Source(f, name, fmt, Files.size(f), Files.getLastModifiedTime(f).toMillis());
    }

    /** One namespace's share of the plan. */
    private static final class PartPlan {
        final NamespaceHandle ns;
        final NamespaceIo io;
        final List<Integer> sources = new ArrayList<>();
        final List<Long> offsets = new ArrayList<>();
        final List<IndexResult> results = new ArrayList<>();
        final SampleTable.Builder table = new SampleTable.Builder();
        long cursor;
        byte[] manifest;
        long manifestOffset;
        DatasetLabel label;

        PartPlan(NamespaceHandle ns) {
            this.ns = ns;
            this.io = new NamespaceIo(ns, 8);
        }

        String where() {
            return DatasetPart.describe(ns);
        }
    }

    public static Result run(List<Source> sources, List<NamespaceHandle> targets, Options o, ImportProgress progress)
            throws IOException {
        if (sources.isEmpty()) {
            throw new IOException("no shard files to import");
        }
        if (targets.isEmpty()) {
            throw new IllegalArgumentException("no namespaces to import into");
        }
        if (o.name().getBytes(StandardCharsets.UTF_8).length > 128 || o.name().isEmpty()) {
            throw new IllegalArgumentException("a dataset name is 1 to 128 bytes, got '" + o.name() + "'");
        }
        for (Source s : sources) {
            if (s.format() == ShardFormat.FIXED && o.recordSize() <= 0) {
                throw new IllegalArgumentException(s.name() + ": fixed-size records need a record size (--record-size)");
            }
        }
        List<PartPlan> parts = new ArrayList<>();
        for (NamespaceHandle ns : targets) {
            for (PartPlan p : parts) {
                if (p.ns.controller() == ns.controller() && p.ns.nsid() == ns.nsid()) {
                    throw new IllegalArgumentException("namespace " + p.where() + " is given twice");
                }
            }
            parts.add(new PartPlan(ns));
        }

        // Plan: each shard to the namespace with the fewest bytes so far.
        int[] partOf = new int[sources.size()];
        for (int i = 0; i < sources.size(); i++) {
            int best = 0;
            for (int p = 1; p < parts.size(); p++) {
                if (parts.get(p).cursor < parts.get(best).cursor) {
                    best = p;
                }
            }
            PartPlan pp = parts.get(best);
            partOf[i] = best;
            pp.sources.add(i);
            pp.offsets.add(pp.cursor);
            pp.cursor = align(pp.cursor + sources.get(i).size());
        }

        // Index every file locally, so that a corrupt one is refused before anything is written.
        long total = 0;
        for (Source s : sources) {
            total += s.size();
        }
        progress.phase("indexing", total);
        List<String> problems = new ArrayList<>();
        int corrupt = 0;
        int leftOut = 0;
        long samples = 0;
        for (PartPlan pp : parts) {
            for (int k = 0; k < pp.sources.size(); k++) {
                Source s = sources.get(pp.sources.get(k));
                IndexResult r = index(s, pp.offsets.get(k), k, pp.table, o, progress);
                pp.results.add(r);
                corrupt += r.skipped();
                leftOut += r.samplesLeftOut();
                samples += r.samples();
                problems.addAll(r.problems());
                for (String line : r.problems()) {
                    progress.note("left out: " + line);
                }
            }
        }

        // Capacity: data, manifest and label on each namespace.
        for (PartPlan pp : parts) {
            List<ShardEntry> entries = entries(sources, pp, o);
            pp.manifest = pp.table.build(entries).encode();
            pp.manifestOffset = align(pp.cursor);
            long need = pp.manifestOffset + pp.manifest.length + DatasetLabel.SIZE;
            if (need > pp.ns.sizeBytes()) {
                throw new IOException(pp.where() + " has " + pp.ns.sizeBytes() + " bytes; its share of the dataset needs "
                        + need + " (" + pp.cursor + " of shards, a " + pp.manifest.length + "-byte manifest, a "
                        + DatasetLabel.SIZE + "-byte label): give a larger namespace or more of them");
            }
        }

        long fingerprint = fingerprint(sources, partOf, parts, o);
        UUID id = null;
        int resumed = 0;
        for (PartPlan pp : parts) {
            DatasetLabel l = DatasetPart.readLabel(pp.io);
            if (l != null && l.complete() && !o.force()) {
                throw new IOException(pp.where() + " holds dataset " + l.name() + " (" + l.datasetId() + ", complete);"
                        + " give --force to overwrite it");
            }
            if (l != null && !l.complete() && !o.restart()) {
                if (l.planFingerprint() != fingerprint || l.partCount() != parts.size()
                        || l.partIndex() != parts.indexOf(pp)) {
                    throw new IOException(pp.where() + " holds an unfinished import of other files (or in another order"
                            + " of namespaces); run it again with the same files and namespaces to finish it, or give"
                            + " --restart to start over");
                }
                if (id != null && !id.equals(l.datasetId())) {
                    throw new IOException(pp.where() + " belongs to another unfinished import; give --restart");
                }
                id = l.datasetId();
                pp.label = l;
            }
        }
        boolean resuming = id != null;
        if (resuming) {
            for (PartPlan pp : parts) {
                if (pp.label == null) {
                    throw new IOException(pp.where() + " has no label of the unfinished import the others have; give"
                            + " --restart to start over");
                }
                resumed += pp.label.shardsWritten();
            }
            progress.note("resuming import " + id + ": " + resumed + " of " + sources.size() + " shards already written");
        } else {
            id = UUID.randomUUID();
        }
        for (PartPlan pp : parts) {
            int written = resuming ? pp.label.shardsWritten() : 0;
            if (written > pp.sources.size()) {
                throw new IOException(pp.where() + ": its label records more shards than the plan has; give --restart");
            }
            pp.label = label(DatasetLabel.IMPORTING, id, parts.indexOf(pp), parts.size(), pp, written, fingerprint, o);
            writeLabel(pp);
        }

        // Copy, shard by shard, in name order.
        long toCopy = 0;
        for (PartPlan pp : parts) {
            for (int k = pp.label.shardsWritten(); k < pp.sources.size(); k++) {
                toCopy += sources.get(pp.sources.get(k)).size() * (o.verify() ? 2 : 1);
            }
        }
        progress.phase(o.verify() ? "writing and verifying" : "writing", toCopy);
        int[] next = new int[parts.size()];
        for (int i = 0; i < sources.size(); i++) {
            PartPlan pp = parts.get(partOf[i]);
            int k = next[partOf[i]]++;
            if (k < pp.label.shardsWritten()) {
                continue;
            }
            Source s = sources.get(i);
            long offset = pp.offsets.get(k);
            int crc = copy(s, pp, offset, progress);
            if (crc != pp.results.get(k).crc32c()) {
                throw new IOException(s.file() + " changed while it was imported (its CRC32C went from "
                        + hex(pp.results.get(k).crc32c()) + " to " + hex(crc) + "); run the import again");
            }
            if (o.verify()) {
                int back = readBackCrc(pp, offset, s.size(), s.name(), progress);
                if (back != crc) {
                    throw new IOException("shard " + s.name() + " read back from " + pp.where() + " with CRC32C " + hex(back)
                            + " instead of " + hex(crc) + ": the target did not keep what was written");
                }
            }
            pp.io.flush();
            pp.label = label(DatasetLabel.IMPORTING, id, parts.indexOf(pp), parts.size(), pp, k + 1, fingerprint, o);
            writeLabel(pp);
        }

        // Commit: manifests, then labels that point to them.
        List<DatasetLabel> labels = new ArrayList<>();
        long bytes = 0;
        for (PartPlan pp : parts) {
            pp.io.write(pp.manifestOffset, ByteBuffer.wrap(pp.manifest));
            pp.io.flush();
            pp.label = label(DatasetLabel.COMPLETE, id, parts.indexOf(pp), parts.size(), pp, pp.sources.size(), fingerprint, o);
            writeLabel(pp);
            pp.io.flush();
            labels.add(pp.label);
            bytes += pp.cursor;
        }
        return new Result(id, sources.size(), samples, bytes, resumed, corrupt, leftOut, List.copyOf(problems), labels);
    }

    static IndexResult index(Source s, long base, int shardIndex, SampleTable.Builder table, Options o,
                             ImportProgress progress) throws IOException {
        try (InputStream raw = Files.newInputStream(s.file())) {
            InputStream in = new ProgressStream(raw, s.name(), progress);
            ShardInput si = new ShardInput(in, s.size());
            return switch (s.format()) {
                case TAR -> TarIndexer.index(s.name(), si, base, shardIndex, table, o.skipCorrupt(), false);
                case TFRECORD -> RecordIndexer.tfrecord(s.name(), si, base, shardIndex, table, o.skipCorrupt());
                case FIXED -> RecordIndexer.fixed(s.name(), si, base, shardIndex, o.recordSize(), table, o.skipCorrupt());
            };
        }
    }

    private static List<ShardEntry> entries(List<Source> sources, PartPlan pp, Options o) {
        List<ShardEntry> out = new ArrayList<>();
        int first = 0;
        for (int k = 0; k < pp.sources.size(); k++) {
            Source s = sources.get(pp.sources.get(k));
            IndexResult r = pp.results.get(k);
            out.add(new ShardEntry(s.name(), s.format(), pp.offsets.get(k), s.size(), r.crc32c(), first, r.samples(),
                    s.format() == ShardFormat.FIXED ? o.recordSize() : 0, r.samplesLeftOut()));
            first += r.samples();
        }
        return out;
    }

    private static DatasetLabel label(int state, UUID id, int index, int count, PartPlan pp, int written, long fp,
                                      Options o) {
        return new DatasetLabel(state, id, index, count, state == DatasetLabel.COMPLETE ? pp.manifestOffset : 0,
                state == DatasetLabel.COMPLETE ? pp.manifest.length : 0,
                state == DatasetLabel.COMPLETE ? SampleTable.crc32c(pp.manifest) : 0, written, fp,
                System.currentTimeMillis(), pp.cursor, o.name());
    }

    private static void writeLabel(PartPlan pp) throws IOException {
        pp.io.write(DatasetLabel.offsetFor(pp.ns.sizeBytes()), ByteBuffer.wrap(pp.label.encode()));
    }

    /** Streams a file onto the namespace; returns the CRC32C of what was written. */
    private static int copy(Source s, PartPlan pp, long offset, ImportProgress progress) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buf = ByteBuffer.allocate(8 << 20);
        long pos = offset;
        try (FileChannel ch = FileChannel.open(s.file(), StandardOpenOption.READ)) {
            long left = s.size();
            while (left > 0) {
                buf.clear();
                if (left < buf.capacity()) {
                    buf.limit((int) left);
                }
                while (buf.hasRemaining()) {
                    if (ch.read(buf) < 0) {
                        throw new IOException(s.file() + " ended early (it changed while it was imported)");
                    }
                }
                buf.flip();
                crc.update(buf.duplicate());
                int n = buf.remaining();
                pp.io.write(pos, buf);
                pos += n;
                left -= n;
                progress.advanced(n, s.name());
            }
        }
        return (int) crc.getValue();
    }

    static int readBackCrc(PartPlan pp, long offset, long length, String name, ImportProgress progress) throws IOException {
        return crcOf(pp.io, offset, length, name, progress);
    }

    /** CRC32C of bytes {@code [offset, offset + length)} of a namespace. */
    public static int crcOf(NamespaceIo io, long offset, long length, String name, ImportProgress progress)
            throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buf = ByteBuffer.allocate(8 << 20);
        long pos = offset;
        long left = length;
        while (left > 0) {
            buf.clear();
            if (left < buf.capacity()) {
                buf.limit((int) left);
            }
            io.read(pos, buf);
            buf.flip();
            int n = buf.remaining();
            crc.update(buf);
            pos += n;
            left -= n;
            progress.advanced(n, name);
        }
        return (int) crc.getValue();
    }

    private static long fingerprint(List<Source> sources, int[] partOf, List<PartPlan> parts, Options o) {
        try {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            StringBuilder s = new StringBuilder("nvmeof-dataset-plan-1\n");
            s.append(parts.size()).append(' ').append(o.recordSize()).append(' ').append(o.skipCorrupt()).append('\n');
            for (int i = 0; i < sources.size(); i++) {
                Source src = sources.get(i);
                s.append(src.name()).append('\0').append(src.format().code()).append(' ').append(src.size()).append(' ')
                        .append(src.mtimeMs()).append(' ').append(partOf[i]).append('\n');
            }
            for (PartPlan p : parts) {
                // The subsystem and NSID, not the address: the same namespaces may be reached another way.
                s.append(p.ns.controller().transportId().subnqn()).append(' ').append(p.ns.nsid()).append('\n');
            }
            byte[] h = d.digest(s.toString().getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(h).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static long align(long n) {
        return (n + ALIGN - 1) / ALIGN * ALIGN;
    }

    static String hex(int crc) {
        return String.format("%08x", crc);
    }
}

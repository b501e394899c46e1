package io.nvmeof.loader;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetLabel;
import io.nvmeof.loader.layout.DatasetPart;
import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import io.nvmeof.loader.plan.EpochPlan;
import io.nvmeof.loader.plan.SampleSpace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A dataset on one or more NVMe-oF namespaces, opened from their transport IDs alone: each namespace's label (its
 * last 4 KiB) and manifest say which part of which dataset it holds and where every sample is, so any sample is read
 * with one read. Samples are numbered 0 to {@link #sampleCount()} - 1, part by part, shard by shard, as imported.
 *
 * <p>Read it through a {@link DatasetLoader} ({@link #loader()}): shuffled, sharded across ranks, prefetched.
 * {@link #read(long)} reads one sample on its own (random access, e.g. for DJL's {@code get}).
 *
 * <p>A namespace reached through several paths ({@link DatasetLocation#paths()}) is read through a
 * {@link MultipathNamespace} over them: a path that goes away mid-epoch fails its reads over to the others, and the
 * loader sees no error. Its part's {@link DatasetPart#namespace()} is the handle of its first path.
 *
 * <p>Thread-safe once opened. {@link #close()} closes the controllers {@link #connect} opened, not those of
 * namespaces handed to {@link #open}.
 */
public final class NvmeofDataset implements SampleSpace, AutoCloseable {
    private final List<DatasetPart> parts;
    private final List<NvmeofController> owned;
    /** By part: the namespace through all its paths, or null where it has one. */
    private final MultipathNamespace[] multipath;
    /** By part: its handle on each path (the one handle of a single-path part). */
    private final NamespaceHandle[][] partPaths;
    /**
     * By part and path: a reader of that path alone, for {@link ReconnectCheck}'s label checks (made when first
     * needed, used under its lock only; null for single-path parts, checked through {@link #reader}).
     */
    private final NamespaceIo[][] pathReaders;
    /** Every path's controller, distinct, in order. */
    private final List<NvmeofController> controllers;
    private final int[] partFirst; // parts.size() + 1
    private final short[] partOf;
    private final int[] shardPart;
    private final int[] shardLocal;
    private final int[] shardFirst;
    private final int sampleCount;
    private final ReconnectCheck reconnects;

    @SuppressWarnings("unchecked")
    private NvmeofDataset(List<DatasetPart> parts, Map<NamespaceHandle, MultipathNamespace> multipathByFirstPath,
                          List<NvmeofController> owned) {
        this.parts = List.copyOf(parts);
        this.owned = owned;
        this.multipath = new MultipathNamespace[parts.size()];
        this.partPaths = new NamespaceHandle[parts.size()][];
        this.pathReaders = new NamespaceIo[parts.size()][];
        List<NamespaceHandle> everyPath = new ArrayList<>();
        for (int p = 0; p < parts.size(); p++) {
            multipath[p] = multipathByFirstPath.get(parts.get(p).namespace());
            List<NamespaceHandle> paths = multipath[p] != null ? multipath[p].paths() : List.of(parts.get(p).namespace());
            partPaths[p] = paths.toArray(new NamespaceHandle[0]);
            pathReaders[p] = multipath[p] != null ? new NamespaceIo[paths.size()] : null;
            everyPath.addAll(paths);
        }
        this.controllers = ReconnectCheck.controllersOf(everyPath);
        this.reconnects = new ReconnectCheck(this.parts, partPaths);
        this.readers = new java.util.concurrent.ArrayBlockingQueue[parts.size()];
        for (int p = 0; p < parts.size(); p++) {
            readers[p] = new java.util.concurrent.ArrayBlockingQueue<>(READERS);
        }
        this.readersMade = new java.util.concurrent.atomic.AtomicIntegerArray(parts.size());
        partFirst = new int[parts.size() + 1];
        long n = 0;
        int shards = 0;
        for (int p = 0; p < parts.size(); p++) {
            partFirst[p] = (int) n;
            n += parts.get(p).table().sampleCount();
            shards += parts.get(p).table().shards().size();
            if (n > Integer.MAX_VALUE - 1) {
                throw new IllegalArgumentException("more than " + (Integer.MAX_VALUE - 1) + " samples");
            }
        }
        partFirst[parts.size()] = (int) n;
        sampleCount = (int) n;
        partOf = new short[sampleCount];
        shardPart = new int[shards];
        shardLocal = new int[shards];
        shardFirst = new int[shards];
        int s = 0;
        for (int p = 0; p < parts.size(); p++) {
            java.util.Arrays.fill(partOf, partFirst[p], partFirst[p + 1], (short) p);
            List<ShardEntry> list = parts.get(p).table().shards();
            for (int k = 0; k < list.size(); k++) {
                shardPart[s] = p;
                shardLocal[s] = k;
                shardFirst[s] = partFirst[p] + list.get(k).firstSample();
                s++;
            }
        }
    }

    /**
     * Opens the dataset on these namespaces (every part of it, in any order). The controllers stay the caller's.
     *
     * @throws IOException if a namespace holds no dataset, an unfinished import, parts of different datasets, or
     *                     parts are missing or repeated: the message names them and what to do
     */
    public static NvmeofDataset open(List<NamespaceHandle> namespaces) throws IOException {
        int openedAt = ReconnectCheck.stampOf(namespaces);
        NvmeofDataset ds = new NvmeofDataset(checkParts(readParts(namespaces)), Map.of(), List.of());
        ds.reconnects.opened(openedAt);
        return ds;
    }

    /**
     * Connects to the subsystems of {@code locations} (one controller per subsystem and path; several namespaces of
     * one subsystem share it) and opens the dataset there; a location with several paths is read through a
     * {@link MultipathNamespace} over them (Linux's queue-depth policy, its default failover timeout).
     * {@link #close()} closes those controllers.
     */
    public static NvmeofDataset connect(List<DatasetLocation> locations, ConnectOptions options)
            throws IOException {
        if (locations.isEmpty()) {
            throw new IllegalArgumentException("no namespaces given");
        }
        Map<TransportId, NvmeofController> controllers = new LinkedHashMap<>();
        Map<NamespaceHandle, MultipathNamespace> multipathByFirstPath = new IdentityHashMap<>();
        Map<NamespaceHandle, DatasetLocation> locationOf = new IdentityHashMap<>();
        try {
            List<NamespaceHandle> namespaces = new ArrayList<>();
            List<NamespaceHandle> everyPath = new ArrayList<>();
            for (DatasetLocation l : locations) {
                List<NamespaceHandle> handles = new ArrayList<>();
                for (TransportId path : l.paths()) {
                    NvmeofController c = controllers.get(path);
                    if (c == null) {
                        c = NvmeofController.connect(path, options);
                        controllers.put(path, c);
                    }
                    NamespaceHandle h = c.namespace(l.nsid()); // refused, naming the active ones, if there is none
                    DatasetLocation earlier = locationOf.putIfAbsent(h, l);
                    if (earlier != null) {
                        // One namespace through one controller named twice: one part given twice (and a second
                        // multipath namespace over the same first path would replace the first's, left open).
                        throw new IllegalArgumentException("locations " + earlier + " and " + l + " both reach"
                                + " namespace " + l.nsid() + " through " + path.address()
                                + ": give each namespace once, with all its paths in one location");
                    }
                    handles.add(h);
                }
                if (handles.size() > 1) {
                    // Refused, saying what differs, unless every path reaches the same namespace.
                    multipathByFirstPath.put(handles.get(0), MultipathNamespace.of(handles));
                }
                namespaces.add(handles.get(0));
                everyPath.addAll(handles);
            }
            int openedAt = ReconnectCheck.stampOf(everyPath);
            NvmeofDataset ds = new NvmeofDataset(checkParts(readParts(namespaces)), multipathByFirstPath,
                    new ArrayList<>(controllers.values()));
            ds.checkEveryPathHoldsItsPart();
            ds.reconnects.opened(openedAt);
            return ds;
        } catch (IOException | RuntimeException e) {
            for (MultipathNamespace m : multipathByFirstPath.values()) {
                m.close();
            }
            for (NvmeofController c : controllers.values()) {
                c.close();
            }
            throw e;
        }
    }

    /**
     * The parts were opened through their first paths; a path to other bytes under the same identifiers (a target
     * over another copy, or an empty RAM namespace) would hand out its own. Refused here, naming it. A path that
     * cannot read its label now and takes no reads (not connected, or ANA inaccessible: a standby) is left unchecked;
     * {@link ReconnectCheck} checks it before anything read once it is usable is handed out.
     */
    private void checkEveryPathHoldsItsPart() throws IOException {
        for (int part = 0; part < parts.size(); part++) {
            DatasetLabel label = parts.get(part).label();
            for (int i = 0; i < partPaths[part].length && partPaths[part].length > 1; i++) {
                DatasetLabel other;
                try {
                    other = reconnects.readPathLabel(this, part, i);
                } catch (IOException e) {
                    if (e.getCause() instanceof IllegalArgumentException || MultipathNamespace.usable(partPaths[part][i])) {
                        throw e;
                    }
                    continue; // unverified: not usable now, checked once it is
                }
                if (!label.equals(other)) {
                    NamespaceHandle first = partPaths[part][0];
                    NamespaceHandle path = partPaths[part][i];
                    throw new IOException("path " + i + " (" + path.controller().transportId().address() + ") to "
                            + DatasetPart.describe(first) + " holds " + (other == null ? "no dataset label"
                            : other.datasetId().equals(label.datasetId()) ? "another label of dataset " + other.name()
                            + " (written at " + other.writtenAtMs() + " ms, not " + label.writtenAtMs() + " ms)"
                            : "dataset " + other.name() + " (" + other.datasetId() + ")") + ", path 0 ("
                            + first.controller().transportId().address() + ") dataset " + label.name() + " ("
                            + label.datasetId() + "): the paths of one location must reach one namespace (listeners"
                            + " of one subsystem, or targets over one shared backend); give only those that do");
                }
            }
        }
    }

    private static List<DatasetPart> readParts(List<NamespaceHandle> namespaces) throws IOException {
        List<DatasetPart> out = new ArrayList<>();
        for (NamespaceHandle ns : namespaces) {
            out.add(DatasetPart.open(ns));
        }
        return out;
    }

    private static List<DatasetPart> checkParts(List<DatasetPart> given) throws IOException {
        if (given.isEmpty()) {
            throw new IllegalArgumentException("no namespaces given");
        }
        DatasetPart first = given.get(0);
        UUID id = first.label().datasetId();
        int count = first.label().partCount();
        DatasetPart[] byIndex = new DatasetPart[count];
        for (DatasetPart p : given) {
            if (!p.label().datasetId().equals(id)) {
                throw new IOException(DatasetPart.describe(p.namespace()) + " holds dataset " + p.label().name() + " ("
                        + p.label().datasetId() + "), " + DatasetPart.describe(first.namespace()) + " holds "
                        + first.label().name() + " (" + id + "): give the namespaces of one dataset");
            }
            int i = p.label().partIndex();
            if (byIndex[i] != null) {
                throw new IOException("part " + (i + 1) + " of " + count + " given twice: "
                        + DatasetPart.describe(byIndex[i].namespace()) + " and " + DatasetPart.describe(p.namespace()));
            }
            byIndex[i] = p;
        }
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            if (byIndex[i] == null) {
                missing.add(i + 1);
            }
        }
        if (!missing.isEmpty()) {
            throw new IOException("dataset " + first.label().name() + " has " + count + " parts; part(s) " + missing
                    + " missing: give every namespace it was imported to (./nvmeof dataset ls shows which part each holds)");
        }
        return List.of(byIndex);
    }

    // ------------------------------------------------------------------------------------------------- identity

    public UUID id() { return parts.get(0).label().datasetId(); }

    public String name() { return parts.get(0).label().name(); }

    public List<DatasetPart> parts() { return parts; }

    /** Every shard, part by part. */
    public List<ShardEntry> shards() {
        List<ShardEntry> all = new ArrayList<>();
        for (DatasetPart p : parts) {
            all.addAll(p.table().shards());
        }
        return Collections.unmodifiableList(all);
    }

    /** Bytes of every shard. */
    public long dataBytes() {
        long n = 0;
        for (DatasetPart p : parts) {
            n += p.table().dataBytes();
        }
        return n;
    }

    /** The controllers of the parts, every path's (one per distinct controller). */
    public List<NvmeofController> controllers() {
        return controllers;
    }

    /** Part {@code part}'s namespace through all its paths; null where it has one (read its handle). */
    public MultipathNamespace multipath(int part) {
        return multipath[part];
    }

    /** Part {@code part}'s handle on each of its paths, in the location's order (one for a single-path part). */
    NamespaceHandle[] paths(int part) {
        return partPaths[part];
    }

    /** Whether part {@code part}'s namespace is still the one opened through some path (its handle not retired). */
    boolean isCurrent(int part) {
        for (NamespaceHandle h : partPaths[part]) {
            if (h.isCurrent()) {
                return true;
            }
        }
        return false;
    }

    /**
     * A reader of part {@code part} through path {@code path} alone (a multipath part's), made when first needed and
     * again after {@link #dropPathReader}: the label of each path is checked on its own ({@link ReconnectCheck}). Only
     * under the check's lock, or at open.
     */
    NamespaceIo pathReader(int part, int path) {
        NamespaceIo io = pathReaders[part][path];
        if (io == null) {
            io = new NamespaceIo(partPaths[part][path], 1);
            pathReaders[part][path] = io;
        }
        return io;
    }

    /** Forgets path {@code path}'s reader, whose read is still in flight (its buffer is not free): the next is new. */
    void dropPathReader(int part, int path) {
        pathReaders[part][path] = null;
    }

    /** What tells data read from the namespaces since a reconnect from the dataset's (see {@link ReconnectCheck}). */
    ReconnectCheck reconnects() { return reconnects; }

    // ------------------------------------------------------------------------------------------------- samples

    @Override
    public int sampleCount() { return sampleCount; }

    @Override
    public int shardCount() { return shardPart.length; }

    @Override
    public int shardFirst(int shard) { return shardFirst[shard]; }

    @Override
    public int shardSamples(int shard) {
        return parts.get(shardPart[shard]).table().shards().get(shardLocal[shard]).sampleCount();
    }

    @Override
    public int part(int sample) { return partOf[sample]; }

    int local(int sample) { return sample - partFirst[partOf[sample]]; }

    SampleTable table(int sample) { return parts.get(partOf[sample]).table(); }

    @Override
    public long start(int sample) { return table(sample).start(local(sample)); }

    @Override
    public int length(int sample) { return table(sample).length(local(sample)); }

    @Override
    public int blockSize(int part) { return parts.get(part).namespace().blockSize(); }

    /** Buffer bytes the largest sample takes read on its own: the whole blocks holding it. Computed once. */
    public long largestSampleBytes() {
        long l = largest;
        if (l == 0) {
            for (int s = 0; s < sampleCount; s++) {
                l = Math.max(l, EpochPlan.blocksOf(this, s));
            }
            largest = l;
        }
        return l;
    }

    private volatile long largest;

    public String key(long sample) {
        int s = check(sample);
        return table(s).key(local(s));
    }

    /** The shard a sample is in. */
    public ShardEntry shardOf(long sample) {
        int s = check(sample);
        SampleTable t = table(s);
        return t.shards().get(t.shardOf(local(s)));
    }

    public ShardFormat formatOf(long sample) { return shardOf(sample).format(); }

    private int check(long sample) {
        if (sample < 0 || sample >= sampleCount) {
            throw new IndexOutOfBoundsException("sample " + sample + " of " + sampleCount);
        }
        return (int) sample;
    }

    /**
     * Reads one sample on its own, into a new heap buffer, its members checked as the loader checks them (tar headers,
     * TFRecord CRCs; the manifest's CRC32C too when {@code verify}). For random access (several threads may call it);
     * a loader prefetches instead.
     */
    public SampleData read(long sample, boolean verify) throws IOException {
        int s = check(sample);
        ByteBuffer b = ByteBuffer.allocate(length(s));
        // Only what was read while the controllers stayed on one trusted association is the dataset's.
        int stamp;
        do {
            stamp = reconnects.trustedNow(this);
            readInto(s, b.clear());
        } while (reconnects.stamp() != stamp);
        b.flip();
        SampleData d = new SampleData(this, s, b, 0);
        String bad = new SampleChecks(this, b, verify).problem(s, 0);
        if (bad != null) {
            throw SampleChecks.corrupt(this, s, bad);
        }
        return d;
    }

    public SampleData read(long sample) throws IOException {
        return read(sample, false);
    }

    /**
     * Reads sample {@code s} into {@code dst} (its position on, {@code length(s)} bytes) as it is now on the namespace:
     * no check of where the namespace's bytes came from (see {@link ReconnectCheck}).
     */
    void readInto(int s, ByteBuffer dst) throws IOException {
        int part = partOf[s];
        IOException failed = null;
        NamespaceIo io = reader(part);
        try {
            io.read(start(s), dst.limit(dst.position() + length(s)));
        } catch (IOException e) {
            failed = e;
        } finally {
            returnReader(part, io);
        }
        if (failed != null) {
            if (!isCurrent(part)) {
                reconnects.verify(this); // throws, saying how it changed
            }
            throw failed;
        }
    }

    /** Random reads share a few readers per namespace, whose buffers are registered once (not one per read). */
    private static final int READERS = 4;
    private final java.util.concurrent.ArrayBlockingQueue<NamespaceIo>[] readers;
    private final java.util.concurrent.atomic.AtomicIntegerArray readersMade;

    /**
     * Gives a reader back to the pool: at once if nothing it sent is in flight, else once its last chunk is done (a
     * read that threw may have left chunks in flight, which would land in buffers the next read uses).
     */
    void returnReader(int part, NamespaceIo io) {
        if (io.settled()) {
            readers[part].offer(io);
        } else {
            io.whenSettled(() -> readers[part].offer(io));
        }
    }

    NamespaceIo reader(int part) throws IOException {
        NamespaceIo io = readers[part].poll();
        if (io != null) {
            return io;
        }
        if (readersMade.getAndIncrement(part) < READERS) {
            return new NamespaceIo(parts.get(part).namespace(), multipath[part], 2);
        }
        try {
            return readers[part].take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted waiting for a reader of part " + (part + 1));
        }
    }

    /** Starts configuring a loader over this dataset. */
    public DatasetLoader.Builder loader() {
        return new DatasetLoader.Builder(this);
    }

    @Override
    public void close() {
        // connect made the multipath namespaces, over its controllers: they stop listening to their paths (and fail
        // what waits for one) before the controllers go.
        for (MultipathNamespace m : multipath) {
            if (m != null) {
                m.close();
            }
        }
        for (NvmeofController c : owned) {
            c.close();
        }
    }

    @Override
    public String toString() {
        return "dataset " + name() + " (" + id() + "): " + sampleCount + " samples in " + shardCount() + " shards on "
                + parts.size() + " namespace(s)";
    }
}

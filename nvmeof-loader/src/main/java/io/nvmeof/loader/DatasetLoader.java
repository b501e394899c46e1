package io.nvmeof.loader;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.loader.format.CorruptRecordException;
import io.nvmeof.loader.plan.EpochPlan;
import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a dataset for training: one epoch after another, in an order fixed by the seed and the epoch, this rank's
 * share of it, read ahead in parallel into one buffer of {@code prefetchBytes} registered with every controller.
 *
 * <pre>{@code
 * try (NvmeofDataset ds = NvmeofDataset.connect(List.of(DatasetLocation.parse("tcp://10.0.0.5:4420/nqn.2026-12.com.example:train")),
 *                                               ConnectOptions.builder().ioQueues(4).build());
 *      DatasetLoader loader = ds.loader().shuffle(ShuffleMode.FULL).seed(42).rank(rank).worldSize(world).build()) {
 *     for (int epoch = 0; epoch < 10; epoch++) {
 *         try (BatchIterator it = loader.batches(epoch, 64)) {
 *             for (Batch b : it) { ... b.member(i, m) ... }      // each batch valid until the next one
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>One iteration runs at a time; starting one ends the previous. Iterate from one thread; samples and batches may be
 * released from any. Memory: the buffer, allocated once, plus the epoch's plan (4 to 8 bytes a sample of this rank).
 */
public final class DatasetLoader implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DatasetLoader.class);

    /** The read-ahead buffer is full of samples handed out and not released. */
    static final class BufferFullException extends IllegalStateException {
        BufferFullException(String message) {
            super(message);
        }
    }

    private static final int DEFAULT_PREFETCH = 64 << 20;
    private static final int MAX_PREFETCH = Integer.MAX_VALUE - 8;
    private static final int DEFAULT_WINDOW = 1024;

    /** Times a group is read again after reconnects before the loader gives up (the connection keeps failing). */
    private static final int REREADS = 10;

    private final NvmeofDataset ds;
    private final ReconnectCheck reconnects;
    private final Builder cfg;
    private ReadAhead engine;
    private Iteration current;
    private final ManyToManyConcurrentArrayQueue<Batch.State> batchPool = new ManyToManyConcurrentArrayQueue<>(256);
    private long samples;
    private long sampleBytes;
    private long corruptSkipped;
    private long readsBefore;
    private long readBytesBefore;
    private long waitBefore;
    private boolean closed;

    private DatasetLoader(Builder b) {
        this.ds = b.ds;
        this.reconnects = ds.reconnects();
        this.cfg = b.copy();
        this.engine = new ReadAhead(ds, cfg.prefetchBytes, cfg.readsInFlight);
        if (cfg.worldSize > 1) {
            LOG.info("{}", share());
        } else {
            LOG.debug("{}", share());
        }
    }

    /** What this rank reads each epoch, in a line (logged when the loader is built with more than one rank). */
    public String share() {
        int n = ds.sampleCount();
        int w = cfg.worldSize;
        int extra = n % w;
        String rest = extra == 0 ? "" : switch (cfg.remainder) {
            case DROP -> "; " + extra + " of them left out of each epoch (remainder DROP)";
            case PAD -> "; " + (w - extra) + " read twice across the ranks to make the shares equal (remainder PAD,"
                    + " as PyTorch's DistributedSampler)";
            case UNEVEN -> "; ranks 0 to " + (extra - 1) + " read one more (remainder UNEVEN)";
        };
        return "rank " + cfg.rank + " of " + w + ": " + epochSize() + " samples an epoch of the dataset's " + n + rest;
    }

    /** Configures a loader; every setting has a default. */
    public static final class Builder {
        private final NvmeofDataset ds;
        private ShuffleMode shuffle = ShuffleMode.NONE;
        /** 0 until set: then chosen from the samples' sizes ({@link #resolveDefaults}). */
        private int window;
        private long seed;
        private int rank;
        private int worldSize = 1;
        private Remainder remainder = Remainder.PAD;
        /** 0 until set, as {@link #window}. */
        private int prefetchBytes;
        private int readsInFlight;
        private CorruptPolicy corrupt = CorruptPolicy.FAIL;
        private boolean verify;
        private boolean releaseOnNext = true;
        private boolean dropLast;
        private Duration releaseTimeout = Duration.ofSeconds(10);
        private Duration drainTimeout = Duration.ofSeconds(60);

        Builder(NvmeofDataset ds) {
            this.ds = ds;
        }

        private Builder copy() {
            Builder b = new Builder(ds);
            b.shuffle = shuffle;
            b.window = window;
            b.seed = seed;
            b.rank = rank;
            b.worldSize = worldSize;
            b.remainder = remainder;
            b.prefetchBytes = prefetchBytes;
            b.readsInFlight = readsInFlight;
            b.corrupt = corrupt;
            b.verify = verify;
            b.releaseOnNext = releaseOnNext;
            b.dropLast = dropLast;
            b.releaseTimeout = releaseTimeout;
            b.drainTimeout = drainTimeout;
            b.resolveDefaults();
            return b;
        }

        /**
         * The buffer and window not set: 64 MiB and 1,024 samples, or what the dataset's largest sample needs: a buffer
         * that holds four of them, and a window of which four fit the buffer.
         */
        private void resolveDefaults() {
            long largest = ds.largestSampleBytes();
            boolean adjusted = false;
            if (prefetchBytes == 0) {
                long four = (4 * largest + (1 << 20) - 1) >> 20 << 20;
                prefetchBytes = (int) Math.min(MAX_PREFETCH, Math.max(DEFAULT_PREFETCH, four));
                adjusted = prefetchBytes != DEFAULT_PREFETCH;
            }
            if (window == 0) {
                window = (int) Math.max(1, Math.min(DEFAULT_WINDOW, prefetchBytes / 4 / Math.max(1, largest)));
                adjusted |= window != DEFAULT_WINDOW;
            }
            if (adjusted) {
                LOG.info("{}: samples of up to {} bytes: a prefetch buffer of {} bytes and a window of {} samples (set"
                        + " prefetchBytes and window to choose others)", ds, largest, prefetchBytes, window);
            }
        }

        /** The order: storage order ({@code NONE}, the default), shard and window shuffle, or a full shuffle. */
        public Builder shuffle(ShuffleMode mode) {
            this.shuffle = java.util.Objects.requireNonNull(mode);
            return this;
        }

        /**
         * Samples per group: the shuffle window of {@code WINDOW} mode, how many consecutive samples are read together
         * in {@code NONE} and {@code WINDOW} mode. A group's bytes must fit the prefetch buffer. Default 1024, or fewer
         * where four windows of the dataset's largest samples would not fit the buffer.
         */
        public Builder window(int samples) {
            if (samples < 1 || samples > ReadAhead.RING / 2) {
                throw new IllegalArgumentException("window must be 1 to " + ReadAhead.RING / 2 + " samples, got " + samples);
            }
            this.window = samples;
            return this;
        }

        /** The seed of every epoch's order (default 0). */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** This worker's rank, 0 to {@code worldSize - 1} (default 0). */
        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        /** How many workers share each epoch (default 1). */
        public Builder worldSize(int worldSize) {
            if (worldSize < 1) {
                throw new IllegalArgumentException("worldSize must be at least 1, got " + worldSize);
            }
            this.worldSize = worldSize;
            return this;
        }

        /**
         * What to do with samples that do not divide evenly among the ranks: by default {@code PAD}, as PyTorch's
         * {@code DistributedSampler} (every sample read at least once an epoch, a few twice); {@code DROP} leaves the
         * last {@code n mod worldSize} of each epoch out, {@code UNEVEN} gives the lower ranks one more.
         */
        public Builder remainder(Remainder r) {
            this.remainder = java.util.Objects.requireNonNull(r);
            return this;
        }

        /**
         * The read buffer: never more memory than this is read ahead or held by samples handed out. Default 64 MiB, or
         * room for four of the dataset's largest samples where that is more.
         */
        public Builder prefetchBytes(long bytes) {
            if (bytes < 64 << 10 || bytes > MAX_PREFETCH) {
                throw new IllegalArgumentException("prefetchBytes must be 64 KiB to 2 GiB, got " + bytes);
            }
            this.prefetchBytes = (int) bytes;
            return this;
        }

        /** Reads in flight per controller (default: its I/O queues times their depth). */
        public Builder readsInFlight(int reads) {
            if (reads < 1) {
                throw new IllegalArgumentException("readsInFlight must be at least 1, got " + reads);
            }
            this.readsInFlight = reads;
            return this;
        }

        /** Fail on a corrupt sample (default) or skip and count it. */
        public Builder corrupt(CorruptPolicy policy) {
            this.corrupt = java.util.Objects.requireNonNull(policy);
            return this;
        }

        /** Also check each sample's data against the CRC32C its manifest recorded (default off: costs CPU per byte). */
        public Builder verify(boolean verify) {
            this.verify = verify;
            return this;
        }

        /**
         * Whether the iterator releases the previous sample or batch when the next is asked for (default true). Off,
         * the caller releases each ({@code close()}), and may hold several at once within the prefetch buffer.
         */
        public Builder releaseOnNext(boolean release) {
            this.releaseOnNext = release;
            return this;
        }

        /** Leave out a last batch smaller than the batch size (default false). */
        public Builder dropLast(boolean drop) {
            this.dropLast = drop;
            return this;
        }

        /**
         * How long the iterator waits for samples to be released when the buffer is full of them and nothing else can
         * be read (default 10 s); then it fails saying so.
         */
        public Builder releaseTimeout(Duration timeout) {
            this.releaseTimeout = java.util.Objects.requireNonNull(timeout);
            return this;
        }

        public DatasetLoader build() {
            if (rank < 0 || rank >= worldSize) {
                throw new IllegalArgumentException("rank must be 0 to " + (worldSize - 1) + " for worldSize " + worldSize
                        + ", got " + rank);
            }
            return new DatasetLoader(this);
        }
    }

    public NvmeofDataset dataset() { return ds; }

    /** The read-ahead of the current iteration (for tests). */
    ReadAhead readAhead() { return engine; }

    /** Samples this rank gets per epoch. */
    public int epochSize() {
        int n = ds.sampleCount();
        int w = cfg.worldSize;
        return switch (cfg.remainder) {
            case DROP -> n / w;
            case PAD -> n == 0 ? 0 : (n + w - 1) / w;
            case UNEVEN -> n / w + (cfg.rank < n % w ? 1 : 0);
        };
    }

    /** The plan of one epoch for this rank (for tests and tools: which samples, in which order). */
    public EpochPlan plan(long epoch) {
        return EpochPlan.build(ds, cfg.shuffle, cfg.window, cfg.seed, epoch, cfg.rank, cfg.worldSize, cfg.remainder);
    }

    /** Receives the reads of {@link #forEachRead}. */
    @FunctionalInterface
    public interface ReadVisitor {
        /** One read: {@code bytes} (whole blocks) from byte {@code offset} of part {@code part}'s namespace. */
        void read(int part, long offset, int bytes);
    }

    /**
     * The reads this loader issues for {@code epoch}, in the order it issues them: each group's runs of neighbouring
     * samples, cut at the namespace's transfer size (at most 4 MiB). For a baseline that reads the same bytes the same
     * way without the loader ({@code ./nvmeof loader-bench}).
     */
    public void forEachRead(long epoch, ReadVisitor v) {
        EpochPlan p = plan(epoch);
        int[] chunk = new int[ds.parts().size()];
        for (int part = 0; part < chunk.length; part++) {
            chunk[part] = ReadAhead.chunkBytes(ds, part);
        }
        EpochPlan.RunVisitor cut = (part, start, end, firstPos, endPos) -> {
            for (long at = start; at < end; at += chunk[part]) {
                v.read(part, at, (int) Math.min(chunk[part], end - at));
            }
        };
        for (int g = 0; g < p.groupCount(); g++) {
            p.forEachRun(g, cut);
        }
    }

    // ----------------------------------------------------------------------------------------------- iterations

    public SampleIterator samples(long epoch) {
        return new SampleIterator(begin(epoch, 0), cfg.releaseOnNext);
    }

    /** Resumes where {@code checkpoint} was taken. */
    public SampleIterator samples(Checkpoint checkpoint) {
        return new SampleIterator(begin(checkpoint), cfg.releaseOnNext);
    }

    public BatchIterator batches(long epoch, int batchSize) {
        return new BatchIterator(begin(epoch, 0), batchSize, cfg.releaseOnNext, cfg.dropLast);
    }

    public BatchIterator batches(Checkpoint checkpoint, int batchSize) {
        return new BatchIterator(begin(checkpoint), batchSize, cfg.releaseOnNext, cfg.dropLast);
    }

    /** Where the current iteration is; resume there with {@link #samples(Checkpoint)} or {@link #batches(Checkpoint, int)}. */
    public Checkpoint checkpoint() {
        Iteration it = current;
        if (it == null) {
            throw new IllegalStateException("no iteration has started");
        }
        return checkpointAt(it.epoch, it.handed);
    }

    /**
     * A checkpoint of this loader's settings at {@code position} of {@code epoch}: to resume a checkpoint of the first
     * format, which recorded only the epoch, the position and the seed, with a loader known to have its settings.
     */
    public Checkpoint checkpointAt(long epoch, long position) {
        return new Checkpoint(epoch, position, cfg.seed, cfg.shuffle, cfg.window, cfg.rank, cfg.worldSize,
                cfg.remainder, ds.id());
    }

    private Iteration begin(Checkpoint c) {
        java.util.List<String> differ = c.differences(checkpointAt(c.epoch(), c.position()));
        if (!differ.isEmpty()) {
            throw new IllegalArgumentException("checkpoint " + c + " was taken with " + String.join(", ", differ)
                    + ": it resumes only the order it was taken in; build the loader with the settings it was taken"
                    + " with, or start the epoch again");
        }
        if (c.position() > epochSize()) {
            throw new IllegalArgumentException("checkpoint " + c + " is past the end of the epoch (" + epochSize()
                    + " samples for this rank)");
        }
        return begin(c.epoch(), (int) c.position());
    }

    private synchronized Iteration begin(long epoch, int from) {
        if (closed) {
            throw new IllegalStateException("the loader is closed");
        }
        endCurrent();
        EpochPlan plan = plan(epoch);
        engine.start(plan, from);
        current = new Iteration(plan, epoch, from);
        return current;
    }

    private void endCurrent() {
        Iteration it = current;
        if (it == null || !it.open) {
            return;
        }
        it.open = false;
        if (!engine.drain(cfg.drainTimeout.toNanos())) {
            // Reads still in flight may yet land in the old buffer: it is left to them, and the next iteration
            // reads into a new one.
            LOG.warn("reads of the last iteration did not finish within {}; reading into a new buffer from now on",
                    cfg.drainTimeout);
            readsBefore += engine.reads;
            readBytesBefore += engine.readBytes;
            waitBefore += engine.waitNanos;
            engine = new ReadAhead(ds, cfg.prefetchBytes, cfg.readsInFlight);
        }
    }

    public synchronized LoaderStatistics statistics() {
        return new LoaderStatistics(samples, sampleBytes, readsBefore + engine.reads, readBytesBefore + engine.readBytes,
                corruptSkipped, waitBefore + engine.waitNanos, engine.awaits, engine.parks, cfg.prefetchBytes);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Iteration it = current;
        boolean drained = true;
        if (it != null && it.open) {
            it.open = false;
            drained = engine.drain(cfg.drainTimeout.toNanos());
        }
        if (drained) {
            engine.close();
        }
    }

    // ----------------------------------------------------------------------------------------------- one iteration

    /** One pass over one epoch's plan: the consumer's position, and what it has been handed. */
    final class Iteration {
        private final EpochPlan plan;
        private final long epoch;
        private final int from;
        private final SampleChecks checks;
        private final ReadAhead ra = engine;
        private volatile boolean open = true;
        private int next;
        int handed;
        // The sample advance() found.
        int sample;
        int position;
        int offset;
        private int loggedCorrupt;
        /** Samples handed out (consumer thread), and those released of them (any thread). */
        private int handedOut;
        private final java.util.concurrent.atomic.AtomicInteger releasedByCaller = new java.util.concurrent.atomic.AtomicInteger();
        /** The last group {@link #guard} passed. */
        private int guarded = -1;

        Iteration(EpochPlan plan, long epoch, int from) {
            this.plan = plan;
            this.epoch = epoch;
            this.from = Math.min(from, plan.size());
            this.next = plan.size() == 0 ? 0 : this.from / plan.groupSize() * plan.groupSize();
            this.handed = this.from;
            this.checks = new SampleChecks(ds, ra.arena, cfg.verify);
        }

        NvmeofDataset dataset() { return ds; }

        ByteBuffer buffer() { return ra.userView; }

        boolean isOpen() { return open; }

        void checkOpen() {
            if (!open) {
                throw new IllegalStateException("its iteration (epoch " + epoch + ") has ended: the loader's buffer is"
                        + " being reused; copy what you need before the iteration ends");
            }
        }

        /** Finds the next good sample (into sample/position/offset); false at the end of the epoch. */
        boolean advance() {
            checkOpen();
            while (next < plan.size()) {
                int i = next;
                int g = i / plan.groupSize();
                if (!ra.await(g, cfg.releaseTimeout.toNanos())) {
                    throw new BufferFullException("the prefetch buffer (" + cfg.prefetchBytes + " bytes) is full of"
                            + " samples not released for " + cfg.releaseTimeout.toMillis() + " ms (" + heldByCaller()
                            + " handed out and still held): release the samples and batches you are done with"
                            + " (close()), or raise prefetchBytes");
                }
                if (g != guarded) {
                    guard(g);
                    guarded = g;
                }
                next++;
                int p = plan.emit(i);
                int s = plan.storage(p);
                if (i < from) {
                    ra.release(p);
                    continue;
                }
                int status = ra.status(g);
                if (status != 0) {
                    throw new UncheckedIOException(new IOException("reading sample " + ds.key(s) + " (shard "
                            + ds.shardOf(s).name() + ", " + ra.where(s) + ") failed: " + IoCallback.describe(status)));
                }
                int off = ra.offsetOf(p);
                String bad = checks.problem(s, off);
                if (bad != null) {
                    ra.release(p);
                    CorruptRecordException e = SampleChecks.corrupt(ds, s, bad);
                    if (cfg.corrupt == CorruptPolicy.FAIL) {
                        throw e;
                    }
                    corruptSkipped++;
                    if (loggedCorrupt++ < 10) {
                        LOG.warn("skipped a corrupt sample: {}", e.getMessage());
                    }
                    continue;
                }
                sample = s;
                position = p;
                offset = off;
                return true;
            }
            return false;
        }

        /**
         * Lets ready group {@code g} be handed out only if every read of it completed under an association checked to
         * still serve the dataset (a reconnect may have found a restarted, empty target): checks the current one if it
         * is not, and reads the group again if its reads went (partly) through one that is gone unchecked.
         *
         * @throws DatasetChangedException if the dataset is gone or changed
         */
        private void guard(int g) {
            int stamp = ra.stamp(g);
            if (stamp >= 0 && reconnects.trusted(stamp) && ra.status(g) != IoCallback.ERR_NAMESPACE_GONE) {
                return;
            }
            try {
                int now = reconnects.verify(ds);
                if (stamp >= 0 && reconnects.trusted(stamp)) {
                    return;
                }
                for (int attempt = 0; attempt < REREADS; attempt++) {
                    ra.reread(g);
                    int after = reconnects.trustedNow(ds);
                    if (after == now) {
                        LOG.info("{}: read the {} samples of group {} of epoch {} again: they were read through a"
                                + " connection lost before it could be checked", ds, plan.groupEnd(g) - plan.groupStart(g),
                                g, epoch);
                        return;
                    }
                    now = after;
                }
                throw new IOException(ds + ": the connection to its namespaces was lost again every time samples were"
                        + " read again after a reconnect (" + REREADS + " tries)");
            } catch (IOException e) {
                throw new UncheckedIOException(e.getMessage(), e);
            }
        }

        /** The sample {@link #advance} found is handed out. */
        void handOut() {
            handed = next;
            handedOut++;
            samples++;
            sampleBytes += ds.length(sample);
        }

        void release(int p) {
            if (open) {
                releasedByCaller.incrementAndGet();
                ra.release(p);
            }
        }

        /** Samples handed out in this iteration and not yet released (those of a batch being made included). */
        int heldByCaller() {
            return handedOut - releasedByCaller.get();
        }

        Batch.State batchState(int capacity) {
            Batch.State s = batchPool.poll();
            if (s == null || s.sample.length < capacity) {
                s = new Batch.State(capacity);
            }
            s.iteration = this;
            s.size = 0;
            return s;
        }

        void releaseBatch(Batch.State s, long generation) {
            synchronized (s) {
                if (s.generation != generation) {
                    return;
                }
                s.generation = generation + 1;
            }
            if (s.iteration == this && open) {
                releasedByCaller.addAndGet(s.size);
                for (int i = 0; i < s.size; i++) {
                    ra.release(s.position[i]);
                }
            }
            s.size = 0;
            batchPool.offer(s);
        }

        void end() {
            synchronized (DatasetLoader.this) {
                if (current == this) {
                    endCurrent();
                } else {
                    open = false;
                }
            }
        }
    }
}

package io.nvmeof.loader.plan;

import java.util.Arrays;

/**
 * Which samples one rank reads in one epoch, in which order, and how they are grouped into reads. Pure arithmetic on
 * the seed, the epoch, the rank and the world size: every machine computes the same plan.
 *
 * <ol>
 *   <li>The epoch's sequence of all samples: storage order ({@link ShuffleMode#NONE}); shards in shuffled order,
 *       each shard's samples in storage order ({@link ShuffleMode#WINDOW}); or a permutation of every sample
 *       ({@link ShuffleMode#FULL}).</li>
 *   <li>The rank's part of it: a contiguous slice, sized by the {@link Remainder} policy, so that the ranks'
 *       parts are disjoint and together cover the epoch (with {@code PAD}, the first samples of the sequence again).</li>
 *   <li>Groups: {@code window} consecutive samples of the slice (one sample in {@code FULL} mode). A group is read
 *       as a few large reads (neighbouring samples of one shard are read together) and handed out in an order
 *       shuffled within the group ({@code WINDOW}) or as stored ({@code NONE}).</li>
 * </ol>
 */
public final class EpochPlan {
    /** Samples this close after the previous one (bytes) are read with it: tar headers and padding lie between. */
    static final int MERGE_GAP = 64 * 1024;

    private final SampleSpace space;
    private final int[] storage;
    private final int[] emit; // null: identity
    private final int groupSize;
    private final int groupCount;
    private final long[] groupBytes; // null when groups are single samples
    private final long maxGroupBytes;

    private EpochPlan(SampleSpace space, int[] storage, int[] emit, int groupSize) {
        this.space = space;
        this.storage = storage;
        this.emit = emit;
        this.groupSize = groupSize;
        this.groupCount = (storage.length + groupSize - 1) / groupSize;
        // A group of one sample (a full shuffle) needs its own blocks: computed when asked, no array per epoch.
        this.groupBytes = groupSize == 1 ? null : new long[groupCount];
        Summer sum = new Summer();
        long max = 0;
        for (int g = 0; g < groupCount; g++) {
            long b;
            if (groupBytes == null) {
                b = blocksOf(storage[g]);
            } else {
                sum.total = 0;
                forEachRun(g, sum);
                b = groupBytes[g] = sum.total;
            }
            max = Math.max(max, b);
        }
        this.maxGroupBytes = max;
    }

    /** Adds up a group's runs. */
    private static final class Summer implements RunVisitor {
        long total;

        @Override
        public void run(int part, long alignedStart, long alignedEnd, int firstPos, int endPos) {
            total += alignedEnd - alignedStart;
        }
    }

    /** Bytes of the whole blocks holding one sample. */
    private long blocksOf(int sample) {
        return blocksOf(space, sample);
    }

    /** Bytes of the whole blocks holding sample {@code sample} of {@code space}: its buffer space read on its own. */
    public static long blocksOf(SampleSpace space, int sample) {
        int bs = space.blockSize(space.part(sample));
        long start = space.start(sample) / bs * bs;
        long end = (space.start(sample) + space.length(sample) + bs - 1) / bs * bs;
        return end - start;
    }

    /**
     * @param window samples per group (ignored for {@code FULL})
     */
    public static EpochPlan build(SampleSpace space, ShuffleMode mode, int window, long seed, long epoch, int rank,
                                  int worldSize, Remainder remainder) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be 0 to worldSize - 1 (" + (worldSize - 1) + "), got " + rank
                    + " of " + worldSize);
        }
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch must not be negative, got " + epoch);
        }
        int n = space.sampleCount();
        int[] seq = new int[n];
        switch (mode) {
            case NONE -> {
                for (int i = 0; i < n; i++) {
                    seq[i] = i;
                }
            }
            case FULL -> {
                for (int i = 0; i < n; i++) {
                    seq[i] = i;
                }
                SplitMix64.of(seed, epoch, 0).shuffle(seq, 0, n);
            }
            case WINDOW -> {
                int[] shards = new int[space.shardCount()];
                for (int i = 0; i < shards.length; i++) {
                    shards[i] = i;
                }
                SplitMix64.of(seed, epoch, 1).shuffle(shards, 0, shards.length);
                int k = 0;
                for (int s : shards) {
                    int first = space.shardFirst(s);
                    for (int i = 0; i < space.shardSamples(s); i++) {
                        seq[k++] = first + i;
                    }
                }
                if (k != n) {
                    throw new IllegalStateException("shards cover " + k + " of " + n + " samples");
                }
            }
            default -> throw new IllegalArgumentException(String.valueOf(mode));
        }
        int[] slice = slice(seq, rank, worldSize, remainder);
        int group = mode == ShuffleMode.FULL ? 1 : window;
        if (group < 1) {
            throw new IllegalArgumentException("window must be at least 1 sample, got " + window);
        }
        int[] emit = null;
        if (mode == ShuffleMode.WINDOW && group > 1) {
            emit = new int[slice.length];
            for (int i = 0; i < emit.length; i++) {
                emit[i] = i;
            }
            SplitMix64 r = SplitMix64.of(seed, epoch, 2 + (long) rank);
            for (int from = 0; from < emit.length; from += group) {
                r.shuffle(emit, from, Math.min(emit.length, from + group));
            }
        }
        return new EpochPlan(space, slice, emit, group);
    }

    /** The rank's contiguous part of the epoch's sequence. */
    static int[] slice(int[] seq, int rank, int world, Remainder remainder) {
        int n = seq.length;
        if (world == 1) {
            return seq; // the whole epoch, whatever the policy
        }
        switch (remainder) {
            case DROP -> {
                int per = n / world;
                return Arrays.copyOfRange(seq, rank * per, rank * per + per);
            }
            case UNEVEN -> {
                int base = n / world;
                int extra = n % world;
                int from = rank * base + Math.min(rank, extra);
                return Arrays.copyOfRange(seq, from, from + base + (rank < extra ? 1 : 0));
            }
            case PAD -> {
                int per = (int) (((long) n + world - 1) / world);
                int[] out = new int[n == 0 ? 0 : per];
                for (int i = 0; i < out.length; i++) {
                    out[i] = seq[(int) (((long) rank * per + i) % n)];
                }
                return out;
            }
            default -> throw new IllegalArgumentException(String.valueOf(remainder));
        }
    }

    /** Samples this rank gets in the epoch. */
    public int size() { return storage.length; }

    /** The sample at storage position {@code p} (the order reads are laid out in). */
    public int storage(int p) { return storage[p]; }

    /** The storage position of the {@code i}-th sample handed out. */
    public int emit(int i) { return emit == null ? i : emit[i]; }

    /** The sample handed out {@code i}-th. */
    public int sampleAt(int i) { return storage[emit(i)]; }

    public int groupSize() { return groupSize; }

    public int groupCount() { return groupCount; }

    public int groupStart(int g) { return g * groupSize; }

    public int groupEnd(int g) { return Math.min(storage.length, (g + 1) * groupSize); }

    /** Buffer bytes group {@code g} needs: its reads' lengths (whole blocks). */
    public long groupBytes(int g) { return groupBytes == null ? blocksOf(storage[g]) : groupBytes[g]; }

    public long maxGroupBytes() { return maxGroupBytes; }

    /** Receives a group's reads. */
    public interface RunVisitor {
        /**
         * One run: block-aligned bytes {@code [alignedStart, alignedEnd)} of namespace {@code part}, holding the
         * samples at storage positions {@code [firstPos, endPos)}.
         */
        void run(int part, long alignedStart, long alignedEnd, int firstPos, int endPos);
    }

    /** Cuts group {@code g} into runs: neighbouring samples of one namespace, in storage order, share a run. */
    public void forEachRun(int g, RunVisitor v) {
        int end = groupEnd(g);
        int p = groupStart(g);
        while (p < end) {
            int s = storage[p];
            int part = space.part(s);
            int bs = space.blockSize(part);
            long runStart = space.start(s) / bs * bs;
            long lastEnd = space.start(s) + space.length(s);
            int first = p;
            p++;
            while (p < end) {
                int t = storage[p];
                long st = space.start(t);
                if (space.part(t) != part || st < lastEnd || st - lastEnd > MERGE_GAP) {
                    break;
                }
                lastEnd = st + space.length(t);
                p++;
            }
            long runEnd = (lastEnd + bs - 1) / bs * bs;
            v.run(part, runStart, runEnd, first, p);
        }
    }
}

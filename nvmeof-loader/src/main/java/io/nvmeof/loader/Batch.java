package io.nvmeof.loader;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A batch of samples handed out by a {@link BatchIterator}, their members in place in the loader's read buffer.
 * Sample {@code i} of the batch is addressed by index: {@link #memberLength}, {@link #offset} into {@link #buffer()}
 * (no object created), or {@link #member} (a read-only slice).
 *
 * <p>It is valid until it is released: by {@link #close()}, by the iterator's next {@code next()} when the loader
 * releases on next (the default), or when its iteration ends. After that every accessor throws
 * {@link IllegalStateException} rather than return bytes that now belong to later samples. The batch's bookkeeping is
 * pooled: a steady-state epoch creates one small object per batch and nothing per sample.
 */
public final class Batch implements AutoCloseable {
    /** Pooled bookkeeping of one batch; {@code generation} moves on at each release, so old handles fail. */
    static final class State {
        final int[] sample;
        final int[] position;
        final int[] offset;
        int size;
        volatile long generation;
        DatasetLoader.Iteration iteration;

        State(int capacity) {
            sample = new int[capacity];
            position = new int[capacity];
            offset = new int[capacity];
        }
    }

    /** One sample of a batch as a {@link SampleView}: valid while the batch is. */
    static final class View extends SampleView {
        private final Batch batch;

        View(Batch batch, State s, int i) {
            super(s.iteration.dataset(), s.sample[i], s.iteration.buffer(), s.offset[i]);
            this.batch = batch;
        }

        @Override
        void checkLive() {
            batch.live();
        }
    }

    private final State state;
    private final long generation;
    private final long number;

    Batch(State state, long number) {
        this.state = state;
        this.generation = state.generation;
        this.number = number;
    }

    private State live() {
        State s = state;
        if (s.generation != generation) {
            throw new IllegalStateException("batch " + number + " was released: its buffer now holds other samples;"
                    + " copy what you need before releasing it (or build the loader with releaseOnNext(false))");
        }
        s.iteration.checkOpen();
        return s;
    }

    private int check(State s, int i) {
        if (i < 0 || i >= s.size) {
            throw new IndexOutOfBoundsException("sample " + i + " of a batch of " + s.size);
        }
        return i;
    }

    /** Sample {@code i} as a view of its own (one small object; the index accessors below create none). */
    public SampleView sample(int i) {
        State s = live();
        return new View(this, s, check(s, i));
    }

    /** Its number in the iteration, from 0. */
    public long number() { return number; }

    public int size() { return live().size; }

    /** Dataset index of sample {@code i}. */
    public long index(int i) {
        State s = live();
        return s.sample[check(s, i)];
    }

    public String key(int i) {
        State s = live();
        int x = s.sample[check(s, i)];
        return s.iteration.dataset().table(x).key(s.iteration.dataset().local(x));
    }

    public int memberCount(int i) {
        State s = live();
        int x = s.sample[check(s, i)];
        return s.iteration.dataset().table(x).memberCount(s.iteration.dataset().local(x));
    }

    public String memberName(int i, int m) {
        State s = live();
        int x = s.sample[check(s, i)];
        NvmeofDataset ds = s.iteration.dataset();
        return ds.table(x).memberName(ds.local(x), checkMember(ds, x, m));
    }

    /** Index of sample {@code i}'s member called {@code name}, or -1. */
    public int memberIndex(int i, String name) {
        State s = live();
        int x = s.sample[check(s, i)];
        NvmeofDataset ds = s.iteration.dataset();
        var t = ds.table(x);
        int local = ds.local(x);
        for (int m = 0; m < t.memberCount(local); m++) {
            if (t.memberName(local, m).equals(name)) {
                return m;
            }
        }
        return -1;
    }

    public int memberLength(int i, int m) {
        State s = live();
        int x = s.sample[check(s, i)];
        NvmeofDataset ds = s.iteration.dataset();
        return ds.table(x).memberLength(ds.local(x), checkMember(ds, x, m));
    }

    /** Where sample {@code i}'s member {@code m} starts in {@link #buffer()}. */
    public int offset(int i, int m) {
        State s = live();
        int x = s.sample[check(s, i)];
        NvmeofDataset ds = s.iteration.dataset();
        return s.offset[i] + ds.table(x).memberOffset(ds.local(x), checkMember(ds, x, m));
    }

    /** The loader's read buffer (read-only, shared): read members at absolute indexes from {@link #offset}. */
    public ByteBuffer buffer() {
        return live().iteration.buffer();
    }

    /** A read-only slice holding sample {@code i}'s member {@code m}. */
    public ByteBuffer member(int i, int m) {
        int at = offset(i, m);
        return buffer().slice(at, memberLength(i, m));
    }

    /** A copy of sample {@code i}'s member {@code m}. */
    public byte[] memberBytes(int i, int m) {
        byte[] b = new byte[memberLength(i, m)];
        buffer().get(offset(i, m), b);
        return b;
    }

    /** Sum of the samples' member bytes. */
    public long bytes() {
        State s = live();
        NvmeofDataset ds = s.iteration.dataset();
        long n = 0;
        for (int i = 0; i < s.size; i++) {
            var t = ds.table(s.sample[i]);
            int local = ds.local(s.sample[i]);
            for (int m = 0; m < t.memberCount(local); m++) {
                n += t.memberLength(local, m);
            }
        }
        return n;
    }

    /** The dataset indexes of the batch's samples. */
    public List<Long> indexes() {
        State s = live();
        List<Long> out = new ArrayList<>(s.size);
        for (int i = 0; i < s.size; i++) {
            out.add((long) s.sample[i]);
        }
        return out;
    }

    private static int checkMember(NvmeofDataset ds, int x, int m) {
        int count = ds.table(x).memberCount(ds.local(x));
        if (m < 0 || m >= count) {
            throw new IndexOutOfBoundsException("member " + m + " of sample " + ds.key(x) + ", which has " + count);
        }
        return m;
    }

    public boolean isReleased() {
        return state.generation != generation || !state.iteration.isOpen();
    }

    /** Gives the samples' buffer space back to the loader. Idempotent; any thread. */
    @Override
    public void close() {
        state.iteration.releaseBatch(state, generation);
    }

    @Override
    public String toString() {
        return "batch " + number + (isReleased() ? " (released)" : " of " + state.size + " samples");
    }
}

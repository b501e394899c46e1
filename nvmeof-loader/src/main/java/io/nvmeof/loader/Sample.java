package io.nvmeof.loader;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * A sample handed out by a {@link SampleIterator}: its members in place in the loader's read buffer, no copy. It is
 * valid until it is released: by {@link #release()}, by the iterator's next {@code next()} when the loader releases on
 * next (the default), or when its iteration ends. After that every accessor throws {@link IllegalStateException}:
 * its bytes are being overwritten by later samples. Copy what must outlive it ({@link #memberBytes}).
 */
public final class Sample extends SampleView implements AutoCloseable {
    private static final AtomicIntegerFieldUpdater<Sample> RELEASED =
            AtomicIntegerFieldUpdater.newUpdater(Sample.class, "released");
    private final DatasetLoader.Iteration iteration;
    private final int position;
    private volatile int released;

    Sample(DatasetLoader.Iteration iteration, int sample, int position, int offset) {
        super(iteration.dataset(), sample, iteration.buffer(), offset);
        this.iteration = iteration;
        this.position = position;
    }

    @Override
    void checkLive() {
        if (released != 0) {
            throw new IllegalStateException("sample " + sample + " (" + table.key(local) + ") was released: its buffer"
                    + " now holds other samples; copy what you need before releasing it");
        }
        iteration.checkOpen();
    }

    /** Gives its buffer space back to the loader. Idempotent; any thread. */
    public void release() {
        if (RELEASED.compareAndSet(this, 0, 1) && iteration.isOpen()) {
            iteration.release(position);
        }
    }

    /** Same as {@link #release()}. */
    @Override
    public void close() {
        release();
    }

    public boolean isReleased() {
        return released != 0 || !iteration.isOpen();
    }
}

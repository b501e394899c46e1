package io.nvmeof.loader;

import java.util.NoSuchElementException;

/**
 * The samples of one epoch for this rank in batches of {@code batchSize} (the last one smaller unless the loader
 * drops it).
 */
public final class BatchIterator extends EpochIterator<Batch> {
    private final int batchSize;
    private final boolean dropLast;
    private Batch last;
    private long number;

    BatchIterator(DatasetLoader.Iteration it, int batchSize, boolean releaseOnNext, boolean dropLast) {
        super(it, releaseOnNext);
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be at least 1, got " + batchSize);
        }
        this.batchSize = batchSize;
        this.dropLast = dropLast;
    }

    /** {@link #hasNext}, saying so when the batch being assembled is what fills the buffer. */
    private boolean hasNextFor(Batch.State s) {
        try {
            return hasNext();
        } catch (DatasetLoader.BufferFullException e) {
            int earlier = it.heldByCaller() - s.size;
            if (earlier > 0) {
                throw new DatasetLoader.BufferFullException(e.getMessage() + " (" + earlier + " samples of earlier"
                        + " batches, " + s.size + " of the batch being made)");
            }
            if (s.size == 0) {
                throw e;
            }
            long bytes = 0;
            for (int i = 0; i < s.size; i++) {
                bytes += it.dataset().length(s.sample[i]);
            }
            throw new IllegalStateException("a batch of " + batchSize + " samples does not fit the prefetch buffer with"
                    + " room to read ahead: " + s.size + " samples (" + bytes + " bytes) of this batch filled it; raise"
                    + " prefetchBytes (to about twice a batch's bytes) or lower the batch size", e);
        }
    }

    @Override
    public Batch next() {
        if (releaseOnNext && last != null) {
            last.close();
            last = null;
        }
        if (!hasNext()) {
            throw new NoSuchElementException("the epoch has no more samples for this rank");
        }
        Batch.State s = it.batchState(batchSize);
        while (s.size < batchSize && hasNextFor(s)) {
            found = false;
            it.handOut();
            s.sample[s.size] = it.sample;
            s.position[s.size] = it.position;
            s.offset[s.size] = it.offset;
            s.size++;
        }
        Batch b = new Batch(s, number++);
        if (dropLast && s.size < batchSize) {
            b.close();
            throw new NoSuchElementException("the epoch has no more whole batches for this rank");
        }
        last = b;
        return b;
    }
}

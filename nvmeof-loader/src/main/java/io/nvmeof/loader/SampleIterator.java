package io.nvmeof.loader;

import java.util.NoSuchElementException;

/**
 * The samples of one epoch for this rank, in the plan's order. Each {@link Sample} is one small object over the
 * loader's buffer (use {@link BatchIterator} for a path that creates nothing per sample).
 */
public final class SampleIterator extends EpochIterator<Sample> {
    private Sample last;

    SampleIterator(DatasetLoader.Iteration it, boolean releaseOnNext) {
        super(it, releaseOnNext);
    }

    @Override
    public Sample next() {
        if (releaseOnNext && last != null) {
            last.release();
            last = null;
        }
        if (!hasNext()) {
            throw new NoSuchElementException("the epoch has no more samples for this rank");
        }
        found = false;
        it.handOut();
        Sample s = new Sample(it, it.sample, it.position, it.offset);
        last = s;
        return s;
    }
}

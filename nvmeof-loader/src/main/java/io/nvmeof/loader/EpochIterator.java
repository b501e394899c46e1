package io.nvmeof.loader;

import java.util.Iterator;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * What the sample and batch iterators share: one epoch's iteration, looked ahead by {@link #hasNext}, ended by
 * {@link #close} (reads in flight are waited for; what is still held becomes invalid).
 */
public abstract sealed class EpochIterator<T> implements Iterator<T>, Iterable<T>, AutoCloseable
        permits SampleIterator, BatchIterator {
    final DatasetLoader.Iteration it;
    final boolean releaseOnNext;
    /** {@link DatasetLoader.Iteration#advance} found a sample not yet handed out. */
    boolean found;

    EpochIterator(DatasetLoader.Iteration it, boolean releaseOnNext) {
        this.it = it;
        this.releaseOnNext = releaseOnNext;
    }

    @Override
    public boolean hasNext() {
        if (!found) {
            found = it.advance();
        }
        return found;
    }

    @Override
    public Iterator<T> iterator() {
        return this;
    }

    /** The rest of the epoch as a sequential stream; closing the stream closes this iterator. */
    public Stream<T> stream() {
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(this, Spliterator.ORDERED | Spliterator.NONNULL),
                false).onClose(this::close);
    }

    @Override
    public void close() {
        it.end();
    }
}

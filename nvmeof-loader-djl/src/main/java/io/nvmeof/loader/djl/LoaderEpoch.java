package io.nvmeof.loader.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Batch;
import io.nvmeof.loader.BatchIterator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Queue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;

/**
 * One epoch of {@link NvmeofDjlDataset#getData}, as DJL's {@code DataIterable} runs one: the loader's batches, cut
 * after the dataset's {@code size()} samples, each made into a DJL batch on the executor given (up to
 * {@code prefetchNumber} batches ahead), or, without one, on the caller's thread when it is asked for.
 *
 * <p>The loader is iterated on the caller's thread only (it allows one iterating thread); the tasks release their
 * loader batches once stacked (it allows releases from any thread). The loader's iteration ends when the last batch
 * has been handed out, so no task still reads from its buffer then.
 */
final class LoaderEpoch implements Iterator<Batch> {
    private final NvmeofDjlDataset dataset;
    private final NDManager manager;
    private final BatchIterator source;
    private final ExecutorService executor;
    private final int ahead;
    private final Queue<Future<Batch>> queue = new ArrayDeque<>();
    private long taken;
    private boolean ended;

    /** {@code executor} null: each batch is made on the caller's thread by {@link #hasNext}. */
    LoaderEpoch(NvmeofDjlDataset dataset, NDManager manager, BatchIterator source, ExecutorService executor) {
        this.dataset = dataset;
        this.manager = manager;
        this.source = source;
        this.executor = executor;
        this.ahead = executor == null ? 1 : Math.max(1, dataset.prefetchNumber());
    }

    @Override
    public boolean hasNext() {
        if (ended) {
            return false;
        }
        fill();
        if (queue.isEmpty()) {
            ended = true;
            source.close();
            return false;
        }
        return true;
    }

    @Override
    public Batch next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the epoch has no more batches for this rank");
        }
        Future<Batch> head = queue.remove();
        if (executor != null) {
            fill(); // as DataIterable: taking a batch submits the next
        }
        return result(head);
    }

    /** Takes loader batches until {@code ahead} are queued, the epoch ends, or {@code size()} samples are taken. */
    private void fill() {
        long size = dataset.size();
        int batchSize = dataset.batchSize();
        while (queue.size() < ahead && taken < size && source.hasNext()) {
            io.nvmeof.loader.Batch b = source.next();
            int count = (int) Math.min(b.size(), size - taken);
            if (count < batchSize && dataset.dropLast()) {
                b.close();
                taken = size;
                return;
            }
            taken += count;
            long progress = taken;
            Callable<Batch> task = () -> dataset.toDjlBatch(manager, b, count, progress);
            queue.add(executor == null ? runHere(task) : submit(task, b));
        }
    }

    private static Future<Batch> runHere(Callable<Batch> task) {
        FutureTask<Batch> f = new FutureTask<>(task);
        f.run();
        return f;
    }

    private Future<Batch> submit(Callable<Batch> task, io.nvmeof.loader.Batch b) {
        try {
            return executor.submit(task);
        } catch (RejectedExecutionException e) {
            b.close();
            throw e;
        }
    }

    private static Batch result(Future<Batch> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a batch", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw new UncheckedIOException(io);
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(cause);
        }
    }
}

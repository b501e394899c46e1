package io.nvmeof.cli;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.NvmeofDataset;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * loader-bench's baseline, an upper bound for the loader: the loader's own reads of one epoch (the same namespaces,
 * offsets and sizes, in the same order) sent again and again in a closed loop at the same reads in flight per
 * controller, with nothing of the loader around them (no plan, no ring, no consumer, no checks). Each completion
 * sends the next read from its I/O thread; nothing is allocated per read.
 */
final class LoaderReadReplay implements IoCallback, AutoCloseable {
    private final NamespaceHandle[] namespaces;
    private final List<NvmeofController> controllers;
    private int[] part = new int[1024];
    private long[] lba = new long[1024];
    private int[] blocks = new int[1024];
    private int count;
    private long planBytes;
    private final ByteBuffer[] buffers;
    private final AtomicLong cursor = new AtomicLong();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final LongAdder reads = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final AtomicReference<String> failure = new AtomicReference<>();
    private volatile boolean stopped;

    /** The reads {@code loader} issues for {@code epoch}, to be sent {@code readsInFlightPerController} at a time. */
    LoaderReadReplay(NvmeofDataset ds, DatasetLoader loader, long epoch, int readsInFlightPerController) {
        namespaces = new NamespaceHandle[ds.parts().size()];
        for (int p = 0; p < namespaces.length; p++) {
            namespaces[p] = ds.parts().get(p).namespace();
        }
        controllers = ds.controllers();
        loader.forEachRead(epoch, this::add);
        if (count == 0) {
            throw new IllegalArgumentException("the loader reads nothing in epoch " + epoch + ": nothing to replay");
        }
        int largest = 0;
        for (int i = 0; i < count; i++) {
            largest = Math.max(largest, blocks[i] * namespaces[part[i]].blockSize());
        }
        buffers = new ByteBuffer[readsInFlightPerController * controllers.size()];
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = ByteBuffer.allocateDirect(largest);
            for (NvmeofController c : controllers) {
                c.registerBuffer(buffers[i]); // as the loader registers its buffer with every controller
            }
        }
    }

    private void add(int p, long offset, int length) {
        if (count == part.length) {
            part = Arrays.copyOf(part, count * 2);
            lba = Arrays.copyOf(lba, count * 2);
            blocks = Arrays.copyOf(blocks, count * 2);
        }
        int bs = namespaces[p].blockSize();
        part[count] = p;
        lba[count] = offset / bs;
        blocks[count] = length / bs;
        planBytes += length;
        count++;
    }

    /** Reads in one pass of the epoch. */
    int readsPerEpoch() { return count; }

    /** Mean bytes a read. */
    long meanReadBytes() { return planBytes / count; }

    /** Starts the loop: every buffer gets a read. */
    void start() {
        for (int slot = 0; slot < buffers.length; slot++) {
            send(slot);
        }
    }

    private void send(int slot) {
        int i = (int) (cursor.getAndIncrement() % count);
        inFlight.incrementAndGet();
        namespaces[part[i]].read(lba[i], blocks[i], buffers[slot].clear(), this, ((long) i << 32) | slot);
    }

    @Override
    public void onComplete(long context, int status) {
        int i = (int) (context >>> 32);
        if (status != 0) {
            failure.compareAndSet(null, IoCallback.describe(status));
        } else {
            reads.increment();
            bytes.add((long) blocks[i] * namespaces[part[i]].blockSize());
        }
        if (!stopped && failure.get() == null) {
            send((int) context);
        }
        inFlight.decrementAndGet();
    }

    long reads() { return reads.sum(); }

    long bytes() { return bytes.sum(); }

    /** The first failed read's status, or null. */
    String failure() { return failure.get(); }

    /** Stops sending and waits (up to 10 s) for the reads in flight. */
    void stop() throws InterruptedException {
        stopped = true;
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (inFlight.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
    }

    @Override
    public void close() {
        for (ByteBuffer b : buffers) {
            for (NvmeofController c : controllers) {
                c.deregisterBuffer(b);
            }
        }
    }
}

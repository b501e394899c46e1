package io.nvmeof.fio;

import io.nvmeof.protocol.AgronaAccess;
import io.nvmeof.initiator.BatchedIoCallback;
import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One fio job's connections to its namespaces, driven by the fio engine through JNI: {@link #open} at the job's
 * {@code init}, {@link #memory} when fio allocates its I/O buffers, one {@link #submit} per {@code commit}, and
 * {@link #close} at {@code cleanup}. Reads and writes go to the initiator's zero-allocation API straight from and
 * into fio's buffers (registered with the controller once, so over RDMA the target moves data in and out of fio's
 * memory); each completion is written into the {@link SharedRing}, which fio's {@code getevents} reads without a JNI
 * call. A sleeping engine thread is woken once, not once per completion: at the first completion when it has a CPU
 * of its own (it then reaps the rest of the batch as it comes in), or once the I/O thread's batch is delivered
 * ({@link #onBatchEnd}) when it shares one CPU with the I/O thread (the engine says which). Nothing is allocated per
 * I/O (flush and trim, rare, use futures).
 *
 * <p>I/O larger than the controller's transfer limit is cut into several commands; the io_u completes when all have.
 * A job of several fio files (several {@code filename=}s) has one namespace per file and one controller per distinct
 * target; each submission names its file.
 */
public final class FioJob implements BatchedIoCallback, AutoCloseable {
    static {
        // fio's engine starts the JVM and comes here first: Agrona runs without a JVM flag (AgronaAccess).
        AgronaAccess.ensure();
    }

    /** One per distinct target of the job's files. */
    private final List<NvmeofController> controllers;
    /** Per fio file (the submission's file index): its namespace, block size and largest command in blocks. */
    private final NamespaceHandle[] namespaces;
    private final int[] blockSizes;
    private final int[] maxBlocks;
    private final SharedRing ring;
    /** Commands still to complete per io_u index, and the first failure among them. */
    private final java.util.concurrent.atomic.AtomicIntegerArray remaining;
    private final java.util.concurrent.atomic.AtomicIntegerArray failed;
    private ByteBuffer memory;
    private ByteBuffer view;

    private FioJob(List<NvmeofController> controllers, NamespaceHandle[] namespaces, SharedRing ring, int maxIndex) {
        this.controllers = controllers;
        this.namespaces = namespaces;
        this.blockSizes = new int[namespaces.length];
        this.maxBlocks = new int[namespaces.length];
        for (int i = 0; i < namespaces.length; i++) {
            blockSizes[i] = namespaces[i].blockSize();
            maxBlocks[i] = namespaces[i].maxBlocksPerIo();
        }
        this.ring = ring;
        this.remaining = new java.util.concurrent.atomic.AtomicIntegerArray(maxIndex);
        this.failed = new java.util.concurrent.atomic.AtomicIntegerArray(maxIndex);
    }

    /**
     * Connects, one controller per distinct target of the job's files (called by the engine's init).
     *
     * @param settings the engine's options and namespaces, see {@link JobSettings}
     * @param shared   the engine's {@link SharedRing} memory
     * @param maxIndex one more than the largest io_u index fio will use
     * @throws IllegalArgumentException or {@link NvmeofException} with a message the engine shows as fio's error
     */
    public static FioJob open(String[] settings, ByteBuffer shared, int maxIndex) {
        JobSettings job = JobSettings.parse(settings);
        SharedRing ring = new SharedRing(shared);
        JobSettings.Connected c = job.connect(job.options);
        return new FioJob(c.controllers(), c.namespaces(), ring, maxIndex);
    }

    /** fio's I/O buffers (all of them, one region): registered once, then every command addresses into it. */
    public void memory(ByteBuffer region) {
        if (!region.isDirect()) {
            throw new IllegalArgumentException("fio's I/O memory must be direct");
        }
        for (NvmeofController c : controllers) {
            c.registerBuffer(region);
        }
        this.memory = region;
        this.view = region.duplicate();
    }

    /** Submits the first {@code n} submissions of the shared ring (one JNI call per fio commit). */
    public void submit(int n) {
        ByteBuffer v = view;
        for (int i = 0; i < n; i++) {
            int op = ring.op(i);
            int index = ring.index(i);
            int file = ring.file(i);
            NamespaceHandle ns = namespaces[file];
            int maxBlocks = this.maxBlocks[file];
            long lba = ring.lba(i);
            int blocks = ring.blocks(i);
            switch (op) {
                case SharedRing.OP_READ, SharedRing.OP_WRITE -> {
                    long offset = ring.offset(i);
                    int parts = (blocks + maxBlocks - 1) / maxBlocks;
                    failed.set(index, 0);
                    remaining.set(index, parts);
                    for (int done = 0; done < blocks; done += maxBlocks) {
                        int k = Math.min(maxBlocks, blocks - done);
                        v.position((int) (offset + (long) done * blockSizes[file]));
                        if (op == SharedRing.OP_READ) {
                            ns.read(lba + done, k, v, this, index);
                        } else {
                            ns.write(lba + done, k, v, this, index);
                        }
                    }
                }
                case SharedRing.OP_FLUSH -> whenDone(index, ns.flush());
                case SharedRing.OP_TRIM -> whenDone(index, ns.deallocate(lba, blocks));
                default -> publish(index, IoCallback.ERR_TRANSPORT);
            }
        }
    }

    private void whenDone(int index, CompletableFuture<Void> f) {
        remaining.set(index, 1);
        failed.set(index, 0);
        f.whenComplete((v, e) -> {
            onComplete(index, e == null ? 0 : statusOf(e));
            onBatchEnd();
        });
    }

    private static int statusOf(Throwable e) {
        Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
        return c instanceof NvmeStatusException s ? s.statusCode() : IoCallback.ERR_TRANSPORT;
    }

    /** A command completed (an I/O thread). */
    @Override
    public void onComplete(long context, int status) {
        int index = (int) context;
        if (status != 0) {
            failed.compareAndSet(index, 0, status);
        }
        if (remaining.decrementAndGet(index) == 0) {
            publish(index, failed.get(index));
        }
    }

    private void publish(int index, int status) {
        ring.complete(index, status);
        if (!ring.wakesAtBatchEnd() && ring.takeWakeUp()) {
            wake(ring.futexAddress);
        }
    }

    /** The I/O thread's batch of completions is delivered: wakes the engine if it sleeps (still, or again). */
    @Override
    public void onBatchEnd() {
        if (ring.takeWakeUp()) {
            wake(ring.futexAddress);
        }
    }

    /** Text for a status the engine got, for fio's error message. */
    public static String describe(int status) {
        return IoCallback.describe(status);
    }

    /**
     * fio is stopping (its runtime is over, a signal, an error) and waits for I/O: the I/O held for a target that is
     * gone (its controller reconnecting, or given up) will not come back in time, so its controller is closed, which
     * completes that I/O with {@link IoCallback#ERR_CLOSED}. A connected controller's I/O is left to complete (or to
     * time out: the keep-alive and command timeouts bound it). Called by the engine's getevents while it waits, once
     * per sleep; returns what it did, for fio's log, or null.
     */
    public String abandonUnreachable() {
        String said = null;
        for (NvmeofController c : controllers) {
            ControllerState s = c.state();
            if (s == ControllerState.RECONNECTING || s == ControllerState.FAILED) {
                String why = c.lastFailure();
                c.close();
                said = c.transportId() + " is unreachable (" + why + "); fio is stopping, so the I/O held for it fails";
            }
        }
        return said;
    }

    @Override
    public void close() {
        ByteBuffer m = memory;
        memory = null;
        for (NvmeofController c : controllers) {
            try {
                if (m != null) {
                    c.deregisterBuffer(m);
                }
            } catch (RuntimeException e) {
                // closing anyway
            }
            c.close();
        }
    }

    /** Wakes the engine thread sleeping on the futex at {@code address} (implemented by the engine, registered at init). */
    static native void wake(long address);
}

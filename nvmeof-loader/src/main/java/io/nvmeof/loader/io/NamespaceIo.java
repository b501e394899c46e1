package io.nvmeof.loader.io;

import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * Byte-addressed reads and writes on a namespace for the dataset tools (import, index, verify, the manifest): not
 * the loader's data path, which reads into its own buffer without a future per read. Transfers are cut into chunks of
 * at most {@link #chunkBytes()} (the controller's maximum transfer, at most 1 MiB) and several are kept in flight.
 * Buffers come from the controller ({@link io.nvmeof.initiator.NvmeofController#allocateBuffer}), so over RDMA they
 * are registered once.
 *
 * <p>Over a {@link MultipathNamespace} the transfers go through it (failing over between its paths), and the buffers
 * are registered with every path's controller; the handle of its first path still names the namespace.
 */
public final class NamespaceIo {
    private final NamespaceHandle ns;
    /** Null: the transfers go to {@link #ns} alone. */
    private final MultipathNamespace multipath;
    private final int blockSize;
    private final int chunk;
    private final ByteBuffer[] buffers;
    private final CompletableFuture<?>[] inFlight;
    /** Null: {@link #read} waits for its chunks as long as they take; else it gives up once this says false. */
    private BooleanSupplier patience;

    /** @param depth chunks kept in flight at once */
    public NamespaceIo(NamespaceHandle ns, int depth) {
        this(ns, null, depth);
    }

    /**
     * @param ns        the namespace, or with {@code multipath} the handle of its first path
     * @param multipath the namespace through all its paths; null for {@code ns} alone
     * @param depth     chunks kept in flight at once
     */
    public NamespaceIo(NamespaceHandle ns, MultipathNamespace multipath, int depth) {
        this.ns = ns;
        this.multipath = multipath;
        this.blockSize = ns.blockSize();
        int maxBlocks = multipath != null ? multipath.maxBlocksPerIo() : ns.maxBlocksPerIo();
        this.chunk = (int) Math.min(1 << 20, (long) maxBlocks * blockSize);
        this.buffers = new ByteBuffer[depth];
        this.inFlight = new CompletableFuture<?>[depth];
        for (int i = 0; i < depth; i++) {
            buffers[i] = ns.controller().allocateBuffer(chunk);
            for (int p = 1; multipath != null && p < multipath.paths().size(); p++) {
                multipath.paths().get(p).controller().registerBuffer(buffers[i]);
            }
        }
    }

    public NamespaceHandle namespace() { return ns; }

    public int chunkBytes() { return chunk; }

    public int blockSize() { return blockSize; }

    public long sizeBytes() { return ns.sizeBytes(); }

    /**
     * Thrown by {@link #read} when its {@link #patience} ran out with a chunk still in flight: that chunk may still land
     * in this reader's buffers, so the reader is not {@link #settled()}.
     */
    public static final class GaveUpException extends IOException {
        GaveUpException(String message) {
            super(message);
        }
    }

    /**
     * Makes {@link #read} wait for a chunk only while {@code keepWaiting} says true (asked every few milliseconds),
     * and throw {@link GaveUpException} once it says false; null: wait as long as the chunks take. A namespace's read
     * is held while its controller reconnects; a caller that can do without this path (another path serves the
     * namespace) stops waiting instead. Not thread-safe: set it where the reader is used.
     */
    public NamespaceIo patience(BooleanSupplier keepWaiting) {
        this.patience = keepWaiting;
        return this;
    }

    /**
     * Whether nothing this reader sent is still in flight: after a {@link #read} or {@link #write} that threw (a chunk
     * failed, the caller was interrupted, {@link GaveUpException}) other chunks may still land in its buffers, and the
     * next transfer would reuse them. Give such a reader back only once {@link #whenSettled} runs.
     */
    public boolean settled() {
        for (CompletableFuture<?> f : inFlight) {
            if (f != null && !f.isDone()) {
                return false;
            }
        }
        return true;
    }

    /** Runs {@code then} once nothing this reader sent is in flight: now if it is {@link #settled()}, else on an I/O thread. */
    public void whenSettled(Runnable then) {
        List<CompletableFuture<?>> pending = new ArrayList<>();
        for (CompletableFuture<?> f : inFlight) {
            if (f != null && !f.isDone()) {
                pending.add(f);
            }
        }
        if (pending.isEmpty()) {
            then.run();
        } else {
            CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).whenComplete((v, t) -> then.run());
        }
    }

    /**
     * Reads {@code dst.remaining()} bytes from byte {@code offset} (any alignment) into {@code dst}, advancing its
     * position. On an exception other chunks may still be in flight: see {@link #settled()}.
     */
    public void read(long offset, ByteBuffer dst) throws IOException {
        checkRange(offset, dst.remaining());
        long first = offset - offset % blockSize;
        int skip = (int) (offset - first);
        long pos = first;
        int slot = 0;
        // Each chunk is read into its own buffer and copied out in order: chunk k is copied once it is done.
        int issued = 0;
        int copied = 0;
        long end = offset + dst.remaining();
        int chunks = (int) ((roundUp(end) - first + chunk - 1) / chunk);
        long[] chunkStart = new long[buffers.length];
        int[] chunkLen = new int[buffers.length];
        while (copied < chunks) {
            while (issued < chunks && issued - copied < buffers.length) {
                slot = issued % buffers.length;
                int len = (int) Math.min(chunk, roundUp(end) - pos);
                ByteBuffer b = buffers[slot].clear().limit(len);
                chunkStart[slot] = pos;
                chunkLen[slot] = len;
                inFlight[slot] = multipath != null ? multipath.read(pos / blockSize, len / blockSize, b)
                        : ns.read(pos / blockSize, len / blockSize, b);
                pos += len;
                issued++;
            }
            slot = copied % buffers.length;
            awaitRead(inFlight[slot], "read of " + chunkLen[slot] + " bytes at byte " + chunkStart[slot]);
            ByteBuffer b = buffers[slot].clear();
            int from = copied == 0 ? skip : 0;
            int n = (int) Math.min(chunkLen[slot] - from, dst.remaining());
            dst.put(b.limit(from + n).position(from));
            copied++;
        }
    }

    /**
     * Writes {@code src.remaining()} bytes at byte {@code offset}, which must be block-aligned; a last partial block is
     * padded with zeros. Advances {@code src}'s position. Returns once every chunk is written.
     */
    public void write(long offset, ByteBuffer src) throws IOException {
        if (offset % blockSize != 0) {
            throw new IllegalArgumentException("write at byte " + offset + " is not aligned to the " + blockSize
                    + "-byte blocks");
        }
        checkRange(offset, roundUp(src.remaining()));
        long pos = offset;
        int issued = 0;
        while (src.hasRemaining()) {
            int slot = issued % buffers.length;
            if (inFlight[slot] != null) {
                await(inFlight[slot], "write at byte " + pos);
                inFlight[slot] = null;
            }
            int n = Math.min(chunk, src.remaining());
            ByteBuffer b = buffers[slot].clear();
            int old = src.limit();
            src.limit(src.position() + n);
            b.put(src);
            src.limit(old);
            int padded = (int) roundUp(n);
            while (b.position() < padded) {
                b.put((byte) 0);
            }
            b.flip();
            inFlight[slot] = multipath != null ? multipath.write(pos / blockSize, padded / blockSize, b)
                    : ns.write(pos / blockSize, padded / blockSize, b);
            pos += padded;
            issued++;
        }
        drain("write ending at byte " + pos);
    }

    /** Makes every completed write durable (NVMe Flush). */
    public void flush() throws IOException {
        await(multipath != null ? multipath.flush() : ns.flush(), "flush");
    }

    /** Waits for every write still in flight. */
    private void drain(String what) throws IOException {
        for (int i = 0; i < inFlight.length; i++) {
            if (inFlight[i] != null) {
                CompletableFuture<?> f = inFlight[i];
                inFlight[i] = null;
                await(f, what);
            }
        }
    }

    /** A stream of {@code length} bytes from byte {@code offset}, read ahead in chunks (for indexing in place). */
    public InputStream stream(long offset, long length) {
        checkRange(offset, length);
        return new InputStream() {
            private long next = offset;
            private final long end = offset + length;
            private final ByteBuffer window = ByteBuffer.allocate(chunk * Math.max(1, buffers.length / 2)).limit(0);

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (!window.hasRemaining()) {
                    if (next >= end) {
                        return -1;
                    }
                    int n = (int) Math.min(window.capacity(), end - next);
                    window.clear().limit(n);
                    NamespaceIo.this.read(next, window);
                    window.flip();
                    next += n;
                }
                int n = Math.min(len, window.remaining());
                window.get(b, off, n);
                return n;
            }
        };
    }

    private void checkRange(long offset, long length) {
        if (offset < 0 || length < 0 || offset + length > ns.sizeBytes()) {
            throw new IllegalArgumentException("bytes " + offset + " to " + (offset + length) + " lie outside the "
                    + ns.sizeBytes() + "-byte namespace " + ns.nsid());
        }
    }

    private long roundUp(long n) {
        return (n + blockSize - 1) / blockSize * blockSize;
    }

    private void awaitRead(CompletableFuture<?> f, String what) throws IOException {
        if (patience == null) {
            await(f, what);
            return;
        }
        while (!f.isDone()) {
            if (!patience.getAsBoolean()) {
                throw new GaveUpException("gave up waiting for the " + what + " of namespace " + ns.nsid() + " through "
                        + ns.controller().transportId().address());
            }
            try {
                f.get(20, TimeUnit.MILLISECONDS);
            } catch (TimeoutException | ExecutionException e) {
                // not done yet, or failed: the loop ends, and await says how
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted during " + what);
            }
        }
        await(f, what);
    }

    static void await(CompletableFuture<?> f, String what) throws IOException {
        try {
            f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted during " + what);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof NvmeofException ne) {
                throw new IOException(what + ": " + ne.getMessage(), ne);
            }
            throw new IOException(what + ": " + c, c);
        }
    }
}

package io.nvmeof.tgt.rdma;

import io.nvmeof.tgt.core.Request;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.concurrent.Executor;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The RDMA side of a poll group: the queues one thread serves, the completions it dispatches to them, the tasks other
 * threads hand it, and one flush per queue per iteration. The thread that drives it polls the shared completion
 * queue in batches ({@link #dispatch} per completion), then calls {@link #afterBatch}.
 *
 * <p>A work request ID carries the queue (bits 63:40), what finished (bits 35:32) and the index (bits 31:0).
 */
public final class RdmaPollGroup implements Executor {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaPollGroup.class);
    /**
     * Queues by ID. IDs are never reused while the group lives (24 bits, skipping live ones on wrap): a closed queue's
     * flushed work requests may still be in the completion queue, and must not reach a newer queue.
     */
    private final Int2ObjectHashMap<RdmaQueue> queues = new Int2ObjectHashMap<>();
    private int nextId = 1;
    private final ManyToOneConcurrentArrayQueue<Runnable> tasks = new ManyToOneConcurrentArrayQueue<>(4096);
    private final List<RdmaQueue> dirty = new ArrayList<>();
    /** Pinned namespace memory this group's queues send from, by region: registered on first use, kept. */
    private final IdentityHashMap<ByteBuffer, Long> pinnedKeys = new IdentityHashMap<>();

    static long wrId(int queueId, int kind, int index) {
        return (long) queueId << 40 | (long) kind << 32 | (index & 0xFFFF_FFFFL);
    }

    static int queueOf(long wrId) { return (int) (wrId >>> 40) & 0xFF_FFFF; }
    static int kindOf(long wrId) { return (int) (wrId >>> 32) & 0xF; }
    static int indexOf(long wrId) { return (int) wrId; }

    int register(RdmaQueue q) {
        int id;
        do {
            id = nextId;
            nextId = nextId == 0xFF_FFFF ? 1 : nextId + 1;
        } while (queues.containsKey(id));
        queues.put(id, q);
        return id;
    }

    void unregister(RdmaQueue q) {
        queues.remove(q.id(), q);
    }

    /**
     * Routes one completion.
     *
     * @param success the work completion status was IBV_WC_SUCCESS
     * @param status the status text for logs when not
     */
    public void dispatch(long wrId, boolean success, String status, int byteLength) {
        RdmaQueue q = queues.get(queueOf(wrId));
        if (q == null) {
            return; // a completion flushed after its queue closed
        }
        int kind = kindOf(wrId);
        int index = indexOf(wrId);
        if (!success) {
            q.onError(kind, index, status);
            return;
        }
        switch (kind) {
            case RdmaQueue.KIND_RECV:
                q.onReceive(index, byteLength);
                break;
            case RdmaQueue.KIND_READ:
                q.onReadComplete(index);
                break;
            case RdmaQueue.KIND_SEND:
                q.onSendComplete(index);
                break;
            default:
                break;
        }
    }

    /**
     * Requests of this group's queues waiting for a buffer of the shared pool, in arrival order. Any queue's release
     * may free one, so the group, not the queue, hands them out; a waiter whose size is not free does not hold up the
     * ones behind it.
     */
    private final ArrayList<Request> bufferWaiters = new ArrayList<>();

    void waitForBuffer(Request req) {
        bufferWaiters.add(req);
    }

    boolean withdrawBufferWaiter(Request req) {
        return bufferWaiters.remove(req);
    }

    void dropBufferWaiters(RdmaQueue q) {
        bufferWaiters.removeIf(r -> r.sq().transport() == q);
    }

    int bufferWaiters() {
        return bufferWaiters.size();
    }

    private int grantBuffers() {
        int granted = 0;
        for (int i = 0; i < bufferWaiters.size(); ) {
            Request r = bufferWaiters.get(i);
            if (((RdmaQueue) r.sq().transport()).grantBuffer(r)) {
                bufferWaiters.remove(i);
                granted++;
            } else {
                i++;
            }
        }
        return granted;
    }

    /**
     * Runs handed-over tasks, hands freed pool buffers to waiting requests, and flushes every queue that posted work;
     * returns how much work was done.
     */
    public int afterBatch() {
        int n = tasks.drain(RdmaPollGroup::runTask);
        if (!bufferWaiters.isEmpty()) {
            n += grantBuffers();
        }
        for (RdmaQueue q : queues.values()) {
            if (q.takeDirty()) {
                dirty.add(q);
            }
        }
        for (int i = 0; i < dirty.size(); i++) { // indexed: an iterator is an object per loop pass
            dirty.get(i).channel().flush();
        }
        n += dirty.size();
        dirty.clear();
        return n;
    }

    /**
     * Runs one handed-over task; one that throws, even an Error, fails alone: the batch goes on, and the group's
     * thread with it (it serves every queue of the group).
     */
    private static void runTask(Runnable task) {
        try {
            task.run();
        } catch (Throwable t) {
            try {
                LOG.error("RDMA poll group: a task failed; the group goes on", t);
            } catch (Throwable ignored) {
                // no memory even to log it: going on matters more
            }
        }
    }

    /**
     * The lkey of a pinned backend region (registered the first time this group sends from it), or -1 when it cannot
     * be registered (remembered and logged once: reads from it are then copied).
     */
    long pinnedLkey(ByteBuffer region, MemoryRegistrar registrar) {
        Long key = pinnedKeys.get(region);
        if (key == null) {
            try {
                key = registrar.register(region);
            } catch (RuntimeException e) {
                LOG.warn("cannot register {} bytes of namespace memory ({}); reads from it are copied instead",
                        region.capacity(), e.getMessage());
                key = -1L;
            }
            pinnedKeys.put(region, key);
        }
        return key;
    }

    /** Forgets the keys of regions whose backend is closing (on this group's thread). */
    void forgetPinned(java.util.Collection<ByteBuffer> regions) {
        for (ByteBuffer r : regions) {
            pinnedKeys.remove(r);
        }
    }

    @Override
    public void execute(Runnable task) {
        while (!tasks.offer(task)) {
            Thread.onSpinWait();
        }
    }

    public int queueCount() {
        return queues.size();
    }

    // ---- the group's io_uring, for namespaces served with direct I/O ----

    private io.nvmeof.tgt.core.StorageRing storage;
    private boolean storageUnavailable;

    /** This group's io_uring, set up on first use (on the group's thread); null when it cannot have one. */
    io.nvmeof.tgt.core.StorageRing storageRing() {
        if (storage == null && !storageUnavailable) {
            try {
                // No poll task: the group's thread polls the ring on every turn (pollStorage).
                storage = new io.nvmeof.tgt.core.StorageRing(io.nvmeof.tgt.core.StorageRing.DEFAULT_DEPTH, null);
            } catch (io.nvmeof.uring.UringException e) {
                storageUnavailable = true;
                LOG.warn("no io_uring for an RDMA poll group ({}): direct namespaces are served with blocking I/O",
                        e.getMessage());
            }
        }
        return storage;
    }

    /**
     * Reaps the ring's completions and submits what is prepared; returns the work done, at least 1 while requests are
     * in the ring (so the thread keeps polling rather than sleeping on the completion channel).
     */
    int pollStorage() {
        io.nvmeof.tgt.core.StorageRing r = storage;
        if (r == null) {
            return 0;
        }
        int n = r.poll();
        return n > 0 ? n : r.busy() ? 1 : 0;
    }

    /** At the group's end, once its thread has ended: waits for the kernel's requests and releases the ring. */
    void closeStorage() {
        io.nvmeof.tgt.core.StorageRing r = storage;
        storage = null;
        if (r != null) {
            try {
                r.close();
            } catch (io.nvmeof.uring.UringException e) {
                LOG.warn("closing an RDMA poll group's io_uring: {}", e.getMessage());
            }
        }
    }
}

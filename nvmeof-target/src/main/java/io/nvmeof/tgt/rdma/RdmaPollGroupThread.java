package io.nvmeof.tgt.rdma;

import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.CompletionBatch;
import io.nvmeof.rdma.CompletionChannel;
import io.nvmeof.rdma.CompletionQueue;
import io.nvmeof.rdma.DeviceAttributes;
import io.nvmeof.rdma.MemoryRegion;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.tgt.core.TargetCore;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One poll group of an NVMe/RDMA listener: a thread, a completion queue with its channel, and a registered data buffer
 * pool (laid out by {@link #poolLayout}). The thread busy-polls its completion queue in batches while there is work and
 * sleeps on the completion channel when idle.
 */
final class RdmaPollGroupThread {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);

    /** Busy-poll iterations without work before a poll group arms its completion channel and sleeps. */
    private static final int SPIN_BEFORE_SLEEP = 2000;
    /**
     * Completion queue entries a poll group asks for (the device may allow fewer: its max_cqe). Queue pairs commit
     * entries against it and are refused past it (see {@link RdmaDeviceResources#reserveCompletionQueue}); 65536
     * serves some 160 queues of 128 entries per poll group.
     */
    private static final int CQ_ENTRIES = 65536;
    /** Registered data buffers per poll group: small, medium, and MDTS-sized (at least 1 MiB). */
    private static final int[] POOL_CLASSES = {4096, 128 << 10, 1 << 20};
    private static final int[] POOL_COUNTS = {512, 96, 16};
    /** The MDTS-sized class holds at least this many bytes (and at least 2 buffers). */
    private static final int LARGE_CLASS_BYTES = 16 << 20;

    final RdmaPollGroup group = new RdmaPollGroup();
    final CompletionChannel channel;
    final CompletionQueue cq;
    final MemoryRegion poolRegion;
    final RegisteredBufferPool pool;
    final Thread thread;
    final CompletionBatch batch = new CompletionBatch(64);
    final VerbsRdmaChannel.Counters counters = new VerbsRdmaChannel.Counters();

    /** Set to stop this group's thread; its owner then destroys what it used. */
    volatile boolean stop;
    /** CQ entries committed to this group's queue pairs (the CM thread commits, the group's thread gives back). */
    final CqBudget cqBudget;
    private boolean deviceGone;

    private final TargetCore core;
    /** The listener's connections: those of this group end when its device is gone. */
    private final Map<CmId, RdmaConnection> connections;

    RdmaPollGroupThread(RdmaDevice device, int index, ProtectionDomain pd, DeviceAttributes attributes, TargetCore core,
                        Map<CmId, RdmaConnection> connections) throws Exception {
        this.core = core;
        this.connections = connections;
        channel = device.createCompletionChannel();
        CompletionQueue q = null;
        MemoryRegion region = null;
        try {
            q = device.createCompletionQueue(Math.min(CQ_ENTRIES, Math.max(256, attributes.maxCqe())), channel, index);
            region = pd.allocateRegistered(poolBytes(), Access.LOCAL_WRITE, false);
        } catch (Exception | Error e) {
            closeQuietly(q, "completion queue");
            closeQuietly(channel, "completion channel");
            throw e;
        }
        cq = q;
        cqBudget = new CqBudget(q.entries());
        poolRegion = region;
        int[][] layout = poolLayout(core.limits().maxTransferSize());
        pool = new RegisteredBufferPool(poolRegion.slice(0, (int) poolRegion.length()), layout[0], layout[1]);
        pool.lkey(poolRegion.lkey() & 0xFFFF_FFFFL);
        thread = new Thread(core.pollPlacement().around(index, this::run), "nvmeof-rdma-poll-" + index);
        thread.setDaemon(true);
    }

    private long poolBytes() {
        int[][] layout = poolLayout(core.limits().maxTransferSize());
        int[] classes = layout[0];
        int[] counts = layout[1];
        long size = 0;
        for (int i = 0; i < classes.length; i++) {
            size += (long) classes[i] * counts[i];
        }
        if (size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a poll group's buffer pool of " + size + " bytes is too large");
        }
        return size;
    }

    private int pollOnce() throws Exception {
        if (deviceGone) {
            return 0;
        }
        int n = cq.poll(batch);
        if (n > 0) {
            counters.pollsWithWork++;
            counters.completions += n;
        }
        for (int i = 0; i < n; i++) {
            boolean ok = batch.isSuccess(i);
            group.dispatch(batch.wrId(i), ok, ok ? "SUCCESS" : CompletionBatch.statusName(batch.status(i)),
                    batch.byteLength(i));
        }
        return n;
    }

    void run() {
        int idle = 0;
        while (!stop) {
            try {
                int work = pollOnce() + group.pollStorage() + group.afterBatch();
                if (work > 0) {
                    idle = 0;
                    continue;
                }
                if (++idle < SPIN_BEFORE_SLEEP) {
                    Thread.onSpinWait();
                    continue;
                }
                // Idle: arm the channel, poll once more to close the race, then sleep until a completion or 1 ms
                // (so tasks handed over from other threads still run promptly).
                if (deviceGone) {
                    // No channel to sleep on any more: keep running tasks (queue releases) without spinning.
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    continue;
                }
                cq.requestNotify(false);
                if (pollOnce() + group.pollStorage() + group.afterBatch() > 0) {
                    idle = 0;
                    continue;
                }
                cq.waitForEvent(1);
            } catch (io.nvmeof.rdma.RdmaException e) {
                if (!stop && !deviceGone && (e.errno() == 19 || e.errno() == 9 || e.errno() == 5)) {
                    // ENODEV/EBADF/EIO from the channel or CQ: the device is gone. Its queues end; no spinning.
                    deviceGone = true;
                    LOG.error("RDMA poll group: the device is gone ({}); closing its queues", e.getMessage());
                    for (RdmaConnection c : connections.values()) {
                        if (c.group() == this) {
                            c.queue().closeNow("RDMA device gone");
                        }
                    }
                } else if (!stop) {
                    LOG.warn("RDMA poll group: {}", e.toString());
                }
            } catch (Throwable e) { // an Error too: ending this thread would leave the group's queues unserved
                if (!stop) {
                    LOG.warn("RDMA poll group: {}", e.toString());
                }
            }
        }
    }

    /** Whether the thread has ended although nobody stopped it: its queues are no longer served. */
    boolean ended() {
        return !stop && thread.getState() == Thread.State.TERMINATED;
    }

    /**
     * Stops the thread and, only once it has provably ended, destroys the CQ, the channel and the pool (each on
     * its own: one failing does not skip the rest). A thread that does not end (held in a backend call) keeps
     * them: a leak, never native memory freed under a running thread. Returns whether everything was destroyed.
     */
    boolean stopAndDestroy(long joinMillis) {
        stop = true;
        try {
            thread.join(joinMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            LOG.warn("RDMA poll group thread {} did not stop within {} ms; leaking its CQ and buffer pool",
                    thread.getName(), joinMillis);
            return false;
        }
        return destroy();
    }

    /** Destroys what the group holds (its thread never started or has ended). */
    boolean destroy() {
        // The kernel may still read or write pool buffers for the group's io_uring requests: they end first.
        group.closeStorage();
        boolean ok = closeQuietly(cq, "completion queue");
        ok &= closeQuietly(channel, "completion channel");
        // The pool's memory may be freed only once no queue pair can still land data in it: after the CQ.
        return ok && closeQuietly(poolRegion, "buffer pool registration");
    }

    /**
     * Buffer sizes and counts of a poll group's pool: {classes, counts}. The largest class fits the largest transfer a
     * command may ask for (MDTS): a request bigger than every buffer would wait for one for ever.
     */
    static int[][] poolLayout(int maxTransferSize) {
        int[] classes = POOL_CLASSES.clone();
        int[] counts = POOL_COUNTS.clone();
        int last = classes.length - 1;
        classes[last] = Math.max(classes[last], maxTransferSize);
        counts[last] = Math.max(2, LARGE_CLASS_BYTES / classes[last]);
        return new int[][] {classes, counts};
    }

    static boolean closeQuietly(AutoCloseable c, String what) {
        if (c == null) {
            return true;
        }
        try {
            c.close();
            return true;
        } catch (Exception e) {
            LOG.warn("closing the {}: {}", what, e.toString());
            return false;
        }
    }
}

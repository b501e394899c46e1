package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.transport.DeliveryBatch;
import io.nvmeof.rdma.CompletionBatch;
import io.nvmeof.rdma.CompletionChannel;
import io.nvmeof.rdma.CompletionQueue;
import io.nvmeof.rdma.RdmaDevice;
import io.nvmeof.rdma.RdmaException;
import io.nvmeof.rdma.Wakeup;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One initiator I/O thread: a completion queue shared by its queues, polled in batches of up to 64 completions per
 * native call; every queue's new commands posted with one native call per queue per iteration. It busy-polls while
 * there is work and, after {@link #SPIN_BEFORE_SLEEP} empty iterations, arms the completion channel and sleeps until
 * a completion or a submitter's {@link Wakeup} (signalled only when the thread said it sleeps), so an idle
 * controller costs no CPU and a busy one no system call per I/O.
 */
final class RdmaPoller {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaPoller.class);
    static final int SPIN_BEFORE_SLEEP = 4000;
    private static final int AWAKE = 0;
    private static final int SLEEPING = 1;
    private static final int WOKEN = 2;
    private static final VarHandle SLEEP;

    static {
        try {
            SLEEP = MethodHandles.lookup().findVarHandle(RdmaPoller.class, "sleepState", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final CompletionChannel channel;
    private final CompletionQueue cq;
    private final Wakeup wakeup;
    private final Thread thread;
    private final CompletionBatch batch = new CompletionBatch(64);
    /** The batched callbacks of one poll's completions, across this poller's queues. */
    private final DeliveryBatch deliveryBatch = new DeliveryBatch();
    private final ManyToOneConcurrentArrayQueue<Runnable> tasks = new ManyToOneConcurrentArrayQueue<>(1024);
    private final RdmaHostQueue.Stats stats = new RdmaHostQueue.Stats();
    private final long scanPeriodNanos;
    /** Queues by work-request queue number; the poller thread's own copy, changed only through tasks. */
    private RdmaHostQueue[] queues = new RdmaHostQueue[0];
    private volatile boolean running = true;
    @SuppressWarnings("unused") // through SLEEP
    private volatile int sleepState;
    /** System.nanoTime at the start of this loop iteration: one clock read serves every command it starts or ends. */
    private long now = System.nanoTime();
    long pollsWithWork;
    long completions;
    long sleeps;

    RdmaPoller(RdmaDevice device, int index, int cqEntries, long scanPeriodNanos, String name) throws RdmaException {
        this.channel = device.createCompletionChannel();
        CompletionQueue q = null;
        Wakeup w = null;
        try {
            q = device.createCompletionQueue(cqEntries, channel, index);
            w = Wakeup.create();
        } catch (RdmaException | RuntimeException e) {
            if (q != null) {
                q.close();
            }
            channel.close();
            throw e;
        }
        this.cq = q;
        this.wakeup = w;
        this.scanPeriodNanos = scanPeriodNanos;
        this.thread = new Thread(this::run, name);
        this.thread.setDaemon(true);
    }

    CompletionQueue cq() { return cq; }

    RdmaHostQueue.Stats stats() { return stats; }

    boolean isPollerThread() { return Thread.currentThread() == thread; }

    /** Poller thread: the time this iteration started. */
    long now() { return now; }

    void start() {
        thread.start();
    }

    /** Adds a connected queue (its completions may already be in the CQ: receives flushed before it is known are lost
     * only if the queue failed, which its own error handling covers). */
    void add(RdmaHostQueue q) {
        execute(() -> {
            int n = Math.max(queues.length, q.wrQueue() + 1);
            RdmaHostQueue[] next = java.util.Arrays.copyOf(queues, n);
            next[q.wrQueue()] = q;
            queues = next;
        });
    }

    /** Poller thread: forgets a released queue (completions still flushed for it are dropped). */
    void remove(RdmaHostQueue q) {
        RdmaHostQueue[] next = queues.clone();
        if (q.wrQueue() < next.length && next[q.wrQueue()] == q) {
            next[q.wrQueue()] = null;
        }
        queues = next;
    }

    /** Runs {@code task} on the poller thread; false when the poller has stopped (the task did not run). */
    boolean execute(Runnable task) {
        if (!running) {
            return false;
        }
        while (!tasks.offer(task)) {
            Thread.onSpinWait();
        }
        wake();
        return true;
    }

    /** After handing work over: wakes the thread if (and only if) it sleeps. */
    void wake() {
        VarHandle.fullFence(); // the hand-over's store before the sleep flag's load (the poller does the reverse)
        if ((int) SLEEP.getVolatile(this) == SLEEPING && SLEEP.compareAndSet(this, SLEEPING, WOKEN)) {
            wakeup.signal();
        }
    }

    DeliveryBatch deliveryBatch() { return deliveryBatch; }

    private int pollOnce() throws RdmaException {
        if (deviceGone) {
            return 0;
        }
        int n = cq.poll(batch);
        if (n == 0) {
            return 0;
        }
        pollsWithWork++;
        completions += n;
        RdmaHostQueue[] qs = queues;
        deliveryBatch.begin();
        try {
            for (int i = 0; i < n; i++) {
                long wrId = batch.wrId(i);
                int qn = (int) (wrId >>> 40) & 0xFF_FFFF;
                RdmaHostQueue q = qn < qs.length ? qs[qn] : null;
                if (q != null) {
                    q.onCompletion((int) (wrId >>> 32) & 0xF, (int) wrId, batch.status(i), batch.byteLength(i));
                }
            }
        } finally {
            deliveryBatch.end();
        }
        return n;
    }

    private int submissions() {
        int n = tasks.drain(Runnable::run);
        for (RdmaHostQueue q : queues) {
            if (q != null) {
                n += q.drainSubmissions();
            }
        }
        for (RdmaHostQueue q : queues) {
            if (q != null) {
                q.flush();
            }
        }
        return n;
    }

    private boolean hasWork() {
        if (!tasks.isEmpty()) {
            return true;
        }
        for (RdmaHostQueue q : queues) {
            if (q != null && q.hasWork()) {
                return true;
            }
        }
        return false;
    }

    private void run() {
        int idle = 0;
        long nextScan = System.nanoTime() + scanPeriodNanos;
        while (running) {
            try {
                now = System.nanoTime();
                int work = pollOnce() + submissions();
                if (now - nextScan >= 0) {
                    nextScan = now + scanPeriodNanos;
                    for (RdmaHostQueue q : queues) {
                        if (q != null) {
                            q.scanTimeouts(now);
                        }
                    }
                }
                if (work > 0) {
                    idle = 0;
                    continue;
                }
                if (++idle < SPIN_BEFORE_SLEEP) {
                    Thread.onSpinWait();
                    continue;
                }
                // Announce the sleep, arm the CQ, then look once more: a completion or a hand-over that raced with
                // the announcement is seen here, and any later one signals the channel or the wakeup.
                SLEEP.setVolatile(this, SLEEPING);
                cq.requestNotify(false);
                if (pollOnce() > 0 || hasWork()) {
                    SLEEP.setVolatile(this, AWAKE);
                    idle = 0;
                    continue;
                }
                sleeps++;
                if (deviceGone) {
                    // No channel to sleep on: still run hand-overs (they fail at once) and timeouts, without spinning.
                    java.util.concurrent.locks.LockSupport.parkNanos(scanPeriodNanos);
                } else {
                    channel.waitForEvent((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(scanPeriodNanos)), wakeup);
                }
                SLEEP.setVolatile(this, AWAKE);
                idle = 0;
            } catch (RdmaException e) {
                if (running && !deviceGone && (e.errno() == ENODEV || e.errno() == EBADF || e.errno() == EIO)) {
                    deviceLost(e);
                } else if (running) {
                    LOG.warn("RDMA poller: {}", e.toString());
                }
            } catch (RuntimeException e) {
                if (running) {
                    LOG.warn("RDMA poller: {}", e.toString());
                }
            } catch (Error e) {
                // An Error (out of memory for a bounce buffer, a bug) must not end the thread: every queue on it would
                // hang with no timeouts. The queues fail (their commands complete, the controller reconnects), and the
                // thread goes on serving closes, timeouts and new queues.
                LOG.error("RDMA poller: {}; failing its queues", e.toString(), e);
                failQueues("RDMA poller error: " + e);
            }
        }
    }

    private void failQueues(String reason) {
        for (RdmaHostQueue q : queues) {
            if (q != null) {
                try {
                    q.fail(reason, io.nvmeof.initiator.IoCallback.ERR_TRANSPORT);
                } catch (RuntimeException | Error e) {
                    LOG.error("RDMA poller: failing {}: {}", q.label(), e.toString());
                }
            }
        }
    }

    private static final int EBADF = 9;
    private static final int EIO = 5;
    private static final int ENODEV = 19;
    /** The device went away under the completion channel (POLLERR/POLLHUP): nothing more will complete. */
    private boolean deviceGone;

    /** Poller thread: the CQ and its channel are dead; every queue on them fails now instead of waiting. */
    private void deviceLost(RdmaException e) {
        deviceGone = true;
        LOG.warn("RDMA poller: the device is gone ({}); failing its {} queue(s)", e.getMessage(), queues.length);
        failQueues("RDMA device gone: " + e.getMessage());
    }

    /** Stops the thread (tasks not yet run are dropped: the caller fails what they were for). */
    void stop() {
        running = false;
        wakeup.signal();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(10_000); // it waits at most one scan period, and was just woken
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    boolean isStopped() {
        return !thread.isAlive();
    }

    /** After {@link #stop} (once the thread ended) and after its queues' queue pairs are destroyed. */
    void destroy() {
        try {
            cq.close();
            channel.close();
            wakeup.close();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("closing an RDMA poller: {}", e.toString());
        }
    }
}

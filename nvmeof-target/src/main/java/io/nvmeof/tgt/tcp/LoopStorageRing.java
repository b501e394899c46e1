package io.nvmeof.tgt.tcp;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.FastThreadLocal;
import io.nvmeof.tgt.core.StorageRing;
import io.nvmeof.uring.UringException;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The io_uring of one NVMe/TCP poll group (an event loop), set up on the loop's thread the first time one of its
 * queues serves a namespace with direct I/O, and closed when the loop ends.
 *
 * <p>How the loop polls it: a task that runs after the loop's current batch of socket reads (so a batch's commands
 * reach the device with one system call) reaps, submits, and queues itself again while requests are in the ring and
 * completions came, or requests went to the device, within the last {@code spinNanos}, as SPDK's pollers do. A
 * submission counts: at queue depth 1 the last completion is a host's round trip old when the next request goes in,
 * and parking right after it cost two thread wake-ups per I/O (the waiter's, then the loop's), about 45 us on a
 * 30 us device (issue 53; docs/performance.md). When the device is slower than that, the
 * loop stops polling (parks): the kernel's eventfd signal is turned on, and a small waiter thread, asleep on the
 * eventfd, queues the task again at the next completion. The signal is off while the loop polls, so the waiter is not
 * woken per completion. Exactly one of the loop and the waiter takes a park back ({@link #parked}'s compare-and-set),
 * and the eventfd is on before the loop's last look for completions, so no completion is missed.
 *
 * <p>Responses of the completions one poll reaps are flushed once per connection at the end of the poll, not once
 * per completion ({@link #flushAfterPoll}).
 */
final class LoopStorageRing {
    private static final Logger LOG = LoggerFactory.getLogger(LoopStorageRing.class);
    /** Requests in flight to the devices per poll group ({@code -Dnvmeof.uring.depth}). */
    static final int DEPTH = Integer.getInteger("nvmeof.uring.depth", StorageRing.DEFAULT_DEPTH);

    private static final FastThreadLocal<LoopStorageRing> RINGS = new FastThreadLocal<>();
    /** Set on a loop whose ring could not be set up: it is not tried again per I/O (each try is a system call). */
    private static final FastThreadLocal<Boolean> NO_RING = new FastThreadLocal<>();
    private static volatile boolean failureLogged;

    private final StorageRing ring;
    private final EventLoop loop;
    private final Runnable pollTask = this::pollTask;
    private final Runnable wakeTask = this::wakeTask;
    private final AtomicBoolean parked = new AtomicBoolean();
    private final Thread waiter;
    private volatile boolean stopped;
    private boolean eventFdOn;
    /** When the last completion was reaped or the last request submitted. */
    private long lastActivity;
    private long submissionsSeen;
    /** True while a poll runs: flushes asked for meanwhile wait for its end. */
    private boolean polling;
    private final ArrayList<FlowControl> toFlush = new ArrayList<>();
    /**
     * How long the loop keeps polling the ring without a completion or a submission before it parks ({@code -Dnvmeof.uring.spinUs},
     * read when the ring is set up; default 50 us, about a fast device's read).
     */
    private final long spinNanos = Long.getLong("nvmeof.uring.spinUs", 50) * 1000;
    /** Parks, and wake-ups that only the waiter's one-second safety net gave (none, unless a signal was lost). */
    volatile long parks;
    volatile long safetyNetWakeups;

    private LoopStorageRing(EventLoop loop, int index) throws UringException {
        this.loop = loop;
        this.ring = new StorageRing(DEPTH, () -> loop.execute(pollTask));
        try {
            ring.eventFd(); // set up here, before the waiter sleeps on it
        } catch (UringException e) {
            ring.close();
            throw e;
        }
        this.waiter = new Thread(() -> {
            io.nvmeof.cpu.ThreadPlacement.leavePollCpus(); // started by the poll group, on its CPU
            waitForCompletions();
        }, "nvmeof-uring-wait-" + index);
        waiter.setDaemon(true);
        waiter.start();
    }

    /** This loop's ring, set up now if it has none; null when it cannot have one (the namespace is served blocking). */
    static LoopStorageRing of(EventLoop loop) {
        LoopStorageRing r = RINGS.get();
        if (r != null || !loop.inEventLoop() || NO_RING.get() != null) {
            return r;
        }
        try {
            r = new LoopStorageRing(loop, Math.abs(System.identityHashCode(loop) % 1000));
        } catch (UringException e) {
            NO_RING.set(Boolean.TRUE);
            if (!failureLogged) {
                failureLogged = true;
                LOG.warn("no io_uring for the poll groups ({}): direct namespaces are served with blocking I/O",
                        e.getMessage());
            }
            return null;
        }
        LoopStorageRing made = r;
        RINGS.set(made);
        loop.terminationFuture().addListener(f -> made.close());
        return made;
    }

    StorageRing ring() {
        return ring;
    }

    private void pollTask() {
        parked.set(false); // queued by the waiter (which took the park back) or by a new request
        if (eventFdOn) {
            ring.eventFdEnabled(false);
            eventFdOn = false;
        }
        polling = true;
        int reaped = 0;
        boolean done = false;
        try {
            reaped = ring.pollFromTask();
            done = true;
        } finally {
            polling = false;
            flushAfterPoll();
            if (!done && ring.busy() && !ring.pollIsQueued()) {
                // A completion threw (the loop logs it): the rest of the ring is still polled, not left until the
                // next request comes.
                ring.pollQueued();
                loop.execute(pollTask);
            }
        }
        long now = System.nanoTime();
        long submitted = ring.submissions();
        if (reaped > 0 || submitted != submissionsSeen) {
            lastActivity = now;
            submissionsSeen = submitted;
        }
        if (!ring.busy() || ring.pollIsQueued()) {
            return; // the next request asks for a poll, or one that came during this poll has
        }
        if (now - lastActivity < spinNanos) {
            ring.pollQueued();
            loop.execute(pollTask);
            return;
        }
        // Park: from now on the next completion wakes the waiter, and the next request queues a poll itself.
        parks++;
        parked.set(true);
        ring.eventFdEnabled(true);
        eventFdOn = true;
        if (ring.hasCompletions() && parked.compareAndSet(true, false)) {
            ring.pollQueued();
            loop.execute(pollTask); // came while parking: the eventfd may not have seen it
        }
    }

    private void waitForCompletions() {
        while (!stopped) {
            boolean signaled;
            try {
                signaled = ring.awaitCompletion(1000);
            } catch (UringException e) {
                if (!stopped) {
                    LOG.warn("waiting on a poll group's io_uring: {}", e.getMessage());
                }
                return;
            }
            // Also on a timeout: a safety net (a park missed by every signal would wait a second, not for ever).
            if (!stopped && parked.compareAndSet(true, false)) {
                if (!signaled) {
                    safetyNetWakeups++;
                }
                loop.execute(wakeTask);
            }
        }
    }

    /**
     * The waiter's wake-up, on the loop: polls unless a poll is queued already (a request that came meanwhile asked
     * for one), so a wake-up and a request never start two chains of polls.
     */
    private void wakeTask() {
        if (!ring.pollIsQueued()) {
            pollTask();
        }
    }

    /**
     * Asks for {@code flow}'s connection to be flushed: at the end of the poll that runs now (one flush for all the
     * responses it completes), or now. False when no poll runs (the caller flushes).
     */
    boolean flushAfterPoll(FlowControl flow) {
        if (!polling) {
            return false;
        }
        toFlush.add(flow);
        return true;
    }

    private void flushAfterPoll() {
        for (int i = 0; i < toFlush.size(); i++) { // indexed: no iterator per poll
            toFlush.get(i).flushAfterRingPoll();
        }
        toFlush.clear();
    }

    private void close() {
        stopped = true;
        ring.wake();
        try {
            waiter.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            ring.close();
        } catch (UringException e) {
            LOG.warn("closing a poll group's io_uring: {}", e.getMessage());
        }
    }
}

package io.nvmeof.tgt.core;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * DH-HMAC-CHAP steps, run off the poll groups (the DH arithmetic takes milliseconds in the larger groups), served
 * fairly by source address (issue 51): sources take turns, one step of a source computes at a time, and a source
 * with {@link #PER_SOURCE_WAITING} steps waiting gets no more in. So a flood of Negotiates from one address costs
 * at most one thread, and a host elsewhere waits for at most one step per other source that has work, not for the
 * flood's queue.
 */
final class AuthenticationWork {
    /** Steps of one source that may wait; more are refused (the command is answered with a retryable status). */
    static final int PER_SOURCE_WAITING = 32;
    /** Steps of all sources that may wait. */
    static final int WAITING = 4096;

    private final int threads;
    private final ExecutorService executor;
    /** Sources with steps waiting, in the order they get their turns (a source served goes to the back). */
    private final LinkedHashMap<Object, ArrayDeque<Runnable>> waiting = new LinkedHashMap<>();
    /** Sources with a step computing now. */
    private final Map<Object, Boolean> running = new HashMap<>();
    private int inFlight;
    private int waitingCount;
    private boolean stopped;

    AuthenticationWork(int threads) {
        this.threads = threads;
        ThreadPoolExecutor e = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> { // never holds more than `threads`: see pump
                    Thread t = new Thread(r, "nvmeof-auth");
                    t.setDaemon(true);
                    return t;
                });
        e.allowCoreThreadTimeOut(true);
        this.executor = e;
    }

    /** Queues {@code step} for its source's turn; false when that source (or everyone) has too many waiting. */
    synchronized boolean submit(Object source, Runnable step) {
        if (stopped) {
            return false;
        }
        ArrayDeque<Runnable> q = waiting.get(source);
        if (waitingCount >= WAITING || q != null && q.size() >= PER_SOURCE_WAITING) {
            return false;
        }
        if (q == null) {
            q = new ArrayDeque<>();
            waiting.put(source, q);
        }
        q.add(step);
        waitingCount++;
        pump();
        return true;
    }

    /** Starts the next steps while threads are free: the first source in turn order with none computing. */
    private void pump() {
        while (inFlight < threads) {
            Object next = null;
            for (Iterator<Object> it = waiting.keySet().iterator(); it.hasNext(); ) {
                Object s = it.next();
                if (!running.containsKey(s)) {
                    next = s;
                    break;
                }
            }
            if (next == null) {
                return;
            }
            ArrayDeque<Runnable> q = waiting.remove(next);
            Runnable step = q.poll();
            waitingCount--;
            if (!q.isEmpty()) {
                waiting.put(next, q); // to the back: the others go first
            }
            running.put(next, Boolean.TRUE);
            inFlight++;
            Object source = next;
            try {
                executor.execute(() -> {
                    try {
                        step.run();
                    } finally {
                        done(source);
                    }
                });
            } catch (RuntimeException | Error e) {
                // No thread for it (the process is out of threads): the step waits again at its source's head, and
                // the next submit or finished step tries again.
                running.remove(source);
                inFlight--;
                waiting.computeIfAbsent(source, k -> new ArrayDeque<>()).addFirst(step);
                waitingCount++;
                return;
            }
        }
    }

    private synchronized void done(Object source) {
        inFlight--;
        running.remove(source);
        if (!stopped) {
            pump();
        }
    }

    /** Steps waiting now, for tests and statistics. */
    synchronized int waiting() {
        return waitingCount;
    }

    synchronized void shutdownNow() {
        stopped = true;
        waiting.clear();
        waitingCount = 0;
        executor.shutdownNow(); // a half-done authentication is of no use once the target stops
    }
}

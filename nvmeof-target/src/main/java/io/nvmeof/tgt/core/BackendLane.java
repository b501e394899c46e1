package io.nvmeof.tgt.core;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A first-in first-out line of backend work for one namespace and one kind of work (space changes, flushes), run
 * by at most {@code maxRunning} backend threads at a time. Each namespace has its own lanes, so one host's long work
 * on one namespace never waits for, nor delays, work on another (as nvmet's per-namespace work and SPDK's per-bdev
 * channels keep them apart), and a flush never waits behind zeroing: a flush covers the writes completed before it,
 * not Write Zeroes still queued.
 *
 * <p>Work waiting here belongs to live queues only: a queue that closes withdraws its tickets, so what a lane holds is
 * bounded by the slots of the queues that use it. The lock is held only to add or take a ticket.
 */
final class BackendLane {
    private final String name;
    private final int maxRunning;
    private final ArrayDeque<BackendTicket> waiting = new ArrayDeque<>();
    /** Threads serving this lane, started or running a ticket. */
    private int running;
    /** Of {@link #running}, those inside a ticket now. */
    private int busy;

    BackendLane(String name, int maxRunning) {
        this.name = name;
        this.maxRunning = maxRunning;
    }

    /**
     * Queues {@code t} and, when fewer than {@code maxRunning} threads serve this lane, starts one on {@code threads}.
     *
     * @throws RejectedExecutionException when {@code threads} takes no more work (the target is stopping); {@code t}
     *                                    is then not queued
     */
    void submit(BackendTicket t, Executor threads) {
        boolean start;
        synchronized (this) {
            waiting.add(t);
            start = running < maxRunning;
            if (start) {
                running++;
            }
        }
        if (start) {
            try {
                threads.execute(this::serve);
            } catch (RejectedExecutionException e) {
                synchronized (this) {
                    running--;
                    waiting.remove(t);
                }
                throw e;
            }
        }
    }

    /** A backend thread: runs this lane's tickets in order until none is left. */
    private void serve() {
        boolean ran = false;
        while (true) {
            BackendTicket t;
            synchronized (this) {
                if (ran) {
                    busy--;
                }
                t = waiting.poll();
                if (t == null) {
                    running--;
                    return;
                }
                busy++;
            }
            ran = true;
            t.run();
        }
    }

    /** Forgets a withdrawn ticket, so nothing of a closed queue stays reachable from here. */
    synchronized void remove(BackendTicket t) {
        waiting.remove(t);
    }

    /** Tickets waiting for a thread: beyond those a thread serving this lane is about to take. */
    synchronized int waiting() {
        return Math.max(0, waiting.size() - (running - busy));
    }

    /** Threads serving this lane now. */
    synchronized int running() {
        return running;
    }

    @Override
    public String toString() {
        return name;
    }
}

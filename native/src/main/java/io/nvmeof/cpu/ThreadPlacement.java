package io.nvmeof.cpu;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Where the threads of this process run: each polling thread alone on a CPU of its own, every other thread of the JVM
 * (JIT compilers, GC, the VM thread, timers, backend workers, the admin API) on the CPUs left over, the housekeeping
 * CPUs.
 *
 * <p>Why: a polling thread never sleeps, so any other thread that wakes on its CPU takes it away until the next
 * scheduler tick (4 ms at the common HZ=250); a C2 compilation or a safepoint's cleanup on a poll group's CPU is a
 * millisecond stall of every queue of that poll group (measured in docs/performance.md, "Tails"). SPDK avoids it by
 * running nothing but its reactor on a reactor's core; a JVM cannot, so its other threads are moved away instead.
 *
 * <p>Threads inherit the CPUs of the thread that creates them, so a pool that grows from a polling thread would start
 * its workers on that poll CPU: a sweep once a second moves every thread that is not a registered polling thread back
 * to the housekeeping CPUs (one {@code sched_getaffinity} per thread, on a thread of its own, never on a poll CPU).
 */
public final class ThreadPlacement implements AutoCloseable {
    private static final long SWEEP_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final System.Logger LOG = System.getLogger(ThreadPlacement.class.getName());

    /** The placement in force in this process: two would move each other's threads, so there is at most one. */
    private static final AtomicReference<ThreadPlacement> ACTIVE = new AtomicReference<>();

    private final CpuList allowed;
    private final CpuList pollCpus;
    private final CpuList housekeeping;
    /** Each polling thread's id, to the CPU it belongs on. */
    private final java.util.Map<Integer, Integer> pollThreads = new ConcurrentHashMap<>();
    private final Thread sweeper;
    /** Written under this object's lock, so that no sweep moves a thread once it is set. */
    private volatile boolean closed;

    private ThreadPlacement(CpuList allowed, CpuList pollCpus, CpuList housekeeping) {
        this.allowed = allowed;
        this.pollCpus = pollCpus;
        this.housekeeping = housekeeping;
        this.sweeper = new Thread(this::sweepForever, "nvmeof-cpu-placement");
        sweeper.setDaemon(true);
    }

    /**
     * Puts polling thread N on the Nth CPU of {@code pollCpus} and, from now on, every other thread of the process on
     * the CPUs this process may run on that {@code pollCpus} leaves free.
     *
     * @throws IllegalArgumentException when a CPU of {@code pollCpus} is not one this process may run on, or none is
     *         left for the other threads
     * @throws IllegalStateException when another placement is in force in this process
     * @throws IOException when affinity cannot be set on this machine
     */
    public static ThreadPlacement start(CpuList pollCpus) throws IOException {
        refuseSecond(ACTIVE.get()); // before reading CPUs the first one has already narrowed
        CpuList allowed = Affinity.allowed();
        CpuList outside = pollCpus.minus(allowed);
        if (!outside.isEmpty()) {
            throw new IllegalArgumentException("CPUs " + outside + " are not among those this process may run on ("
                    + allowed + "): start it with taskset or a cgroup that includes them, or choose others");
        }
        CpuList housekeeping = allowed.minus(pollCpus);
        if (housekeeping.isEmpty()) {
            throw new IllegalArgumentException("they are all the CPUs this process may run on (" + allowed
                    + "): leave at least one for the JVM's other threads (compilers, GC, timers), or place no thread "
                    + "and let the kernel place them all");
        }
        ThreadPlacement placement = new ThreadPlacement(allowed, pollCpus, housekeeping);
        refuseSecond(ACTIVE.compareAndExchange(null, placement));
        try {
            placement.sweep(); // the caller and every thread so far, before any polling thread exists
        } catch (IOException | RuntimeException e) {
            ACTIVE.compareAndSet(placement, null);
            throw e;
        }
        placement.sweeper.start();
        return placement;
    }

    private static void refuseSecond(ThreadPlacement other) {
        if (other != null) {
            throw new IllegalStateException("polling threads are already placed on CPU(s) " + other.pollCpus
                    + " in this process: one placement at a time (share it, or close it first)");
        }
    }

    /**
     * Moves the calling thread to the housekeeping CPUs of the placement in force, if any (nothing otherwise). For
     * threads a polling thread may start (worker pools, waiters): they inherit its CPU and would share it until the
     * next sweep, up to a second.
     */
    public static void leavePollCpus() {
        ThreadPlacement placement = ACTIVE.get();
        if (placement == null) {
            return;
        }
        try {
            synchronized (placement) {
                if (!placement.closed) {
                    Affinity.set(0, placement.housekeeping);
                }
            }
        } catch (IOException e) {
            // The sweep moves it within a second.
        }
    }

    /** The CPU polling thread {@code index} (from 0) runs on: the CPUs given, in ascending order, round robin. */
    public int cpuOf(int index) {
        int[] cpus = pollCpus.toArray();
        return cpus[Math.floorMod(index, cpus.length)];
    }

    public CpuList pollCpus() {
        return pollCpus;
    }

    public CpuList housekeeping() {
        return housekeeping;
    }

    /**
     * Called by polling thread {@code index} as it starts: keeps it to its CPU and out of the sweep.
     *
     * @throws IOException when the kernel refuses (the thread then runs where it was)
     */
    public void placePollingThread(int index) throws IOException {
        int tid = Affinity.currentThreadId();
        // Under the sweep's lock: a sweep that had read this thread's CPUs before it was registered would move it
        // off its CPU after, and never look at it again.
        synchronized (this) {
            pollThreads.put(tid, cpuOf(index));
            Affinity.set(0, CpuList.of(cpuOf(index)));
        }
    }

    /**
     * {@code body} run as polling thread {@code index}: placed on its CPU first (where the kernel refuses, it runs
     * where it is and says so once), out of the sweep until it ends.
     */
    public Runnable pinned(int index, Runnable body) {
        return () -> {
            try {
                placePollingThread(index);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "polling thread " + Thread.currentThread().getName()
                        + " runs unplaced: " + e.getMessage());
            }
            try {
                body.run();
            } finally {
                try {
                    forgetPollingThread();
                } catch (IOException e) {
                    // /proc unreadable as the thread ends: the sweep may leave its reused id alone once.
                }
            }
        };
    }

    /** Called by a polling thread as it ends: its id may be reused by a thread the sweep must move. */
    public void forgetPollingThread() throws IOException {
        pollThreads.remove(Affinity.currentThreadId());
    }

    /**
     * Moves every thread of the process that is not a polling thread to the housekeeping CPUs, and a polling thread
     * moved from outside back to its CPU; returns how many threads it moved.
     */
    public int sweep() throws IOException {
        int moved = 0;
        for (int tid : Affinity.threadIds()) {
            try {
                synchronized (this) {
                    if (closed) {
                        continue;
                    }
                    Integer pollCpu = pollThreads.get(tid);
                    if (pollCpu != null) {
                        // Someone moved it (taskset -p): back to its CPU, said once per move.
                        CpuList own = CpuList.of(pollCpu);
                        CpuList now = Affinity.of(tid);
                        if (!now.equals(own)) {
                            LOG.log(System.Logger.Level.WARNING, "polling thread " + tid + " was moved to CPUs " + now
                                    + " from outside; put back on CPU " + pollCpu);
                            Affinity.set(tid, own);
                            moved++;
                        }
                        continue;
                    }
                    if (!Affinity.of(tid).equals(housekeeping)) {
                        Affinity.set(tid, housekeeping);
                        moved++;
                    }
                }
            } catch (IOException e) {
                // The thread ended between the listing and the call: nothing to place.
            }
        }
        return moved;
    }

    private void sweepForever() {
        while (!closed) {
            LockSupport.parkNanos(SWEEP_NANOS);
            if (closed) {
                return;
            }
            try {
                sweep();
            } catch (IOException | RuntimeException e) {
                // /proc unreadable for a moment: the next sweep tries again.
            }
        }
    }

    /** Stops sweeping and lets every thread run on all the CPUs the process had again (a library user's JVM). */
    @Override
    public void close() {
        synchronized (this) {
            closed = true; // a sweep still running moves no thread after this
        }
        LockSupport.unpark(sweeper);
        ACTIVE.compareAndSet(this, null);
        try {
            for (int tid : Affinity.threadIds()) {
                try {
                    Affinity.set(tid, allowed);
                } catch (IOException e) {
                    // ended meanwhile
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "threads stay on CPUs " + housekeeping + ": " + e.getMessage());
        }
    }
}

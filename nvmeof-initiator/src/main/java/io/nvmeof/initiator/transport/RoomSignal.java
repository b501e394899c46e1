package io.nvmeof.initiator.transport;

import java.util.concurrent.TimeUnit;

/**
 * Lets callers wait until a queue slot frees instead of writing their own semaphore. Shared by a controller's queues;
 * a completion costs one volatile read unless someone waits.
 */
public final class RoomSignal {
    private volatile int waiters;
    private long generation;

    /** Any thread, after a slot went back to the free list. */
    public void slotFreed() {
        if (waiters > 0) {
            synchronized (this) {
                generation++;
                notifyAll();
            }
        }
    }

    /**
     * Waits until {@code hasRoom} says so or {@code timeoutNanos} pass; true when there is room. The condition is
     * checked under the monitor after announcing the wait, so a slot freed in between is not missed.
     */
    public boolean await(java.util.function.BooleanSupplier hasRoom, long timeoutNanos) throws InterruptedException {
        if (hasRoom.getAsBoolean()) {
            return true;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        synchronized (this) {
            waiters++;
            try {
                while (!hasRoom.getAsBoolean()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    // Bounded waits: a queue that is replaced (reconnect) frees no slot of the old one.
                    TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
                }
                return true;
            } finally {
                waiters--;
            }
        }
    }
}

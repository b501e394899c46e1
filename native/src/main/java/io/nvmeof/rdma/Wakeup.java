package io.nvmeof.rdma;

/**
 * An eventfd that wakes a poller sleeping in {@link CompletionChannel#waitForEvent(int, Wakeup)}: the way another
 * thread hands a sleeping poller work (an initiator's submitter). Signal it only when the poller announced it is about
 * to sleep, so a busy data path makes no system call per I/O.
 */
public final class Wakeup implements AutoCloseable {
    private volatile int fd;

    private Wakeup(int fd) {
        this.fd = fd;
    }

    public static Wakeup create() throws RdmaException {
        RdmaLibrary.requireAvailable();
        return new Wakeup(RdmaLibrary.check(NvrNative.nvr_wakeup_create(), "eventfd"));
    }

    int fd() {
        int f = fd;
        if (f < 0) {
            throw new IllegalStateException("wakeup closed");
        }
        return f;
    }

    /**
     * Wakes the poller (or makes its next wait return at once). Any thread; a no-op once closed. Excludes
     * {@link #close}: a signal racing a close could otherwise write into whatever file reused the descriptor number.
     * Signals are rare (only to a poller that said it sleeps), so the monitor costs the data path nothing.
     */
    public synchronized void signal() {
        int f = fd;
        if (f >= 0) {
            NvrNative.nvr_wakeup_signal(f);
        }
    }

    @Override
    public synchronized void close() throws RdmaException {
        int f = fd;
        if (f >= 0) {
            fd = -1;
            RdmaLibrary.check(NvrNative.nvr_wakeup_close(f), "close(eventfd)");
        }
    }
}

package io.nvmeof.tgt.backend;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The users of something that is closed once (a descriptor, a namespace's backend), so that it is never closed under
 * one of them: a user {@link #enter}s before using it and {@link #exit}s after; once closing is asked, nobody enters
 * any more, and the closing is done by whoever leaves it unused, the closer at once or else the last user out.
 * Lock-free: one compare-and-set to enter, one decrement to exit.
 */
public final class UseCount {
    /** Set once closing was asked; the rest of the value counts the users. */
    private static final long CLOSED = Long.MIN_VALUE;
    private final AtomicLong users = new AtomicLong();

    /** Counts a user; false once closing was asked (then it must not be used). */
    public boolean enter() {
        while (true) {
            long n = users.get();
            if (n < 0) {
                return false;
            }
            if (users.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** A user is done; true when it was the last one after closing was asked: the caller closes it now. */
    public boolean exit() {
        return users.decrementAndGet() == CLOSED;
    }

    /**
     * Asks for closing: true when nobody uses it now (the caller closes it now); false when the last user out will
     * ({@link #exit} tells it), or closing was asked before.
     */
    public boolean close() {
        while (true) {
            long n = users.get();
            if (n < 0) {
                return false;
            }
            if (users.compareAndSet(n, n | CLOSED)) {
                return n == 0;
            }
        }
    }

    /** Closes only when nobody uses it now (true: the caller closes it); otherwise nothing changes. */
    public boolean closeIfUnused() {
        return users.compareAndSet(0, CLOSED);
    }

    /** Users now. */
    public long users() {
        long n = users.get();
        return n < 0 ? n - CLOSED : n;
    }
}

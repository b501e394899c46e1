package io.nvmeof.initiator;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * The future of an I/O handed to callers: it completes only once the command is done with the caller's buffer.
 * Completing it from outside (cancel, orTimeout, complete) is deferred until then, as the I/O cannot be withdrawn from
 * the controller: after the future completes, nothing writes into the buffer.
 */
class BufferSafeFuture extends CompletableFuture<Void> {
    /** What the I/O is, for messages ("Read"). */
    final String op;
    /** An outcome set from outside before the I/O finished; it wins once the I/O is done. */
    private volatile Throwable early;
    private volatile boolean earlySuccess;
    private volatile boolean ioDone;

    BufferSafeFuture(String op) {
        this.op = op;
    }

    /** The command is done with the buffer: completes with {@code failure} (null: success), or the earlier outcome. */
    final void ioDone(Throwable failure) {
        ioDone = true;
        if (early != null) {
            super.completeExceptionally(early);
        } else if (earlySuccess || failure == null) {
            super.complete(null);
        } else {
            super.completeExceptionally(failure);
        }
    }

    /** Deferred: the future completes exceptionally with {@code ex} once the command is done with the buffer. */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        if (ioDone) {
            return super.completeExceptionally(ex);
        }
        if (early == null && !earlySuccess) {
            early = ex;
        }
        if (ioDone) {
            return super.completeExceptionally(early); // the I/O finished meanwhile; first outcome wins
        }
        return false;
    }

    /** Deferred: the future completes normally once the command is done with the buffer. */
    @Override
    public boolean complete(Void value) {
        if (ioDone) {
            return super.complete(value);
        }
        if (early == null) {
            earlySuccess = true;
        }
        return false;
    }

    /**
     * The command cannot be withdrawn from the controller: this returns false, and the future completes as
     * cancelled once the command is done with the buffer.
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        completeExceptionally(new CancellationException(op + " cancelled; completed once the controller was done"
                + " with the buffer"));
        return isCancelled();
    }

    @Override
    public void obtrudeValue(Void value) {
        throw new UnsupportedOperationException("an I/O future completes when its command does");
    }

    @Override
    public void obtrudeException(Throwable ex) {
        throw new UnsupportedOperationException("an I/O future completes when its command does");
    }
}

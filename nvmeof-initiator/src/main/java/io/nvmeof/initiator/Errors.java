package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import java.time.Duration;

/** Turns a completion status into the exception callers see, with what failed, where, and what to try. */
final class Errors {
    private Errors() {
    }

    static NvmeofException failure(String what, int status, int commandSet, HostQueue q, Duration timeout) {
        if (status > 0) {
            return new NvmeStatusException(what, status, commandSet);
        }
        String where = q.label();
        switch (status) {
            case IoCallback.ERR_TIMEOUT:
                return new NvmeofTimeoutException(what + " on " + where + " timed out after " + timeout.toMillis()
                        + " ms; the controller did not answer (check the target, or raise commandTimeout)");
            case IoCallback.ERR_CLOSED:
                return new NvmeofException(what + " on " + where + " failed: the controller connection was closed by this host");
            case IoCallback.ERR_QUEUE_FULL:
                return new NvmeofException(what + " on " + where + " rejected: too many requests are waiting for a free"
                        + " queue slot; limit outstanding I/O or use more/deeper queues");
            case IoCallback.ERR_TRANSPORT:
            default:
                String why = q.failure();
                return new NvmeofException(what + " on " + where + " failed: transport error"
                        + (why != null ? " (" + why + ")" : "") + "; reconnect the controller");
        }
    }
}

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
                return new NvmeofException(what + " on " + where + " failed: the controller was closed by this host",
                        ErrorKind.CLOSED_BY_CALLER);
            case IoCallback.ERR_QUEUE_FULL:
                return new NvmeofException(what + " on " + where + " rejected: too many requests are waiting for a free"
                        + " queue slot; wait for room (NvmeofController.awaitRoom) or use more/deeper queues",
                        ErrorKind.QUEUE_FULL);
            case IoCallback.ERR_NAMESPACE_GONE:
                return new NvmeofException(what + " on " + where + " not sent: the namespace was removed or replaced"
                        + " (its identifiers changed); take NvmeofController.namespace(nsid) again after checking it is"
                        + " the volume you expect", ErrorKind.NAMESPACE_GONE);
            case IoCallback.ERR_TRANSPORT:
            default:
                String why = q.failure();
                return new NvmeofException(what + " on " + where + " failed: connection lost"
                        + (why != null ? " (" + why + ")" : "") + "; the controller reconnects by itself unless its"
                        + " controller loss timeout ran out (see ConnectOptions.ctrlLossTimeout)", ErrorKind.CONNECTION_LOST);
        }
    }
}

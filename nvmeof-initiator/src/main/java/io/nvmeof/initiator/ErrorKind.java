package io.nvmeof.initiator;

/**
 * What kind of failure a request met, for a program to switch on: from a callback's status
 * ({@link #of(int)}) or from the exception a future completes with ({@link NvmeofException#kind()}).
 */
public enum ErrorKind {
    /** This host closed the controller ({@link IoCallback#ERR_CLOSED}); do not retry on it. */
    CLOSED_BY_CALLER,
    /**
     * The connection was lost and not re-established in time ({@link IoCallback#ERR_TRANSPORT}): the controller
     * reconnects by itself unless its controller loss timeout ran out (then it is {@link ControllerState#FAILED}).
     */
    CONNECTION_LOST,
    /**
     * The command got no answer within the command timeout ({@link IoCallback#ERR_TIMEOUT}, which says what it
     * guarantees): it may have taken effect; against this library's target, never after this host's next commands.
     */
    TIMED_OUT,
    /** Too many requests waited for a queue slot ({@link IoCallback#ERR_QUEUE_FULL}); wait for room and retry. */
    QUEUE_FULL,
    /**
     * The handle's namespace was removed from the controller or replaced by another under the same NSID (its
     * identifiers changed; {@link IoCallback#ERR_NAMESPACE_GONE}): the request was not sent, and no later one through
     * that handle is. Take {@link NvmeofController#namespace(long)} again after checking it is the volume you expect
     * ({@link NamespaceHandle#nguid()}, {@link NamespaceHandle#uuid()}); retrying on the old handle fails again.
     */
    NAMESPACE_GONE,
    /** The controller completed the command with an error status that may succeed if retried (DNR clear). */
    NVME_STATUS,
    /** The controller completed the command with an error status and Do Not Retry set. */
    NVME_STATUS_DO_NOT_RETRY,
    /** Anything else: a connect that failed, an interrupt, invalid data from the controller. */
    OTHER;

    /** The kind of a completion status as passed to {@link IoCallback#onComplete}; null for success (0). */
    public static ErrorKind of(int status) {
        switch (status) {
            case 0: return null;
            case IoCallback.ERR_TIMEOUT: return TIMED_OUT;
            case IoCallback.ERR_TRANSPORT: return CONNECTION_LOST;
            case IoCallback.ERR_CLOSED: return CLOSED_BY_CALLER;
            case IoCallback.ERR_QUEUE_FULL: return QUEUE_FULL;
            case IoCallback.ERR_NAMESPACE_GONE: return NAMESPACE_GONE;
            default:
                if (status < 0) {
                    return OTHER;
                }
                return io.nvmeof.protocol.Status.dnr(status) ? NVME_STATUS_DO_NOT_RETRY : NVME_STATUS;
        }
    }
}

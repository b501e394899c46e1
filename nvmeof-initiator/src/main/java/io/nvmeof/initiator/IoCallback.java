package io.nvmeof.initiator;

/**
 * Completion callback of the zero-allocation I/O flavour. It runs on the queue's I/O thread (a Netty event loop for
 * TCP, a poller thread for RDMA), or on the library's late-completion thread once that is gone, never on the
 * submitting thread inside the submitting call. It must not block (no synchronous admin calls, no {@code join()});
 * submitting more I/O from it is fine. It is called exactly once per accepted request. {@link ErrorKind#of(int)}
 * classifies the status.
 */
@FunctionalInterface
public interface IoCallback {
    /**
     * @param context the value the caller passed at submission
     * @param status  NVMe status ({@link io.nvmeof.protocol.Status}; {@code 0} = success, see
     *                {@link io.nvmeof.protocol.Status#name(int)}) or one of the negative transport codes below
     */
    void onComplete(long context, int status);

    /**
     * The command did not complete within {@link ConnectOptions#commandTimeout()}. It may or may not have taken
     * effect. Before this is reported the whole association is torn down (every queue's connection closed, as the
     * Linux host's error recovery does), so the controller can no longer fetch its data, and what the caller submits
     * afterwards goes through the next association. What happens to the command on the controller's side:
     * <ul>
     * <li>this library's target never runs a command whose queue closed before it started, and answers the host's
     * next Connect (same host NQN and host ID) only once the old association's running commands have finished, so
     * the timed-out command either never takes effect or takes effect before anything submitted through this
     * controller after the caller was told (a close the target has not yet seen when the next Connect arrives excepted; the reconnect comes
     * {@link ConnectOptions#reconnectDelay()} later);</li>
     * <li>Linux nvmet finishes a closed queue's commands before it frees the queue but does not hold the next Connect
     * for them; a command still in its backend (a long Write Zeroes, a flush) could then land after the caller's
     * next commands to the same blocks;</li>
     * <li>commands sent through another controller (another host, or another path of this one with the same host NQN
     * and host ID) are not ordered after it by anything: coordinate writers sharing blocks yourself.</li>
     * </ul>
     * The command is not sent again.
     */
    int ERR_TIMEOUT = -1;
    /**
     * The connection was lost (peer closed, protocol error, keep alive unanswered) and the request could not be sent
     * again in time: reconnecting is off ({@link ConnectOptions#ctrlLossTimeout()} zero), gave up, or exceeded
     * {@link ConnectOptions#fastIoFailTimeout()}.
     */
    int ERR_TRANSPORT = -2;
    /** The controller was closed by this host before the command completed. */
    int ERR_CLOSED = -3;
    /** Too many requests were waiting for a free queue slot (see {@link NamespaceHandle}). */
    int ERR_QUEUE_FULL = -4;
    /**
     * The namespace of the handle the request came through was removed, or replaced by another volume under the same
     * NSID (its identifiers changed), before the request was sent; it was not sent, and never will be. Take the
     * namespace again with {@link NvmeofController#namespace(long)} after checking it is the volume you expect.
     */
    int ERR_NAMESPACE_GONE = -5;

    /** Text for a status as delivered to {@link #onComplete}: transport codes by name, NVMe codes by spec name. */
    static String describe(int status) {
        switch (status) {
            case ERR_TIMEOUT: return "TIMEOUT (transport -1)";
            case ERR_TRANSPORT: return "TRANSPORT_ERROR (transport -2)";
            case ERR_CLOSED: return "CONTROLLER_CLOSED (transport -3)";
            case ERR_QUEUE_FULL: return "QUEUE_FULL (transport -4)";
            case ERR_NAMESPACE_GONE: return "NAMESPACE_GONE (host -5: the namespace was removed or replaced; not sent)";
            default:
                return status < 0 ? "transport error " + status : io.nvmeof.protocol.Status.name(status);
        }
    }
}

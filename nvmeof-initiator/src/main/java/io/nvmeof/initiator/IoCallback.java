package io.nvmeof.initiator;

/**
 * Completion callback of the zero-allocation I/O flavour. It runs on the queue's I/O thread (a Netty event loop for TCP, a poller thread for RDMA): it must
 * not block (no synchronous admin calls, no {@code join()}); submitting more I/O from it is fine.
 */
@FunctionalInterface
public interface IoCallback {
    /**
     * @param context the value the caller passed at submission
     * @param status  NVMe status ({@link io.nvmeof.protocol.Status}; {@code 0} = success, see
     *                {@link io.nvmeof.protocol.Status#name(int)}) or one of the negative transport codes below
     */
    void onComplete(long context, int status);

    /** The command did not complete within {@link ConnectOptions#commandTimeout()}. */
    int ERR_TIMEOUT = -1;
    /** The queue's connection failed (peer closed, protocol error, digest error in a header). */
    int ERR_TRANSPORT = -2;
    /** The controller was closed by this host before the command completed. */
    int ERR_CLOSED = -3;
    /** Too many requests were waiting for a free queue slot (see {@link NamespaceHandle}). */
    int ERR_QUEUE_FULL = -4;

    /** Text for a status as delivered to {@link #onComplete}: transport codes by name, NVMe codes by spec name. */
    static String describe(int status) {
        switch (status) {
            case ERR_TIMEOUT: return "TIMEOUT (transport -1)";
            case ERR_TRANSPORT: return "TRANSPORT_ERROR (transport -2)";
            case ERR_CLOSED: return "CONTROLLER_CLOSED (transport -3)";
            case ERR_QUEUE_FULL: return "QUEUE_FULL (transport -4)";
            default:
                return status < 0 ? "transport error " + status : io.nvmeof.protocol.Status.name(status);
        }
    }
}

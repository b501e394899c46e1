package io.nvmeof.rdma;

/**
 * An asynchronous event of a device (struct ibv_async_event): errors no work completion reports (a completion queue
 * overrun, a queue pair that went fatal on the responder side, the device itself failing) and port changes.
 *
 * @param type enum ibv_event_type
 * @param qpNum the queue pair's number, for queue pair events (else 0)
 * @param cqAddress the completion queue (struct ibv_cq pointer), for CQ events (else 0)
 * @param port the port, for port events (else 0)
 */
public record AsyncEvent(int type, int qpNum, long cqAddress, int port) {
    public static final int CQ_ERR = 0;
    public static final int QP_FATAL = 1;
    public static final int QP_REQ_ERR = 2;
    public static final int QP_ACCESS_ERR = 3;
    public static final int DEVICE_FATAL = 8;
    public static final int PORT_ACTIVE = 9;
    public static final int PORT_ERR = 10;

    /** libibverbs' name for the event (ibv_event_type_str), e.g. "local work queue catastrophic error". */
    public String name() {
        try {
            return IbvNative.ibv_event_type_str(type) + " (" + type + ")";
        } catch (Throwable t) {
            return "event " + type;
        }
    }

    /** An error that ends a queue pair (the one {@link #qpNum} names). */
    public boolean queuePairError() {
        return type == QP_FATAL || type == QP_REQ_ERR || type == QP_ACCESS_ERR;
    }

    /** Whether this event came for {@code cq}. */
    public boolean isFor(CompletionQueue cq) {
        return cq != null && cq.address() == cqAddress;
    }

    @Override
    public String toString() {
        return name() + (qpNum != 0 ? " on QP 0x" + Integer.toHexString(qpNum) : "")
                + (cqAddress != 0 ? " on CQ 0x" + Long.toHexString(cqAddress) : "") + (port != 0 ? " on port " + port : "");
    }
}

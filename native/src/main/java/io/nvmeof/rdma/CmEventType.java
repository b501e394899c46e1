package io.nvmeof.rdma;

/** enum rdma_cm_event_type, in its order (the ordinal is the native value). */
public enum CmEventType {
    ADDR_RESOLVED, ADDR_ERROR, ROUTE_RESOLVED, ROUTE_ERROR, CONNECT_REQUEST, CONNECT_RESPONSE, CONNECT_ERROR,
    UNREACHABLE, REJECTED, ESTABLISHED, DISCONNECTED, DEVICE_REMOVAL, MULTICAST_JOIN, MULTICAST_ERROR, ADDR_CHANGE,
    TIMEWAIT_EXIT, UNKNOWN;

    private static final CmEventType[] VALUES = values();

    public static CmEventType of(int nativeValue) {
        return nativeValue >= 0 && nativeValue < VALUES.length - 1 ? VALUES[nativeValue] : UNKNOWN;
    }
}

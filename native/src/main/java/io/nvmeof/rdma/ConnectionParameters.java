package io.nvmeof.rdma;

/**
 * rdma_conn_param for connect and accept. {@code responderResources}: RDMA READs the peer may have in flight against
 * us; {@code initiatorDepth}: RDMA READs we may have in flight against the peer (an NVMe/RDMA target READs the host's
 * buffers to serve writes, so the host must allow initiator depth > 0 on its side). Retry counts are 0..7;
 * {@code rnrRetryCount} 7 means "retry forever" when the receiver has no buffer posted yet (NVMe/RDMA accepts with 7).
 * Private data: at most 56 bytes for connect, 196 for accept.
 */
public record ConnectionParameters(byte[] privateData, int responderResources, int initiatorDepth, int retryCount,
                                   int rnrRetryCount) {
    public static final int MAX_CONNECT_PRIVATE_DATA = 56;
    public static final int MAX_ACCEPT_PRIVATE_DATA = 196;

    public ConnectionParameters {
        privateData = privateData == null ? new byte[0] : privateData.clone();
        if (privateData.length > MAX_ACCEPT_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data too long: " + privateData.length);
        }
        check("responderResources", responderResources, 255);
        check("initiatorDepth", initiatorDepth, 255);
        check("retryCount", retryCount, 7);
        check("rnrRetryCount", rnrRetryCount, 7);
    }

    /** The usual active side: retry 7, RNR retry 7. */
    public static ConnectionParameters forConnect(byte[] privateData, int responderResources, int initiatorDepth) {
        return new ConnectionParameters(privateData, responderResources, initiatorDepth, 7, 7);
    }

    /** The usual passive side: RNR retry 7 (what the NVMe/RDMA binding asks for). */
    public static ConnectionParameters forAccept(byte[] privateData, int responderResources, int initiatorDepth) {
        return new ConnectionParameters(privateData, responderResources, initiatorDepth, 7, 7);
    }

    private static void check(String name, int v, int max) {
        if (v < 0 || v > max) {
            throw new IllegalArgumentException(name + " must be 0.." + max + ": " + v);
        }
    }
}

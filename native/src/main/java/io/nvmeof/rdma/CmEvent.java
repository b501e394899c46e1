package io.nvmeof.rdma;

import java.util.HexFormat;

/**
 * A connection-manager event, copied out of the native rdma_cm_event (which is acknowledged straight away, so no
 * native memory outlives the call that returned this).
 *
 * <p>Private data arrives zero-padded on IB and RoCE: a CONNECT_REQUEST carries 56 bytes and an ESTABLISHED (the
 * accept's data) or REJECTED event 196, whatever the sender passed; protocols carry their own lengths (NVMe/RDMA's
 * private data is fixed-size).
 */
public final class CmEvent {
    private final CmEventType type;
    private final int status;
    private final CmId id;
    private final CmId listenId;
    private final byte[] privateData;
    private final int responderResources;
    private final int initiatorDepth;
    private final int retryCount;
    private final int rnrRetryCount;
    private final int remoteQpNum;

    CmEvent(CmEventType type, int status, CmId id, CmId listenId, byte[] privateData, int responderResources,
            int initiatorDepth, int retryCount, int rnrRetryCount, int remoteQpNum) {
        this.type = type;
        this.status = status;
        this.id = id;
        this.listenId = listenId;
        this.privateData = privateData;
        this.responderResources = responderResources;
        this.initiatorDepth = initiatorDepth;
        this.retryCount = retryCount;
        this.rnrRetryCount = rnrRetryCount;
        this.remoteQpNum = remoteQpNum;
    }

    public CmEventType type() {
        return type;
    }

    /** 0, or a negative errno, or for REJECTED the IB CM reject reason (28 = consumer reject, with private data). */
    public int status() {
        return status;
    }

    /**
     * The id the event is about; for CONNECT_REQUEST a NEW id for the incoming connection (accept or reject it). Null
     * when the event names an id this channel no longer knows (destroyed while the event was on its way).
     */
    public CmId id() {
        return id;
    }

    /** For CONNECT_REQUEST the listening id; otherwise null. */
    public CmId listenId() {
        return listenId;
    }

    /** Never null; empty when the event carries none. */
    public byte[] privateData() {
        return privateData;
    }

    /** CONNECT_REQUEST: how many RDMA READs the requester accepts in flight as responder (our initiator depth cap). */
    public int responderResources() {
        return responderResources;
    }

    /** CONNECT_REQUEST: how many RDMA READs the requester will issue in flight (our responder resources cap). */
    public int initiatorDepth() {
        return initiatorDepth;
    }

    public int retryCount() {
        return retryCount;
    }

    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    public int remoteQpNum() {
        return remoteQpNum;
    }

    @Override
    public String toString() {
        int shown = Math.min(privateData.length, 32);
        return "CmEvent[" + type + (status != 0 ? " status " + status : "") + ", private data " + privateData.length
                + " B" + (shown > 0 ? " " + HexFormat.of().formatHex(privateData, 0, shown) : "")
                + (type == CmEventType.CONNECT_REQUEST
                ? ", responder_resources " + responderResources + ", initiator_depth " + initiatorDepth : "") + "]";
    }
}

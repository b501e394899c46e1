package io.nvmeof.rdma;

import com.sun.jna.Pointer;

import java.util.ArrayList;
import java.util.concurrent.ConcurrentHashMap;
import java.util.List;
import java.util.Map;

/**
 * An RDMA CM event channel: the ids created on it (and the connection ids their listeners spawn) report address
 * and route resolution, connect requests, establishment, rejection and disconnection here. Control path only;
 * one thread drives a channel (a target's accept loop, an initiator's connect).
 */
public final class CmEventChannel implements AutoCloseable {
    private long channel;
    /** Native id pointer → its Java object, so events name the CmId objects the caller holds. */
    // Concurrent, so that ids can be created and destroyed on other threads while one thread blocks in poll():
    // a monitor held across the blocking wait starved them (seen: a poll-group thread stuck behind the CM thread).
    private final Map<Long, CmId> ids = new ConcurrentHashMap<>();
    private final long[] ptrOut = new long[1];
    private final long[] info = new long[8];

    private CmEventChannel(long channel) {
        this.channel = channel;
    }

    public static CmEventChannel create() throws RdmaException {
        RdmaLibrary.requireAvailable();
        long[] out = new long[1];
        RdmaLibrary.check(NvrNative.nvr_create_event_channel(out), "rdma_create_event_channel");
        return new CmEventChannel(out[0]);
    }

    /** A new id (TCP port space: reliable connected, what NVMe/RDMA uses). */
    public CmId createId() throws RdmaException {
        long[] out = new long[1];
        RdmaLibrary.check(NvrNative.nvr_create_id(requireOpen(), 0, out), "rdma_create_id");
        CmId id = new CmId(this, out[0]);
        ids.put(out[0], id);
        return id;
    }

    /** The channel's file descriptor (for an external poll/epoll loop). */
    public int fd() {
        return NvrNative.nvr_event_channel_fd(requireOpen());
    }

    /**
     * The next event, waiting up to {@code timeoutMillis} (-1: forever); null on timeout. The native event is copied
     * and acknowledged before this returns.
     */
    public synchronized CmEvent poll(int timeoutMillis) throws RdmaException {
        int rc = RdmaLibrary.check(NvrNative.nvr_wait_cm_event(requireOpen(), timeoutMillis, ptrOut),
                "rdma_get_cm_event");
        if (rc == 0) {
            return null;
        }
        long ev = ptrOut[0];
        CmEvent event;
        try {
            NvrNative.nvr_cm_event_info(ev, info);
            CmEventType type = CmEventType.of((int) info[0]);
            int status = (int) info[1];
            long idPtr = info[2];
            long listenPtr = info[3];
            byte[] pdata = info[4] == 0 || info[5] == 0 ? new byte[0]
                    : new Pointer(info[4]).getByteArray(0, (int) info[5]);
            long p = info[6];
            CmId id = ids.get(idPtr);
            if (id == null && type == CmEventType.CONNECT_REQUEST) {
                // A CONNECT_REQUEST's new connection id: it belongs to this channel from now on.
                id = new CmId(this, idPtr);
                ids.put(idPtr, id);
            }
            // Any other event for an id we do not know (one destroyed meanwhile) carries a null id: never wrap a
            // pointer that may be freed already.
            event = new CmEvent(type, status, id, listenPtr == 0 ? null : ids.get(listenPtr), pdata,
                    (int) (p & 0xFF), (int) (p >>> 8 & 0xFF), (int) (p >>> 16 & 0xFF), (int) (p >>> 24 & 0xFF),
                    (int) info[7]);
        } finally {
            RdmaLibrary.check(NvrNative.nvr_ack_cm_event(ev), "rdma_ack_cm_event");
        }
        return event;
    }

    /**
     * Waits for the next event and requires it to be {@code type} (for {@code id} when not null): the sequential
     * style of an initiator's connect. Throws {@link RdmaException} on timeout (ETIMEDOUT) or on any other event,
     * naming it (e.g. REJECTED with its status, UNREACHABLE, ADDR_ERROR).
     */
    public CmEvent expect(CmEventType type, CmId id, int timeoutMillis) throws RdmaException {
        CmEvent e = poll(timeoutMillis);
        if (e == null) {
            throw new RdmaException("no " + type + " event within " + timeoutMillis + " ms", 110);
        }
        if (e.type() != type || (id != null && e.id() != id)) {
            throw new UnexpectedCmEventException(type, e);
        }
        return e;
    }

    void forget(CmId id) {
        ids.remove(id.address());
    }

    private long requireOpen() {
        if (channel == 0) {
            throw new IllegalStateException("event channel closed");
        }
        return channel;
    }

    /** Destroys every id still open on this channel, then the channel. */
    @Override
    public void close() throws RdmaException {
        List<CmId> open;
        synchronized (this) {
            if (channel == 0) {
                return;
            }
            open = new ArrayList<>(ids.values());
        }
        RdmaException first = null;
        for (CmId id : open) {
            try {
                id.close();
            } catch (RdmaException e) {
                first = first == null ? e : first;
            }
        }
        synchronized (this) {
            RdmaCmNative.rdma_destroy_event_channel(channel);
            channel = 0;
        }
        if (first != null) {
            throw first;
        }
    }

    /** The event that came instead of the expected one; {@link #event()} has it whole (private data included). */
    public static final class UnexpectedCmEventException extends RdmaException {
        private static final long serialVersionUID = 1L;
        private final transient CmEvent event;

        UnexpectedCmEventException(CmEventType expected, CmEvent event) {
            super("expected " + expected + ", got " + event, 0);
            this.event = event;
        }

        public CmEvent event() {
            return event;
        }
    }
}

package io.nvmeof.rdma;

import java.net.InetSocketAddress;

/**
 * An RDMA CM id (struct rdma_cm_id): a listener, or one side of a connection, plus its queue pair. Its events arrive
 * on its {@link CmEventChannel}.
 *
 * <p>Passive side: {@link #bind}, {@link #listen}; each CONNECT_REQUEST event carries a new CmId: create its queue
 * pair, post receives, then {@link #accept} (or {@link #reject}); ESTABLISHED follows. Active side:
 * {@link #resolveAddress} → ADDR_RESOLVED, {@link #resolveRoute} → ROUTE_RESOLVED, create the queue pair, post
 * receives, {@link #connect} → ESTABLISHED (or REJECTED / UNREACHABLE). Either side: {@link #disconnect} →
 * DISCONNECTED at the peer, which answers with its own {@link #disconnect} → DISCONNECTED here.
 */
public final class CmId implements AutoCloseable {
    private final CmEventChannel channel;
    private long id;
    private QueuePair queuePair;

    CmId(CmEventChannel channel, long id) {
        this.channel = channel;
        this.id = id;
    }

    long address() {
        return id;
    }

    public CmEventChannel channel() {
        return channel;
    }

    public void bind(InetSocketAddress local) throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_bind_addr(requireOpen(), SocketAddresses.encode(local)),
                "rdma_bind_addr(" + local + ")");
    }

    public void listen(int backlog) throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_listen(requireOpen(), backlog), "rdma_listen");
    }

    /** The local port (host order) once bound or resolved; port 0 in {@link #bind} picks a free one. */
    public int localPort() {
        return NvrNative.nvr_id_src_port(requireOpen());
    }

    /** The peer's port (host order) of a connected id, or of a connect request's id (the host's source port). */
    public int peerPort() {
        return NvrNative.nvr_id_dst_port(requireOpen());
    }

    /** The peer's IP address of a connected id, or of a connect request's id (the host's); null where it has none. */
    public java.net.InetAddress peerAddress() {
        byte[] out = new byte[16];
        int n = NvrNative.nvr_id_dst_addr(requireOpen(), out);
        if (n != 4 && n != 16) {
            return null;
        }
        try {
            return java.net.InetAddress.getByAddress(java.util.Arrays.copyOf(out, n));
        } catch (java.net.UnknownHostException e) {
            return null; // not reached: 4 or 16 bytes
        }
    }

    /** Starts address resolution; ADDR_RESOLVED (or ADDR_ERROR) follows on the channel. */
    public void resolveAddress(InetSocketAddress destination, int timeoutMillis) throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_resolve_addr(requireOpen(), null, SocketAddresses.encode(destination),
                timeoutMillis), "rdma_resolve_addr(" + destination + ")");
    }

    /** Starts route resolution; ROUTE_RESOLVED (or ROUTE_ERROR) follows. */
    public void resolveRoute(int timeoutMillis) throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_resolve_route(requireOpen(), timeoutMillis), "rdma_resolve_route");
    }

    /**
     * Address then route resolution, waiting for each event: for a channel that carries only this id's events (an
     * initiator's connection); a shared channel must be driven by an event loop instead.
     */
    public void resolve(InetSocketAddress destination, int timeoutMillis) throws RdmaException {
        resolveAddress(destination, timeoutMillis);
        channel.expect(CmEventType.ADDR_RESOLVED, this, timeoutMillis + 1000);
        resolveRoute(timeoutMillis);
        channel.expect(CmEventType.ROUTE_RESOLVED, this, timeoutMillis + 1000);
    }

    /** The device this id is bound to (after bind to a device address, address resolution, or a connect request). */
    public RdmaDevice device() {
        long verbs = NvrNative.nvr_id_verbs(requireOpen());
        return verbs == 0 ? null : RdmaDevice.forContext(verbs);
    }

    /** Creates this id's RC queue pair (rdma_create_qp); the PD must be on this id's device. */
    public QueuePair createQueuePair(ProtectionDomain pd, QueuePairConfig config) throws RdmaException {
        if (queuePair != null) {
            throw new IllegalStateException("this id already has a queue pair");
        }
        long[] out = new long[5];
        RdmaLibrary.check(NvrNative.nvr_create_qp(requireOpen(), pd.requireOpen(), config.sendCq().address(),
                config.recvCq().address(), config.srq() == null ? 0 : config.srq().address(), config.maxSendWr(),
                config.maxRecvWr(), config.maxInlineData(), out), "rdma_create_qp");
        queuePair = new QueuePair(this, out[0], (int) out[1], (int) out[2], (int) out[3], (int) out[4]);
        return queuePair;
    }

    /** The queue pair, or null before {@link #createQueuePair}. */
    public QueuePair queuePair() {
        return queuePair;
    }

    public void connect(ConnectionParameters p) throws RdmaException {
        byte[] d = p.privateData();
        RdmaLibrary.check(NvrNative.nvr_connect(requireOpen(), d.length == 0 ? null : d, d.length,
                p.responderResources(), p.initiatorDepth(), p.retryCount(), p.rnrRetryCount()), "rdma_connect");
    }

    /** Accepts a connect request on this (the request's) id. Post receives first: the peer may send at once. */
    public void accept(ConnectionParameters p) throws RdmaException {
        byte[] d = p.privateData();
        RdmaLibrary.check(NvrNative.nvr_accept(requireOpen(), d.length == 0 ? null : d, d.length,
                p.responderResources(), p.initiatorDepth(), p.retryCount(), p.rnrRetryCount()), "rdma_accept");
    }

    /** Rejects a connect request, with private data (e.g. NVMe/RDMA's recfmt + status). Close the id afterwards. */
    public void reject(byte[] privateData) throws RdmaException {
        int len = privateData == null ? 0 : privateData.length;
        RdmaLibrary.check(NvrNative.nvr_reject(requireOpen(), len == 0 ? null : privateData, len), "rdma_reject");
    }

    /**
     * Starts an orderly disconnect (the QP moves to ERR, outstanding work flushes). The peer gets DISCONNECTED and
     * must call {@code disconnect()} too: that sends the reply (DREP) without which this side's DISCONNECTED only
     * arrives after the CM's DREQ timeout. So: on a DISCONNECTED you did not start, call disconnect() as well.
     */
    public void disconnect() throws RdmaException {
        RdmaLibrary.check(NvrNative.nvr_disconnect(requireOpen()), "rdma_disconnect");
    }

    void queuePairClosed() {
        if (id != 0) {
            NvrNative.nvr_destroy_qp(id);
        }
        queuePair = null;
    }

    private long requireOpen() {
        if (id == 0) {
            throw new IllegalStateException("CM id closed");
        }
        return id;
    }

    /** Destroys the queue pair (if any) and the id. */
    @Override
    public synchronized void close() throws RdmaException {
        // Atomic and idempotent: two threads closing the same id must not both call rdma_destroy_id.
        if (id != 0) {
            if (queuePair != null) {
                queuePair.close();
            }
            RdmaLibrary.check(NvrNative.nvr_destroy_id(id), "rdma_destroy_id"); // the handle stays on failure
            channel.forget(this);
            id = 0;
        }
    }
}

package io.nvmeof.tgt.rdma;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.transport.TransportQueue;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/RDMA queue pair (Linux nvmet rdma.c): command capsules arrive in pre-posted receives; host writes are
 * fetched with RDMA READ from the host's keyed buffer (at most {@code maxReads} at once, the negotiated initiator
 * depth); host reads are answered with an RDMA WRITE into the host's buffer chained before the response SEND, which
 * invalidates the host's key when it asked (keyed SGL subtype Fh); reads of RAM namespaces are sent straight from
 * the namespace's pinned memory (one RDMA WRITE, no copy). All work requests of a poll iteration go to the NIC
 * in one flush. Runs on its poll group's thread only.
 */
public final class RdmaQueue implements TransportQueue {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaQueue.class);

    static final int KIND_RECV = 1;
    static final int KIND_READ = 2;
    static final int KIND_SEND = 3;
    static final int KIND_WRITE = 4;

    private final TargetCore core;
    private final RdmaChannel channel;
    private final RegisteredBufferPool pool;
    private final MemoryRegistrar registrar;
    private final RdmaPollGroup group;
    private final SubmissionQueue sq;
    private final String peer;
    private final int receiveDepth;
    private final int inlineDataSize;
    private final int capsuleSize;
    private final int maxReads;

    private final ByteBuffer receives;
    /** A view of {@link #receives} to copy in-capsule data from (one for the queue, not one per capsule). */
    private final ByteBuffer receivesCursor;
    private final long receivesAddress;
    private final long receivesLkey;
    private final ByteBuffer responses;
    private final long responsesAddress;
    private final long responsesLkey;
    private final UnsafeBuffer receivesView;
    private final UnsafeBuffer responsesView;

    // Per request slot: the host's keyed buffer and whether the response must invalidate its key.
    private final long[] remoteAddress;
    private final long[] remoteKey;
    private final boolean[] invalidate;

    private int readsInFlight;
    private final ArrayDeque<Request> waitingForRead = new ArrayDeque<>();
    private int id;
    private boolean dirty;
    private boolean closed;
    private boolean released;
    private boolean failing;

    /**
     * @param receiveDepth receives posted: how many commands the host may have in flight (HSQSIZE + 1)
     * @param inlineDataSize in-capsule data advertised for I/O queues (IOCCSZ)
     * @param receiveInline in-capsule data this queue's receives hold (0 on admin queues, as Linux)
     * @param maxReads RDMA READs outstanding at once (the initiator depth agreed at connect)
     */
    public RdmaQueue(TargetCore core, RdmaChannel channel, RegisteredBufferPool pool, MemoryRegistrar registrar,
            RdmaPollGroup group, String peer, int receiveDepth, int inlineDataSize, int receiveInline, int maxReads) {
        this.core = core;
        this.channel = channel;
        this.pool = pool;
        this.registrar = registrar;
        this.group = group;
        this.peer = peer;
        this.receiveDepth = receiveDepth;
        this.inlineDataSize = inlineDataSize;
        this.capsuleSize = Command.LENGTH + receiveInline;
        this.maxReads = Math.max(1, maxReads);
        this.sq = new SubmissionQueue(core, this, 2 * core.limits().maxQueueSize());
        this.receives = ByteBuffer.allocateDirect(receiveDepth * capsuleSize);
        this.responses = ByteBuffer.allocateDirect(sq.poolSize() * Completion.LENGTH);
        this.receivesView = new UnsafeBuffer(receives);
        this.receivesCursor = receives.duplicate();
        this.responsesView = new UnsafeBuffer(responses);
        this.receivesAddress = receivesView.addressOffset();
        this.responsesAddress = responsesView.addressOffset();
        this.receivesLkey = registrar.register(receives);
        this.responsesLkey = registrar.register(responses);
        this.remoteAddress = new long[sq.poolSize()];
        this.remoteKey = new long[sq.poolSize()];
        this.invalidate = new boolean[sq.poolSize()];
        this.id = group.register(this);
        core.queueOpened();
    }

    /** Posts every receive; call before accepting the connection so the host can send at once. */
    public void start() {
        for (int i = 0; i < receiveDepth; i++) {
            postReceive(i);
        }
        channel.flush();
    }

    int id() { return id; }
    boolean takeDirty() { boolean d = dirty; dirty = false; return d; }
    RdmaChannel channel() { return channel; }

    private long wrId(int kind, int index) {
        return RdmaPollGroup.wrId(id, kind, index);
    }

    private void postReceive(int index) {
        channel.postRecv(wrId(KIND_RECV, index), receivesAddress + (long) index * capsuleSize, capsuleSize, receivesLkey);
        dirty = true;
    }

    // ---- completions, dispatched by the poll group ----

    void onReceive(int index, int byteLength) {
        if (closed) {
            return;
        }
        if (byteLength < Command.LENGTH || index < 0 || index >= receiveDepth) {
            fatal("received " + byteLength + " bytes: shorter than a command capsule");
            return;
        }
        Request req = sq.acquire();
        if (req == null) {
            fatal("more commands outstanding than the queue holds (" + sq.poolSize() + ")");
            return;
        }
        int at = index * capsuleSize;
        req.sqeBuffer().putBytes(0, receivesView, at, Command.LENGTH);
        int dataLength = byteLength - Command.LENGTH;
        if (dataLength > 0) {
            ByteBuf data = pool.tryAllocate(dataLength);
            if (data == null) {
                postReceive(index);
                req.complete(Status.INTERNAL);
                return;
            }
            data.writeBytes(receivesCursor.clear().position(at + Command.LENGTH).limit(at + byteLength));
            req.data = data;
            req.transportOffset = dataLength;
        }
        postReceive(index); // the capsule is copied out; the buffer can take the next one
        core.submit(req);
    }

    void onReadComplete(int slot) {
        readsInFlight--;
        Request req = sq.request(slot);
        startWaitingReads();
        if (!closed && req != null && req.inUse) {
            req.dataReady();
        }
    }

    void onSendComplete(int slot) {
        Request req = sq.request(slot);
        if (req == null || !req.inUse) {
            return;
        }
        boolean close = req.closeQueueAfterResponse;
        sq.release(req); // returns its data buffer to the pool; the group hands it to a waiting request
        if (close) {
            close("host disconnect");
        }
    }

    /** A failed work request: the queue pair is in error; this connection ends, no other is touched. */
    void onError(int kind, int index, String status) {
        if (!closed && !failing) {
            failing = true; // the rest of the queue's work requests now complete as flushed: report the first only
            fatal("work request failed (" + kindName(kind) + " " + index + "): " + status);
        }
    }

    private static String kindName(int kind) {
        switch (kind) {
            case KIND_RECV: return "receive";
            case KIND_READ: return "RDMA READ";
            case KIND_SEND: return "SEND";
            case KIND_WRITE: return "RDMA WRITE";
            default: return "kind " + kind;
        }
    }

    private void fatal(String why) {
        LOG.warn("NVMe/RDMA queue {} from {}: {}; disconnecting", sq.qid(), peer, why);
        close(why);
    }

    // ---- TransportQueue ----

    @Override
    public int mapData(Request req) {
        SglDescriptor sgl = req.sgl;
        int slot = req.slot();
        boolean capsuleData = req.data != null && req.transportOffset > 0;
        remoteAddress[slot] = 0;
        remoteKey[slot] = 0;
        invalidate[slot] = false;
        boolean keyed = sgl.type() == SglDescriptor.TYPE_KEYED_DATA_BLOCK;
        if (keyed) {
            int subtype = sgl.subtype();
            if (subtype != SglDescriptor.SUBTYPE_ADDRESS && subtype != SglDescriptor.SUBTYPE_INVALIDATE_KEY) {
                return Status.SGL_INVALID_TYPE | Status.DNR;
            }
            // Remember the key even for commands that move no data: the response must still invalidate it.
            remoteAddress[slot] = sgl.address();
            remoteKey[slot] = sgl.key();
            invalidate[slot] = subtype == SglDescriptor.SUBTYPE_INVALIDATE_KEY;
        } else if (sgl.identifier() != SglDescriptor.ID_IN_CAPSULE) {
            return Status.SGL_INVALID_TYPE | Status.DNR;
        }
        long length = req.sglLength();
        if (req.transferLength == 0) {
            return length == 0 && !capsuleData ? Status.SUCCESS : Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        if (length != req.transferLength) {
            return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        if (keyed) {
            return capsuleData ? Status.SGL_INVALID_TYPE | Status.DNR : Status.SUCCESS;
        }
        // In-capsule data (offset sub type).
        if (req.direction != Request.DIR_HOST_TO_CONTROLLER) {
            return Status.SGL_INVALID_TYPE | Status.DNR;
        }
        if (sgl.address() != 0) {
            return Status.SGL_INVALID_OFFSET | Status.DNR; // ICDOFF is 0
        }
        if (!capsuleData || req.transportOffset != length) {
            return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        req.dataInCapsule = true;
        return Status.SUCCESS;
    }

    @Override
    public boolean allocateReadData(Request req) {
        if (req.ns != null && !req.isAdminQueue() && req.cmd.opcode() == Opcodes.IO_READ) {
            // A RAM namespace's own memory: one RDMA WRITE from it, no copy into a pool buffer.
            long offset = req.cmd.slba() << req.ns.blockShift();
            ByteBuffer region = req.ns.backend().pinnedRegion(offset, req.transferLength);
            long key = region == null ? -1 : group.pinnedLkey(region, registrar);
            if (key != -1) {
                req.sourceKey = key;
                req.sourceRegion = region;
                req.sourceAddress = BufferUtil.address(region) + req.ns.backend().pinnedRegionOffset(offset);
                return true;
            }
        }
        if (tooLargeForThePool(req)) {
            return false;
        }
        ByteBuf data = pool.tryAllocate(req.transferLength);
        if (data == null) {
            group.waitForBuffer(req);
            return false;
        }
        data.writerIndex(req.transferLength);
        req.data = data;
        return true;
    }

    /** Completes a request no pool buffer can ever hold (the pool is sized to MDTS, so only a bug gets here). */
    private boolean tooLargeForThePool(Request req) {
        if (req.transferLength <= pool.largestBuffer()) {
            return false;
        }
        LOG.error("queue {} from {}: a {}-byte transfer exceeds the largest registered buffer ({} bytes)", sq.qid(), peer,
                req.transferLength, pool.largestBuffer());
        req.complete(Status.INTERNAL | Status.DNR);
        return true;
    }

    /**
     * The poll group's pool had a buffer for a waiting request: take it and carry on where the request stopped.
     * Returns false when there still is none.
     */
    boolean grantBuffer(Request req) {
        ByteBuf data = pool.tryAllocate(req.transferLength);
        if (data == null) {
            return false;
        }
        data.writerIndex(req.transferLength);
        req.data = data;
        if (req.direction == Request.DIR_CONTROLLER_TO_HOST) {
            req.dataReady();
        } else if (readsInFlight >= maxReads) {
            waitingForRead.add(req);
        } else {
            issueRead(req);
        }
        return true;
    }

    @Override
    public void fetchData(Request req) {
        if (closed) {
            sq.release(req);
            return;
        }
        if (tooLargeForThePool(req)) {
            return;
        }
        ByteBuf data = pool.tryAllocate(req.transferLength);
        if (data == null) {
            group.waitForBuffer(req);
            return;
        }
        data.writerIndex(req.transferLength);
        req.data = data;
        if (readsInFlight >= maxReads) {
            waitingForRead.add(req);
            return;
        }
        issueRead(req);
    }

    @Override
    public boolean withdrawWaiting(Request req) {
        // Waiting for a pool buffer, or holding one while waiting for its RDMA READ's turn: no work request of its own
        // is posted yet. A buffer it holds goes back with the request once its response's SEND completes.
        return waitingForRead.remove(req) || group.withdrawBufferWaiter(req);
    }

    private void issueRead(Request req) {
        int slot = req.slot();
        readsInFlight++;
        channel.postRead(wrId(KIND_READ, slot), req.data.memoryAddress(), req.transferLength, pool.lkey(),
                remoteAddress[slot], remoteKey[slot]);
        dirty = true;
    }

    private void startWaitingReads() {
        while (readsInFlight < maxReads && !waitingForRead.isEmpty()) {
            issueRead(waitingForRead.poll());
        }
    }

    @Override
    public void queueResponse(Request req) {
        if (closed) {
            sq.release(req);
            return;
        }
        int slot = req.slot();
        responsesView.putBytes(slot * Completion.LENGTH, req.cqeBuffer(), 0, Completion.LENGTH);
        if (Status.isSuccess(req.status) && req.sourceRegion != null) {
            channel.postWrite(wrId(KIND_WRITE, slot), req.sourceAddress, req.transferLength, req.sourceKey,
                    remoteAddress[slot], remoteKey[slot]);
        } else if (Status.isSuccess(req.status) && req.direction == Request.DIR_CONTROLLER_TO_HOST && req.data != null
                && req.transferLength > 0) {
            // One-sided: the data lands in the host's buffer; the SEND after it on the same queue pair is only
            // delivered once the WRITE is placed, so the host sees data before the completion.
            channel.postWrite(wrId(KIND_WRITE, slot), req.data.memoryAddress(), req.transferLength, pool.lkey(),
                    remoteAddress[slot], remoteKey[slot]);
        }
        channel.postSend(wrId(KIND_SEND, slot), responsesAddress + (long) slot * Completion.LENGTH, Completion.LENGTH,
                responsesLkey, invalidate[slot], remoteKey[slot]);
        dirty = true;
        // The request (and its data buffer) is released when the SEND completes.
    }

    @Override
    public void close(String reason) {
        group.execute(() -> closeNow(reason));
    }

    /**
     * Stops the queue: disconnects, takes no more work, and drops completions still to come. Its requests keep their
     * buffers until {@link #queuePairDestroyed}: until then the NIC may still move data into or out of them (an RDMA
     * READ in flight; iWARP keeps a disconnecting queue pair running), and a buffer back in the shared pool could
     * then take another connection's data, or send it to this host.
     */
    void closeNow(String reason) {
        if (closed) {
            return;
        }
        closed = true;
        LOG.debug("closing NVMe/RDMA queue {} from {}: {}", sq.qid(), peer, reason);
        channel.disconnect();
        waitingForRead.clear();
        group.dropBufferWaiters(this);
        group.unregister(this);
    }

    /**
     * The queue pair is destroyed (on this group's thread): the NIC can no longer reach this queue's memory, so its
     * requests, their pool buffers and its receive and response buffers are released.
     */
    void queuePairDestroyed() {
        closeNow("queue pair destroyed");
        if (released) {
            return;
        }
        released = true;
        sq.closed();
        // Freed now rather than when a collection finds them: a host that reconnects in a loop would otherwise pile up
        // direct memory (up to -XX:MaxDirectMemorySize) that the memory limits already count as given back. Nothing
        // reads them after this: the queue is closed, so late completions and sends stop at the closed check, and the
        // NIC can no longer reach them once deregistered. One whose deregistration failed stays (the registrar keeps
        // it).
        if (registrar.deregister(receives)) {
            BufferUtil.free(receives);
        }
        if (registrar.deregister(responses)) {
            BufferUtil.free(responses);
        }
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public long bufferedBytes() {
        return receives.capacity() + responses.capacity(); // what the NIC receives capsules into and sends CQEs from
    }

    @Override
    public void execute(Runnable task) {
        group.execute(task);
    }

    @Override
    public ByteBufAllocator allocator() {
        return pool;
    }

    @Override
    public int inlineDataSize() {
        return inlineDataSize;
    }

    @Override
    public io.nvmeof.tgt.core.StorageRing storageRing() {
        return group.storageRing();
    }

    @Override
    public boolean keyedSgls() {
        return true;
    }

    @Override
    public int trtype() {
        return DiscoveryLogEntry.TRTYPE_RDMA;
    }

    @Override
    public String peer() {
        return peer;
    }

    private volatile io.nvmeof.tgt.core.ListenerInfo listener;
    private volatile java.net.InetAddress peerAddress;

    /** The host's IP address (from its connect request); set before the queue starts. */
    void peerAddress(java.net.InetAddress a) {
        peerAddress = a;
    }

    @Override
    public java.net.InetAddress peerAddress() {
        return peerAddress;
    }

    /** The listener the connection came through; set before the queue starts. */
    void listener(io.nvmeof.tgt.core.ListenerInfo l) {
        listener = l;
    }

    @Override
    public io.nvmeof.tgt.core.ListenerInfo listener() {
        return listener;
    }

    public SubmissionQueue submissionQueue() {
        return sq;
    }
}

package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.initiator.transport.SlotQueue;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.rdma.Access;
import io.nvmeof.rdma.CmEvent;
import io.nvmeof.rdma.CmEventType;
import io.nvmeof.rdma.CmId;
import io.nvmeof.rdma.CompletionBatch;
import io.nvmeof.rdma.MemoryRegion;
import io.nvmeof.rdma.ProtectionDomain;
import io.nvmeof.rdma.QueuePair;
import io.nvmeof.rdma.QueuePairConfig;
import io.nvmeof.rdma.RdmaException;
import io.nvmeof.rdma.RecvBatch;
import io.nvmeof.rdma.SendBatch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One NVMe/RDMA host queue (Linux nvme-rdma's queue): a reliable-connected queue pair whose command capsules are SENT
 * from registered slots, whose responses arrive in pre-posted 16-byte receives, and whose data the controller moves
 * itself: RDMA WRITE into the caller's buffer for reads, RDMA READ from it for writes, both named by a keyed SGL
 * (address, length, rkey) in the command. Small writes travel in the capsule instead.
 *
 * <p>A command completes when its response arrives: the controller cannot answer a capsule it has not received
 * whole, so by then the NIC is done with the slot's memory too. Capsule SENDs are therefore mostly unsignaled
 * ({@link #SIGNAL_EVERY}), and receives are re-posted in batches ({@link #RECEIVE_SLACK}). A command that times out cannot be called back from the NIC: as the Linux host does, the queue
 * is torn down (the queue pair moves to error, so nothing touches caller memory any more) and everything on it fails.
 *
 * <p>Threading ({@link SlotQueue}): submitters claim a slot lock-free, write the SQE into registered memory and hand
 * the slot to the queue's {@link RdmaPoller} thread, which posts whole batches with one native call and polls
 * completions in batches.
 */
final class RdmaHostQueue extends SlotQueue<RdmaRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(RdmaHostQueue.class);

    static final int KIND_RECV = 1;
    static final int KIND_SEND = 2;

    /**
     * Capsule SENDs are unsignaled but for every 16th: a response proves the controller received its capsule, so a
     * slot is free when its response arrives, and the send queue is reaped by the signaled ones. Halves completions.
     */
    static final int SIGNAL_EVERY = 16;
    /**
     * Receives posted beyond the queue's depth, so re-posting them can wait and go in batches: the re-post batch holds
     * at most this many, so at least {@code slots} receives are always posted, one for every command that can be in
     * flight.
     */
    static final int RECEIVE_SLACK = 32;

    static final int MODE_NONE = 0;
    static final int MODE_IN_CAPSULE = 1;
    static final int MODE_ZERO_COPY = 2;
    static final int MODE_BOUNCE = 3;

    private final RdmaPoller poller;
    private final RegistrationCache cache;
    private final int wrQueue;
    private final CmId cmId;
    private final ByteBuffer memory;
    private final MemoryRegion region;
    private final int lkey;
    private final QueuePair qp;
    private final int inlineLimit;
    private final int stride;
    private final long recvBase;
    private final int recvCount;
    private final UnsafeBuffer responses;

    // Poller-thread state.
    private final SendBatch sends = new SendBatch(SendBatch.MAX_BATCH);
    private final RecvBatch recvs = new RecvBatch(RECEIVE_SLACK);
    private final Stats stats;
    private int unsignaled;
    /** Send queue entries not yet reaped by a signaled completion, and how many the queue pair holds. */
    private int sendQueueUsed;
    private final int sendQueueCapacity;

    /** Counters of one poller's queues: its thread writes them; others read them (racily) for statistics only. */
    static final class Stats {
        long postCalls;
        long workRequests;
        long zeroCopyBytes;
        long inCapsuleBytes;
        long bouncedBytes;
        long temporaryRegistrations;
        long commands;
    }

    /** Capsule and response memory one queue may take; a controller's IOCCSZ times a deep queue could ask for more. */
    static final long MAX_QUEUE_MEMORY = 64L << 20;

    /** Bytes of one capsule slot: the SQE and in-capsule data, 64-byte aligned. */
    static int capsuleStride(int inlineLimit) {
        return (Command.LENGTH + inlineLimit + 63) & ~63;
    }

    /**
     * The in-capsule data size a queue of {@code slots} uses: the controller's (IOCCSZ), lowered so its capsules fit in
     * {@link #MAX_QUEUE_MEMORY} (in-capsule data is the host's choice up to IOCCSZ; larger writes go by RDMA READ).
     * Sizes are computed in {@code long}: in {@code int}, a third-party target's large IOCCSZ and a deep queue wrapped
     * around, and capsules were written outside the queue's buffer.
     */
    static int inlineLimitThatFits(int slots, int inlineLimit) {
        long perSlot = MAX_QUEUE_MEMORY / Math.max(1, slots) - Command.LENGTH - Completion.LENGTH * 2L;
        long fits = Math.max(0, perSlot) & ~63L;
        return (int) Math.min(inlineLimit, fits);
    }

    /**
     * Allocates and registers the queue's capsule and response memory, creates the queue pair on the poller's CQ and
     * posts every receive: all before the connect, so the controller may answer at once.
     */
    RdmaHostQueue(RdmaPoller poller, RegistrationCache cache, ProtectionDomain pd,
                  int wrQueue, int qid, int slotCount, int inlineLimit, CmId cmId, String address, long timeoutNanos)
            throws RdmaException {
        super(qid, "queue " + qid + " of " + address + " (rdma)", new RdmaRequest[checkSlotCount(slotCount)], timeoutNanos,
                poller.deliveryBatch());
        this.poller = poller;
        this.cache = cache;
        this.wrQueue = wrQueue;
        this.cmId = cmId;
        this.inlineLimit = inlineLimitThatFits(slotCount, inlineLimit);
        this.stride = capsuleStride(this.inlineLimit);
        // Receives are 16 bytes each: a fixed slack costs nothing and lets even a queue of depth 1 batch re-posts.
        this.recvCount = slotCount + RECEIVE_SLACK;
        this.sendQueueCapacity = sendQueueEntries(slotCount);
        long sendBytes = (long) stride * slotCount;
        // Java-owned memory, registered: a submitter racing a close may still write an SQE after the registration
        // is gone, and must find memory there (this queue keeps the buffer reachable), not a freed mapping.
        this.memory = ByteBuffer.allocateDirect(Math.toIntExact(sendBytes + (long) recvCount * Completion.LENGTH));
        this.region = pd.register(memory, Access.LOCAL_WRITE);
        this.lkey = region.lkey();
        this.recvBase = region.address() + sendBytes;
        this.responses = new UnsafeBuffer(recvBase, recvCount * Completion.LENGTH);
        for (int i = 0; i < slotCount; i++) {
            slots[i] = new RdmaRequest(i, region.address() + (long) i * stride, stride);
        }
        freeAllSlots();
        this.stats = poller.stats();
        QueuePair created = null;
        try {
            created = cmId.createQueuePair(pd, QueuePairConfig.of(poller.cq(), sendQueueCapacity, recvCount));
            RecvBatch initial = new RecvBatch(RecvBatch.MAX_BATCH);
            for (int i = 0; i < recvCount; i++) {
                initial.add(wrId(KIND_RECV, i), recvAddress(i), Completion.LENGTH, lkey);
                if (initial.isFull()) {
                    created.postRecv(initial);
                    initial.clear();
                }
            }
            if (initial.size() > 0) {
                created.postRecv(initial);
            }
        } catch (RdmaException | RuntimeException e) {
            if (created != null) {
                created.close();
            }
            region.close();
            throw e;
        }
        this.qp = created;
    }

    /**
     * Send queue entries: a SEND per command in flight plus unsignaled ones that completed but are reaped only by the
     * next signaled completion. The poller also stops posting when they are all in use (back-pressure, never ENOMEM).
     */
    static int sendQueueEntries(int slots) {
        return slots + 2 * SIGNAL_EVERY;
    }

    /** Completions one queue can produce at most at once (all receives and all send entries flushed at an error). */
    static int completionEntries(int slots) {
        return slots + RECEIVE_SLACK + sendQueueEntries(slots);
    }

    private long wrId(int kind, int index) {
        return (long) wrQueue << 40 | (long) kind << 32 | (index & 0xFFFF_FFFFL);
    }

    private long recvAddress(int i) {
        return recvBase + (long) i * Completion.LENGTH;
    }

    int wrQueue() { return wrQueue; }

    RdmaPoller poller() { return poller; }

    CmId cmId() { return cmId; }

    // ------------------------------------------------------------------------------------------------ submission

    /**
     * Fills SGL1, deciding how the data moves: no data (a null keyed SGL, as Linux sends), in the
     * capsule (a write up to the in-capsule limit, copied next to the SQE), or a keyed SGL naming the caller's memory
     * (registered direct buffers: zero copy) or a registered bounce copy (heap buffers).
     */
    @Override
    protected void prepare(RdmaRequest r) {
        int dataStart = r.dataStart;
        int dataLength = r.dataLength;
        ByteBuffer data = r.data;
        r.sendLength = Command.LENGTH;
        if (r.dir == DIR_NONE) {
            r.mode = MODE_NONE;
            r.sgl.keyed(0, 0, 0, false);
        } else if (r.dir == DIR_H2C && dataLength <= inlineLimit) {
            r.mode = MODE_IN_CAPSULE;
            r.sqe.putBytes(Command.LENGTH, data, dataStart, dataLength);
            r.sgl.inCapsule(0, dataLength);
            r.sendLength = Command.LENGTH + dataLength;
        } else if (data.isDirect()) {
            long address = RegistrationCache.address(data) + dataStart;
            RegistrationCache.Entry e = cache.find(address, dataLength);
            if (e == null) {
                e = cache.registerOnFirstUse(data, address, dataLength);
            }
            int rkey;
            if (e != null) {
                rkey = e.rkey();
            } else {
                r.temporary = cache.registerTemporary(address, dataLength);
                rkey = r.temporary.rkey();
            }
            r.mode = MODE_ZERO_COPY;
            // Subtype 0 (address), never "invalidate": these are plain MRs, which a remote invalidate cannot target.
            r.sgl.keyed(address, dataLength, rkey & 0xFFFF_FFFFL, false);
        } else {
            ByteBuffer bounce = ByteBuffer.allocateDirect(dataLength);
            if (r.dir == DIR_H2C) {
                bounce.put(0, data, dataStart, dataLength);
            }
            long address = RegistrationCache.address(bounce);
            r.bounce = bounce;
            r.temporary = cache.registerTemporary(address, dataLength);
            r.mode = MODE_BOUNCE;
            r.sgl.keyed(address, dataLength, r.temporary.rkey() & 0xFFFF_FFFFL, false);
        }
    }

    // ------------------------------------------------------------------------------------------------ poller side

    @Override
    protected void handOver() {
        poller.wake();
    }

    /** True when the poller has something to post (checked before it sleeps). */
    boolean hasWork() {
        return !submitted.isEmpty() || pendingCanStart();
    }

    /** Poller: adds a SEND for every handed-over command and for waiting ones that found a slot; returns how many. */
    int drainSubmissions() {
        if (state != OPEN) {
            // Only what never reached the wire: commands in flight are failed after the queue pair is stopped
            // (fail() or the close task), never while the controller may still move their data.
            failSubmitted(closedCode());
            failPending(closedCode());
            return 0;
        }
        int n = 0;
        RdmaRequest r;
        while (canStart() && (r = pollSubmitted()) != null) {
            post(r);
            n++;
        }
        return n + startPending();
    }

    @Override
    protected void start(RdmaRequest r) {
        post(r);
    }

    @Override
    protected boolean canStart() {
        return sendQueueUsed < sendQueueCapacity;
    }

    @Override
    protected boolean outstanding(RdmaRequest r) {
        return r.state == RdmaRequest.INFLIGHT;
    }

    private void post(RdmaRequest r) {
        r.state = RdmaRequest.INFLIGHT;
        markStarted(r, poller.now());
        if (sends.isFull()) {
            flushSends();
        }
        sendQueueUsed++;
        // A signaled SEND's work request ID carries how many entries its completion reaps (it and the unsignaled
        // ones before it); near a full send queue every SEND is signaled, so entries come back as soon as possible.
        if (++unsignaled >= SIGNAL_EVERY || sendQueueUsed + SIGNAL_EVERY >= sendQueueCapacity) {
            sends.send(wrId(KIND_SEND, unsignaled), r.sendAddress, r.sendLength, lkey, SendBatch.SIGNALED);
            unsignaled = 0;
        } else {
            sends.send(wrId(KIND_SEND, 0), r.sendAddress, r.sendLength, lkey, 0);
        }
    }

    /**
     * Poller: posts the iteration's SENDs, one native call per batch. Re-posted receives go when their batch is full
     * ({@link #RECEIVE_SLACK}), so they cost a native call per 32 responses.
     */
    void flush() {
        flushSends();
    }

    private void flushSends() {
        if (sends.isEmpty()) {
            return;
        }
        try {
            if (state != CLOSED) {
                stats.postCalls++;
                stats.workRequests += sends.size();
                qp.postSend(sends);
            }
        } catch (RdmaException | RuntimeException e) {
            fail("ibv_post_send failed: " + e.getMessage(), IoCallback.ERR_TRANSPORT);
        } finally {
            sends.clear();
        }
    }

    private void flushRecvs() {
        if (recvs.size() == 0) {
            return;
        }
        try {
            if (state == OPEN) {
                stats.postCalls++;
                stats.workRequests += recvs.size();
                qp.postRecv(recvs);
            }
        } catch (RdmaException | RuntimeException e) {
            fail("ibv_post_recv failed: " + e.getMessage(), IoCallback.ERR_TRANSPORT);
        } finally {
            recvs.clear();
        }
    }

    /** Poller: one work completion of this queue. */
    void onCompletion(int kind, int index, int status, int byteLength) {
        if (status != CompletionBatch.STATUS_SUCCESS) {
            if (state == OPEN) {
                fail((kind == KIND_RECV ? "receive" : "send") + " completed with " + CompletionBatch.statusName(status)
                        + (status == CompletionBatch.STATUS_REM_ACCESS_ERR ? " (the controller refused our access)" : "")
                        + (status == CompletionBatch.STATUS_RETRY_EXC_ERR ? " (the controller stopped answering)" : ""),
                        IoCallback.ERR_TRANSPORT);
            }
            return;
        }
        if (state != OPEN) {
            return;
        }
        if (kind == KIND_RECV) {
            onResponse(index, byteLength);
        } else if (kind == KIND_SEND) {
            // Reaps the send queue (its slot was freed by its response already).
            sendQueueUsed -= index;
        }
    }

    private void onResponse(int index, int byteLength) {
        if (index < 0 || index >= recvCount) {
            return;
        }
        int at = index * Completion.LENGTH;
        int cid = responses.getShort(at + Completion.CID, ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
        int status = (responses.getShort(at + Completion.STATUS, ByteOrder.LITTLE_ENDIAN) & 0xFFFF) >>> 1;
        long result = responses.getLong(at + Completion.DW0, ByteOrder.LITTLE_ENDIAN);
        // The buffer is read; give it back to the NIC (posted with this iteration's batch).
        if (recvs.isFull()) {
            flushRecvs();
        }
        recvs.add(wrId(KIND_RECV, index), recvAddress(index), Completion.LENGTH, lkey);
        if (byteLength != Completion.LENGTH) {
            fail("response of " + byteLength + " bytes (an NVMe/RDMA response is a 16-byte completion)",
                    IoCallback.ERR_TRANSPORT);
            return;
        }
        RdmaRequest r = lookup(cid);
        if (r == null) {
            fail(String.format("response for command id 0x%04x, which is not outstanding", cid), IoCallback.ERR_TRANSPORT);
            return;
        }
        r.status = status;
        r.result = result;
        complete(r);
    }

    /** Poller: the response is in; the slot is free again before the callback runs. */
    private void complete(RdmaRequest r) {
        int status = r.status;
        stats.commands++;
        recordCompletion(r, status, poller.now());
        switch (r.mode) {
            case MODE_IN_CAPSULE:
                stats.inCapsuleBytes += r.dataLength;
                break;
            case MODE_ZERO_COPY:
                stats.zeroCopyBytes += r.dataLength;
                break;
            case MODE_BOUNCE:
                stats.bouncedBytes += r.dataLength;
                if (r.dir == DIR_C2H && status == 0) {
                    r.data.put(r.dataStart, r.bounce, 0, r.dataLength);
                }
                break;
            default:
                break;
        }
        releaseAndDeliver(r, status, r.result);
    }

    /** Drops the slot's references and temporary registration and returns it to the free list. */
    @Override
    protected void release(RdmaRequest r) {
        if (r.temporary != null) {
            stats.temporaryRegistrations++;
            cache.releaseTemporary(r.temporary);
            r.temporary = null;
        }
        r.bounce = null;
        super.release(r);
    }

    /** Poller, periodic: a command past its deadline tears the queue down; waiting requests just time out. */
    void scanTimeouts(long now) {
        if (state != OPEN) {
            return;
        }
        RdmaRequest late = markTimedOut(now);
        if (late != null) {
            fail(String.format("command 0x%04x (opcode 0x%02x) timed out after %d ms; an NVMe/RDMA command whose data"
                            + " the controller may still move cannot be abandoned, so the queue was torn down", late.cid,
                    late.cmd.opcode(), TimeUnit.NANOSECONDS.toMillis(commandTimeoutNanos)), IoCallback.ERR_TRANSPORT);
            return;
        }
        expirePending(now);
    }

    // ------------------------------------------------------------------------------------------------ failure, close

    /** CM thread: the controller disconnected (or the device went away). */
    void onCmEvent(CmEvent ev) {
        if (ev.type() == CmEventType.DISCONNECTED || ev.type() == CmEventType.DEVICE_REMOVAL
                || ev.type() == CmEventType.TIMEWAIT_EXIT) {
            if (state == OPEN) {
                poller.execute(() -> {
                    closedByPeer = ev.type() == CmEventType.DISCONNECTED;
                    fail("controller disconnected (RDMA CM " + ev.type() + ")", IoCallback.ERR_TRANSPORT);
                });
            }
        }
    }

    /** Poller: the queue is unusable; stop the NIC touching caller memory, then fail everything. */
    @Override
    protected void fail(String reason, int code) {
        if (state != OPEN) {
            return; // closed meanwhile: the close task stops the queue pair and fails what is outstanding
        }
        state = FAILED;
        failure = reason;
        LOG.warn("{}: failed: {}", label, reason);
        stopQueuePair();
        // The controller learns first (state, lastFailure), so a caller told its command failed sees why; its
        // release of this queue runs on this poller, after this.
        notifyFailure();
        failAll(code);
    }

    /** Moves the queue pair to error (outstanding work flushes, no more remote access) and starts the disconnect. */
    private void stopQueuePair() {
        try {
            qp.moveToError();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("{}: moving the queue pair to error: {}", label, e.toString());
        }
        try {
            cmId.disconnect();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("{}: rdma_disconnect: {}", label, e.toString());
        }
    }

    /** Poller (or after the pollers stopped): completes everything outstanding or waiting. */
    @Override
    protected void failAll(int code) {
        failSubmitted(code);
        for (RdmaRequest s : slots) {
            if (s.state == RdmaRequest.INFLIGHT) {
                releaseAndFail(s, code);
            }
        }
        failPending(code);
    }

    @Override
    protected boolean runOnIoThread(Runnable task) {
        return poller.execute(task);
    }

    /** True once this queue's poller thread has ended (only then may its slots be swept and its memory freed). */
    boolean pollerStopped() {
        return poller.isStopped();
    }

    @Override
    public void close() {
        boolean wasOpen = state == OPEN;
        if (!markClosed()) {
            return;
        }
        if (failure == null) {
            failure = "closed by host";
        }
        if (!poller.execute(() -> {
            if (wasOpen) {
                stopQueuePair();
            }
            failAll(closedCode());
        }) && poller.isStopped()) {
            // The poller is gone: nothing else touches the slots.
            if (wasOpen) {
                stopQueuePair();
            }
            ioThreadStopped();
        }
    }

    /** After the pollers stopped: destroys the queue pair, the CM id and the queue's memory. */
    void destroy() {
        try {
            qp.close();
            cmId.close();
            region.close();
        } catch (RdmaException | RuntimeException e) {
            LOG.debug("{}: releasing: {}", label, e.toString());
        }
    }
}

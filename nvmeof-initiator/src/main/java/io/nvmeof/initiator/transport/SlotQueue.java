package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.BatchedIoCallback;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.QueueStatistics;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transport-independent half of a host queue: command slots, command identifiers, lock-free hand-over from any
 * submitting thread to the queue's I/O thread, and the bounded overflow queue. A transport supplies how a command's
 * data is described ({@link #prepare}), how the I/O thread is told ({@link #handOver}) and how a command is sent
 * ({@link #start}).
 *
 * <p>Submission: a submitter claims a free slot (MPMC free list), writes the SQE into the slot, lets the transport
 * describe the data, and hands the slot over through an MPSC queue. No allocation and no lock on that path.
 *
 * <p>Flow control: at most {@code slots.length} commands are outstanding; a slot is reused only after the controller
 * is done with it. When every slot is busy, requests wait in FIFO order in an overflow queue (bounded; beyond the
 * bound they fail with {@link IoCallback#ERR_QUEUE_FULL}). Submitting never blocks, which matters because callbacks
 * run on the I/O thread and commonly resubmit.
 *
 * <p>Namespace identity: each request carries the {@link NamespaceRef} it was submitted for (a plain field of its slot,
 * or of its {@link PendingRequest}); the I/O thread reads {@link NamespaceRef#isCurrent()} just before it sends the
 * command ({@link #pollSubmitted}, {@link #startPending}) and fails it with {@link IoCallback#ERR_NAMESPACE_GONE}
 * instead when the namespace was removed or replaced meanwhile.
 *
 * <p>Completion: exactly once per accepted submission, never on the submitting thread. A submission refused at once
 * (queue closed or failed, overflow full) is completed on the I/O thread, or by {@link LateCompletions} once that is
 * gone, so a callback that submits again cannot recurse. A submission racing {@link #close()} is completed by the I/O
 * thread's last sweep, or by the submitter's own check after handing it over, or by {@link #ioThreadStopped()}.
 */
public abstract class SlotQueue<R extends QueueSlot> implements HostQueue {
    private static final Logger LOG = LoggerFactory.getLogger(SlotQueue.class);

    protected static final int OPEN = 0;
    protected static final int FAILED = 1;
    protected static final int CLOSED = 2;

    protected final int qid;
    protected final String label;
    protected final R[] slots;
    protected final ManyToOneConcurrentArrayQueue<R> submitted;
    protected final long commandTimeoutNanos;
    private final int indexBits;
    private final int indexMask;
    private final int generationMask;
    private final ManyToManyConcurrentArrayQueue<R> free;
    private final ConcurrentLinkedQueue<PendingRequest> pending = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pendingCount = new AtomicInteger();
    private final int pendingLimit;

    protected volatile int state = OPEN;
    protected volatile String failure;
    protected volatile Consumer<HostQueue> failureListener;
    private volatile RequestSink requeue;
    private volatile RoomSignal room;
    private volatile boolean ioThreadGone;
    /**
     * The queue's connection was lost before it was closed: the controller releases a failed queue as it tears the
     * association down, which is not the host closing it. Requests that reach the queue after that (picked while it
     * was open, handed over late) go where the ones in flight went, to be sent again after the reconnect; failing
     * them as closed by the host told the caller not to retry on a controller that was about to come back.
     */
    private volatile boolean lostBeforeClose;

    // Counters written by the I/O thread only; read racily for statistics.
    private long commands;
    private long errors;
    private long readBytes;
    private long writtenBytes;
    private long timeouts;
    private long latencyTotal;
    private long latencyMax;
    private final LongAdder queueFull = new LongAdder();
    private final LongAdder callbackFailures = new LongAdder();
    /** Batched callbacks that had completions in the I/O thread's current receive or poll. */
    protected final DeliveryBatch deliveries;

    /** @param slots filled by the subclass; slot i must have index i */
    protected SlotQueue(int qid, String label, R[] slots, long commandTimeoutNanos) {
        this(qid, label, slots, commandTimeoutNanos, new DeliveryBatch());
    }

    /**
     * @param slots filled by the subclass; slot i must have index i
     * @param batch the I/O thread's batch of completions (shared by the queues of one RDMA poller)
     */
    protected SlotQueue(int qid, String label, R[] slots, long commandTimeoutNanos, DeliveryBatch batch) {
        this.deliveries = batch;
        checkSlotCount(slots.length);
        this.qid = qid;
        this.label = label;
        this.slots = slots;
        this.commandTimeoutNanos = commandTimeoutNanos;
        // Command id = generation << indexBits | slot index: a stale or forged id from the wire is recognised.
        this.indexBits = 32 - Integer.numberOfLeadingZeros(Math.max(1, slots.length - 1));
        this.indexMask = (1 << indexBits) - 1;
        this.generationMask = indexBits >= 16 ? 0 : (1 << (16 - indexBits)) - 1;
        this.free = new ManyToManyConcurrentArrayQueue<>(Math.max(2, slots.length));
        this.submitted = new ManyToOneConcurrentArrayQueue<>(Math.max(2, slots.length));
        this.pendingLimit = Math.max(1024, 16 * slots.length);
    }

    /** For subclasses sizing their slot array: 1 to 65535 commands (16-bit command identifiers). */
    protected static int checkSlotCount(int slotCount) {
        if (slotCount < 1 || slotCount > 65535) {
            throw new IllegalArgumentException("slot count " + slotCount + " out of range");
        }
        return slotCount;
    }

    /** Puts every slot on the free list; call once the subclass filled {@link #slots}. */
    protected final void freeAllSlots() {
        for (R r : slots) {
            free.offer(r);
        }
    }

    @Override
    public int qid() { return qid; }

    @Override
    public String label() { return label; }

    @Override
    public boolean isOpen() { return state == OPEN; }

    @Override
    public String failure() { return failure; }

    /** Set (before {@link #fail}) by a transport that saw the controller's side end the connection. */
    protected volatile boolean closedByPeer;

    @Override
    public boolean closedByPeer() { return closedByPeer; }

    /** Set by {@link #abort}: the failure is this host's doing (an association torn down), no news of the peer. */
    private volatile boolean abortedByHost;

    @Override
    public boolean abortedByHost() { return abortedByHost; }

    @Override
    public void failureListener(Consumer<HostQueue> l) { failureListener = l; }

    @Override
    public void requeueTo(RequestSink sink) { requeue = sink; }

    @Override
    public void roomSignal(RoomSignal signal) { room = signal; }

    public int slotCount() { return slots.length; }

    @Override
    public int load() {
        return slots.length - free.size() + pendingCount.get();
    }

    @Override
    public boolean hasRoom() {
        return state == OPEN && pendingCount.get() == 0 && !free.isEmpty();
    }

    @Override
    public QueueStatistics statistics() {
        long n = commands;
        int busy = Math.max(0, slots.length - free.size());
        return new QueueStatistics(label, slots.length, busy, pendingCount.get(), n, errors, readBytes, writtenBytes,
                timeouts, queueFull.sum(), callbackFailures.sum(), n == 0 ? 0 : latencyTotal / n, latencyMax);
    }

    // ------------------------------------------------------------------------------------------------ transport hooks

    /**
     * Describes how a claimed slot's data moves: SGL1 and the transport's own per-command state. The SQE, CID, PSDT,
     * the transfer fields ({@code dir}, {@code data}, {@code dataStart}, {@code dataLength}) and the callbacks are
     * set already. Runs on the submitting thread (or the I/O thread for overflowed requests). A RuntimeException fails
     * the submission; the slot is released.
     */
    protected abstract void prepare(R r);

    /** Tells the I/O thread that slots or overflowed requests wait (any thread; cheap when it is already busy). */
    protected abstract void handOver();

    /** I/O thread: sends the command of a prepared slot (marks it {@link QueueSlot#INFLIGHT}). */
    protected abstract void start(R r);

    /** I/O thread: false while the transport cannot send another command yet (e.g. its send queue is full). */
    protected boolean canStart() {
        return true;
    }

    /** True while the controller may still answer {@code r} (so a completion for its CID is accepted). */
    protected abstract boolean outstanding(R r);

    /** Runs {@code task} on the queue's I/O thread; false when that thread is gone (the task did not run). */
    protected abstract boolean runOnIoThread(Runnable task);

    /** I/O thread: the queue is unusable; stop the transport touching caller memory, then fail everything. */
    protected abstract void fail(String reason, int code);

    /**
     * I/O thread (or, once it is gone, one sweeper at a time): completes everything handed over, outstanding or
     * waiting with {@code code} (commands that timed out with {@link IoCallback#ERR_TIMEOUT}).
     */
    protected abstract void failAll(int code);

    // ------------------------------------------------------------------------------------------------ submission

    @Override
    public final void submit(int opcode, NamespaceRef namespace, int cdw10, int cdw11, int cdw12, int cdw13, int cdw14,
                             int cdw15, int dir, ByteBuffer data, int dataStart, int dataLength,
                             IoCallback cb, long ctx, CompletionListener listener) {
        long nsid = namespace.nsid();
        if (state != OPEN) {
            UnsafeBuffer copy = new UnsafeBuffer(new byte[Command.LENGTH]);
            fill(new Command().<Command>wrap(copy, 0), opcode, nsid, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15);
            refuse(new PendingRequest(copy.byteArray(), namespace, dir, data, dataStart, dataLength, cb, ctx, listener,
                    System.nanoTime()));
            return;
        }
        R r = claim();
        if (r != null) {
            r.sqe.setMemory(0, Command.LENGTH, (byte) 0);
            fill(r.cmd, opcode, nsid, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15);
            r.namespace = namespace;
            launch(r, dir, data, dataStart, dataLength, cb, ctx, listener);
        } else {
            UnsafeBuffer copy = new UnsafeBuffer(new byte[Command.LENGTH]);
            fill(new Command().<Command>wrap(copy, 0), opcode, nsid, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15);
            overflow(new PendingRequest(copy.byteArray(), namespace, dir, data, dataStart, dataLength, cb, ctx,
                    listener, System.nanoTime()));
        }
    }

    @Override
    public final void submit(DirectBuffer sqeTemplate, int dir, ByteBuffer data, int dataStart, int dataLength,
                             IoCallback cb, long ctx, CompletionListener listener) {
        submit(sqeTemplate, NamespaceRef.UNBOUND, dir, data, dataStart, dataLength, cb, ctx, listener);
    }

    @Override
    public final void resubmit(PendingRequest p) {
        submit(new UnsafeBuffer(p.sqe()), p.namespace(), p.dir(), p.data(), p.dataStart(), p.dataLength(),
                p.callback(), p.context(), p.listener());
    }

    private void submit(DirectBuffer sqeTemplate, NamespaceRef namespace, int dir, ByteBuffer data, int dataStart,
                        int dataLength, IoCallback cb, long ctx, CompletionListener listener) {
        if (state != OPEN) {
            byte[] copy = new byte[Command.LENGTH];
            sqeTemplate.getBytes(0, copy);
            refuse(new PendingRequest(copy, namespace, dir, data, dataStart, dataLength, cb, ctx, listener,
                    System.nanoTime()));
            return;
        }
        R r = claim();
        if (r != null) {
            r.sqe.putBytes(0, sqeTemplate, 0, Command.LENGTH);
            r.namespace = namespace;
            launch(r, dir, data, dataStart, dataLength, cb, ctx, listener);
        } else {
            byte[] copy = new byte[Command.LENGTH];
            sqeTemplate.getBytes(0, copy);
            overflow(new PendingRequest(copy, namespace, dir, data, dataStart, dataLength, cb, ctx, listener,
                    System.nanoTime()));
        }
    }

    /**
     * A request for a queue that is no longer open (the controller picked it while it was). One whose connection failed
     * goes to the controller to be sent again after the reconnect, as the requests in flight on it do; one the host
     * closed fails. Only this failure path copies the command.
     */
    private void refuse(PendingRequest p) {
        RequestSink sink = requeue;
        if ((state == FAILED || lostBeforeClose) && sink != null && sink.offer(p)) {
            return;
        }
        deliverLater(p.callback(), p.context(), p.listener(), closedCode());
    }

    /** A free slot, or null when none is free or requests already wait (they go first, in order). */
    private R claim() {
        return pendingCount.get() == 0 ? free.poll() : null;
    }

    private static void fill(Command c, int opcode, long nsid, int cdw10, int cdw11, int cdw12, int cdw13, int cdw14,
                             int cdw15) {
        c.opcode(opcode).nsid(nsid).cdw10(cdw10).cdw11(cdw11).cdw12(cdw12).cdw13(cdw13).cdw(14, cdw14).cdw(15, cdw15);
    }

    private void launch(R r, int dir, ByteBuffer data, int dataStart, int dataLength, IoCallback cb, long ctx,
                        CompletionListener listener) {
        try {
            describe(r, dir, data, dataStart, dataLength, cb, ctx, listener);
        } catch (RuntimeException | Error e) {
            release(r); // refused (e.g. no memory for a bounce copy): the slot must not leak
            throw e;
        }
        r.state = QueueSlot.CLAIMED;
        submitted.offer(r); // cannot fail: it holds every slot
        handOver();
        afterHandOver();
    }

    /**
     * A submission that raced a close: the hand-over's store is made visible before the state is read (so either the
     * closing side's last sweep sees the request, or this thread sees the queue closed); when the I/O thread is gone
     * by then, nobody else will complete it, so it is swept here (completions on {@link LateCompletions}).
     */
    private void afterHandOver() {
        VarHandle.fullFence();
        if (state != OPEN && ioThreadGone) {
            LateCompletions.execute(this::sweep);
        }
    }

    /**
     * Fails the queue from outside its I/O thread, as a lost connection does (requests go to the {@link RequestSink}
     * when one is set), and returns once that ran (bounded). The controller tears a whole association down this way.
     */
    @Override
    public final void abort(String reason) {
        if (state != OPEN) {
            return;
        }
        abortedByHost = true;
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        if (!runOnIoThread(() -> {
            try {
                fail(reason, IoCallback.ERR_TRANSPORT);
            } finally {
                done.countDown();
            }
        })) {
            close();
            return;
        }
        try {
            if (!done.await(5, java.util.concurrent.TimeUnit.SECONDS)) {
                LOG.warn("{}: its I/O thread did not fail it within 5 s (a callback blocks?)", label);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Transport: the queue's I/O thread has ended for good (after {@link #close()}); what is still handed over,
     * outstanding or waiting is completed now, on the calling thread. Later racing submitters sweep for themselves.
     */
    public final void ioThreadStopped() {
        ioThreadGone = true;
        VarHandle.fullFence();
        sweep();
    }

    private synchronized void sweep() {
        failAll(closedCode());
    }

    private void overflow(PendingRequest p) {
        if (pendingCount.incrementAndGet() > pendingLimit) {
            pendingCount.decrementAndGet();
            queueFull.increment();
            deliverLater(p.callback(), p.context(), p.listener(), IoCallback.ERR_QUEUE_FULL);
            return;
        }
        pending.offer(p);
        handOver();
        afterHandOver();
    }

    /** The part of every submission that is not the transport's: transfer fields, callbacks, CID, PSDT; then SGL1. */
    private void describe(R r, int dir, ByteBuffer data, int dataStart, int dataLength, IoCallback cb, long ctx,
                          CompletionListener listener) {
        r.dir = dataLength == 0 ? HostQueue.DIR_NONE : dir;
        if (data != null && dataStart + dataLength > data.limit()) {
            // JDK absolute bulk operations are bounded by the limit, which callers may leave short (the API ignores
            // position..limit); a view with limit = capacity costs one small object, only for such buffers.
            data = data.duplicate().clear();
        }
        r.data = data;
        r.dataStart = dataStart;
        r.dataLength = dataLength;
        r.callback = cb;
        r.context = ctx;
        r.listener = listener;
        // Command id = next generation of the slot.
        r.generation = (r.generation + 1) & generationMask;
        r.cid = r.generation << indexBits | r.index;
        r.cmd.cid(r.cid);
        // NVMe-oF requires SGLs: PSDT 01b on every command, as the Linux host sets NVME_CMD_SGL_METABUF.
        r.cmd.psdt(Command.PSDT_SGL);
        prepare(r);
    }

    /**
     * I/O thread, as a command goes on the wire: its start time and deadline. An Asynchronous Event Request is
     * answered only when an event happens, so it never times out.
     */
    protected final void markStarted(R r, long now) {
        r.startNanos = now;
        r.failCode = 0;
        boolean waitsForEvent = qid == 0 && r.cmd.opcode() == Opcodes.ADMIN_ASYNC_EVENT_REQUEST;
        r.deadline = waitsForEvent ? now + Long.MAX_VALUE / 2 : now + commandTimeoutNanos;
    }

    /** I/O thread: the controller completed {@code r} with {@code status}; before the slot is released. */
    protected final void recordCompletion(R r, int status, long now) {
        commands++;
        if (status != 0) {
            errors++;
        } else if (r.dir == HostQueue.DIR_C2H) {
            readBytes += r.dataLength;
        } else if (r.dir == HostQueue.DIR_H2C) {
            writtenBytes += r.dataLength;
        }
        long latency = now - r.startNanos;
        latencyTotal += latency;
        if (latency > latencyMax) {
            latencyMax = latency;
        }
    }

    /**
     * I/O thread, periodic: marks every command past its deadline {@link IoCallback#ERR_TIMEOUT} and returns the
     * first, or null. The transport then tears the queue down: a command the caller was told failed must not be able
     * to execute later (a delayed R2T reading the caller's reused buffer, an in-capsule write landing after newer
     * data), as the Linux host resets the queue on a timeout.
     */
    protected final R markTimedOut(long now) {
        R first = null;
        for (R r : slots) {
            if (r.state == QueueSlot.INFLIGHT && now - r.deadline >= 0) {
                r.failCode = IoCallback.ERR_TIMEOUT;
                timeouts++;
                first = first == null ? r : first;
            }
        }
        return first;
    }

    protected final int closedCode() {
        return state == CLOSED && !lostBeforeClose ? IoCallback.ERR_CLOSED : IoCallback.ERR_TRANSPORT;
    }

    /**
     * Transport's {@link #close()}: marks the queue closed, remembering whether its connection was lost first (see
     * {@link #closedCode()}); false when it was closed already.
     */
    protected final boolean markClosed() {
        int s = state;
        if (s == CLOSED) {
            return false;
        }
        lostBeforeClose = s == FAILED;
        state = CLOSED;
        return true;
    }

    /** True when requests wait for a slot. */
    protected final boolean hasPending() {
        return pendingCount.get() > 0;
    }

    /** True when a waiting request could take a free slot now. */
    protected final boolean pendingCanStart() {
        return pendingCount.get() > 0 && !free.isEmpty();
    }

    /** I/O thread: moves waiting requests into free slots, in order, and starts them; returns how many. */
    protected final int startPending() {
        int n = 0;
        while (pendingCount.get() > 0 && state == OPEN && canStart()) {
            R r = free.poll();
            if (r == null) {
                break;
            }
            PendingRequest p = pending.poll();
            if (p == null) {
                // Counted but not yet enqueued by its submitter; that submitter hands over again.
                free.offer(r);
                break;
            }
            pendingCount.decrementAndGet();
            if (!p.namespace().isCurrent()) {
                // Its namespace was removed or replaced while it waited: the NSID may name another volume now.
                release(r);
                deliver(p.callback(), p.context(), p.listener(), IoCallback.ERR_NAMESPACE_GONE, 0);
                continue;
            }
            r.sqe.putBytes(0, p.sqe());
            r.namespace = p.namespace();
            try {
                describe(r, p.dir(), p.data(), p.dataStart(), p.dataLength(), p.callback(), p.context(), p.listener());
            } catch (RuntimeException | OutOfMemoryError e) {
                // That request alone fails (e.g. no memory for its bounce copy); the I/O thread goes on.
                LOG.warn("{}: {}", label, e.toString());
                release(r);
                deliver(p.callback(), p.context(), p.listener(), IoCallback.ERR_TRANSPORT, 0);
                continue;
            }
            start(r);
            n++;
        }
        return n;
    }

    /** The slot a CID from the wire names, or null when no such command is outstanding. */
    protected final R lookup(int cid) {
        int index = cid & indexMask;
        if (index >= slots.length) {
            return null;
        }
        R r = slots[index];
        return r.cid == cid && outstanding(r) ? r : null;
    }

    // ------------------------------------------------------------------------------------------------ completion

    /** Drops the slot's references and returns it to the free list; transports extend it to release their own. */
    protected void release(R r) {
        r.callback = null;
        r.listener = null;
        r.data = null;
        r.namespace = null;
        r.state = QueueSlot.FREE;
        r.failCode = 0;
        free.offer(r);
        RoomSignal signal = room;
        if (signal != null) {
            signal.slotFreed();
        }
    }

    /**
     * Calls the callback or the listener. A callback that throws has still been told its I/O's outcome: an exception
     * is logged (with the status it was given) and counted. An {@link Error} (stack overflow, out of memory) means
     * the program may have lost track of I/O: it is logged and fails the queue, so every other outstanding request
     * completes with an error and the controller reconnects; it is never swallowed silently.
     */
    protected final void deliver(IoCallback cb, long ctx, CompletionListener l, int status, long result) {
        try {
            if (cb != null) {
                cb.onComplete(ctx, status);
                if (cb instanceof BatchedIoCallback b) {
                    deliveries.delivered(b);
                }
            } else if (l != null) {
                l.onCompletion(status, result);
            }
        } catch (RuntimeException e) {
            callbackFailures.increment();
            LOG.error("{}: a completion callback threw (its I/O completed with {})", label, IoCallback.describe(status), e);
        } catch (Error e) {
            callbackFailures.increment();
            LOG.error("{}: a completion callback threw {} (its I/O completed with {}); failing the queue", label, e,
                    IoCallback.describe(status), e);
            String reason = "a completion callback threw " + e;
            if (!runOnIoThread(() -> fail(reason, IoCallback.ERR_TRANSPORT))) {
                LOG.error("{}: {}", label, reason);
            }
        }
    }

    /** Tells a batched callback its batch ended; what it throws is logged, as a completion callback's is. */
    static void tellBatchEnd(BatchedIoCallback cb) {
        try {
            cb.onBatchEnd();
        } catch (RuntimeException e) {
            LOG.error("a batched completion callback's onBatchEnd threw", e);
        }
    }

    /** Completes a request that never got a slot on the I/O thread, or on {@link LateCompletions} once it is gone. */
    protected final void deliverLater(IoCallback cb, long ctx, CompletionListener l, int status) {
        Runnable task = () -> deliver(cb, ctx, l, status, 0);
        if (!runOnIoThread(task)) {
            LateCompletions.execute(task);
        }
    }

    /** Completes a slot owned by the I/O thread: release first, so the callback may resubmit into it. */
    protected final void releaseAndDeliver(R r, int status, long result) {
        IoCallback cb = r.callback;
        CompletionListener l = r.listener;
        long ctx = r.context;
        release(r);
        deliver(cb, ctx, l, status, result);
    }

    /** I/O thread, periodic: requests that waited for a slot longer than the command timeout fail with ERR_TIMEOUT. */
    protected final void expirePending(long now) {
        if (pendingCount.get() == 0) {
            return;
        }
        for (PendingRequest p : pending) {
            if (now - p.enqueuedNanos() - commandTimeoutNanos >= 0 && pending.remove(p)) {
                pendingCount.decrementAndGet();
                deliver(p.callback(), p.context(), p.listener(), IoCallback.ERR_TIMEOUT, 0);
            }
        }
    }

    /**
     * I/O thread: the next handed-over slot to send, or null. A slot whose namespace was removed or replaced since it
     * was submitted is completed here with {@link IoCallback#ERR_NAMESPACE_GONE} and never sent: this read of
     * {@link NamespaceRef#isCurrent()} is the last thing before the command goes on the wire, on the thread that puts
     * it there (one volatile read per command, nothing else added to the steady-state path).
     */
    protected final R pollSubmitted() {
        R r;
        while ((r = submitted.poll()) != null) {
            if (r.namespace.isCurrent()) {
                return r;
            }
            releaseAndDeliver(r, IoCallback.ERR_NAMESPACE_GONE, 0);
            if (state != OPEN) {
                return null; // the callback closed or failed the queue: its failure path takes what is left
            }
        }
        return null;
    }

    /** Fails what was handed over but not sent yet (on the I/O thread, or once it is gone). */
    protected final void failSubmitted(int code) {
        R r;
        while ((r = submitted.poll()) != null) {
            releaseAndFail(r, code);
        }
    }

    /**
     * Completes a slot whose command will not be answered: a connection loss ({@link IoCallback#ERR_TRANSPORT}) hands
     * it to the controller to send again after reconnecting when it takes it; otherwise it fails with {@code code}.
     */
    protected final void releaseAndFail(R r, int code) {
        RequestSink sink = requeue;
        if (code == IoCallback.ERR_TRANSPORT && sink != null && r.failCode == 0) {
            byte[] sqe = new byte[Command.LENGTH];
            r.sqe.getBytes(0, sqe);
            PendingRequest p = new PendingRequest(sqe, r.namespace, r.dir, r.data, r.dataStart, r.dataLength,
                    r.callback, r.context, r.listener, System.nanoTime());
            release(r);
            if (!sink.offer(p)) {
                deliver(p.callback(), p.context(), p.listener(), code, 0);
            }
            return;
        }
        releaseAndDeliver(r, r.failCode != 0 ? r.failCode : code, 0);
    }

    /** Fails every request waiting for a slot (any thread). */
    protected final void failPending(int code) {
        RequestSink sink = code == IoCallback.ERR_TRANSPORT ? requeue : null;
        PendingRequest p;
        while ((p = pending.poll()) != null) {
            pendingCount.decrementAndGet();
            if (sink == null || !sink.offer(p)) {
                deliver(p.callback(), p.context(), p.listener(), code, 0);
            }
        }
    }

    /** Runs the failure listener once (the queue failed, it was not closed by this host). */
    protected final void notifyFailure() {
        Consumer<HostQueue> l = failureListener;
        if (l != null) {
            try {
                l.accept(this);
            } catch (RuntimeException e) {
                LOG.warn("{}: failure listener threw", label, e);
            }
        }
    }

    @Override
    public String toString() {
        return label;
    }
}

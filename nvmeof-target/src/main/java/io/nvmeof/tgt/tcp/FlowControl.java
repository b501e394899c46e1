package io.nvmeof.tgt.tcp;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import java.util.ArrayDeque;

/**
 * Where a target queue's flow is controlled: writes are flushed once per batch of reads, reading stops while the
 * host does not take what was sent (the channel's write watermarks), and commands whose data buffer does not fit the
 * queue's or the target's memory limit wait here, oldest first, until memory is given back.
 */
final class FlowControl {
    /**
     * Transport states of a command waiting for memory (apart from {@link DataMover#STATE_AWAIT_H2C}: no H2CData is
     * taken).
     */
    static final int WAIT_READ_BUFFER = 2;
    static final int WAIT_WRITE_BUFFER = 3;

    private final TcpQueue q;
    private boolean inReadBatch;
    private boolean flushPending;
    private boolean pausedForWrites;
    /** Reading stopped because an untrusted queue's few request slots are all in use (see PduFramer.decode). */
    private boolean pausedForRequests;
    /**
     * Commands waiting for data memory (over this queue's limit or the target's), oldest first: each resumes where it
     * stopped (its read buffer, or its R2T) once memory is given back. Later commands wait behind them.
     */
    private final ArrayDeque<Request> waitingForMemory = new ArrayDeque<>();
    /** Registered with the target's budget to be woken (only on this queue's thread). */
    private boolean awaitingTargetMemory;
    /** Whether that registration is on the untrusted allowance's list (see chargeOrWait). */
    private boolean awaitingUntrusted;
    private boolean resumingWaiters;
    /** Runs here when the budget wakes this queue (made once: waking allocates nothing). */
    private final Runnable resumeWaiters = this::budgetWoke;
    private final Runnable wakeFromBudget = this::wakeFromBudget;

    FlowControl(TcpQueue q) {
        this.q = q;
    }

    // ---- writes and the watermarks ----

    /** A batch of reads begins: what it makes is flushed once, at its end. */
    void readStarted() {
        inReadBatch = true;
    }

    /** The batch of reads ended: one flush for all it wrote. */
    void readCompleted(ChannelHandlerContext ctx) {
        inReadBatch = false;
        if (flushPending) {
            flushPending = false;
            ctx.flush();
        }
    }

    void flushSoon() {
        if (inReadBatch) {
            flushPending = true;
        } else if (flushPending) {
            return; // already waits for the end of the ring's poll
        } else if (q.loopRing != null && q.loopRing.flushAfterPoll(this)) {
            flushPending = true; // responses of device completions: one flush when the poll ends
        } else {
            q.ctx.flush();
        }
    }

    /** The end of a poll of the loop's io_uring that completed some of this queue's commands. */
    void flushAfterRingPoll() {
        if (flushPending) {
            flushPending = false;
            q.ctx.flush();
        }
    }

    /**
     * Stops taking commands while the host does not take what was sent: a host that never reads would otherwise make
     * the target queue read data without bound (each command's data is allocated when it runs). Outbound data is then
     * bounded by the channel's high write watermark plus what the commands already running produce, at most the
     * queue's request slots times the largest transfer (nvmet holds a command until its data is sent, to the same end).
     */
    void pauseForWrites() {
        if (!pausedForWrites) {
            pausedForWrites = true;
            ChannelHandlerContext ctx = q.ctx;
            ctx.channel().config().setAutoRead(false);
            ctx.flush();
        }
    }

    /** Stops reading until one of the queue's requests is released ({@link #requestFreed}). */
    void pauseForRequests() {
        if (!pausedForRequests) {
            pausedForRequests = true;
            q.ctx.channel().config().setAutoRead(false);
        }
    }

    /** A request went back to the queue's pool. */
    void requestFreed() {
        if (pausedForRequests && !q.closing) {
            q.ctx.executor().execute(this::resumeDecoding); // not from inside a decode (see writabilityChanged)
        }
    }

    /** The channel went above or below a write watermark. */
    void writabilityChanged(ChannelHandlerContext ctx) {
        if (pausedForWrites && ctx.channel().isWritable() && !q.closing) {
            // Not from here: this event can fire inside a flush made while decoding (the socket took everything at
            // once), and a decode started from within decode would leave the commands after it stranded in the
            // cumulation until the host sent something more.
            ctx.executor().execute(this::resumeDecoding);
        }
    }

    private void resumeDecoding() {
        ChannelHandlerContext ctx = q.ctx;
        if (!pausedForWrites && !pausedForRequests || q.closing) {
            return;
        }
        if (pausedForWrites && ctx.channel().isWritable()) {
            pausedForWrites = false;
        }
        if (pausedForRequests && q.sq.freeRequests() > 0) {
            pausedForRequests = false;
        }
        if (pausedForWrites || pausedForRequests) {
            return;
        }
        ctx.channel().config().setAutoRead(true);
        try {
            // Decode what arrived while paused: an empty read runs the decoder over the kept cumulation.
            q.channelRead(ctx, Unpooled.EMPTY_BUFFER);
            q.channelReadComplete(ctx);
        } catch (Exception e) {
            q.exceptionCaught(ctx, e);
        }
    }

    // ---- commands waiting for data memory ----

    /**
     * Charges the command's data buffer against the memory limits, or parks the command (true when charged). A new
     * command waits behind those already waiting, so none is passed over; a resumed one that still does not fit goes
     * back to the head.
     */
    boolean chargeOrWait(Request req, int why, boolean resumed) {
        if (!resumed && !waitingForMemory.isEmpty()) {
            req.transportState = why;
            waitingForMemory.addLast(req);
            return false;
        }
        int r = q.sq.chargeData(req, req.transferLength);
        if (r == SubmissionQueue.OVER_TARGET_LIMIT || r == SubmissionQueue.OVER_UNTRUSTED_LIMIT) {
            if (!awaitingTargetMemory) {
                awaitingTargetMemory = true;
                // A queue whose host proved nothing waits for the untrusted allowance on a list of its own, so it
                // never takes a wake-up a trusted queue needs.
                awaitingUntrusted = r == SubmissionQueue.OVER_UNTRUSTED_LIMIT;
                if (awaitingUntrusted) {
                    q.core.memory().awaitUntrustedMemory(wakeFromBudget);
                } else {
                    q.core.memory().awaitMemory(wakeFromBudget);
                }
            }
            r = q.sq.chargeData(req, req.transferLength); // memory given back before we were listed woke nobody
        }
        if (r == SubmissionQueue.CHARGED) {
            return true;
        }
        req.transportState = why;
        if (resumed) {
            waitingForMemory.addFirst(req);
        } else {
            waitingForMemory.addLast(req);
        }
        return false;
    }

    /** Any thread: the target's budget gave memory back and picked this queue. */
    private void wakeFromBudget() {
        try {
            q.execute(resumeWaiters);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // The target is shutting down: nothing waits any more.
        }
    }

    private void budgetWoke() {
        awaitingTargetMemory = false;
        boolean fromUntrusted = awaitingUntrusted;
        if (!resumeWaitingCommands() && !awaitingTargetMemory) {
            // This queue had no use for the memory (nothing waits here now): let the next waiting queue try. One
            // that still does not fit is listed again and waits for the next memory given back.
            passTurnOn(fromUntrusted);
        }
    }

    /** Wakes the next queue waiting on the list this one was woken from. */
    private void passTurnOn(boolean untrustedList) {
        if (untrustedList) {
            q.core.memory().wakeOneUntrusted();
        } else {
            q.core.memory().wakeOne();
        }
    }

    boolean withdrawWaiting(Request req) {
        // Uncharged while it waits, without a buffer or an R2T: nothing to give back. A write whose R2T went out is not
        // withdrawn (its H2CData may be on the way), as SPDK leaves it.
        if (!waitingForMemory.remove(req)) {
            return false;
        }
        req.transportState = DataMover.STATE_NONE;
        return true;
    }

    void memoryFreed() {
        if (!waitingForMemory.isEmpty()) {
            resumeWaitingCommands();
        }
    }

    /** Resumes waiting commands, oldest first, while memory lasts; true when at least one went on. */
    private boolean resumeWaitingCommands() {
        if (resumingWaiters || q.closing) {
            return false;
        }
        resumingWaiters = true;
        boolean progressed = false;
        try {
            while (!waitingForMemory.isEmpty()) {
                Request req = waitingForMemory.pollFirst();
                int why = req.transportState;
                if (!chargeOrWait(req, why, true)) {
                    break;
                }
                progressed = true;
                if (why == WAIT_READ_BUFFER) {
                    q.data.placeReadBuffer(req);
                    req.dataReady();
                } else {
                    q.data.placeWriteBuffer(req);
                    q.data.sendR2T(req);
                }
            }
        } finally {
            resumingWaiters = false;
        }
        if (progressed) {
            // Memory may be left over for another waiting queue: pass the turn on. The chain ends at a queue that
            // makes no progress (listed again) or when none waits.
            passTurnOn(q.sq.untrusted());
        }
        return progressed;
    }

    /** The connection closed: nothing waits any more (the queue releases the requests with the rest). */
    void closed() {
        waitingForMemory.clear();
    }
}

package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.SglDescriptor;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One preallocated command slot of a {@link SlotQueue}; transports extend it with what they track per command.
 * Ownership moves with the slot: a submitter owns it from the free list until it hands it to the I/O thread through
 * the submission queue (both concurrent queues, which publish the plain fields); then only the I/O thread touches it
 * until it goes back to the free list.
 */
public abstract class QueueSlot {
    public static final int FREE = 0;
    /** Owned by a submitter, or waiting in the submission queue. */
    public static final int CLAIMED = 1;
    /** Sent; waiting for data and response. */
    public static final int INFLIGHT = 2;

    public final int index;
    /** The 64-byte SQE: where the submitter writes the command (for RDMA, registered memory the NIC sends from). */
    public final UnsafeBuffer sqe;
    public final Command cmd;
    public final SglDescriptor sgl;
    public int generation;
    public int cid;
    public int state = FREE;

    public int dir;
    public ByteBuffer data;
    public int dataStart;
    public int dataLength;
    public long deadline;
    /** When the command went on the wire (System.nanoTime), for latency statistics. */
    public long startNanos;
    /**
     * Non-zero when this command caused its queue to fail (it timed out: {@link IoCallback#ERR_TIMEOUT}; the
     * controller broke the protocol answering it: {@link IoCallback#ERR_TRANSPORT}): it then fails with this code
     * and is never sent again after a reconnect.
     */
    public int failCode;

    /**
     * What the command was submitted for; the I/O thread sends it only while this is current
     * ({@link SlotQueue#pollSubmitted}). A plain field: published with the slot by the hand-over.
     */
    public NamespaceRef namespace;

    public IoCallback callback;
    public long context;
    public CompletionListener listener;

    protected QueueSlot(int index, UnsafeBuffer sqe) {
        this.index = index;
        this.sqe = sqe;
        this.cmd = new Command().wrap(sqe, 0);
        this.sgl = new SglDescriptor().wrap(sqe, Command.DPTR);
    }
}

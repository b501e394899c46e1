package io.nvmeof.initiator.tcp;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.SglDescriptor;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One preallocated queue slot. Ownership moves with the slot: a submitting thread owns it from the free list until it
 * hands it to the event loop through the submission queue (both are concurrent queues, which publish the plain
 * fields); from then on only the event loop touches it, until the slot goes back to the free list.
 */
final class Request {
    static final int FREE = 0;
    /** Owned by a submitter or waiting in the submission queue. */
    static final int CLAIMED = 1;
    /** Command capsule written; waiting for data/response. */
    static final int INFLIGHT = 2;
    /** Caller already told ERR_TIMEOUT; the slot stays reserved until the controller answers (SQ flow control). */
    static final int TIMED_OUT = 3;

    final int index;
    int generation;
    int cid;
    int state = FREE;

    final byte[] sqeBytes = new byte[Command.LENGTH];
    final UnsafeBuffer sqe = new UnsafeBuffer(sqeBytes);
    final Command cmd = new Command().<Command>wrap(sqe, 0);
    final SglDescriptor sgl = new SglDescriptor().wrap(sqe, Command.DPTR);

    int dir;
    ByteBuffer data;
    int dataStart;
    int dataLength;
    boolean inCapsule;

    /** C2H bytes received so far (diagnostics). */
    long received;
    /** Next offset an R2T may ask for: R2Ts must move forward through the buffer. */
    long h2cNext;
    /** Non-zero when a data PDU failed its digest: the command then fails even if the CQE says success. */
    int dataStatus;
    long deadline;

    IoCallback callback;
    long context;
    CompletionListener listener;

    Request(int index) {
        this.index = index;
    }
}

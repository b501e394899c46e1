package io.nvmeof.initiator.tcp;

import io.nvmeof.initiator.transport.QueueSlot;
import io.nvmeof.protocol.Command;
import org.agrona.concurrent.UnsafeBuffer;

/** An NVMe/TCP command slot: the SQE on the heap (copied into each CapsuleCmd PDU) and the PDU exchange's progress. */
final class Request extends QueueSlot {
    final byte[] sqeBytes;

    boolean inCapsule;
    /** C2H bytes received so far (diagnostics). */
    long received;
    /** Next offset an R2T may ask for: R2Ts must move forward through the buffer. */
    long h2cNext;
    /** Non-zero when a data PDU failed its digest: the command then fails even if the CQE says success. */
    int dataStatus;

    Request(int index) {
        this(index, new byte[Command.LENGTH]);
    }

    private Request(int index, byte[] sqe) {
        super(index, new UnsafeBuffer(sqe));
        this.sqeBytes = sqe;
    }
}

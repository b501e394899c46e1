package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.rdma.MemoryRegion;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One preallocated NVMe/RDMA command slot. Its SQE (and in-capsule data) live in the queue's registered memory, so the
 * submitter writes the command where the NIC SENDs it from. Ownership moves as in the TCP queue: submitter from the
 * free list until handed to the poller, then the poller until the slot is free again.
 */
final class RdmaRequest {
    static final int FREE = 0;
    static final int CLAIMED = 1;
    static final int INFLIGHT = 2;

    final int index;
    /** Registered memory: the 64-byte SQE, then in-capsule data. */
    final long sendAddress;
    final UnsafeBuffer capsule;
    final Command cmd;
    final SglDescriptor sgl;
    int generation;
    int cid;
    int state = FREE;

    int dir;
    ByteBuffer data;
    int dataStart;
    int dataLength;
    int sendLength;
    /** How the data moves: see RdmaHostQueue.MODE_*. */
    int mode;
    /** Heap buffers: the direct copy the controller transfers to or from. */
    ByteBuffer bounce;
    /** A registration of this I/O alone (bounce buffers, or past the registration cache's bound); closed at completion. */
    MemoryRegion temporary;

    boolean sendDone;
    boolean responseDone;
    boolean timedOut;
    int status;
    long result;
    long deadline;

    IoCallback callback;
    long context;
    CompletionListener listener;

    RdmaRequest(int index, long sendAddress, int capsuleBytes) {
        this.index = index;
        this.sendAddress = sendAddress;
        this.capsule = new UnsafeBuffer(sendAddress, capsuleBytes);
        this.cmd = new Command().wrap(capsule, 0);
        this.sgl = new SglDescriptor().wrap(capsule, Command.DPTR);
    }
}

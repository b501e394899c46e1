package io.nvmeof.initiator.rdma;

import io.nvmeof.initiator.transport.QueueSlot;
import io.nvmeof.rdma.MemoryRegion;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * An NVMe/RDMA command slot. Its SQE and in-capsule data live in the queue's registered memory, so the submitter
 * writes the command where the NIC SENDs it from.
 */
final class RdmaRequest extends QueueSlot {
    /** Registered memory: the 64-byte SQE, then in-capsule data. */
    final long sendAddress;
    int sendLength;
    /** How the data moves: see RdmaHostQueue.MODE_*. */
    int mode;
    /** Heap buffers: the direct copy the controller transfers to or from. */
    ByteBuffer bounce;
    /** A registration of this I/O alone (bounce buffers, or past the registration cache's bound); closed at completion. */
    MemoryRegion temporary;

    int status;
    long result;

    RdmaRequest(int index, long sendAddress, int capsuleBytes) {
        super(index, new UnsafeBuffer(sendAddress, capsuleBytes));
        this.sendAddress = sendAddress;
    }
}

package io.nvmeof.initiator.tcp;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.transport.CompletionListener;
import java.nio.ByteBuffer;

/**
 * A request that found every slot busy. Only this overflow path allocates: the SQE is copied out so the request can
 * take the first slot that frees, in submission order.
 */
final class PendingRequest {
    final byte[] sqe;
    final int dir;
    final ByteBuffer data;
    final int dataStart;
    final int dataLength;
    final IoCallback callback;
    final long context;
    final CompletionListener listener;
    final long enqueuedNanos;

    PendingRequest(byte[] sqe, int dir, ByteBuffer data, int dataStart, int dataLength, IoCallback callback,
                   long context, CompletionListener listener) {
        this.sqe = sqe;
        this.dir = dir;
        this.data = data;
        this.dataStart = dataStart;
        this.dataLength = dataLength;
        this.callback = callback;
        this.context = context;
        this.listener = listener;
        this.enqueuedNanos = System.nanoTime();
    }
}

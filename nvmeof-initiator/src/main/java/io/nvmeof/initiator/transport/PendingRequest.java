package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.IoCallback;
import java.nio.ByteBuffer;

/**
 * A request that found every slot busy. Only this overflow path allocates: the SQE is copied out so the request can
 * take the first slot that frees, in submission order.
 */
record PendingRequest(byte[] sqe, int dir, ByteBuffer data, int dataStart, int dataLength, IoCallback callback,
                      long context, CompletionListener listener, long enqueuedNanos) {
}

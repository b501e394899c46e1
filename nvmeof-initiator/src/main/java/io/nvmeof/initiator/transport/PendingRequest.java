package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.IoCallback;
import java.nio.ByteBuffer;

/**
 * A request without a slot: one that found every slot busy (the overflow queue), or one taken back from a queue that
 * failed so it can be sent again once the controller is reconnected. Only these paths allocate: the SQE is copied
 * out (a new command id and data pointer are filled in when it is sent again). {@code namespace} is what it was
 * submitted for: it is sent again only while that is {@linkplain NamespaceRef#isCurrent() current}.
 */
public record PendingRequest(byte[] sqe, NamespaceRef namespace, int dir, ByteBuffer data, int dataStart,
                             int dataLength, IoCallback callback, long context, CompletionListener listener,
                             long enqueuedNanos) {
}

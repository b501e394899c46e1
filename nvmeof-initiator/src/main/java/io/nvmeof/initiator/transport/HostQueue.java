package io.nvmeof.initiator.transport;

import io.nvmeof.initiator.IoCallback;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import org.agrona.DirectBuffer;

/**
 * One host-side NVMe-oF queue (admin or I/O) of one transport: it only moves command capsules, data and responses.
 * The controller logic (Connect, property access, identify, keep alive) lives above it, in
 * {@link io.nvmeof.initiator.NvmeofController}, once for every transport.
 *
 * <p>Threading: any thread may submit; completions run on the queue's I/O thread (a Netty event loop for TCP, a
 * poller thread for RDMA). Exactly one of the callback or the listener is called once per submission.
 */
public interface HostQueue {
    int DIR_NONE = 0;
    /** Host to controller (write). */
    int DIR_H2C = 1;
    /** Controller to host (read). */
    int DIR_C2H = 2;

    /**
     * Submits a command built from fields (the I/O hot path). CID, PSDT and the data pointer are filled in here.
     * {@code data} is used from absolute index {@code dataStart} for {@code dataLength} bytes; its position and limit
     * are never touched. The NSID is {@code namespace.nsid()}; the command is sent only while
     * {@code namespace.isCurrent()}, checked when it goes on the wire, else it completes with
     * {@link IoCallback#ERR_NAMESPACE_GONE} (use {@link NamespaceRef#fixed} for no such check).
     */
    void submit(int opcode, NamespaceRef namespace, int cdw10, int cdw11, int cdw12, int cdw13, int cdw14, int cdw15,
                int dir, ByteBuffer data, int dataStart, int dataLength,
                IoCallback cb, long ctx, CompletionListener listener);

    /** Submits a command whose 64-byte SQE the caller prepared (admin, Fabrics: {@link NamespaceRef#UNBOUND}). */
    void submit(DirectBuffer sqeTemplate, int dir, ByteBuffer data, int dataStart, int dataLength,
                IoCallback cb, long ctx, CompletionListener listener);

    /**
     * Sends again a request taken back from a failed queue or held while reconnecting: its SQE (a new CID and data
     * pointer are filled in), for the namespace it was first submitted for (checked as {@link #submit} checks it).
     */
    void resubmit(PendingRequest request);

    int qid();

    /** For messages: "queue 3 of 10.0.0.1:4420". */
    String label();

    boolean isOpen();

    /** Why the queue failed, or null. */
    String failure();

    /**
     * Whether the queue failed because the controller's side ended the connection (the peer closed or reset it, an
     * RDMA disconnect), rather than because this host gave up on a silent one (a timeout, an unanswered Keep Alive):
     * a peer that ends the connection has let go of the association, a silent one may still run what it holds until
     * its keep-alive expires.
     */
    default boolean closedByPeer() {
        return false;
    }

    /** Whether the queue failed because this host aborted it ({@link #abort}): it says nothing of the controller. */
    default boolean abortedByHost() {
        return false;
    }

    /** Called once, on the I/O thread, when the queue fails (not when this host closes it). */
    void failureListener(Consumer<HostQueue> listener);

    /**
     * Where requests interrupted by a connection loss go instead of failing (the controller, to send them again after
     * reconnecting); null to fail them.
     */
    default void requeueTo(RequestSink sink) {
    }

    /** Signalled whenever a slot of this queue frees (for callers waiting for room). */
    default void roomSignal(RoomSignal signal) {
    }

    /** Commands holding a slot plus requests waiting for one: what picking the least loaded queue compares. */
    default int load() {
        return 0;
    }

    /** True when the queue is open and a submission would get a slot at once (not wait in the overflow queue). */
    default boolean hasRoom() {
        return isOpen();
    }

    /** This queue's counters. */
    io.nvmeof.initiator.QueueStatistics statistics();

    /** The controller's largest transfer became known (after Identify): size receive limits by it. */
    default void maxTransfer(long bytes) {
    }

    /**
     * Fails the queue as a lost connection would ({@link IoCallback#ERR_TRANSPORT}, or to the {@link RequestSink}),
     * and returns once it did (bounded). Not for the queue's own I/O thread.
     */
    void abort(String reason);

    /**
     * Closes the queue; everything outstanding or waiting completes with {@link IoCallback#ERR_CLOSED}, except on a
     * queue that failed first (its connection lost), where it goes on as after the failure ({@link #abort}).
     */
    void close();
}

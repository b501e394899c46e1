package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.LateCompletions;
import io.nvmeof.initiator.transport.NamespaceRef;
import io.nvmeof.initiator.transport.PendingRequest;
import io.nvmeof.protocol.Command;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The requests a controller holds while it reconnects: those its failed queues handed back and those submitted
 * meanwhile (it is the queue {@link NvmeofController#pickQueue()} gives out then). Once reconnected they are sent
 * again on the new queues; when the controller gives up, fails fast or is closed, they fail. Each request leaves
 * exactly once: every path takes it with {@code poll()}.
 *
 * <p>A request whose namespace was removed or replaced meanwhile (its {@link NamespaceRef} no longer current) is
 * never sent again: it fails with {@link IoCallback#ERR_NAMESPACE_GONE}.
 *
 * <p>Only the reconnect path allocates (an SQE copy per request), never the steady-state I/O path.
 */
final class HeldRequests implements HostQueue {
    /** What the holder needs of its controller. */
    interface Owner {
        ControllerState state();

        /** I/O is past the fast-fail timeout: fail instead of holding. */
        boolean failFast();

        /** True when requests may be held at all (reconnecting is enabled and the controller not closed). */
        boolean holds();

        /** An open I/O queue to send a request on now, or null. */
        HostQueue liveQueue();

        /** No queue is open although the controller thinks it is connected: start reconnecting. */
        void noLiveQueue();

        /** The last failure, for messages. */
        String lastFailure();
    }

    private final Owner owner;
    private final String label;
    private final ConcurrentLinkedQueue<PendingRequest> held = new ConcurrentLinkedQueue<>();
    private final AtomicInteger count = new AtomicInteger();

    HeldRequests(Owner owner, String label) {
        this.owner = owner;
        this.label = label;
    }

    int size() {
        return count.get();
    }

    /**
     * Holds {@code p} while the controller reconnects; false when it will not be held (not reconnecting, fast fail,
     * failed, closed): the caller fails it.
     */
    boolean hold(PendingRequest p) {
        if (!p.namespace().isCurrent()) {
            failLater(p, IoCallback.ERR_NAMESPACE_GONE); // would never be sent again: fail it now, as it is
            return true;
        }
        if (!owner.holds() || owner.failFast() || p.namespace().failsOver()) {
            return false; // a multipath I/O goes back to its multipath namespace, which picks another path
        }
        ControllerState s = owner.state();
        if (s == ControllerState.FAILED || s == ControllerState.CLOSED) {
            return false;
        }
        count.incrementAndGet();
        held.add(p);
        // The state may have moved on while adding (reconnected, gave up): then nobody else drains this one.
        ControllerState after = owner.state();
        if (after != ControllerState.RECONNECTING || owner.failFast()) {
            drain();
        }
        return true;
    }

    /** Sends the held requests again (connected), or fails them (failed, closed, fast fail); holds them otherwise. */
    void drain() {
        PendingRequest p;
        while ((p = held.poll()) != null) {
            ControllerState s = owner.state();
            HostQueue q = s == ControllerState.CONNECTED ? owner.liveQueue() : null;
            boolean fail = s == ControllerState.FAILED || s == ControllerState.CLOSED || owner.failFast();
            if (q == null && !fail) {
                held.add(p); // still reconnecting: the reconnect drains it (NVMe does not order commands anyway)
                return;
            }
            count.decrementAndGet();
            if (!p.namespace().isCurrent()) {
                // Its namespace was removed or replaced while the controller reconnected (the reconnect retires the
                // handle before it publishes CONNECTED, so a drain that saw CONNECTED sees that): the NSID may name
                // another volume now. The queue checks again as it sends.
                failLater(p, IoCallback.ERR_NAMESPACE_GONE);
            } else if (q != null) {
                q.resubmit(p);
            } else {
                failLater(p, s == ControllerState.CLOSED ? IoCallback.ERR_CLOSED : IoCallback.ERR_TRANSPORT);
            }
        }
    }

    private static void failLater(PendingRequest p, int code) {
        LateCompletions.execute(() -> {
            if (p.callback() != null) {
                p.callback().onComplete(p.context(), code);
            } else if (p.listener() != null) {
                p.listener().onCompletion(code, 0);
            }
        });
    }

    // ------------------------------------------------------------------------------------------ as a HostQueue

    @Override
    public void submit(int opcode, NamespaceRef namespace, int cdw10, int cdw11, int cdw12, int cdw13, int cdw14,
                       int cdw15, int dir, ByteBuffer data, int dataStart, int dataLength,
                       IoCallback cb, long ctx, CompletionListener listener) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(opcode).nsid(namespace.nsid()).cdw10(cdw10).cdw11(cdw11)
                .cdw12(cdw12).cdw13(cdw13).cdw(14, cdw14).cdw(15, cdw15);
        take(new PendingRequest(sqe.byteArray(), namespace, dir, data, dataStart, dataLength, cb, ctx, listener,
                System.nanoTime()));
    }

    @Override
    public void submit(DirectBuffer sqeTemplate, int dir, ByteBuffer data, int dataStart, int dataLength,
                       IoCallback cb, long ctx, CompletionListener listener) {
        byte[] sqe = new byte[Command.LENGTH];
        sqeTemplate.getBytes(0, sqe);
        take(new PendingRequest(sqe, NamespaceRef.UNBOUND, dir, data, dataStart, dataLength, cb, ctx, listener,
                System.nanoTime()));
    }

    @Override
    public void resubmit(PendingRequest request) {
        take(request);
    }

    private void take(PendingRequest p) {
        if (owner.state() == ControllerState.CONNECTED) {
            // Connected but no queue is open: the queues are failing right now; reconnecting starts.
            owner.noLiveQueue();
        }
        if (!hold(p)) {
            failLater(p, owner.state() == ControllerState.CLOSED ? IoCallback.ERR_CLOSED : IoCallback.ERR_TRANSPORT);
        }
    }

    @Override
    public int qid() {
        return -1;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public boolean isOpen() {
        return false;
    }

    @Override
    public String failure() {
        return owner.lastFailure();
    }

    @Override
    public void failureListener(Consumer<HostQueue> listener) {
    }

    @Override
    public QueueStatistics statistics() {
        return new QueueStatistics(label, 0, 0, count.get(), 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    @Override
    public void abort(String reason) {
    }

    @Override
    public void close() {
    }
}

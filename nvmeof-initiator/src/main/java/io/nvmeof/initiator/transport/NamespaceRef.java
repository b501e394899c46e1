package io.nvmeof.initiator.transport;

/**
 * The namespace a command is for, as its submitter knows it: the NSID to put in the command, and whether that NSID
 * still names the namespace the submitter took it for. The host checks {@link #isCurrent()} on the thread that sends
 * the command, just before it goes on the wire (first send, a send from the overflow queue, a send after a reconnect):
 * a request of a namespace that was removed or replaced since it was submitted fails with
 * {@link io.nvmeof.initiator.IoCallback#ERR_NAMESPACE_GONE} instead of reaching whatever the NSID names now.
 *
 * <p>{@link io.nvmeof.initiator.NamespaceHandle} is one; admin commands and raw callers that manage identity
 * themselves use {@link #fixed} (always current).
 */
public interface NamespaceRef {
    /** The NSID put in the command's SQE. */
    long nsid();

    /**
     * False once the namespace was removed or replaced: the request must not be sent (again). Called once per command
     * on the sending thread; must be cheap (a volatile read) and never block.
     */
    boolean isCurrent();

    /**
     * True when a request interrupted by a connection loss, or submitted while the controller reconnects, fails at
     * once with {@link io.nvmeof.initiator.IoCallback#ERR_TRANSPORT} instead of being held for the reconnect: a
     * multipath I/O, which another path can serve now (as Linux fails over a REQ_NVME_MPATH request instead of
     * requeueing it on its own controller).
     */
    default boolean failsOver() {
        return false;
    }

    /** Commands whose SQE the caller prepared (admin, Fabrics): not bound to a namespace's identity. */
    NamespaceRef UNBOUND = fixed(0);

    /** NSID {@code nsid} with no identity to check: always current. */
    static NamespaceRef fixed(long nsid) {
        return new NamespaceRef() {
            @Override
            public long nsid() {
                return nsid;
            }

            @Override
            public boolean isCurrent() {
                return true;
            }

            @Override
            public String toString() {
                return "nsid " + nsid;
            }
        };
    }
}

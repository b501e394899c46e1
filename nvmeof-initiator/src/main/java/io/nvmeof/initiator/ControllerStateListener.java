package io.nvmeof.initiator;

import java.util.List;

/**
 * Told when a controller's state changes, and when its namespaces change. Runs on the controller's housekeeping
 * thread, one call at a time (except {@link ControllerState#CLOSED}, reported on the thread that called close); it
 * may call the controller (even its blocking methods) but should return soon.
 */
@FunctionalInterface
public interface ControllerStateListener {
    /** @param reason why, for logs (the failure that started a reconnect, or "reconnected") */
    void stateChanged(NvmeofController controller, ControllerState state, String reason);

    /**
     * The active namespaces changed (a Namespace Attribute Changed event, a rescan, or a reconnect found others): one
     * appeared or went, one was replaced under its NSID (its old handle is retired: {@link NamespaceHandle#isCurrent()}
     * false), or one's size changed (same handle, new {@link NamespaceHandle#blockCount()}).
     *
     * @param namespaces the active namespaces now
     */
    default void namespacesChanged(NvmeofController controller, List<NamespaceHandle> namespaces) {
    }
}

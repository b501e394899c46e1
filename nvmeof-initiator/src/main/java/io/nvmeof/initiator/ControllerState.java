package io.nvmeof.initiator;

/** Where a controller's association stands; see {@link ControllerStateListener}. */
public enum ControllerState {
    /** Every queue is connected; I/O flows. */
    CONNECTED,
    /**
     * The connection was lost (a queue failed, a command timed out, a keep alive went unanswered): the controller
     * reconnects every {@link ConnectOptions#reconnectDelay()} and holds I/O meanwhile (see
     * {@link ConnectOptions#fastIoFailTimeout()}).
     */
    RECONNECTING,
    /** Reconnecting failed for {@link ConnectOptions#ctrlLossTimeout()}: every request fails; close the controller. */
    FAILED,
    /** Closed by this host. */
    CLOSED
}

package io.nvmeof.tgt.tcp;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.FastThreadLocal;
import io.nvmeof.tgt.core.StorageRing;
import io.nvmeof.uring.UringException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The io_uring of each NVMe/TCP poll group (an event loop), set up on the loop's thread the first time one of its queues
 * serves a namespace with direct I/O, and closed when the loop ends. The ring is polled by a task on the loop: it runs
 * after the loop's current batch of socket reads (so a batch's commands reach the device with one system call), and
 * queues itself again while anything is in the ring, as SPDK's pollers do.
 */
final class LoopStorageRing {
    private static final Logger LOG = LoggerFactory.getLogger(LoopStorageRing.class);
    /** Requests in flight to the devices per poll group ({@code -Dnvmeof.uring.depth}). */
    static final int DEPTH = Integer.getInteger("nvmeof.uring.depth", StorageRing.DEFAULT_DEPTH);

    private static final FastThreadLocal<StorageRing> RINGS = new FastThreadLocal<>();
    private static volatile boolean failureLogged;

    private LoopStorageRing() {
    }

    /** This loop's ring, set up now if it has none; null when it cannot have one (the namespace is served blocking). */
    static StorageRing of(EventLoop loop) {
        StorageRing ring = RINGS.get();
        if (ring != null || !loop.inEventLoop()) {
            return ring;
        }
        Runnable[] pollTask = new Runnable[1];
        try {
            ring = new StorageRing(DEPTH, () -> loop.execute(pollTask[0]));
        } catch (UringException e) {
            if (!failureLogged) {
                failureLogged = true;
                LOG.warn("no io_uring for the poll groups ({}): direct namespaces are served with blocking I/O",
                        e.getMessage());
            }
            return null;
        }
        StorageRing made = ring;
        pollTask[0] = made::pollFromTask;
        RINGS.set(made);
        loop.terminationFuture().addListener(f -> {
            try {
                made.close();
            } catch (UringException e) {
                LOG.warn("closing a poll group's io_uring: {}", e.getMessage());
            }
        });
        return made;
    }
}

package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's Keep Alive: sent every KATO/2 on the admin queue while connected; one left unanswered for KATO
 * means the controller stopped responding, and starts a reconnect.
 */
final class KeepAlive {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);

    private final NvmeofController ctrl;
    private final int kato;
    private ScheduledFuture<?> keepAliveTask;
    /** When the outstanding Keep Alive was sent (System.nanoTime), 0 when none is outstanding. */
    private volatile long keepAliveSent;
    private volatile long lastKeepAlive;

    KeepAlive(NvmeofController ctrl) {
        this.ctrl = ctrl;
        this.kato = ctrl.kato;
    }

    /** After an association is up: starts the ticks (none when KATO is 0). */
    void start() {
        if (kato > 0) {
            // Linux sends Keep Alive every KATO/2 (without Traffic Based Keep Alive); so do we. The tick runs four
            // times per KATO so a Keep Alive left unanswered for KATO is noticed within KATO + KATO/4.
            keepAliveSent = 0;
            lastKeepAlive = System.nanoTime();
            long tick = Math.max(5, kato / 4);
            keepAliveTask = ctrl.housekeeping.scheduleAtFixedRate(this::keepAliveTick, tick, tick, TimeUnit.MILLISECONDS);
        }
    }

    /** Stops the ticks (the association is torn down, or the controller closes). */
    void stop() {
        if (keepAliveTask != null) {
            keepAliveTask.cancel(false);
            keepAliveTask = null;
        }
    }

    /** Housekeeping thread, four times per KATO: sends Keep Alive every KATO/2; one unanswered for KATO is a loss. */
    private void keepAliveTick() {
        if (ctrl.state.get() != ControllerState.CONNECTED) {
            return;
        }
        long now = System.nanoTime();
        long sent = keepAliveSent;
        if (sent != 0) {
            if (now - sent >= TimeUnit.MILLISECONDS.toNanos(kato)) {
                ctrl.recovery.keepAliveLost("Keep Alive got no answer within KATO (" + kato + " ms): the controller"
                        + " stopped responding", ctrl.generation);
            }
            return;
        }
        if (now - lastKeepAlive < TimeUnit.MILLISECONDS.toNanos(kato / 2)) {
            return;
        }
        lastKeepAlive = now;
        keepAliveSent = now;
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_KEEP_ALIVE);
        ctrl.admin.submit(sqe, HostQueue.DIR_NONE, null, 0, 0, null, 0, (status, result) -> {
            keepAliveSent = 0;
            if (status > 0 && !ctrl.closed.get()) {
                LOG.warn("{}: Keep Alive failed: {}", ctrl.id, IoCallback.describe(status));
            }
        });
    }
}

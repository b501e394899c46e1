package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.reservation.ReservationNotificationLog;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's Asynchronous Event Requests: keeps one outstanding per association, reads the log page an event
 * names (which clears it), and rescans the namespaces on Namespace Attribute Changed.
 */
final class AsyncEvents {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);

    private final NvmeofController ctrl;
    private final TransportId id;

    AsyncEvents(NvmeofController ctrl) {
        this.ctrl = ctrl;
        this.id = ctrl.id;
    }

    /**
     * Enables Namespace Attribute Changed notices, and ANA Change notices where the controller reports ANA and sends
     * them (OAES bit 11: a bit the controller does not support may be refused, which would leave no notices at all),
     * and keeps one Asynchronous Event Request outstanding.
     */
    void arm(int gen) {
        ControllerInfo info = ctrl.info;
        int config = Features.AEC_NS_ATTRIBUTE
                | (info.anaReporting() && info.anaChangeNotices() ? Features.AEC_ANA_CHANGE : 0);
        try {
            ctrl.adminCommands.setFeature(Opcodes.FEAT_ASYNC_EVENT_CONFIG, config);
        } catch (NvmeofException e) {
            LOG.debug("{}: no asynchronous event configuration ({}); namespace changes are seen at reconnect only", id,
                    e.getMessage());
            return;
        }
        submitAsyncEventRequest(gen);
    }

    private void submitAsyncEventRequest(int gen) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST);
        ctrl.admin.submit(sqe, HostQueue.DIR_NONE, null, 0, 0, null, 0, (status, result) -> {
            if (status != 0 || gen != ctrl.generation || ctrl.closed.get()) {
                return; // aborted with its queue, or not supported: a reconnect arms a new one
            }
            int dw0 = (int) result;
            ctrl.housekeep(() -> onAsyncEvent(dw0, gen));
        });
    }

    /** Notices read from the Reservation Notification log, oldest first, until the application takes them. */
    final java.util.concurrent.ConcurrentLinkedQueue<ReservationNotice> reservationNotices =
            new java.util.concurrent.ConcurrentLinkedQueue<>();

    /** Reads the Reservation Notification log until it reads empty (each read takes one notice). */
    private void readReservationNotices() {
        for (int i = 0; i < 256; i++) {
            byte[] page = ctrl.adminCommands.getLogPage(Opcodes.LOG_RESERVATION_NOTIFICATION, 0xFFFF_FFFFL,
                    ReservationNotificationLog.LENGTH, 0);
            ReservationNotificationLog log = new ReservationNotificationLog().wrap(new UnsafeBuffer(page), 0);
            if (log.count() == 0) {
                return;
            }
            reservationNotices.add(new ReservationNotice(log.count(), log.type(), log.nsid()));
            if (log.available() == 0) {
                return;
            }
        }
    }

    /** Housekeeping thread: a completed Asynchronous Event Request; reads its log page (which clears it), re-arms. */
    private void onAsyncEvent(int dw0, int gen) {
        int type = dw0 & 0x7;
        int info = (dw0 >>> 8) & 0xFF;
        int lid = (dw0 >>> 16) & 0xFF;
        LOG.debug("{}: asynchronous event type {} info {} log 0x{}", id, type, info, Integer.toHexString(lid));
        try {
            if (lid == Opcodes.LOG_RESERVATION_NOTIFICATION) {
                readReservationNotices();
            } else if (lid == Opcodes.LOG_ANA) {
                ctrl.anaStates.refresh(); // reading the whole log clears the notice
            } else if (lid != 0) {
                ctrl.adminCommands.getLogPage(lid, 0xFFFF_FFFFL, lid == Opcodes.LOG_CHANGED_NAMESPACE_LIST ? 4096 : 64, 0);
            }
            if (type == Features.AER_TYPE_NOTICE && info == Features.AER_INFO_NS_ATTRIBUTE_CHANGED) {
                ctrl.namespaceScanner.rescan();
            }
        } catch (NvmeofException e) {
            LOG.warn("{}: handling an asynchronous event: {}", id, e.getMessage());
        } finally {
            // Re-armed however this event's handling went, as Linux does: a log page or rescan the controller got
            // wrong must not end its events until the next reconnect.
            if (gen == ctrl.generation && ctrl.state.get() == ControllerState.CONNECTED && !ctrl.closed.get()) {
                submitAsyncEventRequest(gen);
            }
        }
    }
}

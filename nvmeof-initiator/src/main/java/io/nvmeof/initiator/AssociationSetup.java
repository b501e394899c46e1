package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings one association of a controller up and down: admin queue and Connect, CC.EN and CSTS.RDY, Identify, the
 * number and depth of I/O queues and their Connects; and at close the orderly shutdown (CC.SHN). The first connect and
 * every reconnect attempt run the same {@link #establish}.
 */
final class AssociationSetup {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);
    /** Admin queue: 32 entries, SQSIZE 31 on the wire, as the Linux host (NVME_AQ_DEPTH). */
    static final int ADMIN_QUEUE_DEPTH = 32;
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    private final NvmeofController ctrl;
    private final TransportId id;
    private final ConnectOptions options;
    /** CC as written at enable; the shutdown writes it back with SHN set. Under the association lock. */
    private long cc;
    /** A reconnect attempt changed the namespaces but failed before reporting it. Under the association lock. */
    private boolean namespacesUnreported;

    AssociationSetup(NvmeofController ctrl) {
        this.ctrl = ctrl;
        this.id = ctrl.id;
        this.options = ctrl.options;
    }

    /**
     * Builds one association: admin queue, enable, identify, I/O queues. Under {@link NvmeofController#association}.
     */
    void establish(int gen) {
        LOG.debug("connecting to {} as {}", id, options.hostNqn());
        // The admin queue carries no in-capsule data but Fabrics commands' (NVMe/TCP); NVMe/RDMA hosts send none
        // on it at all (the controller advertises in-capsule data for I/O queues only).
        HostQueue admin = ctrl.transport.connectQueue(0, ADMIN_QUEUE_DEPTH - 1, 0, ctrl.transport.maxTransferCap());
        ctrl.admin = admin;
        admin.failureListener(q -> ctrl.recovery.onQueueFailure(q, gen));

        int dw0 = ctrl.adminCommands.fabricsConnect(admin, 0, ADMIN_QUEUE_DEPTH - 1, ctrl.kato,
                ConnectData.CNTLID_DYNAMIC);
        ctrl.cntlid = dw0 & 0xFFFF; // DH-HMAC-CHAP, when the controller asks for it, ran inside fabricsConnect
        ctrl.cap = ctrl.adminCommands.propertyGet(ControllerRegisters.CAP, 8);
        ctrl.vs = ctrl.adminCommands.propertyGet(ControllerRegisters.VS, 4);
        enable();

        long pageSize = 1L << (12 + ((ctrl.cap >>> 48) & 0xF));
        ControllerInfo info = ControllerInfo.decode(ctrl.adminCommands.identify(Opcodes.CNS_CONTROLLER, 0), pageSize);
        ctrl.info = info;
        long cap = ctrl.transport.maxTransferCap();
        ctrl.maxTransfer = info.mdts() > 0 ? Math.min(info.mdts(), cap) : ctrl.transport.maxTransferWithoutMdts(admin);
        if (info.mdts() > cap) {
            LOG.info("{}: MDTS {} bytes capped to {} bytes per command", id, info.mdts(), cap);
        }
        admin.maxTransfer(ctrl.maxTransfer);
        LOG.info("connected to {}: cntlid {}, {} {} fw {}, NVMe {}", id, ctrl.cntlid, info.model(), info.serial(),
                info.firmware(), info.versionString());

        if (!isDiscoveryController()) {
            int count = negotiateQueueCount();
            // Remembered until reported: an attempt that found the change may fail after it (the next one then
            // finds nothing new), and the change must still be told.
            namespacesUnreported |= ctrl.namespaceScanner.identifyNamespaces() && gen > 0;
            ctrl.anaStates.refresh();
            connectIoQueues(count, gen);
            if (namespacesUnreported) {
                namespacesUnreported = false;
                ctrl.namespaceScanner.report();
            }
        }
    }

    private boolean isDiscoveryController() {
        return ctrl.discovery || ctrl.info.controllerType() == IdentifyController.CNTRLTYPE_DISCOVERY;
    }

    /** After an association is up: keep alive, asynchronous events. */
    void started() {
        ctrl.keepAlive.start();
        if (!isDiscoveryController()) {
            ctrl.asyncEvents.arm(ctrl.generation);
        }
    }

    private void enable() {
        // CC: EN=1, CSS=NVM (0), MPS=0 (4 KiB), AMS round robin, IOSQES=6 (64 B), IOCQES=4 (16 B), as Linux.
        cc = ControllerRegisters.CC_ENABLE_DEFAULT;
        ctrl.adminCommands.propertySet(ControllerRegisters.CC, 4, cc);
        long timeoutMs = (ControllerRegisters.capTimeout500ms(ctrl.cap) + 1) * 500;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        long sleep = 1;
        while (true) {
            long csts = ctrl.adminCommands.propertyGet(ControllerRegisters.CSTS, 4);
            if ((csts & ControllerRegisters.CSTS_CFS) != 0) {
                throw new NvmeofException("controller " + id + " reports Controller Fatal Status (CSTS=0x"
                        + Long.toHexString(csts) + ") while enabling");
            }
            if (ControllerRegisters.cstsReady(csts)) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new NvmeofTimeoutException("controller " + id + " did not become ready (CSTS.RDY) within "
                        + timeoutMs + " ms (CAP.TO) after CC.EN=1");
            }
            sleepMs(sleep);
            sleep = Math.min(50, sleep * 2);
        }
    }

    /** Set Features Number of Queues: asks for {@code ioQueues} SQs and CQs, uses min(granted, asked). */
    private int negotiateQueueCount() {
        int asked = options.ioQueues();
        int dw0 = ctrl.adminCommands.setFeature(Opcodes.FEAT_NUMBER_OF_QUEUES, Features.numberOfQueues(asked, asked));
        int granted = Math.min(Features.submissionQueues(dw0), Features.completionQueues(dw0));
        int count = Math.min(asked, granted);
        if (count < asked) {
            LOG.info("{}: asked for {} I/O queues, controller grants {}", id, asked, granted);
        }
        return count;
    }

    private void connectIoQueues(int count, int gen) {
        ControllerInfo info = ctrl.info;
        // Depth: as asked, but within CAP.MQES (0-based) and MAXCMD, as the Linux host clamps it.
        int depth = options.queueDepth();
        long mqes = ControllerRegisters.capMqes(ctrl.cap) + 1;
        if (depth > mqes) {
            LOG.info("{}: queue depth {} clamped to CAP.MQES+1 = {}", id, depth, mqes);
            depth = (int) mqes;
        }
        if (info.maxcmd() > 0 && depth > info.maxcmd()) {
            LOG.info("{}: queue depth {} clamped to MAXCMD {}", id, depth, info.maxcmd());
            depth = info.maxcmd();
        }
        if (depth < 2) {
            throw new NvmeofException("controller " + id + " allows a queue depth of " + depth + "; at least 2 is needed");
        }
        ctrl.queueDepth = depth;
        // In-capsule data: IOCCSZ counts the 64-byte SQE in 16-byte units. A non-zero ICDOFF is refused for
        // in-capsule use, as the Linux host does; such writes go through R2T instead.
        long capsuleData = Math.max(0, info.ioccsz() * 16 - Command.LENGTH);
        // Over TCP all of it by default: Linux nvmet-tcp sends no R2T for a write within its in-capsule size.
        int cap = options.maxInlineData() >= 0 ? options.maxInlineData()
                : "tcp".equals(id.trtype()) ? Integer.MAX_VALUE : ConnectOptions.DEFAULT_MAX_INLINE_DATA;
        int inline = info.icdoff() != 0 ? 0 : (int) Math.min(capsuleData, cap);
        HostQueue[] queues = new HostQueue[count];
        try {
            for (int qid = 1; qid <= count; qid++) {
                // depth - 1 slots: one SQ entry stays empty so a full SQ is distinguishable from an empty one.
                HostQueue q = ctrl.transport.connectQueue(qid, depth - 1, inline, ctrl.maxTransfer);
                queues[qid - 1] = q;
                watch(q, gen);
                // I/O queue Connect: same host id/NQN, the admin queue's CNTLID, KATO 0 (keep alive is per controller).
                ctrl.adminCommands.fabricsConnect(q, qid, depth - 1, 0, ctrl.cntlid);
            }
        } catch (RuntimeException e) {
            NvmeofController.closeAll(queues);
            throw e;
        }
        ctrl.ioQueues = queues;
        LOG.debug("{}: {} I/O queues of depth {}, in-capsule limit {} bytes", id, count, depth, inline);
    }

    /** Each I/O queue: reports its failure, hands back interrupted requests, signals freed slots. */
    private void watch(HostQueue q, int gen) {
        Reconnector recovery = ctrl.recovery;
        q.failureListener(x -> recovery.onQueueFailure(x, gen));
        q.roomSignal(ctrl.room);
        if (recovery.reconnects()) {
            HeldRequests held = ctrl.held;
            q.requeueTo(p -> {
                recovery.onQueueFailure(q, gen);
                // A Fabrics Connect belongs to the association being built: it fails, and the attempt with it.
                return (p.sqe()[0] & 0xFF) != Opcodes.FABRICS && held.hold(p);
            });
        }
    }

    /** CC.SHN = normal, then CSTS.SHST polled until complete; every step within {@code deadline}. */
    void shutdownController(long deadline) {
        long shn = (cc & ~(0x3L << 14)) | ((long) ControllerRegisters.SHN_NORMAL << 14);
        UnsafeBuffer sqe = AdminCommands.propertySetCommand(ControllerRegisters.CC, 4, shn);
        ctrl.adminCommands.executeUntil("Property Set (CC.SHN)", sqe, deadline);
        long sleep = 1;
        while (System.nanoTime() - deadline < 0) {
            long csts = ctrl.adminCommands.executeUntil("Property Get (CSTS)",
                    AdminCommands.propertyGetCommand(ControllerRegisters.CSTS, 4), deadline) & 0xFFFF_FFFFL;
            if (ControllerRegisters.cstsShst(csts) == ControllerRegisters.SHST_COMPLETE) {
                return;
            }
            sleepMs(sleep);
            sleep = Math.min(50, sleep * 2);
        }
        LOG.warn("{}: shutdown did not complete within {} ms", id, SHUTDOWN_TIMEOUT.toMillis());
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException("interrupted", e);
        }
    }
}

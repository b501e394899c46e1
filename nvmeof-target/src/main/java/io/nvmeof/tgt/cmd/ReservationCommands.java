package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.reservation.ReservationKeys;
import io.nvmeof.protocol.reservation.ReservationStatusExtended;
import io.nvmeof.protocol.reservation.Reservations;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.NamespaceReservations;
import io.nvmeof.tgt.core.PreemptedCommands;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Reservation Register, Report, Acquire and Release (NVM Command Set; NVMe Base 2.0 section 8.19) and the admin side
 * of reservations: the Reservation Notification Mask and Reservation Persistence features. The state and its rules
 * are the namespace's {@link NamespaceReservations}; this parses the commands, runs a change that must persist (PTPL
 * on) off the poll group, and delivers the notices a change makes to the controllers of the hosts concerned.
 *
 * <p>Preempt and Abort preempts as Preempt does and does not abort: a command the preempted host had already started
 * on the namespace completes, and every command after the preempt is checked against the new reservation (Linux
 * nvmet does not abort either: it refuses the preempted hosts' new commands and waits for their commands in flight
 * before it completes the Acquire).
 *
 * <p>A Flush of all namespaces (NSID FFFFFFFFh) is not checked against the namespaces' reservations: it names no one
 * namespace, and changes no data.
 */
public final class ReservationCommands {
    /** The most host data a Register, Acquire or Release may carry (hosts may send a whole page, as with DSM). */
    private static final int MAX_KEY_DATA = 4096;

    private ReservationCommands() {
    }

    /**
     * Whether the request's subsystem offers no reservations ({@link Subsystem#reservationsUnavailable}): its host is
     * refused (Invalid Opcode, as a controller whose ONCS lacks them), and the log says why, once per subsystem.
     */
    static boolean unavailable(Request req) {
        Subsystem s = req.sq().controller().subsystem();
        String why = s.reservationsUnavailable();
        if (why != null && s.noteReservationsRefused()) {
            org.slf4j.LoggerFactory.getLogger(ReservationCommands.class).warn("a reservation command was refused: {}",
                    why);
        }
        return why != null;
    }

    /** Parses a reservation command on {@code req.ns}; returns a status. */
    static int parse(Request req) {
        Command cmd = req.cmd;
        int cdw10 = cmd.cdw10();
        switch (cmd.opcode()) {
            case Opcodes.IO_RESERVATION_REGISTER:
                return keys(req, Reservations.TWO_KEYS_LENGTH, ReservationCommands::executeRegister);
            case Opcodes.IO_RESERVATION_ACQUIRE:
                // IEKEY is for Register only since NVMe 1.3 (RESCAP bit 7 says so); RTYPE must name a type.
                if (Reservations.ignoreExistingKey(cdw10) || !Reservations.validType(Reservations.type(cdw10))) {
                    req.errorLocation = Command.CDW10;
                    return Status.INVALID_FIELD | Status.DNR;
                }
                return keys(req, Reservations.TWO_KEYS_LENGTH, ReservationCommands::executeAcquire);
            case Opcodes.IO_RESERVATION_RELEASE:
                if (Reservations.ignoreExistingKey(cdw10)) {
                    req.errorLocation = Command.CDW10;
                    return Status.INVALID_FIELD | Status.DNR;
                }
                return keys(req, Reservations.ONE_KEY_LENGTH, ReservationCommands::executeRelease);
            case Opcodes.IO_RESERVATION_REPORT: {
                // Fabrics hosts have 128-bit host identifiers: only the extended structure can carry them (nvmet and
                // SPDK answer the same).
                if (!Reservations.extendedDataStructure(cmd.cdw11())) {
                    req.errorLocation = Command.CDW11;
                    return Status.HOST_ID_INCONSISTENT | Status.DNR;
                }
                long length = Reservations.reportLength(cdw10);
                if (length > req.sq().core().limits().maxTransferSize()) {
                    req.errorLocation = Command.CDW10;
                    return Status.INVALID_FIELD | Status.DNR;
                }
                req.transferLength = (int) length;
                req.direction = Request.DIR_CONTROLLER_TO_HOST;
                req.execute = ReservationCommands::executeReport;
                return Status.SUCCESS;
            }
            default:
                req.errorLocation = Command.OPCODE;
                return Status.INVALID_OPCODE | Status.DNR;
        }
    }

    /** A command whose host data holds its keys: at least {@code needed} bytes, as long as the host's SGL says. */
    private static int keys(Request req, int needed, io.nvmeof.tgt.core.RequestHandler execute) {
        long sgl = req.sglLength();
        if (sgl < needed || sgl > MAX_KEY_DATA) {
            req.errorLocation = Command.DPTR;
            return Status.INVALID_FIELD | Status.DNR;
        }
        req.transferLength = (int) sgl;
        req.direction = Request.DIR_HOST_TO_CONTROLLER;
        req.execute = execute;
        return Status.SUCCESS;
    }

    // The keys are read on the queue's thread, before anything else: NVMe/TCP in-capsule data may be a view of the
    // receive buffer, valid only until the command has been submitted.

    static void executeRegister(Request req) {
        ReservationKeys keys = new ReservationKeys().wrap(req.dataView(), 0);
        long current = keys.currentKey();
        long next = keys.newKey();
        int cdw10 = req.cmd.cdw10();
        int cptpl = Reservations.changePersistThroughPowerLoss(cdw10);
        UUID host = req.sq().controller().hostUuid();
        NamespaceReservations r = req.ns.reservations();
        change(req, r.changeIsPersisted(cptpl), (rs, notices) -> rs.register(host, Reservations.action(cdw10),
                Reservations.ignoreExistingKey(cdw10), cptpl, current, next, notices));
    }

    static void executeAcquire(Request req) {
        ReservationKeys keys = new ReservationKeys().wrap(req.dataView(), 0);
        long current = keys.currentKey();
        long preempt = keys.preemptKey();
        int cdw10 = req.cmd.cdw10();
        UUID host = req.sq().controller().hostUuid();
        int action = Reservations.action(cdw10);
        // Preempt and Abort fences the preempted hosts: it completes only once none of their commands for the
        // namespace is still in flight (as nvmet waits for them), so it waits off the poll group.
        boolean fence = action == Reservations.PREEMPT_AND_ABORT;
        Namespace ns = req.ns;
        Subsystem subsystem = req.sq().controller().subsystem();
        change(req, fence || ns.reservations().changeIsPersisted(Reservations.CPTPL_NO_CHANGE), (rs, notices) -> {
            int status = rs.acquire(host, action, Reservations.type(cdw10), current, preempt, notices);
            if (status == Status.SUCCESS && fence) {
                PreemptedCommands.awaitDone(ns, host, subsystem);
            }
            return status;
        });
    }

    static void executeRelease(Request req) {
        long current = new ReservationKeys().<ReservationKeys>wrap(req.dataView(), 0).currentKey();
        int cdw10 = req.cmd.cdw10();
        UUID host = req.sq().controller().hostUuid();
        change(req, req.ns.reservations().changeIsPersisted(Reservations.CPTPL_NO_CHANGE), (rs, notices) ->
                rs.release(host, Reservations.action(cdw10), Reservations.type(cdw10), current, notices));
    }

    /** One change to a namespace's reservations; returns the status and adds the notices it makes. */
    private interface Change {
        int apply(NamespaceReservations reservations, List<NamespaceReservations.Notice> notices);
    }

    /**
     * Makes the change, then tells the hosts it concerns. One that must persist (PTPL) writes a file and syncs it, so
     * it runs in the namespace's flush lane, off the poll group.
     */
    private static void change(Request req, boolean persisted, Change change) {
        Namespace ns = req.ns;
        Subsystem subsystem = req.sq().controller().subsystem();
        TargetCore.BackendCall call = r -> {
            List<NamespaceReservations.Notice> notices = new ArrayList<>();
            int status = change.apply(ns.reservations(), notices);
            if (status == Status.SUCCESS) { // a change that failed (not saved) was undone: nothing to tell
                notify(subsystem, ns.nsid(), notices);
            }
            return status;
        };
        if (persisted) {
            req.sq().core().executeOffPollGroup(req, TargetCore.BackendKind.FLUSH, call, Status.INTERNAL);
            return;
        }
        int status;
        try {
            status = call.run(req);
        } catch (java.io.IOException e) {
            status = Status.INTERNAL; // not thrown: nothing is written while PTPL is off
        }
        req.complete(status);
    }

    /** Queues each notice in the Reservation Notification log of every controller of its host. */
    static void notify(Subsystem subsystem, long nsid, List<NamespaceReservations.Notice> notices) {
        subsystem.deliverReservationNotices(nsid, notices);
    }

    static void executeReport(Request req) {
        NamespaceReservations.State s = req.ns.reservations().state();
        int count = s.registrants().size();
        byte[] full = new byte[ReservationStatusExtended.entryOffset(count)];
        ReservationStatusExtended report = new ReservationStatusExtended().wrap(new UnsafeBuffer(full), 0);
        report.generation(s.generation() & 0xFFFF_FFFFL)
                .type(s.type())
                .registrants(Math.min(count, 0xFFFF))
                .persistThroughPowerLoss(s.persistThroughPowerLoss());
        for (int i = 0; i < count; i++) {
            NamespaceReservations.Registrant r = s.registrants().get(i);
            // Registrations belong to hosts, whichever of their controllers registered: CNTLID FFFFh (as nvmet).
            report.entry(i, ReservationStatusExtended.CNTLID_DYNAMIC, s.holds(r.host()), r.key(), hostIdBytes(r.host()));
        }
        req.allocateData(true);
        // What fits in the dwords the host asked for; REGCTL still counts every registrant, so it can ask again.
        req.data.setBytes(0, full, 0, Math.min(full.length, req.transferLength));
        req.complete(Status.SUCCESS);
    }

    static byte[] hostIdBytes(UUID host) {
        return ByteBuffer.allocate(16).putLong(host.getMostSignificantBits()).putLong(host.getLeastSignificantBits())
                .array();
    }

    // ---- features (admin queue) ----

    /** Get Features 82h and 83h: a namespace's notification mask, its PTPL state. */
    static void getFeature(Request req) {
        if (unavailableFeature(req)) {
            return;
        }
        Namespace ns = featureNamespace(req);
        if (ns == null) {
            return;
        }
        if (req.cmd.featureId() == Opcodes.FEAT_RESERVATION_NOTIFICATION_MASK) {
            req.completeWithResult(req.sq().controller().reservationNotices().mask(ns.nsid()));
        } else {
            req.completeWithResult(ns.reservations().persistThroughPowerLoss() ? 1 : 0);
        }
    }

    /**
     * Set Features 82h (this controller's mask of a namespace, or with NSID FFFFFFFFh of every namespace) and 83h
     * (PTPL of a namespace, or of every one; written to the state file off the poll group).
     */
    static void setFeature(Request req) {
        if (unavailableFeature(req)) {
            return;
        }
        int value = req.cmd.cdw11();
        boolean all = req.cmd.nsid() == 0xFFFF_FFFFL;
        Namespace ns = all ? null : featureNamespace(req);
        if (!all && ns == null) {
            return;
        }
        Subsystem subsystem = req.sq().controller().subsystem();
        if (req.cmd.featureId() == Opcodes.FEAT_RESERVATION_NOTIFICATION_MASK) {
            if ((value & ~Reservations.MASK_ALL) != 0) {
                req.errorLocation = Command.CDW11;
                req.complete(Status.INVALID_FIELD | Status.DNR);
                return;
            }
            var notices = req.sq().controller().reservationNotices();
            for (Namespace n : all ? subsystem.namespaces() : List.of(ns)) {
                notices.mask(n.nsid(), value);
            }
            req.complete(Status.SUCCESS);
            return;
        }
        if ((value & ~1) != 0) {
            req.errorLocation = Command.CDW11;
            req.complete(Status.INVALID_FIELD | Status.DNR);
            return;
        }
        boolean on = value == 1;
        List<Namespace> targets = all ? new ArrayList<>(subsystem.namespaces()) : List.of(ns);
        req.ns = all ? null : ns; // its lane (or the subsystem's) takes the file writes
        req.sq().core().executeOffPollGroup(req, TargetCore.BackendKind.FLUSH, r -> {
            int status = Status.SUCCESS;
            for (Namespace n : targets) {
                int s = n.reservations().persistThroughPowerLoss(on);
                status = status == Status.SUCCESS ? s : status;
            }
            if (status != Status.SUCCESS) {
                r.errorLocation = Command.CDW11;
            }
            return status;
        }, Status.INTERNAL);
    }

    /** A reservation feature where none are offered: Invalid Field (no such feature here), as nvmet without PR. */
    private static boolean unavailableFeature(Request req) {
        if (!unavailable(req)) {
            return false;
        }
        req.errorLocation = Command.CDW10;
        req.complete(Status.INVALID_FIELD | Status.DNR);
        return true;
    }

    /** The active namespace a reservation feature names; else completes with Invalid Namespace and returns null. */
    private static Namespace featureNamespace(Request req) {
        Namespace ns = req.sq().controller().subsystem().namespace(req.cmd.nsid());
        if (ns == null) {
            req.errorLocation = Command.NSID;
            req.complete(Status.INVALID_NAMESPACE | Status.DNR);
        }
        return ns;
    }
}

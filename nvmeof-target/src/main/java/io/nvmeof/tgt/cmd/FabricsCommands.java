package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.MemoryBudget;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Fabrics commands (opcode 7Fh): Connect, Property Get/Set, Disconnect (Linux nvmet fabrics-cmd.c). */
public final class FabricsCommands {
    private static final Logger LOG = LoggerFactory.getLogger(FabricsCommands.class);

    private FabricsCommands() {
    }

    /** IATTR/IPO result of a Connect that failed with Invalid Parameters: a field of the SQE... */
    static long invalidSqeField(int offset) {
        return offset;
    }

    /** ... or of the Connect data. */
    static long invalidDataField(int offset) {
        return 1L << 16 | offset;
    }

    public static int parse(Request req) {
        FabricsCommand f = req.fabrics;
        SubmissionQueue sq = req.sq();
        switch (f.fctype()) {
            case Opcodes.FCTYPE_CONNECT:
                // One Connect per connection, also while the first still waits for its data or is held: a second one
                // would reserve again and leave the first's controller without its queue.
                if (sq.connected() || sq.connectInFlight()) {
                    return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
                }
                sq.connectTaken(req);
                req.transferLength = ConnectData.LENGTH;
                req.direction = Request.DIR_HOST_TO_CONTROLLER;
                req.execute = FabricsCommands::executeConnect;
                return Status.SUCCESS;
            case Opcodes.FCTYPE_AUTH_SEND:
                return AuthCommands.parse(req, true);
            case Opcodes.FCTYPE_AUTH_RECEIVE:
                return AuthCommands.parse(req, false);
            case Opcodes.FCTYPE_PROPERTY_GET:
            case Opcodes.FCTYPE_PROPERTY_SET:
                if (!sq.connected()) {
                    return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
                }
                if (sq.awaitsAuthentication()) {
                    // Not even the registers before DH-HMAC-CHAP: the Linux and SPDK hosts authenticate first.
                    return Status.AUTH_REQUIRED | Status.DNR;
                }
                if (sq.qid() != 0) {
                    // Property access exists on the admin queue only; nvmet and SPDK answer Invalid Opcode.
                    req.errorLocation = FabricsCommand.FCTYPE;
                    return Status.INVALID_OPCODE | Status.DNR;
                }
                req.execute = f.fctype() == Opcodes.FCTYPE_PROPERTY_GET ? FabricsCommands::executePropertyGet
                        : FabricsCommands::executePropertySet;
                return Status.SUCCESS;
            case Opcodes.FCTYPE_DISCONNECT:
                if (!sq.connected()) {
                    return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
                }
                req.execute = FabricsCommands::executeDisconnect;
                return Status.SUCCESS;
            default:
                req.errorLocation = FabricsCommand.FCTYPE;
                return Status.INVALID_OPCODE | Status.DNR;
        }
    }

    /** Refusals anyone can cause by the thousand (busy, unknown or unauthorized hosts): logged 20 a minute at most. */
    private static final io.nvmeof.netty.LogAllowance REFUSAL_LOG = new io.nvmeof.netty.LogAllowance();

    private static void fail(Request req, int status, long result, String why) {
        long leftOut = REFUSAL_LOG.admit();
        if (leftOut >= 0) {
            LOG.warn("Connect from {} refused: {} ({}){}", req.sq().transport().peer(), why, Status.name(status),
                    io.nvmeof.netty.LogAllowance.leftOut(leftOut, "refused Connects"));
        }
        req.result = result;
        req.complete(status);
    }

    static void executeConnect(Request req) {
        FabricsCommand f = req.fabrics;
        ConnectData d = new ConnectData().wrap(req.dataView(), 0);
        SubmissionQueue sq = req.sq();
        TargetCore core = sq.core();
        if (f.recfmt() != 0) {
            req.errorLocation = FabricsCommand.RECFMT;
            fail(req, Status.CONNECT_INCOMPATIBLE_FORMAT | Status.DNR, 0, "record format " + f.recfmt());
            return;
        }
        if (!d.nqnTerminated(ConnectData.SUBNQN)) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.SUBNQN), "SUBNQN not terminated");
            return;
        }
        if (!d.nqnTerminated(ConnectData.HOSTNQN)) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.HOSTNQN), "HOSTNQN not terminated");
            return;
        }
        String subnqn = d.subnqn();
        // A host NQN is taken as it is, as Linux nvmet and SPDK take it: empty (SPDK's host sends that unless told a
        // name), not in nqn.yyyy-mm form, or with bytes outside printable ASCII. It only has to match an allowed host
        // where the subsystem lists them. Only the spec's 223-byte limit is kept (SPDK keeps it too).
        String hostnqn = d.hostnqn();
        if (hostnqn.length() > Nqn.MAX_LENGTH) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.HOSTNQN),
                    "host NQN is " + hostnqn.length() + " bytes long; the limit is " + Nqn.MAX_LENGTH);
            return;
        }
        Subsystem subsystem = core.subsystem(subnqn);
        if (subsystem == null) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.SUBNQN),
                    "no subsystem " + subnqn);
            return;
        }
        io.nvmeof.tgt.core.ListenerInfo via = sq.transport().listener();
        if (via != null && !subsystem.isDiscovery() && !via.exports(subnqn)) {
            // As nvmet (a subsystem is reachable through the ports it is linked to) and SPDK (its listeners).
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.SUBNQN),
                    "subsystem " + subnqn + " is not exported through port " + via.portId() + " (" + via.traddr() + ":"
                            + via.trsvcid() + ")");
            return;
        }
        if (!subsystem.hostAllowed(hostnqn)) {
            fail(req, Status.CONNECT_INVALID_HOST | Status.DNR, invalidDataField(ConnectData.HOSTNQN),
                    "host " + Nqn.display(hostnqn) + " is not allowed to use " + subnqn);
            return;
        }
        String tlsRefusal = tlsRefusal(sq, sq.transport().tlsIdentity(), hostnqn, subnqn);
        if (tlsRefusal != null) {
            fail(req, Status.CONNECT_INVALID_HOST | Status.DNR, invalidDataField(ConnectData.HOSTNQN), tlsRefusal);
            return;
        }
        int qid = f.qid();
        int sqsize = f.sqsize();
        byte[] hostId = new byte[16];
        d.readHostId(hostId);
        java.util.UUID hostUuid = Controller.uuidOf(hostId);
        String owner = qid == 0 && !subsystem.isDiscovery() ? core.hostIdentities().owner(hostUuid) : null;
        if (owner != null && !owner.equals(hostnqn) && !provesItself(sq, subsystem, hostnqn)) {
            // Reservations and the memory of earlier associations follow the Host ID: one a host proved is its own is
            // not lent to a host that proves nothing (it could take over that host's reservation without a secret).
            fail(req, Status.CONNECT_INVALID_HOST | Status.DNR, invalidDataField(ConnectData.HOSTID), "Host ID "
                    + hostUuid + " belongs to host " + Nqn.display(owner) + ", which authenticated with it; host "
                    + Nqn.display(hostnqn) + ", which does not authenticate, must use a Host ID of its own");
            return;
        }
        // SQSIZE is 0-based. Admin queues may be as large as I/O queues: nvmet (TCP) and SPDK (up to 127) accept
        // more than the 32 entries the discovery log advertises.
        if (sqsize == 0 || sqsize >= core.limits().maxQueueSize() || sqsize >= sq.maxPoolSize()) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidSqeField(FabricsCommand.SQSIZE),
                    "SQSIZE " + sqsize + " (0-based) is 0 or beyond MQES " + (core.limits().maxQueueSize() - 1));
            return;
        }
        if (qid == 0) {
            if (d.cntlid() != ConnectData.CNTLID_DYNAMIC) {
                fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.CNTLID),
                        "static controller ID " + d.cntlid() + " asked for; this target has dynamic controllers");
                return;
            }
            TargetCore.ConnectHold hold = core.holdConnect(req, subsystem, hostnqn, hostId);
            if (hold == TargetCore.ConnectHold.HELD) {
                return; // runs again once the host's earlier association has drained
            }
            if (hold == TargetCore.ConnectHold.REFUSED) {
                fail(req, Status.CONNECT_CONTROLLER_BUSY, 0, "commands of this host's earlier association are still"
                        + " running in a backend after " + TimeUnit.NANOSECONDS.toSeconds(TargetCore.CONNECT_HOLD_NANOS)
                        + " s; the host may retry");
                return;
            }
            // A discovery controller (any host NQN may open one) and a queue that must still authenticate reserve from
            // the untrusted allowance until their host proves itself, so a flood of them cannot lock others out.
            boolean mustAuthenticate = willRequireAuthentication(sq, subsystem, hostnqn); // decided once, here
            boolean untrusted = sq.transport().tlsIdentity() == null && (subsystem.isDiscovery() || mustAuthenticate);
            if (!reserveMemory(req, sqsize + 1, untrusted)) {
                return;
            }
            long kato = f.kato();
            if (kato == 0 && subsystem.isDiscovery()) {
                kato = TargetCore.DISCOVERY_DEFAULT_KATO_MS;
            }
            Controller c = core.createController(subsystem, hostnqn, hostId, sq, kato);
            if (c == null) {
                sq.unreserveMemory();
                fail(req, Status.CONNECT_CONTROLLER_BUSY | Status.DNR, 0, "no controller ID left");
                return;
            }
            core.bindQueue(sq, c, 0, sqsize + 1, f.sqFlowControlDisabled());
            if (sq.transport().tlsIdentity() != null) {
                core.hostProven(c); // its own PSK: it is who it says
            }
            if (!subsystem.quiet()) {
                LOG.info("controller {} of {} created for host {} from {} (KATO {} ms{})", c.cntlid(), subnqn,
                        Nqn.display(hostnqn), sq.transport().peer(), kato,
                        sq.transport().tlsIdentity() != null ? ", TLS" : "");
            }
            req.completeWithResult(c.cntlid() | requireAuthentication(sq, subsystem, hostnqn, mustAuthenticate));
            return;
        }
        Controller c = subsystem.controller(d.cntlid());
        if (c == null || c.isDead() || !c.hostNqn().equals(hostnqn)) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidDataField(ConnectData.CNTLID),
                    "I/O queue for controller " + d.cntlid() + " that this host does not have");
            return;
        }
        // The host ID is not compared with the admin queue's: nvmet and SPDK take the controller's from its admin
        // Connect alone, and a host that sends another one on an I/O queue still owns the controller (same host NQN).
        if (c.isDiscovery()) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidSqeField(FabricsCommand.QID),
                    "discovery controllers have no I/O queues");
            return;
        }
        if (!c.ready()) {
            fail(req, Status.COMMAND_SEQUENCE_ERROR | Status.DNR, 0, "controller " + c.cntlid() + " is not enabled");
            return;
        }
        // Checked against what the controller can hold, not what Set Features Number of Queues granted: nvmet and
        // SPDK do the same, and hosts that skip Set Features (or ask for fewer than they use) still work.
        if (qid > c.maxIoQueues()) {
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidSqeField(FabricsCommand.QID),
                    "QID " + qid + " beyond the " + c.maxIoQueues() + " I/O queues a controller has");
            return;
        }
        // A queue that must authenticate takes its QID only once it has: until then it must not keep the host's own
        // Connect for that QID out (anyone who knows the host NQN and the controller ID could send one), nor more
        // memory than the untrusted allowance gives it.
        boolean mustAuthenticate = willRequireAuthentication(sq, subsystem, hostnqn);
        if (!reserveMemory(req, sqsize + 1, mustAuthenticate && sq.transport().tlsIdentity() == null)) {
            return;
        }
        int status = mustAuthenticate ? core.attachPendingIoQueue(c, qid, sq) : core.attachIoQueue(c, qid, sq);
        if (status != Status.SUCCESS) {
            sq.unreserveMemory();
            fail(req, status, invalidSqeField(FabricsCommand.QID), "QID " + qid + " already connected");
            return;
        }
        core.bindQueue(sq, c, qid, sqsize + 1, f.sqFlowControlDisabled());
        req.completeWithResult(c.cntlid() | requireAuthentication(sq, subsystem, hostnqn, mustAuthenticate));
    }

    /** Connect response DW0 bit 17 (AUTHREQ.ATR): the host must authenticate with DH-HMAC-CHAP on this queue. */
    public static final long AUTHREQ_ATR = 1L << 17;

    /**
     * Sets up DH-HMAC-CHAP on a newly connected queue when its host has a secret, and returns the Connect result's
     * AUTHREQ bits. As nvmet: never on the discovery subsystem, and never where any host may connect (a secret for a
     * host that anyone may impersonate by not naming itself would protect nothing).
     */
    /**
     * Why a Connect may not go on over this connection's TLS (or lack of it), or null. A PSK is the host's for one
     * subsystem: over TLS, the Connect must name the host and subsystem the handshake's identity named (else one
     * subsystem's key would open another's namespaces, or let one host speak as another); a host that has a TLS key
     * must use it, so plain TCP is refused for it even where the listener allows both.
     */
    private static String tlsRefusal(SubmissionQueue sq, io.nvmeof.protocol.tls.PskIdentity tls, String hostnqn,
            String subnqn) {
        TargetCore core = sq.core();
        if (tls != null) {
            if (!tls.hostNqn().equals(hostnqn) || !tls.subsystemNqn().equals(subnqn)) {
                return "Connect names host " + Nqn.display(hostnqn) + " and subsystem " + Nqn.display(subnqn)
                        + " but the connection's TLS PSK identity is for host " + Nqn.display(tls.hostNqn())
                        + " and subsystem " + Nqn.display(tls.subsystemNqn());
            }
            return null;
        }
        // Only NVMe/TCP has TLS: over RDMA the key has nothing to say (the listener is the admin's choice).
        if (core.tlsKeys().has(hostnqn) && sq.transport().trtype() == io.nvmeof.protocol.log.DiscoveryLogEntry.TRTYPE_TCP) {
            return "host " + Nqn.display(hostnqn) + " has a TLS key: it must connect over TLS (nvme connect --tls)";
        }
        return null;
    }

    /**
     * Whether a host connecting now will have proved who it is before it can do anything: over TLS with its own PSK
     * (checked already), or with DH-HMAC-CHAP the queue will require.
     */
    private static boolean provesItself(SubmissionQueue sq, Subsystem subsystem, String hostnqn) {
        return sq.transport().tlsIdentity() != null || willRequireAuthentication(sq, subsystem, hostnqn);
    }

    /** Whether {@link #requireAuthentication} will ask this queue's host to authenticate. */
    private static boolean willRequireAuthentication(SubmissionQueue sq, Subsystem subsystem, String hostnqn) {
        return sq.core().hostAuth().lookup(hostnqn) != null && !subsystem.isDiscovery() && !subsystem.allowAnyHost();
    }

    private static long requireAuthentication(SubmissionQueue sq, Subsystem subsystem, String hostnqn, boolean must) {
        if (!must) {
            return 0;
        }
        // The queue reads the host's settings again at each Negotiate: a key rotated after this Connect applies.
        sq.authentication(new io.nvmeof.tgt.auth.QueueAuthentication(sq.core().hostAuth(), hostnqn, subsystem.nqn()));
        return AUTHREQ_ATR;
    }

    /**
     * Reserves the connecting queue's memory, or refuses the Connect: Invalid Parameters on SQSIZE when a queue this
     * large could not run within the per-connection limit (a smaller one would; nvmet points at SQSIZE the same way for
     * a queue beyond MQES), Controller Busy without DNR when other connections hold the target's memory or the
     * untrusted allowance (the host may retry later; nvmet answers Controller Busy when it has no controller to give).
     */
    private static boolean reserveMemory(Request req, int entries, boolean untrusted) {
        SubmissionQueue sq = req.sq();
        int r = sq.reserveMemory(entries, untrusted);
        if (r == SubmissionQueue.OVER_QUEUE_LIMIT) {
            TargetLimits limits = sq.core().limits();
            fail(req, Status.CONNECT_INVALID_PARAMETERS | Status.DNR, invalidSqeField(FabricsCommand.SQSIZE),
                    "a queue of " + entries + " entries needs " + sq.reservationFor(entries) + " bytes and room for one "
                            + limits.maxTransferSize() + "-byte transfer within the per-connection memory limit of "
                            + limits.maxConnectionMemory() + " bytes; ask for at most " + sq.largestQueueWithin()
                            + " entries, or raise maxConnectionMemory");
            return false;
        }
        if (r == SubmissionQueue.OVER_TARGET_LIMIT) {
            MemoryBudget m = sq.core().memory();
            fail(req, Status.CONNECT_CONTROLLER_BUSY, 0, "the target's memory limit of " + m.limit() + " bytes is "
                    + "held by other connections (" + m.used() + " bytes in use); retry later, or raise maxMemory");
            return false;
        }
        if (r == SubmissionQueue.OVER_UNTRUSTED_LIMIT) {
            fail(req, Status.CONNECT_CONTROLLER_BUSY, 0, sq.refusal() + "; retry later");
            return false;
        }
        return true;
    }

    static void executePropertyGet(Request req) {
        FabricsCommand f = req.fabrics;
        Controller c = req.sq().controller();
        long offset = f.propertyOffset();
        if (f.propertySize() == 8) {
            if (offset == ControllerRegisters.CAP) {
                req.completeWithResult(c.cap());
                return;
            }
        } else {
            if (offset == ControllerRegisters.VS) {
                req.completeWithResult(ControllerRegisters.VERSION_1_3);
                return;
            } else if (offset == ControllerRegisters.CC) {
                req.completeWithResult(c.cc() & 0xFFFF_FFFFL);
                return;
            } else if (offset == ControllerRegisters.CSTS) {
                req.completeWithResult(c.csts() & 0xFFFF_FFFFL);
                return;
            }
        }
        req.errorLocation = FabricsCommand.OFST;
        req.complete(Status.INVALID_FIELD | Status.DNR);
    }

    static void executePropertySet(Request req) {
        FabricsCommand f = req.fabrics;
        if (f.propertySize() == 4 && f.propertyOffset() == ControllerRegisters.CC) {
            req.sq().controller().writeCc(f.propertyValue() & 0xFFFF_FFFFL);
            req.complete(Status.SUCCESS);
            return;
        }
        req.errorLocation = FabricsCommand.OFST;
        req.complete(Status.INVALID_FIELD | Status.DNR);
    }

    static void executeDisconnect(Request req) {
        req.closeQueueAfterResponse = true;
        req.complete(Status.SUCCESS);
    }
}

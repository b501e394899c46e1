package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.DiscoveryReferral;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import io.nvmeof.tgt.core.TlsMode;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;

/** The discovery controller's command set (Linux nvmet discovery.c): Identify, the discovery log and keep-alive. */
public final class DiscoveryCommands {
    private DiscoveryCommands() {
    }

    public static int parse(Request req) {
        Command cmd = req.cmd;
        switch (cmd.opcode()) {
            case Opcodes.ADMIN_IDENTIFY:
                if (cmd.cns() != Opcodes.CNS_CONTROLLER) {
                    req.errorLocation = Command.CDW10;
                    return Status.INVALID_FIELD | Status.DNR;
                }
                return AdminCommands.identify(req);
            case Opcodes.ADMIN_GET_LOG_PAGE:
                return AdminCommands.logPage(req, DiscoveryCommands::executeGetLogPage);
            case Opcodes.ADMIN_GET_FEATURES:
            case Opcodes.ADMIN_SET_FEATURES: {
                int fid = cmd.featureId();
                if (fid != Opcodes.FEAT_KEEP_ALIVE_TIMER && fid != Opcodes.FEAT_ASYNC_EVENT_CONFIG) {
                    req.errorLocation = Command.CDW10;
                    return Status.INVALID_FIELD | Status.DNR;
                }
                req.execute = cmd.opcode() == Opcodes.ADMIN_GET_FEATURES ? AdminCommands::executeGetFeatures
                        : AdminCommands::executeSetFeatures;
                return Status.SUCCESS;
            }
            case Opcodes.ADMIN_KEEP_ALIVE:
                req.execute = AdminCommands::executeKeepAlive;
                return Status.SUCCESS;
            case Opcodes.ADMIN_ASYNC_EVENT_REQUEST:
                req.execute = AdminCommands::executeAsyncEventRequest;
                return Status.SUCCESS;
            default:
                req.errorLocation = Command.OPCODE;
                return Status.INVALID_OPCODE | Status.DNR;
        }
    }

    static void executeGetLogPage(Request req) {
        if (req.cmd.logPageId() != Opcodes.LOG_DISCOVERY) {
            req.errorLocation = Command.CDW10;
            req.complete(Status.INVALID_LOG_PAGE | Status.DNR);
            return;
        }
        Controller c = req.sq().controller();
        byte[] log = discoveryLog(c, req.sq().transport().localAddress());
        if (!req.cmd.retainAsyncEvent()) {
            c.discoveryLogRead();
        }
        AdminCommands.copyLog(req, log);
    }

    /**
     * The discovery log for one host: for every listener, the discovery subsystem itself (subtype 3, "current
     * discovery subsystem") and every NVM subsystem exported there that the host may connect to; then every referral
     * (subtype 1, or 2 for a referral that names an NVM subsystem), which every host sees, as nvmet lists a port's.
     * A listener on the wildcard address is listed with {@code reached}, the address the host connected to (null:
     * as configured), since no host can connect to "0.0.0.0"; a host that follows a referral here needs one it can.
     */
    public static byte[] discoveryLog(Controller c, java.net.InetAddress reached) {
        TargetCore core = c.core();
        String host = c.hostNqn();
        long generation = core.discoveryGeneration();
        List<ListenerInfo> entryListeners = new ArrayList<>();
        List<Subsystem> entrySubsystems = new ArrayList<>();
        for (ListenerInfo l : core.listeners()) {
            entryListeners.add(l);
            entrySubsystems.add(c.subsystem());
            for (Subsystem s : core.subsystems()) {
                if (!s.isDiscovery() && l.exports(s.nqn()) && s.hostAllowed(host)) {
                    entryListeners.add(l);
                    entrySubsystems.add(s);
                }
            }
        }
        List<DiscoveryReferral> referrals = List.copyOf(core.referrals());
        int records = entryListeners.size() + referrals.size();
        byte[] log = new byte[DiscoveryLogHeader.LENGTH + records * DiscoveryLogEntry.LENGTH];
        UnsafeBuffer b = new UnsafeBuffer(log);
        new DiscoveryLogHeader().<DiscoveryLogHeader>wrap(b, 0).genctr(generation).numrec(records).recfmt(0);
        DiscoveryLogEntry e = new DiscoveryLogEntry();
        for (int i = 0; i < entryListeners.size(); i++) {
            ListenerInfo l = entryListeners.get(i);
            Subsystem s = entrySubsystems.get(i);
            boolean wildcard = reached != null && isWildcard(l.traddr());
            e.<DiscoveryLogEntry>wrap(b, DiscoveryLogHeader.entryOffset(i))
                    .trtype(l.trtype())
                    .adrfam(wildcard ? (reached instanceof java.net.Inet6Address ? DiscoveryLogEntry.ADRFAM_IPV6
                            : DiscoveryLogEntry.ADRFAM_IPV4) : l.adrfam())
                    .subtype(s.isDiscovery() ? DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY : DiscoveryLogEntry.SUBTYPE_NVM)
                    .treq(l.tls().treq() | DiscoveryLogEntry.TREQ_DISABLE_SQFLOW)
                    .portid(l.portId())
                    .cntlid(DiscoveryLogEntry.CNTLID_DYNAMIC)
                    .asqsz(TargetLimits.ADMIN_QUEUE_SIZE)
                    .trsvcid(l.trsvcid())
                    .subnqn(s.nqn())
                    .traddr(wildcard ? reached.getHostAddress() : l.traddr());
            transportSpecific(e, l.trtype(), l.tls());
        }
        for (int i = 0; i < referrals.size(); i++) {
            DiscoveryReferral r = referrals.get(i);
            // TREQ says only what the other end told us (its TLS); whether it can run without SQ flow control is its
            // own to say in its log, so that bit stays clear, as nvmet and SPDK leave it.
            e.<DiscoveryLogEntry>wrap(b, DiscoveryLogHeader.entryOffset(entryListeners.size() + i))
                    .trtype(r.trtype())
                    .adrfam(r.adrfam())
                    .subtype(r.subtype())
                    .treq(r.tls().treq())
                    .portid(r.portId())
                    .cntlid(DiscoveryLogEntry.CNTLID_DYNAMIC)
                    .asqsz(REFERRAL_ASQSZ)
                    .trsvcid(r.trsvcid())
                    .subnqn(r.subnqn())
                    .traddr(r.traddr());
            transportSpecific(e, r.trtype(), r.tls());
        }
        return log;
    }

    /** Whether a listener's configured address is the wildcard (0.0.0.0, ::): an IP literal, so no lookup. */
    private static boolean isWildcard(String traddr) {
        return traddr.equals("0.0.0.0") || traddr.equals("::") || traddr.equals("0:0:0:0:0:0:0:0");
    }

    /**
     * ASQSZ of a referral entry: the other end's admin queue size is not known here; 32 entries is the least any
     * NVMe-oF controller takes (nvmet writes its NVME_AQ_DEPTH, also 32).
     */
    static final int REFERRAL_ASQSZ = 32;

    /** TSAS: the TCP security type, or RDMA's reliable connected queue pairs over RDMA_CM. */
    private static void transportSpecific(DiscoveryLogEntry e, int trtype, TlsMode tls) {
        if (trtype == DiscoveryLogEntry.TRTYPE_TCP) {
            e.tsas(0, tls.sectype());
        }
        if (trtype == DiscoveryLogEntry.TRTYPE_RDMA) {
            e.tsas(0, DiscoveryLogEntry.RDMA_QPTYPE_RC).tsas(1, DiscoveryLogEntry.RDMA_PRTYPE_NOT_SPECIFIED)
                    .tsas(2, DiscoveryLogEntry.RDMA_CMS_RDMA_CM);
        }
    }
}

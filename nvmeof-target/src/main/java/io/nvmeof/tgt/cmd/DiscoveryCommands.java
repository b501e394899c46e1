package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
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
        byte[] log = discoveryLog(c);
        if (!req.cmd.retainAsyncEvent()) {
            c.discoveryLogRead();
        }
        AdminCommands.copyLog(req, log);
    }

    /**
     * The discovery log for one host: for every listener, the discovery subsystem itself (subtype 3, "current
     * discovery subsystem") and every NVM subsystem exported there that the host may connect to.
     */
    public static byte[] discoveryLog(Controller c) {
        TargetCore core = c.core();
        String host = c.hostNqn();
        long generation = core.discoveryGeneration();
        List<Object[]> records = new ArrayList<>();
        for (ListenerInfo l : core.listeners()) {
            records.add(new Object[] {l, c.subsystem()});
            for (Subsystem s : core.subsystems()) {
                if (!s.isDiscovery() && l.exports(s.nqn()) && s.hostAllowed(host)) {
                    records.add(new Object[] {l, s});
                }
            }
        }
        byte[] log = new byte[DiscoveryLogHeader.LENGTH + records.size() * DiscoveryLogEntry.LENGTH];
        UnsafeBuffer b = new UnsafeBuffer(log);
        new DiscoveryLogHeader().<DiscoveryLogHeader>wrap(b, 0).genctr(generation).numrec(records.size()).recfmt(0);
        DiscoveryLogEntry e = new DiscoveryLogEntry();
        for (int i = 0; i < records.size(); i++) {
            ListenerInfo l = (ListenerInfo) records.get(i)[0];
            Subsystem s = (Subsystem) records.get(i)[1];
            e.<DiscoveryLogEntry>wrap(b, DiscoveryLogHeader.entryOffset(i))
                    .trtype(l.trtype())
                    .adrfam(l.adrfam())
                    .subtype(s.isDiscovery() ? DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY : DiscoveryLogEntry.SUBTYPE_NVM)
                    .treq(l.tls().treq() | DiscoveryLogEntry.TREQ_DISABLE_SQFLOW)
                    .portid(l.portId())
                    .cntlid(DiscoveryLogEntry.CNTLID_DYNAMIC)
                    .asqsz(io.nvmeof.tgt.core.TargetLimits.ADMIN_QUEUE_SIZE)
                    .trsvcid(l.trsvcid())
                    .subnqn(s.nqn())
                    .traddr(l.traddr());
            if (l.trtype() == DiscoveryLogEntry.TRTYPE_TCP) {
                e.tsas(0, l.tls().sectype());
            }
            if (l.trtype() == DiscoveryLogEntry.TRTYPE_RDMA) {
                e.tsas(0, DiscoveryLogEntry.RDMA_QPTYPE_RC).tsas(1, DiscoveryLogEntry.RDMA_PRTYPE_NOT_SPECIFIED)
                        .tsas(2, DiscoveryLogEntry.RDMA_CMS_RDMA_CM);
            }
        }
        return log;
    }

}

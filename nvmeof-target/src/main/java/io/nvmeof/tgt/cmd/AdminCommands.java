package io.nvmeof.tgt.cmd;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.identify.NamespaceDescriptor;
import io.nvmeof.protocol.log.AnaLog;
import io.nvmeof.protocol.reservation.ReservationNotificationLog;
import io.nvmeof.protocol.log.ChangedNamespaceList;
import io.nvmeof.protocol.log.CommandEffectsLog;
import io.nvmeof.protocol.log.ErrorLogEntry;
import io.nvmeof.protocol.log.FirmwareSlotLog;
import io.nvmeof.protocol.log.SmartHealthLog;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.core.AnaGroups;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import java.nio.ByteBuffer;
import java.util.UUID;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/** The admin command set of an NVM subsystem's controller (Linux nvmet admin-cmd.c). */
public final class AdminCommands {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(AdminCommands.class);

    private AdminCommands() {
    }

    static final String FIRMWARE_REVISION = "0.1.0";
    /** Keep Alive Support granularity: 1 s, in 100 ms units (as the Linux target). */
    static final int KAS_100MS = 10;
    /** Error log page entries (ELPE is 0-based). */
    static final int ELPE = Controller.ERROR_LOG_ENTRIES - 1;

    public static int parse(Request req) {
        Command cmd = req.cmd;
        switch (cmd.opcode()) {
            case Opcodes.ADMIN_IDENTIFY:
                return identify(req);
            case Opcodes.ADMIN_GET_LOG_PAGE:
                return logPage(req, AdminCommands::executeGetLogPage);
            case Opcodes.ADMIN_GET_FEATURES:
                if (cmd.featureId() == Opcodes.FEAT_HOST_IDENTIFIER) {
                    // The only feature with data: the 128-bit host ID (a 64-bit one does not exist on fabrics).
                    if ((cmd.cdw11() & 1) == 0) {
                        req.errorLocation = Command.CDW11;
                        return Status.INVALID_FIELD | Status.DNR;
                    }
                    req.transferLength = Opcodes.HOST_IDENTIFIER_LENGTH;
                    req.direction = Request.DIR_CONTROLLER_TO_HOST;
                }
                req.execute = AdminCommands::executeGetFeatures;
                return Status.SUCCESS;
            case Opcodes.ADMIN_SET_FEATURES:
                req.execute = AdminCommands::executeSetFeatures;
                return Status.SUCCESS;
            case Opcodes.ADMIN_KEEP_ALIVE:
                req.execute = AdminCommands::executeKeepAlive;
                return Status.SUCCESS;
            case Opcodes.ADMIN_ASYNC_EVENT_REQUEST:
                req.execute = AdminCommands::executeAsyncEventRequest;
                return Status.SUCCESS;
            case Opcodes.ADMIN_ABORT:
                req.execute = AdminCommands::executeAbort;
                return Status.SUCCESS;
            default:
                req.errorLocation = Command.OPCODE;
                return Status.INVALID_OPCODE | Status.DNR;
        }
    }

    static int identify(Request req) {
        req.transferLength = IdentifyController.LENGTH;
        req.direction = Request.DIR_CONTROLLER_TO_HOST;
        req.execute = AdminCommands::executeIdentify;
        return Status.SUCCESS;
    }

    /** Get Log Page: the length asked for, bounded by MDTS, with a dword-aligned offset. */
    static int logPage(Request req, io.nvmeof.tgt.core.RequestHandler handler) {
        long length = req.cmd.logPageLength();
        if (length > req.sq().core().limits().maxTransferSize()) {
            req.errorLocation = Command.CDW10;
            return Status.INVALID_FIELD | Status.DNR;
        }
        if ((req.cmd.logPageOffset() & 3) != 0) {
            req.errorLocation = Command.CDW12;
            return Status.INVALID_FIELD | Status.DNR;
        }
        req.transferLength = (int) length;
        req.direction = Request.DIR_CONTROLLER_TO_HOST;
        req.execute = handler;
        return Status.SUCCESS;
    }

    // ---- Identify ----

    static void executeIdentify(Request req) {
        Controller c = req.sq().controller();
        Subsystem s = c.subsystem();
        req.allocateData(true);
        MutableDirectBuffer out = req.dataView();
        long nsid = req.cmd.nsid();
        switch (req.cmd.cns()) {
            case Opcodes.CNS_CONTROLLER:
                fillIdentifyController(req, new IdentifyController().wrap(out, 0));
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.CNS_NAMESPACE: {
                if (nsid == 0 || nsid > s.maxNamespaces()) {
                    req.errorLocation = Command.NSID;
                    req.complete(Status.INVALID_NAMESPACE | Status.DNR);
                    return;
                }
                Namespace ns = s.namespace(nsid);
                if (ns != null) {
                    fillIdentifyNamespace(ns, new IdentifyNamespace().wrap(out, 0));
                    if (s.reservationsUnavailable() != null) {
                        new IdentifyNamespace().<IdentifyNamespace>wrap(out, 0).rescap(0); // none offered (ONCS)
                    }
                }
                // An allocated but inactive NSID reads as zeroes.
                req.complete(Status.SUCCESS);
                return;
            }
            case Opcodes.CNS_ACTIVE_NAMESPACE_LIST: {
                if (nsid >= 0xFFFF_FFFEL) {
                    req.errorLocation = Command.NSID;
                    req.complete(Status.INVALID_NAMESPACE | Status.DNR);
                    return;
                }
                int i = 0;
                for (Long id : s.namespaceMap().tailMap(nsid, false).keySet()) {
                    if (i == 1024) {
                        break;
                    }
                    out.putInt(i++ * 4, (int) (long) id, java.nio.ByteOrder.LITTLE_ENDIAN);
                }
                req.complete(Status.SUCCESS);
                return;
            }
            case Opcodes.CNS_NAMESPACE_DESCRIPTORS: {
                Namespace ns = s.namespace(nsid);
                if (ns == null) {
                    req.errorLocation = Command.NSID;
                    req.complete(Status.INVALID_NAMESPACE | Status.DNR);
                    return;
                }
                NamespaceDescriptor d = new NamespaceDescriptor();
                int at = 0;
                at += d.<NamespaceDescriptor>wrap(out, at).write(NamespaceDescriptor.TYPE_NGUID, ns.nguid());
                at += d.<NamespaceDescriptor>wrap(out, at).write(NamespaceDescriptor.TYPE_UUID, uuidBytes(ns.uuid()));
                d.<NamespaceDescriptor>wrap(out, at).write(NamespaceDescriptor.TYPE_CSI, new byte[] {0});
                req.complete(Status.SUCCESS);
                return;
            }
            case Opcodes.CNS_CS_NAMESPACE:
                // The NVM command set's own Identify Namespace: all of its fields are optional and read as zero.
                if (!nvmCommandSet(req)) {
                    return;
                }
                if (s.namespace(nsid) == null) {
                    req.errorLocation = Command.NSID;
                    req.complete(Status.INVALID_NAMESPACE | Status.DNR);
                    return;
                }
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.CNS_CS_CONTROLLER:
                // The NVM command set's own Identify Controller: zeroes say "no limits reported" (as nvmet answers).
                if (nvmCommandSet(req)) {
                    req.complete(Status.SUCCESS);
                }
                return;
            default:
                req.errorLocation = Command.CDW10;
                req.complete(Status.INVALID_FIELD | Status.DNR);
        }
    }

    /** Completes with Invalid Field and returns false unless an Identify names the NVM command set. */
    private static boolean nvmCommandSet(Request req) {
        if (req.cmd.identifyCsi() == Opcodes.CSI_NVM) {
            return true;
        }
        req.errorLocation = Command.CDW11;
        req.complete(Status.INVALID_FIELD | Status.DNR);
        return false;
    }

    static byte[] uuidBytes(UUID u) {
        return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits()).array();
    }

    /** Identify Controller fields common to NVM and discovery controllers. */
    static void fillIdentifyController(Request req, IdentifyController id) {
        Controller c = req.sq().controller();
        Subsystem s = c.subsystem();
        int inline = req.sq().transport().inlineDataSize();
        id.vid(0).ssvid(0)
                .serialNumber(s.serial())
                .modelNumber(s.model())
                .firmwareRevision(FIRMWARE_REVISION)
                .rab(6)
                .cmic(IdentifyController.CMIC_MULTI_CONTROLLER) // may have several controllers
                .mdts(c.core().limits().mdtsField())
                .cntlid(c.cntlid())
                .version(ControllerRegisters.VERSION_1_3)
                .acl(3)
                .aerl(Controller.AER_LIMIT - 1)
                .frmw(1 << 1 | 1) // one slot, read only
                .lpa(IdentifyController.LPA_EXTENDED | IdentifyController.LPA_COMMAND_EFFECTS)
                .elpe(ELPE)
                .kas(KAS_100MS)
                .cqt(TargetCore.COMMAND_QUIESCE_TIME_MS)
                .sqes(0x66)
                .cqes(0x44)
                .maxcmd(c.core().limits().maxQueueSize())
                .sgls(IdentifyController.SGLS_SUPPORTED
                        | (req.sq().transport().keyedSgls() ? IdentifyController.SGLS_KEYED : 0)
                        | (inline > 0 ? IdentifyController.SGLS_OFFSET : 0))
                .subnqn(s.nqn())
                .ioccsz((64 + inline) / 16)
                .iorcsz(1)
                .icdoff(0)
                .fcatt(0) // dynamic controller model
                .msdbd(1)
                .psd0MaxPower(0x9c4);
        if (c.isDiscovery()) {
            id.controllerType(IdentifyController.CNTRLTYPE_DISCOVERY).nn(0)
                    .oaes(IdentifyController.OAES_DISCOVERY_LOG_CHANGE & 0xFFFF_FFFFL);
        } else {
            id.controllerType(IdentifyController.CNTRLTYPE_IO)
                    // Several ports and ANA reporting too (as nvmet): Linux's native multipath reads the ANA log only
                    // when CMIC says so. Never on a discovery controller: Linux would then demand MNAN (it has no
                    // namespaces) and refuse the connection, so nvmet's discovery Identify has no CMIC either.
                    .cmic(IdentifyController.CMIC_MULTI_PORT | IdentifyController.CMIC_MULTI_CONTROLLER
                            | IdentifyController.CMIC_ANA)
                    .oaes(IdentifyController.OAES_NS_ATTR | IdentifyController.OAES_ANA_CHANGE)
                    .anatt(AnaGroups.TRANSITION_SECONDS)
                    .anacap(IdentifyController.ANACAP_ALL_STATES) // not bit 6: a namespace may change groups live
                    .anagrpmax(AnaGroups.MAX_GROUP_ID)
                    .nanagrpid(AnaGroups.MAX_GROUP_ID)
                    .nn(s.maxNamespaces())
                    .mnan(s.maxNamespaces())
                    .oncs(IdentifyController.ONCS_COMPARE | IdentifyController.ONCS_DSM | IdentifyController.ONCS_WRITE_ZEROES
                            | (s.reservationsUnavailable() == null ? IdentifyController.ONCS_RESERVATIONS : 0))
                    // A volatile write cache (the page cache in front of file namespaces), and Flush takes NSID
                    // FFFFFFFFh (bits 2:1 = 11b). Writes are durable when they complete only with FUA, after a Flush,
                    // or while the host has turned the cache off (Set Features, Volatile Write Cache).
                    .vwc(IdentifyController.VWC_PRESENT | IdentifyController.VWC_FLUSH_BROADCAST);
        }
    }

    static void fillIdentifyNamespace(Namespace ns, IdentifyNamespace id) {
        id.nsze(ns.blockCount()).ncap(ns.blockCount()).nuse(ns.blockCount())
                .nsfeat(0)
                .nlbaf(0)
                .flbas(0)
                .dlfeat(IdentifyNamespace.DLFEAT_READ_ZEROES)
                // Shared: every controller of the subsystem (one per host and listener) reaches it, and Linux's native
                // multipath joins the paths of a namespace only when it says so (as nvmet and SPDK do).
                .nmic(IdentifyNamespace.NMIC_SHARED)
                // Every reservation type; PTPL where the target has a state directory to persist in.
                .rescap(IdentifyNamespace.RESCAP_ALL_TYPES | IdentifyNamespace.RESCAP_IEKEY_1_3
                        | (ns.reservations().canPersist() ? IdentifyNamespace.RESCAP_PTPL : 0))
                .lbaf(0, 0, ns.blockShift(), 0)
                .anagrpid(ns.anaGroup())
                .nguid(ns.nguid())
                .eui64(ns.eui64());
        // A block device's physical block and discard granularity, in blocks, 0-based (as nvmet's bdev backend): hosts
        // align and size their writes and deallocations to them (Linux: the block device's io_min, discard_granularity).
        // The physical block is also what the device writes atomically, power loss or not: NAWUN/NAWUPF/NACWU say so
        // (as nvmet's bdev backend), so a 512-byte namespace on a 4 KiB-physical disk promises 8 blocks, and one whose
        // block is larger than the physical block is refused when it is made (no field can promise less than a block).
        int physical = ns.backend().physicalBlockSize();
        if (physical > 0) {
            int blocks = Math.max(1, Math.min(physical >>> ns.blockShift(), 0x10000));
            int discard = Math.max(1, Math.min(ns.backend().discardGranularity() >>> ns.blockShift(), 0x10000));
            id.nsfeat(IdentifyNamespace.NSFEAT_OPTPERF | IdentifyNamespace.NSFEAT_ATOMICS)
                    .npwg(blocks - 1).npwa(blocks - 1)
                    .npdg(discard - 1).npda(discard - 1)
                    .nawun(blocks - 1).nawupf(blocks - 1).nacwu(blocks - 1);
        }
    }

    // ---- Log pages ----

    static void executeGetLogPage(Request req) {
        Controller c = req.sq().controller();
        byte[] log;
        switch (req.cmd.logPageId()) {
            case Opcodes.LOG_ERROR_INFORMATION:
                log = errorLog(c);
                break;
            case Opcodes.LOG_SMART_HEALTH:
                log = smartLog(c);
                break;
            case Opcodes.LOG_FIRMWARE_SLOT:
                log = firmwareSlotLog();
                break;
            case Opcodes.LOG_CHANGED_NAMESPACE_LIST:
                log = changedNamespaceLog(c, req.cmd.retainAsyncEvent());
                break;
            case Opcodes.LOG_ANA:
                if (c.isDiscovery()) {
                    req.errorLocation = Command.CDW10;
                    req.complete(Status.INVALID_LOG_PAGE | Status.DNR);
                    return;
                }
                log = anaLog(c, (req.cmd.logSpecificField() & AnaLog.LSP_GROUPS_ONLY) != 0);
                if (!req.cmd.retainAsyncEvent() && Long.compareUnsigned(req.cmd.logPageOffset(), log.length) <= 0) {
                    c.anaLogRead(); // read (an offset past the end is refused below and reads nothing)
                }
                break;
            case Opcodes.LOG_RESERVATION_NOTIFICATION:
                if (Long.compareUnsigned(req.cmd.logPageOffset(), ReservationNotificationLog.LENGTH) > 0) {
                    req.errorLocation = Command.CDW12; // before the read, which takes the notice out of the log
                    req.complete(Status.INVALID_FIELD | Status.DNR);
                    return;
                }
                log = c.readReservationLog(req.cmd.retainAsyncEvent());
                break;
            case Opcodes.LOG_COMMAND_EFFECTS:
                if (req.cmd.logPageCsi() != Opcodes.CSI_NVM) {
                    req.errorLocation = Command.CDW14;
                    req.complete(Status.INVALID_LOG_PAGE | Status.DNR);
                    return;
                }
                log = COMMAND_EFFECTS;
                break;
            default:
                req.errorLocation = Command.CDW10;
                req.complete(Status.INVALID_LOG_PAGE | Status.DNR);
                return;
        }
        copyLog(req, log);
    }

    /** Copies the part of a log the command asked for; bytes past the log's end read as zero. */
    static void copyLog(Request req, byte[] log) {
        long offset = req.cmd.logPageOffset();
        // LPO is an unsigned 64-bit byte offset: compared unsigned, or one with the top bit set passes as negative.
        if (Long.compareUnsigned(offset, log.length) > 0) {
            req.errorLocation = Command.CDW12;
            req.complete(Status.INVALID_FIELD | Status.DNR);
            return;
        }
        req.allocateData(true);
        int n = (int) Math.min(req.transferLength, log.length - offset);
        req.data.setBytes(0, log, (int) offset, n);
        req.complete(Status.SUCCESS);
    }

    static byte[] errorLog(Controller c) {
        byte[] log = new byte[Controller.ERROR_LOG_ENTRIES * ErrorLogEntry.LENGTH];
        UnsafeBuffer b = new UnsafeBuffer(log);
        ErrorLogEntry e = new ErrorLogEntry();
        int i = 0;
        for (long[] r : c.errorLogNewestFirst()) {
            e.<ErrorLogEntry>wrap(b, i++ * ErrorLogEntry.LENGTH)
                    .errorCount(r[0]).sqid((int) r[1]).cid((int) r[2]).status((int) r[3])
                    .parameterErrorLocation((int) r[4]).lba(r[5]).nsid(r[6]).trtype(c.adminQueue().transport().trtype());
        }
        return log;
    }

    static byte[] smartLog(Controller c) {
        byte[] log = new byte[SmartHealthLog.LENGTH];
        long[] io = c.ioCounters();
        new SmartHealthLog().<SmartHealthLog>wrap(new UnsafeBuffer(log), 0)
                .compositeTemperature(273 + 25)
                .availableSpare(100)
                .availableSpareThreshold(10)
                .hostReadCommands(io[0])
                .hostWriteCommands(io[1])
                .dataUnitsRead(SmartHealthLog.dataUnits(io[2]))
                .dataUnitsWritten(SmartHealthLog.dataUnits(io[3]))
                .powerOnHours(c.core().uptimeHours())
                .errorLogEntries(c.errorCount());
        return log;
    }

    static byte[] firmwareSlotLog() {
        byte[] log = new byte[FirmwareSlotLog.LENGTH];
        new FirmwareSlotLog().<FirmwareSlotLog>wrap(new UnsafeBuffer(log), 0).activeSlot(1).revision(1, FIRMWARE_REVISION);
        return log;
    }

    /** What this controller executes, and which commands change logical block content (read only, once built). */
    private static final byte[] COMMAND_EFFECTS = commandEffects();

    private static byte[] commandEffects() {
        byte[] log = new byte[CommandEffectsLog.LENGTH];
        CommandEffectsLog l = new CommandEffectsLog().wrap(new UnsafeBuffer(log), 0);
        for (int op : new int[] {Opcodes.ADMIN_GET_LOG_PAGE, Opcodes.ADMIN_IDENTIFY, Opcodes.ADMIN_ABORT,
                Opcodes.ADMIN_SET_FEATURES, Opcodes.ADMIN_GET_FEATURES, Opcodes.ADMIN_ASYNC_EVENT_REQUEST,
                Opcodes.ADMIN_KEEP_ALIVE}) {
            l.admin(op, CommandEffectsLog.CSUPP);
        }
        for (int op : new int[] {Opcodes.IO_FLUSH, Opcodes.IO_READ, Opcodes.IO_COMPARE, Opcodes.IO_RESERVATION_REGISTER,
                Opcodes.IO_RESERVATION_REPORT, Opcodes.IO_RESERVATION_ACQUIRE, Opcodes.IO_RESERVATION_RELEASE}) {
            l.io(op, CommandEffectsLog.CSUPP);
        }
        for (int op : new int[] {Opcodes.IO_WRITE, Opcodes.IO_WRITE_ZEROES, Opcodes.IO_DATASET_MANAGEMENT}) {
            l.io(op, CommandEffectsLog.CSUPP | CommandEffectsLog.LBCC);
        }
        return log;
    }

    /**
     * The ANA log as this controller's port sees it: a descriptor for group 1 and for every group one of the
     * subsystem's namespaces is in (ascending), each with its state on the port and its NSIDs in ascending order, as
     * Linux's parser walks them alongside its own sorted list.
     */
    static byte[] anaLog(Controller c, boolean groupsOnly) {
        java.util.TreeMap<Integer, java.util.List<Long>> groups = new java.util.TreeMap<>();
        groups.put(1, new java.util.ArrayList<>());
        int nsids = 0;
        for (Namespace ns : c.subsystem().namespaces()) { // ascending NSIDs
            groups.computeIfAbsent(ns.anaGroup(), g -> new java.util.ArrayList<>()).add(ns.nsid());
            nsids++;
        }
        io.nvmeof.tgt.core.PortAnaStates port = c.anaStates();
        byte[] log = new byte[AnaLog.length(groups.size(), groupsOnly ? 0 : nsids)];
        AnaLog l = new AnaLog().wrap(new UnsafeBuffer(log), 0);
        l.changeCount(c.core().ana().changeCount()).groupCount(groups.size());
        int at = AnaLog.HEADER_LENGTH;
        for (var g : groups.entrySet()) {
            long[] ids = g.getValue().stream().mapToLong(Long::longValue).toArray();
            at = l.descriptor(at, g.getKey(), port.changeCount(g.getKey()), port.state(g.getKey()), ids,
                    groupsOnly ? 0 : ids.length);
        }
        return log;
    }

    static byte[] changedNamespaceLog(Controller c, boolean retain) {
        byte[] log = new byte[ChangedNamespaceList.LENGTH];
        ChangedNamespaceList l = new ChangedNamespaceList().wrap(new UnsafeBuffer(log), 0);
        long[] ids = c.takeChangedNamespaces(retain);
        for (int i = 0; i < ids.length && i < ChangedNamespaceList.MAX_ENTRIES; i++) {
            l.nsid(i, ids[i]);
        }
        return log;
    }

    // ---- Features ----

    static void executeGetFeatures(Request req) {
        Controller c = req.sq().controller();
        switch (req.cmd.featureId()) {
            case Opcodes.FEAT_NUMBER_OF_QUEUES:
                req.completeWithResult(Features.numberOfQueues(c.grantedIoQueues(), c.grantedIoQueues()) & 0xFFFF_FFFFL);
                return;
            case Opcodes.FEAT_KEEP_ALIVE_TIMER:
                req.completeWithResult(c.kato());
                return;
            case Opcodes.FEAT_ASYNC_EVENT_CONFIG:
                req.completeWithResult(c.asyncEventConfig() & 0xFFFF_FFFFL);
                return;
            case Opcodes.FEAT_VOLATILE_WRITE_CACHE:
                req.completeWithResult(c.writeCacheEnabled() ? 1 : 0);
                return;
            case Opcodes.FEAT_HOST_IDENTIFIER:
                req.allocateData(true);
                req.dataView().putBytes(0, c.hostId());
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.FEAT_RESERVATION_NOTIFICATION_MASK:
            case Opcodes.FEAT_RESERVATION_PERSISTENCE:
                ReservationCommands.getFeature(req);
                return;
            default:
                req.errorLocation = Command.CDW10;
                req.complete(Status.INVALID_FIELD | Status.DNR);
        }
    }

    static void executeSetFeatures(Request req) {
        Controller c = req.sq().controller();
        if (req.cmd.saveFeature()) {
            req.errorLocation = Command.CDW10;
            req.complete(Status.FEATURE_NOT_SAVEABLE | Status.DNR);
            return;
        }
        int cdw11 = req.cmd.cdw11();
        switch (req.cmd.featureId()) {
            case Opcodes.FEAT_NUMBER_OF_QUEUES: {
                int nsqr = cdw11 & 0xFFFF;
                int ncqr = (cdw11 >>> 16) & 0xFFFF;
                if (nsqr == 0xFFFF || ncqr == 0xFFFF) {
                    req.errorLocation = Command.CDW11;
                    req.complete(Status.INVALID_FIELD | Status.DNR);
                    return;
                }
                if (c.connectedIoQueues() > 0) {
                    // The count is fixed once I/O queues exist.
                    req.complete(Status.COMMAND_SEQUENCE_ERROR | Status.DNR);
                    return;
                }
                int granted = Math.min(Math.min(nsqr, ncqr) + 1, c.maxIoQueues());
                c.grantedIoQueues(granted);
                req.completeWithResult(Features.numberOfQueues(granted, granted) & 0xFFFF_FFFFL);
                return;
            }
            case Opcodes.FEAT_KEEP_ALIVE_TIMER:
                c.kato(cdw11 & 0xFFFF_FFFFL);
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.FEAT_ASYNC_EVENT_CONFIG:
                // Only the notices this kind of controller sends are kept (as nvmet masks with its supported AENs).
                c.asyncEventConfig(cdw11 & (c.isDiscovery() ? Features.AEC_DISCOVERY_LOG_CHANGE
                        : Features.AEC_NS_ATTRIBUTE | Features.AEC_ANA_CHANGE));
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.FEAT_VOLATILE_WRITE_CACHE:
                if (c.isDiscovery()) {
                    req.errorLocation = Command.CDW10;
                    req.complete(Status.INVALID_FIELD | Status.DNR);
                    return;
                }
                c.writeCacheEnabled((cdw11 & 1) != 0); // WCE
                req.complete(Status.SUCCESS);
                return;
            case Opcodes.FEAT_HOST_IDENTIFIER:
                // Fabrics hosts give their ID in Connect; nvmet and SPDK refuse to change it afterwards the same way.
                req.errorLocation = Command.CDW10;
                req.complete(Status.COMMAND_SEQUENCE_ERROR | Status.DNR);
                return;
            case Opcodes.FEAT_RESERVATION_NOTIFICATION_MASK:
            case Opcodes.FEAT_RESERVATION_PERSISTENCE:
                ReservationCommands.setFeature(req);
                return;
            default:
                req.errorLocation = Command.CDW10;
                req.complete(Status.INVALID_FIELD | Status.DNR);
        }
    }

    // ---- Keep Alive, AER, Abort ----

    static void executeKeepAlive(Request req) {
        // The timer was reset when the command arrived (traffic based keep alive).
        if (req.sq().controller().kato() == 0) {
            req.complete(Status.KEEP_ALIVE_INVALID | Status.DNR);
            return;
        }
        req.complete(Status.SUCCESS);
    }

    static void executeAsyncEventRequest(Request req) {
        if (!req.sq().controller().parkAer(req)) {
            req.complete(Status.ASYNC_LIMIT | Status.DNR);
        }
        // Otherwise it completes when an event occurs.
    }

    /** Abort's result (CQE DW0 bit 0): 0 when the command was aborted, 1 when it was not. */
    private static final long ABORTED = 0;
    private static final long NOT_ABORTED = 1;

    /**
     * Abort (CDW10: SQID in bits 15:0, CID in 31:16). What has not started yet is aborted: work waiting for the backend
     * executor (Flush, Write Zeroes, Dataset Management on file namespaces behind slow ones), commands the transport
     * holds back before their data moves (for memory, a buffer or their turn to fetch host data) and parked
     * Asynchronous Event Requests, as SPDK aborts queued requests and AERs. A command already running completes by
     * itself and the Abort says "not aborted", as it does for an unknown SQID or CID (Linux nvmet always says so).
     */
    static void executeAbort(Request req) {
        int sqid = req.cmd.cdw10() & 0xFFFF;
        int cid = req.cmd.cdw10() >>> 16;
        SubmissionQueue target = req.sq().controller().queue(sqid);
        if (target == null) {
            req.completeWithResult(NOT_ABORTED);
            return;
        }
        if (target == req.sq()) {
            req.completeWithResult(target.abort(cid, req) ? ABORTED : NOT_ABORTED);
            return;
        }
        try {
            // The I/O queue's requests belong to its thread: look there, answer here.
            target.transport().execute(() -> {
                boolean aborted = target.abort(cid, req);
                try {
                    req.sq().transport().execute(() -> req.completeWithResult(aborted ? ABORTED : NOT_ABORTED));
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    LOG.debug("admin queue gone before its Abort completed");
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            req.completeWithResult(NOT_ABORTED); // that queue is closing: nothing left to abort
        }
    }
}

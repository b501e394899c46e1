package io.nvmeof.target.core;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.target.cmd.AdminCommands;
import io.nvmeof.target.cmd.DiscoveryCommands;
import io.nvmeof.target.cmd.FabricsCommands;
import io.nvmeof.target.cmd.IoCommands;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The target engine: subsystems, controllers, and the request lifecycle every transport feeds (Linux nvmet's core.c:
 * {@code nvmet_req_init} ... {@code nvmet_req_complete}). It does not know how bytes travel.
 */
public final class TargetCore {
    private static final Logger LOG = LoggerFactory.getLogger(TargetCore.class);

    /** CAP.TO: how long a host waits for CSTS.RDY, in 500 ms units. */
    public static final int READY_TIMEOUT_500MS = 15;
    /** KATO a discovery controller gets when the host asks for none (Linux NVMET_DISC_KATO_MS). */
    public static final long DISCOVERY_DEFAULT_KATO_MS = 120_000;

    private final TargetLimits limits;
    private final Map<String, Subsystem> subsystems = new ConcurrentHashMap<>();
    private final List<ListenerInfo> listeners = new CopyOnWriteArrayList<>();
    private final Set<Controller> controllers = ConcurrentHashMap.newKeySet();
    private final AtomicLong discoveryGeneration = new AtomicLong(1);
    private final AtomicInteger liveQueues = new AtomicInteger();
    private final Subsystem discovery;

    public TargetCore(TargetLimits limits) {
        this.limits = limits;
        this.discovery = new Subsystem(Nqn.DISCOVERY, Subsystem.Type.DISCOVERY, "discovery", "nvmeof-java discovery", 1, true);
        subsystems.put(Nqn.DISCOVERY, discovery);
    }

    private final long startNanos = System.nanoTime();

    public TargetLimits limits() { return limits; }

    public long uptimeHours() {
        return TimeUnit.NANOSECONDS.toHours(System.nanoTime() - startNanos);
    }

    // ---- configuration ----

    public void addSubsystem(Subsystem s) {
        if (subsystems.putIfAbsent(s.nqn(), s) != null) {
            throw new IllegalArgumentException("subsystem " + s.nqn() + " already exists");
        }
        configChanged();
    }

    public Subsystem removeSubsystem(String nqn) {
        if (Nqn.DISCOVERY.equals(nqn)) {
            throw new IllegalArgumentException("the discovery subsystem cannot be removed");
        }
        Subsystem s = subsystems.remove(nqn);
        if (s != null) {
            for (Controller c : s.controllers()) {
                c.teardown("subsystem removed");
            }
            configChanged();
        }
        return s;
    }

    public Subsystem subsystem(String nqn) { return subsystems.get(nqn); }

    public Collection<Subsystem> subsystems() { return subsystems.values(); }

    public void addListener(ListenerInfo l) {
        listeners.add(l);
        configChanged();
    }

    public void removeListener(ListenerInfo l) {
        listeners.remove(l);
        configChanged();
    }

    public List<ListenerInfo> listeners() { return listeners; }

    /** Bumps the discovery log generation counter; call after any change hosts may discover. */
    public void configChanged() {
        discoveryGeneration.incrementAndGet();
    }

    public long discoveryGeneration() { return discoveryGeneration.get(); }

    // ---- resources ----

    public int liveQueues() { return liveQueues.get(); }

    public int liveControllers() { return controllers.size(); }

    public Collection<Controller> controllers() { return controllers; }

    public void queueOpened() {
        liveQueues.incrementAndGet();
    }

    void queueClosed(SubmissionQueue sq) {
        liveQueues.decrementAndGet();
        Controller c = sq.controller();
        if (c == null) {
            return;
        }
        if (sq.qid() == 0) {
            c.dropAers();
            c.teardown("admin queue closed");
        } else {
            c.detachQueue(sq);
        }
    }

    /** Creates a controller for an admin-queue Connect; null when the subsystem has no controller ID left. */
    public Controller createController(Subsystem s, String hostNqn, byte[] hostId, SubmissionQueue adminQueue, long kato) {
        int cntlid = s.allocateCntlid();
        if (cntlid < 0) {
            return null;
        }
        Controller c = new Controller(this, s, cntlid, hostNqn, hostId, adminQueue, kato, limits.maxIoQueues());
        s.register(c);
        controllers.add(c);
        return c;
    }

    void controllerGone(Controller c) {
        c.subsystem().unregister(c);
        controllers.remove(c);
    }

    /** Binds a queue to a controller after a successful Connect. */
    public void bindQueue(SubmissionQueue sq, Controller c, int qid, int size, boolean disableFlowControl) {
        sq.bind(c, qid, size, disableFlowControl);
    }

    public int attachIoQueue(Controller c, int qid, SubmissionQueue sq) {
        return c.attachQueue(qid, sq);
    }

    /** Tears down controllers whose keep-alive timer expired; the poll groups call this periodically. */
    public void checkKeepAlive() {
        long now = System.nanoTime();
        for (Controller c : controllers) {
            long kato = c.kato();
            if (kato > 0 && c.idleNanos(now) > TimeUnit.MILLISECONDS.toNanos(kato)) {
                LOG.warn("controller {} of {}: keep-alive timeout ({} ms) expired, host {}", c.cntlid(), c.subsystem().nqn(),
                        kato, c.hostNqn());
                c.teardown("keep-alive timeout expired");
            }
        }
    }

    // ---- request lifecycle ----

    /**
     * Starts a request whose SQE the transport has copied in (and, for in-capsule data, whose data is attached). Parses
     * it, checks its data descriptor, then fetches host data or executes.
     */
    public void submit(Request req) {
        SubmissionQueue sq = req.sq();
        Command cmd = req.cmd;
        Controller c = sq.controller();
        if (c != null) {
            c.touch();
        }
        int status;
        if (cmd.fuse() != 0) {
            req.errorLocation = Command.FLAGS;
            status = Status.INVALID_FIELD | Status.DNR;
        } else if (cmd.psdt() != Command.PSDT_SGL) {
            // Fabrics carry data only through SGLs.
            req.errorLocation = Command.FLAGS;
            status = Status.INVALID_FIELD | Status.DNR;
        } else {
            status = parse(req, c);
        }
        if (status != Status.SUCCESS) {
            req.complete(status);
            return;
        }
        status = sq.transport().mapData(req);
        if (status != Status.SUCCESS) {
            req.errorLocation = Command.DPTR;
            req.complete(status);
            return;
        }
        if (req.direction == Request.DIR_HOST_TO_CONTROLLER && req.transferLength > 0 && !req.dataInCapsule) {
            sq.transport().fetchData(req);
            return;
        }
        if (req.direction == Request.DIR_CONTROLLER_TO_HOST && req.transferLength > 0
                && !sq.transport().allocateReadData(req)) {
            return; // resumes through dataReady() when a buffer is free
        }
        execute(req);
    }

    private int parse(Request req, Controller c) {
        Command cmd = req.cmd;
        if (cmd.opcode() == Opcodes.FABRICS) {
            return FabricsCommands.parse(req);
        }
        if (c == null) {
            // Only Connect is valid on a queue that is not connected yet.
            req.errorLocation = Command.OPCODE;
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        if (!c.ready()) {
            return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        }
        if (req.sq().qid() == 0) {
            return c.isDiscovery() ? DiscoveryCommands.parse(req) : AdminCommands.parse(req);
        }
        return IoCommands.parse(req);
    }

    /** Runs the execute step chosen at parse time (data, if any, is present). */
    public void execute(Request req) {
        try {
            req.execute.execute(req);
        } catch (RuntimeException e) {
            LOG.error("internal error executing opcode 0x{} on queue {}", Integer.toHexString(req.cmd.opcode()), req.sq().qid(), e);
            req.complete(Status.INTERNAL | Status.DNR);
        }
    }

    /** Fills the CQE and hands the request to the transport (Linux {@code nvmet_req_complete}). */
    public void complete(Request req) {
        SubmissionQueue sq = req.sq();
        int status = req.status;
        if (status != Status.SUCCESS) {
            Controller c = sq.controller();
            if (c != null && Status.code(status) != Status.ABORT_SQ_DELETED) {
                c.recordError(sq.qid() < 0 ? 0 : sq.qid(), req.cmd.cid(), status, req.errorLocation,
                        req.ns != null ? req.cmd.slba() : 0, req.cmd.nsid());
            }
        }
        req.cqe.result64(req.result);
        req.cqe.sqhd(sq.advanceHead());
        req.cqe.sqid(Math.max(sq.qid(), 0));
        req.cqe.cid(req.cmd.cid());
        req.cqe.status(status);
        sq.transport().queueResponse(req);
    }
}

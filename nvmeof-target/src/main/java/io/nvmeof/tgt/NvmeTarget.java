package io.nvmeof.tgt;

import io.nvmeof.tgt.live.ReferralChecks;
import io.nvmeof.tgt.live.NamespaceIdentities;
import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.protocol.AgronaAccess;
import io.netty.channel.EventLoopGroup;
import io.nvmeof.cpu.CpuList;
import io.nvmeof.cpu.ThreadPlacement;
import io.nvmeof.netty.EventLoops;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.FileBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.backend.SparseMemoryLimit;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import io.nvmeof.tgt.core.TlsMode;
import io.nvmeof.tgt.tcp.TcpOptions;
import io.nvmeof.tgt.tcp.TcpTransport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running target: the engine, its poll groups (a fixed set of event-loop threads, each serving many queues) and its
 * listeners, built from a {@link TargetConfig}.
 */
public final class NvmeTarget implements AutoCloseable {
    static {
        // A program embedding the target starts here: Agrona runs without a JVM flag (AgronaAccess).
        AgronaAccess.ensure();
    }

    /** The state directory's folder of reservation state files. */
    public static final String RESERVATIONS_DIRECTORY = "reservations";
    /** Which host owns which Host ID, in the state directory (see HostIdentities). */
    public static final String HOST_IDS_FILE = "host-ids.json";
    private static final Logger LOG = LoggerFactory.getLogger(NvmeTarget.class);

    private final TargetCore core;
    private final EventLoopGroup pollGroups;
    /** Where poll groups and the JVM's other threads run; null when the kernel places every thread. */
    private ThreadPlacement placement;
    private final List<TcpTransport> tcpListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final List<io.nvmeof.tgt.rdma.RdmaTransport> rdmaListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private int pollGroupCount = 1;
    /** What sparse RAM namespaces may promise together (maxSparseMemory). */
    private SparseMemoryLimit sparseMemory = SparseMemoryLimit.of(null);
    private final List<BlockBackend> backends = new java.util.concurrent.CopyOnWriteArrayList<>();
    private LiveConfiguration live;
    /** Set once closing starts: loops that end from then on were stopped, not lost. */
    private volatile boolean closing;

    private NvmeTarget(TargetCore core, EventLoopGroup pollGroups) {
        this.core = core;
        this.pollGroups = pollGroups;
    }

    /** The configuration's poll-group CPUs (null: none given), checked before anything starts. */
    private static CpuList pollGroupCpus(TargetConfig config) {
        if (config.pollGroupCpus() == null) {
            return null;
        }
        try {
            return CpuList.parse(config.pollGroupCpus());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("pollGroupCpus: " + e.getMessage(), e);
        }
    }

    /** One poll group per CPU given, or as many as asked for (one per core by default). */
    private static int pollGroupCount(TargetConfig config, CpuList cpus) {
        Integer asked = config.pollGroups() != null && config.pollGroups() > 0 ? config.pollGroups() : null;
        if (cpus == null) {
            return asked != null ? asked : Runtime.getRuntime().availableProcessors();
        }
        if (asked != null && asked != cpus.size()) {
            throw new IllegalArgumentException("pollGroups is " + asked + " but pollGroupCpus " + cpus + " names "
                    + cpus.size() + " CPU(s): a poll group runs alone on each CPU given, so give one CPU per poll "
                    + "group, or leave pollGroups out");
        }
        return cpus.size();
    }

    /** The configuration's busy-poll time, checked before anything starts. */
    private static Duration busyPoll(TargetConfig config) {
        Integer us = config.busyPollUs();
        long max = EventLoops.MAX_BUSY_POLL.toNanos() / 1000;
        if (us != null && (us < 0 || us > max)) {
            throw new IllegalArgumentException("busyPollUs " + us + " is not from 0 (poll groups block when idle) to "
                    + max + " (a second)");
        }
        return Duration.ofNanos(us == null ? 0 : us * 1000L);
    }

    private static long memorySize(String name, String text, long byDefault) {
        if (text == null) {
            return byDefault;
        }
        try {
            return TargetConfig.parseSize(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + ": " + e.getMessage(), e);
        }
    }

    /**
     * Work on the built engine before it listens to any host: the command line's warm-up runs the I/O path through a
     * private subsystem on a listener of its own, so that the first hosts meet compiled code (TargetWarmUp). What it
     * adds it removes before it returns; it handles its own failures.
     */
    @FunctionalInterface
    public interface BeforeListening {
        void run(NvmeTarget target);
    }

    /** Builds the target described by {@code config} and starts listening; reservations do not persist. */
    public static NvmeTarget start(TargetConfig config) throws IOException {
        return start(config, null);
    }

    /**
     * Builds the target described by {@code config} and starts listening. {@code stateDirectory} (may be null: then
     * Persist Through Power Loss cannot be turned on) is where namespaces' reservations persist, in {@value
     * #RESERVATIONS_DIRECTORY}/.
     */
    public static NvmeTarget start(TargetConfig config, java.nio.file.Path stateDirectory) throws IOException {
        return start(config, stateDirectory, null);
    }

    /** As {@link #start(TargetConfig, java.nio.file.Path)}, running {@code beforeListening} (may be null) first. */
    public static NvmeTarget start(TargetConfig config, java.nio.file.Path stateDirectory,
            BeforeListening beforeListening) throws IOException {
        TargetLimits d = TargetLimits.defaults();
        TargetLimits limits = new TargetLimits(
                config.maxIoQueues() != null ? config.maxIoQueues() : d.maxIoQueues(),
                config.maxQueueSize() != null ? config.maxQueueSize() : d.maxQueueSize(),
                config.maxTransferSize() != null ? config.maxTransferSize() : d.maxTransferSize(),
                memorySize("maxConnectionMemory", config.maxConnectionMemory(), d.maxConnectionMemory()),
                memorySize("maxMemory", config.maxMemory(), d.maxMemory()));
        CpuList cpus = pollGroupCpus(config);
        int threads = pollGroupCount(config, cpus);
        Duration busyPoll = busyPoll(config);
        int anaLog = io.nvmeof.protocol.log.AnaLog.length(io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID, 1024);
        if (limits.maxTransferSize() < anaLog) {
            LOG.warn("maxTransferSize {} is smaller than the ANA log a Linux host sizes for these controllers ({} bytes"
                    + " with 1024 namespaces): Linux turns ANA off (\"disabling ANA support\") and multipath cannot"
                    + " follow ANA states; give maxTransferSize 16384 or more", limits.maxTransferSize(), anaLog);
        }
        TargetCore core = new TargetCore(limits);
        if (stateDirectory != null) {
            core.persistReservationsIn(new io.nvmeof.tgt.core.ReservationStore(stateDirectory.resolve(RESERVATIONS_DIRECTORY)));
            core.hostIdentities().persistIn(stateDirectory.resolve(HOST_IDS_FILE));
        }
        ThreadPlacement placement;
        try {
            placement = cpus == null ? null : ThreadPlacement.start(cpus);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new IllegalArgumentException("pollGroupCpus " + cpus + " (--poll-group-cpus, or the configuration "
                    + "document; --poll-group-cpus none turns it off): " + e.getMessage(), e);
        }
        if (placement != null) {
            core.pollPlacement(placement::pinned);
        }
        EventLoopGroup group;
        try {
            group = EventLoops.create(threads, "nvmeof-poll", busyPoll, core.pollPlacement());
        } catch (RuntimeException e) {
            if (placement != null) {
                placement.close();
            }
            throw e;
        }
        NvmeTarget target = new NvmeTarget(core, group);
        target.pollGroupCount = threads;
        target.placement = placement;
        try {
            if (config.subsystems() != null && config.subsystems().size() > LiveConfiguration.MAX_SUBSYSTEMS) {
                throw new IllegalArgumentException("the configuration has " + config.subsystems().size()
                        + " subsystems; a target takes at most " + LiveConfiguration.MAX_SUBSYSTEMS);
            }
            core.hostAuth().load(config.hosts());
            core.tlsKeys().load(config.hosts());
            target.sparseMemory = SparseMemoryLimit.of(config.maxSparseMemory() == null ? null
                    : memorySize("maxSparseMemory", config.maxSparseMemory(), 0));
            if (config.subsystems() != null) {
                for (SubsystemConfig s : config.subsystems()) {
                    target.addSubsystem(s);
                    String clash = NamespaceIdentities.clash(NamespaceIdentities.live(core));
                    if (clash != null) {
                        throw new IllegalArgumentException(clash);
                    }
                }
            }
            if (config.listeners() == null || config.listeners().isEmpty()) {
                throw new IllegalArgumentException("the configuration has no listeners");
            }
            if (beforeListening != null) {
                beforeListening.run(target);
            }
            int portId = 1;
            for (ListenerConfig l : config.listeners()) {
                target.addListener(l, l.id() != null ? l.id() : portId);
                portId++;
            }
            target.live = new LiveConfiguration(target, config.withReferrals(startReferrals(config, core)));
            group.next().scheduleAtFixedRate(target::checkKeepAlive, TargetCore.KEEP_ALIVE_CHECK_NANOS,
                    TargetCore.KEEP_ALIVE_CHECK_NANOS, TimeUnit.NANOSECONDS);
        } catch (IOException | RuntimeException e) {
            try {
                target.discardBackends(); // a refused start leaves the files as they were
            } finally {
                target.close();
            }
            throw e;
        }
        LOG.info("target started: {} poll group(s){}{}, {} subsystem(s)", threads, config.busyPollUs() != null
                && config.busyPollUs() > 0 ? " busy-polling " + config.busyPollUs() + " us when idle" : "",
                placement == null ? "" : " on CPU(s) " + placement.pollCpus() + " (other threads on "
                        + placement.housekeeping() + ")",
                core.subsystems().size() - 1);
        return target;
    }

    /** The configuration's referrals checked (after the listeners are bound: none may point back at one), listed. */
    private static List<TargetConfig.ReferralConfig> startReferrals(TargetConfig config, TargetCore core) {
        List<TargetConfig.ReferralConfig> referrals = ReferralChecks.normalizeAll(config.referrals());
        java.util.Set<Integer> taken = new java.util.HashSet<>();
        referrals.forEach(r -> { if (r.id() != null) { taken.add(r.id()); } });
        List<TargetConfig.ReferralConfig> withIds = new java.util.ArrayList<>();
        for (TargetConfig.ReferralConfig r : referrals) {
            ReferralChecks.refuseLoop(r, core.listeners());
            int id = r.id() != null ? r.id() : ReferralChecks.freeId(taken);
            taken.add(id);
            withIds.add(r.withId(id));
            core.putReferral(ReferralChecks.toLogEntry(r, id));
        }
        return withIds.isEmpty() ? null : withIds;
    }

    /** A periodic task that throws is never run again: the check must outlive any one failure of it. */
    private void checkKeepAlive() {
        try {
            core.checkKeepAlive();
        } catch (Throwable t) {
            LOG.error("checking keep-alive timeouts failed; checking again at the next period", t);
        }
    }

    private void addSubsystem(SubsystemConfig s) throws IOException {
        Subsystem sub = buildSubsystem(s);
        core.addSubsystem(sub);
        for (Namespace ns : sub.namespaces()) {
            LOG.info("subsystem {} namespace {}: {} x {} B blocks ({} MiB) on {}", sub.nqn(), ns.nsid(), ns.blockCount(),
                    ns.blockSize(), ns.sizeBytes() >> 20, ns.backend().describe());
        }
    }

    /** A subsystem as {@code s} describes it, namespaces opened, not yet registered; checks everything first. */
    public Subsystem buildSubsystem(SubsystemConfig s) throws IOException {
        if (s.nqn() == null) {
            throw new IllegalArgumentException("a subsystem has no nqn");
        }
        String serial = s.serial() != null ? s.serial() : defaultSerial(s.nqn());
        String model = s.model() != null ? s.model() : "nvmeof-java";
        int maxNs = s.maxNamespaces() != null ? s.maxNamespaces() : 1024;
        Subsystem sub = new Subsystem(s.nqn(), Subsystem.Type.NVM, serial, model, maxNs,
                s.allowAnyHost() == null || s.allowAnyHost());
        if (s.cntlidMin() != null || s.cntlidMax() != null) {
            sub.cntlidRange(s.cntlidMin() != null ? s.cntlidMin() : Subsystem.CNTLID_MIN,
                    s.cntlidMax() != null ? s.cntlidMax() : Subsystem.CNTLID_MAX);
        }
        if (s.hosts() != null) {
            for (String host : s.hosts()) {
                // An empty name can be sent (SPDK's host does) but never allowed: it names no host in particular.
                String why = Nqn.validate(host);
                if (why != null) {
                    throw new IllegalArgumentException("subsystem " + s.nqn() + ": allowed host " + Nqn.display(host)
                            + ": " + why);
                }
            }
            sub.allowedHosts().addAll(s.hosts());
            if (s.allowAnyHost() == null && !s.hosts().isEmpty()) {
                sub.allowAnyHost(false);
            }
        }
        if (s.sharedReservations() != null) {
            if (s.sharedReservations().isBlank()) {
                throw new IllegalArgumentException("subsystem " + s.nqn() + ": sharedReservations is empty; give a"
                        + " directory every target exporting the subsystem reaches, or leave it out");
            }
            // Before the namespaces: each takes its state from there as it is added.
            sub.shareReservations(new io.nvmeof.tgt.core.SharedReservations(
                    Path.of(s.sharedReservations()).toAbsolutePath().normalize(), sub));
        }
        if (s.namespaces() != null) {
            long next = 1;
            try {
                for (NamespaceConfig n : s.namespaces()) {
                    long nsid = n.nsid() != null ? n.nsid() : next;
                    Namespace ns = openNamespace(s.nqn(), nsid, n);
                    try {
                        sub.addNamespace(ns);
                    } catch (RuntimeException e) {
                        discard(ns);
                        throw e;
                    }
                    next = nsid + 1;
                }
            } catch (IOException | RuntimeException e) {
                // The subsystem is refused: the namespaces opened before the one refused go too (memory, files).
                sub.namespaces().forEach(this::discard);
                sub.stopSharingReservations();
                throw e;
            }
        }
        return sub;
    }

    /** The effective UUID of a namespace: as configured, else derived from the subsystem NQN and NSID (stable). */
    /**
     * The UUID (and, unless configured, NGUID) hosts see for a namespace: as configured, else one that tells volumes
     * apart, since a host takes a namespace whose identifiers are unchanged for the same volume (Linux's
     * {@code nvme_ns_ids_equal}; the initiator's handles) and sends it the writes it held across a reconnect. A file or
     * block device: derived from the subsystem NQN, the NSID and the path, so the same file keeps its identity across
     * restarts and another file under the NSID is another namespace. A RAM namespace: new each time it is made (the
     * volume is new and empty), and not written into the exported document.
     */
    public static UUID namespaceUuid(String nqn, long nsid, NamespaceConfig n, String kind) {
        if (n.uuid() != null) {
            return UUID.fromString(n.uuid());
        }
        if ("ram".equals(kind)) {
            return UUID.randomUUID();
        }
        Path path = Path.of(n.path()).toAbsolutePath().normalize();
        try {
            path = path.toRealPath(); // one device or file, however it is named (/dev/disk/by-id/... or /dev/sdX)
        } catch (IOException e) {
            // not there (yet): as written
        }
        return UUID.nameUUIDFromBytes((nqn + "/" + nsid + "/" + path).getBytes(StandardCharsets.UTF_8));
    }

    public Namespace openNamespace(String nqn, long nsid, NamespaceConfig n) throws IOException {
        int blockSize = n.blockSize() != null ? n.blockSize() : 512;
        String kind = n.backend() != null ? n.backend() : (n.path() != null ? "file" : "ram");
        String which = "namespace " + nsid + " of " + nqn;
        checkSize(which, n.size(), blockSize);
        byte[] nguid = null;
        if (n.nguid() != null) {
            if (!n.nguid().matches("[0-9a-fA-F]{32}")) {
                throw new IllegalArgumentException(which + ": nguid must be 32 hex digits, got '" + n.nguid() + "'");
            }
            nguid = java.util.HexFormat.of().parseHex(n.nguid());
            if (java.util.Arrays.equals(nguid, new byte[16])) {
                throw new IllegalArgumentException(which + ": nguid " + n.nguid() + " is all zeroes, which hosts take"
                        + " as no NGUID at all; give another, or leave nguid out (it is then the UUID's 16 bytes)");
            }
        }
        if (n.uuid() != null && UUID.fromString(n.uuid()).equals(new UUID(0, 0))) {
            throw new IllegalArgumentException(which + ": uuid " + n.uuid() + " is the nil UUID, which hosts take as"
                    + " no UUID at all; give another, or leave uuid out for one of its own");
        }
        if (!"ram".equals(kind) && n.path() == null) {
            throw new IllegalArgumentException(which + ": a " + kind + " backend needs a path");
        }
        if (!"ram".equals(kind) && n.sparse() != null) {
            throw new IllegalArgumentException(which + ": sparse is for ram namespaces (a "
                    + kind + " backend's space is the file system's: a missing file is created sparse)");
        }
        if ("ram".equals(kind) && n.bufferedIo() != null) {
            throw new IllegalArgumentException(which + ": bufferedIo is for file and block namespaces (a ram"
                    + " namespace has no page cache to go through or around)");
        }
        if (n.queueDepth() != null) {
            if ("ram".equals(kind)) {
                throw new IllegalArgumentException(which + ": queueDepth is for file and block namespaces (a ram"
                        + " namespace has no device to queue for)");
            }
            if (n.queueDepth() < 1 || n.queueDepth() > 65535) {
                throw new IllegalArgumentException(which + ": queueDepth must be 1 to 65535 (requests at the device at"
                        + " once per poll group), got " + n.queueDepth());
            }
        }
        BlockBackend backend;
        switch (kind) {
            case "ram":
                backend = new RamBackend(TargetConfig.parseSize(n.size() != null ? n.size() : "1GiB"),
                        Boolean.TRUE.equals(n.sparse()), sparseMemory);
                break;
            case "file":
                backend = FileBackend.openFile(Path.of(n.path()), n.size() != null ? TargetConfig.parseSize(n.size()) : 0,
                        Boolean.TRUE.equals(n.bufferedIo()));
                break;
            case "block":
                backend = FileBackend.openBlockDevice(Path.of(n.path()),
                        n.size() != null ? TargetConfig.parseSize(n.size()) : 0, Boolean.TRUE.equals(n.bufferedIo()));
                break;
            default:
                throw new IllegalArgumentException(which + ": unknown backend '" + kind
                        + "' (use ram, file or block)");
        }
        try {
            io.nvmeof.tgt.backend.RingFile dio = backend.ringFile();
            // The device's logical block, whether served direct or through the page cache: a bufferedIo namespace
            // of 512-byte blocks on a 4 KiB device took writes the page cache could do and space changes it could not
            // (EINVAL for each Deallocate and Write Zeroes not on a 4 KiB boundary).
            int logical = Math.max(backend.logicalBlockSize(), dio != null ? dio.offsetAlignment() : 1);
            if (blockSize % logical != 0) {
                throw new IllegalArgumentException(which + ": block size " + blockSize + " is smaller than the "
                        + logical + " bytes " + backend.describe() + " reads and writes at a time (its"
                        + " logical block size); give blockSize " + logical + " or a multiple of it");
            }
            int physical = backend.physicalBlockSize();
            if (physical > 0 && blockSize > physical) {
                // NVMe promises every host that one block is written whole or not at all, power loss or not (AWUPF
                // and NAWUPF count from one block): a device that writes only its physical block atomically could
                // tear a larger one, and no field can say so.
                throw new IllegalArgumentException(which + ": block size " + blockSize + " is larger than the "
                        + physical + " bytes " + backend.describe() + " writes atomically (its physical block size):"
                        + " a power loss could leave a block half written, which NVMe hosts are promised never"
                        + " happens; give blockSize " + physical + " (or a multiple of " + logical + " up to it)");
            }
            Namespace ns = new Namespace(nsid, backend, blockSize, namespaceUuid(nqn, nsid, n, kind), nguid);
            if (n.queueDepth() != null) {
                ns.limitDeviceQueue(n.queueDepth());
            }
            if (n.anaGroup() != null) {
                ns.anaGroup(n.anaGroup());
            }
            backends.add(backend);
            return ns;
        } catch (RuntimeException e) {
            try {
                backend.discard(); // refused: a file it created or grew is as it was
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Refuses a size (null: the backend's own) that is not a whole number of blocks: it was cut down silently ("1000"
     * on 512-byte blocks made a namespace of 512 bytes). A file's or device's own size is cut down to whole blocks,
     * as nvmet does.
     */
    private static void checkSize(String which, String size, int blockSize) {
        if (size == null || blockSize != 512 && blockSize != 4096) {
            return; // the block size itself is refused when the namespace is made
        }
        long bytes = TargetConfig.parseSize(size);
        if (bytes > 0 && bytes < blockSize) {
            throw new IllegalArgumentException(which + ": size " + size + " is smaller than one block (" + blockSize
                    + " bytes)");
        }
        if (bytes % blockSize != 0) {
            long down = bytes / blockSize * blockSize;
            throw new IllegalArgumentException(which + ": size " + size + " is not a whole number of " + blockSize
                    + "-byte blocks; give a multiple of " + blockSize + ", such as " + down + " or " + (down + blockSize));
        }
    }

    /**
     * Closes a removed namespace's backend once its in-flight commands have finished ({@link
     * io.nvmeof.tgt.core.NamespaceDrain}), after RDMA listeners drop their registrations of its memory. The
     * namespace must already be out of {@code sub}.
     */
    public void retire(Namespace ns, Subsystem sub) {
        if (pollGroups.isShuttingDown()) {
            return; // the target is stopping: it closes every backend itself
        }
        io.nvmeof.tgt.core.NamespaceDrain.closeWhenDrained(ns, core.queuesOf(sub), pollGroups.next(), () -> {
            // Closing may block (fdatasync): never on the poll group that ran the check.
            Thread t = new Thread(() -> {
                for (io.nvmeof.tgt.rdma.RdmaTransport r : rdmaListeners) {
                    r.releasePinned(ns.backend().pinnedRegions());
                }
                try {
                    ns.backend().flush();
                } catch (IOException e) {
                    LOG.warn("flushing removed namespace {} ({}): {}", ns.nsid(), ns.backend().describe(), e.getMessage());
                }
                release(ns);
                if (!sub.quiet()) {
                    LOG.info("namespace {} of {} drained; {} closed", ns.nsid(), sub.nqn(), ns.backend().describe());
                }
            }, "nvmeof-namespace-close");
            t.setDaemon(true);
            t.start();
        });
    }

    /**
     * Closes the backend of a namespace that was opened but never exported (refused, or an import undone), undoing what
     * opening it did to its file ({@link io.nvmeof.tgt.backend.BlockBackend#discard}).
     */
    public void discard(Namespace ns) {
        backends.remove(ns.backend());
        try {
            ns.backend().discard();
        } catch (IOException e) {
            LOG.warn("discarding {}: {}", ns.backend().describe(), e.getMessage());
        }
    }

    /** Discards every backend opened so far (no host has seen them), undoing what opening them did to their files. */
    private void discardBackends() {
        for (BlockBackend b : backends) {
            try {
                b.discard();
            } catch (IOException e) {
                LOG.warn("discarding {}: {}", b.describe(), e.getMessage());
            }
        }
        backends.clear();
    }

    /** Closes the backend of a removed namespace once drained. */
    void release(Namespace ns) {
        backends.remove(ns.backend());
        try {
            ns.backend().close();
        } catch (IOException e) {
            LOG.warn("closing {}: {}", ns.backend().describe(), e.getMessage());
        }
    }

    static String defaultSerial(String nqn) {
        return String.format("%016x", UUID.nameUUIDFromBytes(nqn.getBytes(StandardCharsets.UTF_8)).getMostSignificantBits())
                .substring(0, 16);
    }

    /** Starts a listener; returns the port it is bound to (port 0 in {@code l}: any free one). */
    public int addListener(ListenerConfig l, int portId) throws IOException {
        var ana = io.nvmeof.tgt.core.AnaGroups.parseStates(l.ana()); // checked before anything binds
        // Applied before it binds: a host connecting at once must not read "optimized" for a group set otherwise.
        core.ana().apply(portId, ana);
        try {
            return bindListener(l, portId);
        } catch (IOException | RuntimeException e) {
            if (tcpListeners.stream().noneMatch(t -> t.info() != null && t.info().portId() == portId)
                    && rdmaListeners.stream().noneMatch(r -> r.info() != null && r.info().portId() == portId)) {
                core.ana().forget(portId);
            }
            throw e;
        }
    }

    private int bindListener(ListenerConfig l, int portId) throws IOException {
        String transport = l.transport() != null ? l.transport() : "tcp";
        if ("rdma".equals(transport)) {
            io.nvmeof.tgt.rdma.RdmaTransport r = new io.nvmeof.tgt.rdma.RdmaTransport(core, pollGroupCount,
                    l.inlineDataSize() != null ? l.inlineDataSize() : TcpOptions.defaults().inlineDataSize());
            r.listen(portId, l.address() != null ? l.address() : "127.0.0.1", l.port() != null ? l.port() : 4420,
                    l.subsystems() != null ? new HashSet<>(l.subsystems()) : new HashSet<>());
            rdmaListeners.add(r);
            if (placement != null) {
                LOG.warn("RDMA listener {}: its poll group N runs on the same CPU as NVMe/TCP poll group N ({}): two"
                        + " polling threads share each CPU when both transports are busy; run a target per transport"
                        + " to give each its own CPUs", portId, placement.pollCpus());
            }
            return r.port();
        }
        if (!"tcp".equals(transport)) {
            throw new IllegalArgumentException("transport '" + transport + "' is unknown; use tcp or rdma");
        }
        TcpOptions d = TcpOptions.defaults();
        TcpOptions options = new TcpOptions(l.inlineDataSize() != null ? l.inlineDataSize() : d.inlineDataSize(),
                l.maxH2CData() != null ? l.maxH2CData() : d.maxH2CData()).withTls(TlsMode.parse(l.tls()));
        TcpTransport t = new TcpTransport(core, pollGroups);
        t.listen(portId, l.address() != null ? l.address() : "127.0.0.1", l.port() != null ? l.port() : 4420, options,
                l.subsystems() != null ? new HashSet<>(l.subsystems()) : new HashSet<>());
        tcpListeners.add(t);
        return t.port();
    }

    /** Stops the listener with this port ID and ends the connections made through it; false when there is none. */
    public boolean removeListener(int portId) {
        return removeListener(portId, -1);
    }

    /**
     * Stops the listener with this port ID bound to {@code port} (any port: -1). An import binds a new listener under
     * an ID before it removes the old one that had it, so the port tells the two apart.
     */
    public boolean removeListener(int portId, int port) {
        boolean removed = stopListener(portId, port);
        if (removed && tcpListeners.stream().noneMatch(t -> t.info() != null && t.info().portId() == portId)
                && rdmaListeners.stream().noneMatch(r -> r.info() != null && r.info().portId() == portId)) {
            core.ana().forget(portId); // a listener added later under this ID starts with its own states
        }
        return removed;
    }

    private boolean stopListener(int portId, int port) {
        for (TcpTransport t : tcpListeners) {
            if (t.info() != null && t.info().portId() == portId && (port < 0 || t.info().trsvcid().equals(Integer.toString(port)))) {
                tcpListeners.remove(t);
                t.closeAndDisconnect();
                return true;
            }
        }
        for (io.nvmeof.tgt.rdma.RdmaTransport r : rdmaListeners) {
            if (r.info() != null && r.info().portId() == portId && (port < 0 || r.info().trsvcid().equals(Integer.toString(port)))) {
                rdmaListeners.remove(r);
                r.close(); // releases every connection it accepted
                return true;
            }
        }
        return false;
    }

    public TargetCore core() {
        return core;
    }

    /** The poll groups' event loops (for monitoring: see {@link #dataPathFailures}). */
    public EventLoopGroup pollGroups() {
        return pollGroups;
    }

    /**
     * What of the data path has stopped while the target runs, one sentence each: a poll group or an accept loop whose
     * thread ended (hosts connected through it get no answers, new connections none). Empty while all serve.
     */
    public List<String> dataPathFailures() {
        List<String> out = new ArrayList<>();
        if (closing) {
            return out;
        }
        for (int n : EventLoops.endedLoops(pollGroups)) {
            out.add("poll group " + n + " of " + pollGroupCount + " has stopped: the NVMe/TCP queues it served get no"
                    + " answers (see the target's log for why); restart the target");
        }
        for (TcpTransport t : tcpListeners) {
            if (!t.accepting() && t.info() != null) {
                out.add("listener " + t.info().portId() + " (tcp " + t.info().traddr() + ":" + t.info().trsvcid()
                        + ") accepts no connections: its accept loop has stopped; add a listener on another port and remove this"
                        + " one, or restart the target");
            }
        }
        for (io.nvmeof.tgt.rdma.RdmaTransport r : rdmaListeners) {
            for (int n : r.endedPollGroups()) {
                out.add("RDMA poll group " + n + " of listener " + (r.info() != null ? r.info().portId() : "?")
                        + " has stopped: its queues get no answers (see the target's log for why); restart the target");
            }
        }
        return out;
    }

    /** Changes the running target's subsystems, namespaces and hosts, and exports its configuration. */
    public LiveConfiguration live() {
        return live;
    }

    /** The TCP port of the {@code index}th listener (useful when the configuration asked for port 0). */
    public int tcpPort(int index) {
        return tcpListeners.get(index).port();
    }

    public List<TcpTransport> tcpListeners() {
        return tcpListeners;
    }

    /** The RDMA port of the {@code index}th RDMA listener. */
    public List<io.nvmeof.tgt.rdma.RdmaTransport> rdmaListeners() {
        return List.copyOf(rdmaListeners);
    }

    public int rdmaPort(int index) {
        return rdmaListeners.get(index).port();
    }

    @Override
    public void close() {
        try {
            stop();
        } finally {
            if (placement != null) {
                placement.close(); // every thread back on all the process's CPUs, whatever failed above
            }
        }
        LOG.info("target stopped");
    }

    private void stop() {
        closing = true;
        for (TcpTransport t : tcpListeners) {
            t.close();
        }
        for (io.nvmeof.tgt.rdma.RdmaTransport r : rdmaListeners) {
            r.close();
        }
        for (Controller c : core.controllers()) {
            c.teardown("target shutting down");
        }
        core.stopBackendWork(30_000); // a deallocate or flush in flight finishes before its backend closes
        pollGroups.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        for (io.nvmeof.tgt.core.Subsystem s : core.subsystems()) {
            s.stopSharingReservations(true); // nothing of this target's runs any more: other targets need not wait
        }
        for (BlockBackend b : backends) {
            try {
                b.flush();
                b.close();
            } catch (IOException e) {
                LOG.warn("closing {}: {}", b.describe(), e.toString());
            }
        }
    }
}

package io.nvmeof.initiator;

import io.nvmeof.initiator.rdma.RdmaHostTransport;
import io.nvmeof.initiator.tcp.TcpHostTransport;
import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.HostTransport;
import io.nvmeof.initiator.transport.PendingRequest;
import io.nvmeof.initiator.transport.RoomSignal;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.identify.NamespaceDescriptor;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to one NVMe-oF controller over NVMe/TCP or NVMe/RDMA: the admin queue plus {@link #ioQueueCount()}
 * I/O queues of one {@link HostTransport}. Create with {@link #connect}; thread-safe; close when done.
 *
 * <p>Buffers: over RDMA, data moves without a copy between the controller and direct buffers registered with the
 * device: allocate them with {@link #allocateBuffer} or register your own with {@link #registerBuffer} (unregistered
 * direct buffers are registered on first use, up to a bound; heap buffers are bounced through a temporary copy).
 *
 * <p>Losing the connection (a queue fails, a command times out, a keep alive goes unanswered within KATO) does not
 * end the controller: as the Linux host does, it tears the whole association down, reconnects every
 * {@link ConnectOptions#reconnectDelay()} and sends the interrupted reads and writes again on the new queues, holding
 * new I/O meanwhile. Callers see a failure only after {@link ConnectOptions#fastIoFailTimeout()} or, when the
 * controller gives up, {@link ConnectOptions#ctrlLossTimeout()}; {@link ConnectOptions#stateListener()} follows it.
 *
 * <p>Namespaces: {@link #namespace(long)} gives the handle of the namespace an NSID names now. A handle stays valid
 * across reconnects and rescans while the controller reports the same namespace under its NSID (same identifiers and
 * block size); once the namespace is removed or replaced, the handle is retired and fails every request not yet sent
 * with {@link ErrorKind#NAMESPACE_GONE} (see {@link NamespaceHandle}), and
 * {@link ControllerStateListener#namespacesChanged} is told.
 *
 * <p>The synchronous admin methods block the caller up to {@link ConnectOptions#commandTimeout()}; they must not be
 * called from an I/O completion callback (the event loop), and throw {@link IllegalStateException} if they are.
 */
public final class NvmeofController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);

    /** Admin queue: 32 entries, SQSIZE 31 on the wire, as the Linux host (NVME_AQ_DEPTH). */
    static final int ADMIN_QUEUE_DEPTH = 32;
    private static final int IDENTIFY_LENGTH = 4096;
    private static final int MAX_DISCOVERY_RETRIES = 10;
    /**
     * The most discovery log records read (16 MiB of log): a discovery service lists one record per subsystem port a
     * host may use, thousands at most; a NUMREC beyond this is a corrupt page, not a log to allocate memory for.
     */
    static final int MAX_DISCOVERY_RECORDS = 16384;
    /** NSID FFFFFFFFh: all namespaces, never one of them. */
    private static final long BROADCAST_NSID = 0xFFFF_FFFFL;
    /**
     * The most active namespaces taken from a controller (64 pages of the list): each costs an Identify at every
     * connect and rescan; Linux nvmet allows 1024 per subsystem. More is taken for a list that never ends.
     */
    static final int MAX_NAMESPACES = 65536;
    private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    private final TransportId id;
    private final ConnectOptions options;
    private final boolean discovery;
    private final int kato;
    private final HostTransport transport;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger nextQueue = new AtomicInteger();
    private final AtomicReference<ControllerState> state = new AtomicReference<>(ControllerState.RECONNECTING);
    /** Keep alive, reconnects, rescans and state reports: one daemon thread per controller, never an I/O thread. */
    private final ScheduledExecutorService housekeeping;
    /** Held by whoever builds or tears down the association (connect, reconnect, close). */
    private final ReentrantLock association = new ReentrantLock();
    private final RoomSignal room = new RoomSignal();
    private final HeldRequests held;

    /** Which association a queue belongs to: a late failure of an old one must not restart recovery. */
    private volatile int generation;
    private volatile HostQueue admin;
    private volatile HostQueue[] ioQueues = new HostQueue[0];
    private int cntlid;
    private long cap;
    private long vs;
    private long cc;
    private ControllerInfo info;
    private long maxTransfer;
    private int queueDepth;
    private volatile List<NamespaceHandle> namespaces = List.of();
    private volatile Map<Long, NamespaceHandle> byNsid = Map.of();
    /** A reconnect attempt changed the namespaces but failed before reporting it. Under {@link #association}. */
    private boolean namespacesUnreported;
    private ScheduledFuture<?> keepAliveTask;
    /** When the outstanding Keep Alive was sent (System.nanoTime), 0 when none is outstanding. */
    private volatile long keepAliveSent;
    private volatile long lastKeepAlive;
    private volatile boolean failFast;
    private volatile String lastFailure;
    private volatile long lossStart;
    private int reconnectAttempts;
    private ScheduledFuture<?> fastFailTask;

    private NvmeofController(TransportId id, ConnectOptions options, HostTransport transport) {
        this.id = id;
        this.options = options;
        this.discovery = Nqn.DISCOVERY.equals(id.subnqn());
        this.kato = options.keepAliveTimeoutMs(discovery);
        this.transport = transport;
        this.housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "nvmeof-controller " + id.traddr() + ":" + id.trsvcid());
            t.setDaemon(true);
            return t;
        });
        this.held = new HeldRequests(new HeldRequests.Owner() {
            @Override
            public ControllerState state() {
                return state.get();
            }

            @Override
            public boolean failFast() {
                return failFast;
            }

            @Override
            public boolean holds() {
                return reconnects() && !closed.get();
            }

            @Override
            public HostQueue liveQueue() {
                return openQueue();
            }

            @Override
            public void noLiveQueue() {
                beginRecovery("no I/O queue is open", generation);
            }

            @Override
            public String lastFailure() {
                return lastFailure;
            }
        }, "controller " + id + " (reconnecting)");
    }

    /**
     * Connects the admin queue, enables the controller, identifies it and its namespaces, and connects the I/O queues
     * (none for discovery controllers). A first connect that fails is not retried.
     *
     * @throws NvmeStatusException when the controller refuses a step (e.g. Connect: CONNECT_INVALID_HOST)
     * @throws NvmeofException     on connection failures and timeouts
     */
    public static NvmeofController connect(TransportId id, ConnectOptions options) throws NvmeofException {
        String why = Nqn.validate(id.subnqn());
        if (why != null) {
            throw new IllegalArgumentException("invalid subsystem NQN '" + id.subnqn() + "': " + why);
        }
        HostTransport transport;
        if ("tcp".equalsIgnoreCase(id.trtype())) {
            transport = new TcpHostTransport(id, options);
        } else if ("rdma".equalsIgnoreCase(id.trtype())) {
            transport = RdmaHostTransport.create(id, options);
        } else {
            throw new NvmeofException("transport type '" + id.trtype() + "' is not supported by this initiator; use"
                    + " \"tcp\" or \"rdma\"");
        }
        NvmeofController c = new NvmeofController(id, options, transport);
        try {
            c.association.lock();
            try {
                c.establish(0);
                c.state.set(ControllerState.CONNECTED);
                c.started();
            } finally {
                c.association.unlock();
            }
            return c;
        } catch (RuntimeException | Error e) {
            c.abort();
            throw e;
        }
    }

    /** True when a lost connection is re-established (not for discovery controllers, nor with ctrlLossTimeout 0). */
    private boolean reconnects() {
        return !discovery && !options.ctrlLossTimeout().isZero();
    }

    /** Builds one association: admin queue, enable, identify, I/O queues. Under {@link #association}. */
    private void establish(int gen) {
        LOG.debug("connecting to {} as {}", id, options.hostNqn());
        // The admin queue carries no in-capsule data but Fabrics commands' (NVMe/TCP); NVMe/RDMA hosts send none
        // on it at all (the controller advertises in-capsule data for I/O queues only).
        admin = transport.connectQueue(0, ADMIN_QUEUE_DEPTH - 1, 0, transport.maxTransferCap());
        admin.failureListener(q -> onQueueFailure(q, gen));

        int dw0 = fabricsConnect(admin, 0, ADMIN_QUEUE_DEPTH - 1, kato, ConnectData.CNTLID_DYNAMIC);
        cntlid = dw0 & 0xFFFF;
        int authreq = (dw0 >>> 16) & 0x3;
        if (authreq != 0) {
            throw new NvmeofException("controller " + id + " requires in-band authentication (AUTHREQ=" + authreq
                    + "), which this initiator does not implement; allow the host without DH-HMAC-CHAP on the target");
        }
        cap = propertyGet(ControllerRegisters.CAP, 8);
        vs = propertyGet(ControllerRegisters.VS, 4);
        enable();

        long pageSize = 1L << (12 + ((cap >>> 48) & 0xF));
        info = ControllerInfo.decode(identify(Opcodes.CNS_CONTROLLER, 0), pageSize);
        long cap = transport.maxTransferCap();
        maxTransfer = info.mdts() > 0 ? Math.min(info.mdts(), cap) : cap;
        if (info.mdts() > cap) {
            LOG.info("{}: MDTS {} bytes capped to {} bytes per command", id, info.mdts(), cap);
        }
        admin.maxTransfer(maxTransfer);
        LOG.info("connected to {}: cntlid {}, {} {} fw {}, NVMe {}", id, cntlid, info.model(), info.serial(),
                info.firmware(), info.versionString());

        if (!isDiscoveryController()) {
            int count = negotiateQueueCount();
            // Remembered until reported: an attempt that found the change may fail after it (the next one then
            // finds nothing new), and the change must still be told.
            namespacesUnreported |= identifyNamespaces() && gen > 0;
            connectIoQueues(count, gen);
            if (namespacesUnreported) {
                namespacesUnreported = false;
                reportNamespaces();
            }
        }
    }

    private boolean isDiscoveryController() {
        return discovery || info.controllerType() == IdentifyController.CNTRLTYPE_DISCOVERY;
    }

    /** After an association is up: keep alive, asynchronous events. */
    private void started() {
        if (kato > 0) {
            // Linux sends Keep Alive every KATO/2 (without Traffic Based Keep Alive); so do we. The tick runs four
            // times per KATO so a Keep Alive left unanswered for KATO is noticed within KATO + KATO/4.
            keepAliveSent = 0;
            lastKeepAlive = System.nanoTime();
            long tick = Math.max(5, kato / 4);
            keepAliveTask = housekeeping.scheduleAtFixedRate(this::keepAliveTick, tick, tick, TimeUnit.MILLISECONDS);
        }
        if (!isDiscoveryController()) {
            armAsyncEvents(generation);
        }
    }

    /** Fabrics Connect on {@code q}; returns completion DW0 (CNTLID in bits 15:0). */
    private int fabricsConnect(HostQueue q, int qid, int sqsize, int katoMs, int wantCntlid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_CONNECT).recfmt(0).qid(qid).sqsize(sqsize).cattr(0).kato(katoMs);
        byte[] data = new byte[ConnectData.LENGTH];
        ConnectData cd = new ConnectData().wrap(new UnsafeBuffer(data), 0);
        cd.hostId(uuidBytes(options.hostId())).cntlid(wantCntlid).subnqn(id.subnqn()).hostnqn(options.hostNqn());
        String what = "Fabrics Connect (qid " + qid + ", sqsize " + sqsize + ") to " + id;
        return (int) execute(q, what, sqe, HostQueue.DIR_H2C, ByteBuffer.wrap(data), data.length);
    }

    private void enable() {
        // CC: EN=1, CSS=NVM (0), MPS=0 (4 KiB), AMS round robin, IOSQES=6 (64 B), IOCQES=4 (16 B), as Linux.
        cc = ControllerRegisters.CC_ENABLE_DEFAULT;
        propertySet(ControllerRegisters.CC, 4, cc);
        long timeoutMs = (ControllerRegisters.capTimeout500ms(cap) + 1) * 500;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        long sleep = 1;
        while (true) {
            long csts = propertyGet(ControllerRegisters.CSTS, 4);
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

    /**
     * Reads the active namespace list and each namespace's Identify data and identifiers. A handle is kept when its
     * NSID still names the same namespace: the same identifiers (compared as Linux's {@code nvme_ns_ids_equal}; for a
     * controller that reports none, the same size) and the same block size; a kept handle's size follows a namespace
     * that grew. Every other old handle is retired ({@link NamespaceHandle#retire}): its requests not yet sent fail
     * with {@link IoCallback#ERR_NAMESPACE_GONE}. Returns whether anything changed (handles or sizes).
     *
     * <p>Ordering, which keeps a retired handle's requests off the wire: the retirement is a volatile write made here,
     * on the thread holding {@link #association}. On a reconnect this runs inside {@link #establish}, before the new
     * I/O queues are published ({@code ioQueues}) and before {@code state} becomes CONNECTED; until then
     * {@link #pickQueue} gives out {@link #held}, and the old association's queues are failed already, so every
     * request of the old handle is either held or handed back to {@link #held}, and {@link HeldRequests#drain} (which
     * reads CONNECTED, or runs after it on this thread) sees the retirement. A request that reaches a queue anyway
     * (picked just before, a live rescan) is checked again on that queue's I/O thread just before it is written
     * ({@code SlotQueue.pollSubmitted}, and {@code startPending} for the overflow queue): a check that comes after
     * this write in the synchronization order sees it, one that comes before was a send already under way when the
     * host retired the handle (as one on the wire, outside its control).
     */
    private boolean identifyNamespaces() {
        // CNS 02h lists active NSIDs greater than the given one, in increasing order, 1024 per page, zero-terminated.
        // A list that breaks the rules is taken as Linux takes it (each NSID it names is scanned), less what cannot be
        // a namespace: the broadcast NSID and repeats. Paging goes on from the highest NSID seen, and stops at a full
        // page with nothing beyond the last one, which would otherwise be asked for again forever.
        java.util.TreeSet<Long> nsids = new java.util.TreeSet<>();
        long after = 0;
        String oddity = null;
        while (true) {
            ByteBuffer list = ByteBuffer.wrap(identify(Opcodes.CNS_ACTIVE_NAMESPACE_LIST, after)).order(ByteOrder.LITTLE_ENDIAN);
            int n = 0;
            long highest = after;
            for (int i = 0; i < IDENTIFY_LENGTH / 4; i++) {
                long nsid = list.getInt(i * 4) & 0xFFFF_FFFFL;
                if (nsid == 0) {
                    break;
                }
                n++;
                if (nsid == BROADCAST_NSID) {
                    oddity = "NSID FFFFFFFFh (the broadcast value, no namespace) listed; skipped";
                    continue;
                }
                if (nsid <= after || !nsids.add(nsid)) {
                    oddity = "NSID " + nsid + " out of order or listed twice (the list must increase)";
                    continue;
                }
                if (nsids.size() > MAX_NAMESPACES) {
                    throw new NvmeofException("controller " + id + " lists more than " + MAX_NAMESPACES + " active"
                            + " namespaces; this initiator handles at most " + MAX_NAMESPACES);
                }
                highest = Math.max(highest, nsid);
            }
            if (n < IDENTIFY_LENGTH / 4 || highest == after) {
                break;
            }
            after = highest;
        }
        if (oddity != null) {
            LOG.warn("{}: the active namespace list breaks the specification's rules: {}", id, oddity);
        }
        Map<Long, NamespaceHandle> map = new LinkedHashMap<>();
        Map<NamespaceHandle, Long> resized = new java.util.IdentityHashMap<>();
        for (long nsid : nsids) {
            byte[] data;
            try {
                data = identify(Opcodes.CNS_NAMESPACE, nsid);
            } catch (NvmeStatusException e) {
                // The controller refused this one namespace (removed since the list, or listed by mistake): the others
                // are still served, as Linux skips a namespace whose Identify fails. Transport errors still fail.
                LOG.warn("{}: namespace {} listed as active but its Identify failed ({}); skipped", id, nsid,
                        e.getMessage());
                continue;
            }
            IdentifyNamespace ns = new IdentifyNamespace().<IdentifyNamespace>wrap(new UnsafeBuffer(data), 0);
            if (ns.nsze() == 0) {
                LOG.debug("{}: namespace {} reports size 0, skipped", id, nsid);
                continue;
            }
            int format = ns.formatIndex(); // bits 6:5 too: a format above 15 is not the one bits 3:0 name
            int shift = ns.lbafDataSizeShift(format);
            if (shift < 9 || shift > 30) {
                LOG.warn("{}: namespace {} has an unusable LBA data size 2^{}, skipped", id, nsid, shift);
                continue;
            }
            if (1L << shift > maxTransfer) {
                // No read or write of one block fits a command; Linux does not add such a namespace either.
                LOG.warn("{}: namespace {} has blocks of {} bytes, more than one command may carry ({} bytes, MDTS);"
                        + " skipped", id, nsid, 1 << shift, maxTransfer);
                continue;
            }
            // NSZE is 64 bits: the size in bytes must fit a long (sizeBytes, byte offsets); no real namespace is near.
            if (ns.nsze() < 0 || ns.nsze() > Long.MAX_VALUE >>> shift) {
                LOG.warn("{}: namespace {} claims {} blocks of {} bytes, beyond 2^63 bytes; skipped", id, nsid,
                        Long.toUnsignedString(ns.nsze()), 1 << shift);
                continue;
            }
            if (ns.lbafMetadataSize(format) != 0 && (ns.flbas() & 0x10) != 0) {
                LOG.warn("{}: namespace {} uses extended LBAs with {} bytes of metadata; this initiator transfers data only",
                        id, nsid, ns.lbafMetadataSize(format));
            }
            NamespaceIdentifiers ids = namespaceIdentifiers(nsid, ns);
            int blockSize = 1 << shift;
            NamespaceHandle old = byNsid.get(nsid);
            if (old != null && sameNamespace(old, ids, ns.nsze(), blockSize)) {
                if (old.blockCount() != ns.nsze()) {
                    resized.put(old, ns.nsze());
                }
                map.put(nsid, old);
            } else {
                map.put(nsid, new NamespaceHandle(this, nsid, ns.nsze(), blockSize, ids));
            }
        }
        Map<Long, NamespaceHandle> before = byNsid;
        boolean changed = !map.equals(before) || !resized.isEmpty();
        resized.forEach((h, blocks) -> {
            LOG.info("{}: namespace {} ({}) resized from {} to {} blocks of {} bytes", id, h.nsid(), h.identifiers(),
                    h.blockCount(), blocks, h.blockSize());
            h.resize(blocks);
        });
        // The new handles first, so a caller told its handle was retired finds the new one at once.
        byNsid = Collections.unmodifiableMap(map);
        namespaces = List.copyOf(map.values());
        for (NamespaceHandle old : before.values()) {
            NamespaceHandle now = map.get(old.nsid());
            if (now != old) {
                String why = retirement(old, now, nsids.contains(old.nsid()));
                LOG.warn("{}; its handle fails every request not yet sent", why);
                old.retire(why);
            }
        }
        return changed;
    }

    /**
     * Whether {@code old} is still the namespace Identify now describes: as Linux's {@code nvme_ns_ids_equal} (every
     * identifier equal, all-zero ones counting as none) with the same block size; without any identifier on either
     * side, size and block size are all there is to go by.
     */
    private static boolean sameNamespace(NamespaceHandle old, NamespaceIdentifiers ids, long nsze, int blockSize) {
        if (old.blockSize() != blockSize) {
            return false;
        }
        if (!ids.any() && !old.identifiers().any()) {
            return old.blockCount() == nsze;
        }
        return old.identifiers().sameAs(ids);
    }

    /** Why {@code old} is retired, for its requests' errors and the log: which NSID, removed or replaced and how. */
    private String retirement(NamespaceHandle old, NamespaceHandle now, boolean listed) {
        String ns = "namespace " + old.nsid() + " of " + id;
        if (now == null) {
            return ns + " was removed (" + (listed ? "listed, but its Identify failed or it is no longer usable"
                    : "no longer in the active namespace list") + ")";
        }
        NamespaceIdentifiers was = old.identifiers();
        NamespaceIdentifiers is = now.identifiers();
        if (!was.sameAs(is)) {
            return ns + " was replaced: its identifiers changed (" + was.changesTo(is) + ")";
        }
        if (old.blockSize() != now.blockSize()) {
            return ns + " was replaced: its block size changed from " + old.blockSize() + " to " + now.blockSize()
                    + " bytes";
        }
        return ns + " was replaced: the controller reports no identifiers, and its size changed from "
                + old.blockCount() + " to " + now.blockCount() + " blocks";
    }

    /**
     * NGUID and EUI-64 of Identify Namespace, and the Namespace Identification Descriptor list (CNS 03h) for the UUID,
     * as Linux reads it: from NVMe 1.3 on, and a controller that refuses it or returns an empty or malformed list
     * just reports no UUID. Identifiers the list gives win over Identify Namespace's (as in Linux), which fill in
     * those it does not give.
     */
    private NamespaceIdentifiers namespaceIdentifiers(long nsid, IdentifyNamespace ns) {
        byte[] nguid = new byte[NamespaceIdentifiers.NGUID_LENGTH];
        byte[] eui64 = new byte[NamespaceIdentifiers.EUI64_LENGTH];
        ns.readNguid(nguid);
        ns.readEui64(eui64);
        UUID uuid = null;
        if (vs >= ControllerRegisters.VERSION_1_3) {
            byte[] list = null;
            try {
                list = identify(Opcodes.CNS_NAMESPACE_DESCRIPTORS, nsid);
            } catch (NvmeStatusException e) {
                LOG.debug("{}: namespace {}: no Namespace Identification Descriptor list ({})", id, nsid,
                        e.getMessage());
            }
            NamespaceIdentifiers listed = list == null ? null : descriptors(nsid, list);
            if (listed != null) {
                if (listed.nguid() != null) {
                    nguid = listed.nguid();
                }
                if (listed.eui64() != null) {
                    eui64 = listed.eui64();
                }
                uuid = listed.uuid();
            }
        }
        return new NamespaceIdentifiers(nguid, eui64, uuid);
    }

    /** Parses a descriptor list; null (and a warning) when an entry's length does not fit its type or the page. */
    private NamespaceIdentifiers descriptors(long nsid, byte[] list) {
        byte[] nguid = null;
        byte[] eui64 = null;
        UUID uuid = null;
        NamespaceDescriptor d = new NamespaceDescriptor();
        UnsafeBuffer page = new UnsafeBuffer(list);
        for (int at = 0; at + NamespaceDescriptor.NID <= list.length; ) {
            d.wrap(page, at);
            int type = d.nidt();
            int len = d.nidl();
            if (len == 0) {
                break; // the list ends at the first entry without an identifier
            }
            int expected = type == NamespaceDescriptor.TYPE_EUI64 ? NamespaceIdentifiers.EUI64_LENGTH
                    : type == NamespaceDescriptor.TYPE_NGUID || type == NamespaceDescriptor.TYPE_UUID ? 16 : -1;
            if (at + NamespaceDescriptor.NID + len > list.length || expected >= 0 && len != expected) {
                LOG.warn("{}: namespace {}: malformed Namespace Identification Descriptor (type {}, length {} at"
                        + " offset {}); its list is ignored", id, nsid, type, len, at);
                return null;
            }
            byte[] nid = new byte[len];
            d.nid(nid);
            if (type == NamespaceDescriptor.TYPE_EUI64) {
                eui64 = nid;
            } else if (type == NamespaceDescriptor.TYPE_NGUID) {
                nguid = nid;
            } else if (type == NamespaceDescriptor.TYPE_UUID) {
                ByteBuffer b = ByteBuffer.wrap(nid); // RFC 4122 byte order, as Linux's uuid_t
                uuid = new UUID(b.getLong(), b.getLong());
            }
            at += NamespaceDescriptor.NID + len;
        }
        return new NamespaceIdentifiers(nguid, eui64, uuid);
    }

    /** Set Features Number of Queues: asks for {@code ioQueues} SQs and CQs, uses min(granted, asked). */
    private int negotiateQueueCount() {
        int asked = options.ioQueues();
        int dw0 = setFeature(Opcodes.FEAT_NUMBER_OF_QUEUES, Features.numberOfQueues(asked, asked));
        int granted = Math.min(Features.submissionQueues(dw0), Features.completionQueues(dw0));
        int count = Math.min(asked, granted);
        if (count < asked) {
            LOG.info("{}: asked for {} I/O queues, controller grants {}", id, asked, granted);
        }
        return count;
    }

    private void connectIoQueues(int count, int gen) {
        // Depth: as asked, but within CAP.MQES (0-based) and MAXCMD, as the Linux host clamps it.
        int depth = options.queueDepth();
        long mqes = ControllerRegisters.capMqes(cap) + 1;
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
        queueDepth = depth;
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
                HostQueue q = transport.connectQueue(qid, depth - 1, inline, maxTransfer);
                queues[qid - 1] = q;
                watch(q, gen);
                // I/O queue Connect: same host id/NQN, the admin queue's CNTLID, KATO 0 (keep alive is per controller).
                fabricsConnect(q, qid, depth - 1, 0, cntlid);
            }
        } catch (RuntimeException e) {
            closeAll(queues);
            throw e;
        }
        ioQueues = queues;
        LOG.debug("{}: {} I/O queues of depth {}, in-capsule limit {} bytes", id, count, depth, inline);
    }

    /** Each I/O queue: reports its failure, hands back interrupted requests, signals freed slots. */
    private void watch(HostQueue q, int gen) {
        q.failureListener(x -> onQueueFailure(x, gen));
        q.roomSignal(room);
        if (reconnects()) {
            q.requeueTo(p -> {
                beginRecovery(failureOf(q), gen);
                // A Fabrics Connect belongs to the association being built: it fails, and the attempt with it.
                return (p.sqe()[0] & 0xFF) != Opcodes.FABRICS && held.hold(p);
            });
        }
    }

    private static String failureOf(HostQueue q) {
        return q.label() + " failed: " + q.failure();
    }

    // ---------------------------------------------------------------------------------------------- keep alive

    /** Housekeeping thread, four times per KATO: sends Keep Alive every KATO/2; one unanswered for KATO is a loss. */
    private void keepAliveTick() {
        if (state.get() != ControllerState.CONNECTED) {
            return;
        }
        long now = System.nanoTime();
        long sent = keepAliveSent;
        if (sent != 0) {
            if (now - sent >= TimeUnit.MILLISECONDS.toNanos(kato)) {
                beginRecovery("Keep Alive got no answer within KATO (" + kato + " ms): the controller stopped"
                        + " responding", generation);
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
        admin.submit(sqe, HostQueue.DIR_NONE, null, 0, 0, null, 0, (status, result) -> {
            keepAliveSent = 0;
            if (status > 0 && !closed.get()) {
                LOG.warn("{}: Keep Alive failed: {}", id, IoCallback.describe(status));
            }
        });
    }

    // ---------------------------------------------------------------------------------------------- events

    /** Enables Namespace Attribute Changed notices and keeps one Asynchronous Event Request outstanding. */
    private void armAsyncEvents(int gen) {
        try {
            setFeature(Opcodes.FEAT_ASYNC_EVENT_CONFIG, io.nvmeof.protocol.Features.AEC_NS_ATTRIBUTE);
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
        admin.submit(sqe, HostQueue.DIR_NONE, null, 0, 0, null, 0, (status, result) -> {
            if (status != 0 || gen != generation || closed.get()) {
                return; // aborted with its queue, or not supported: a reconnect arms a new one
            }
            int dw0 = (int) result;
            housekeep(() -> onAsyncEvent(dw0, gen));
        });
    }

    /** Housekeeping thread: a completed Asynchronous Event Request; reads its log page (which clears it), re-arms. */
    private void onAsyncEvent(int dw0, int gen) {
        int type = dw0 & 0x7;
        int info = (dw0 >>> 8) & 0xFF;
        int lid = (dw0 >>> 16) & 0xFF;
        LOG.debug("{}: asynchronous event type {} info {} log 0x{}", id, type, info, Integer.toHexString(lid));
        try {
            if (lid != 0) {
                getLogPage(lid, 0xFFFF_FFFFL, lid == Opcodes.LOG_CHANGED_NAMESPACE_LIST ? 4096 : 64, 0);
            }
            if (type == io.nvmeof.protocol.Features.AER_TYPE_NOTICE
                    && info == io.nvmeof.protocol.Features.AER_INFO_NS_ATTRIBUTE_CHANGED) {
                rescanNamespaces();
            }
        } catch (NvmeofException e) {
            LOG.warn("{}: handling an asynchronous event: {}", id, e.getMessage());
        } finally {
            // Re-armed however this event's handling went, as Linux does: a log page or rescan the controller got
            // wrong must not end its events until the next reconnect.
            if (gen == generation && state.get() == ControllerState.CONNECTED && !closed.get()) {
                submitAsyncEventRequest(gen);
            }
        }
    }

    /**
     * Reads the active namespaces again (as after a Namespace Attribute Changed event, which triggers it by itself):
     * new ones appear in {@link #namespaces()}, removed ones go; handles of unchanged ones stay valid (a grown one with
     * its new size), those of removed or replaced ones are retired ({@link ErrorKind#NAMESPACE_GONE}). Blocks.
     */
    public List<NamespaceHandle> rescanNamespaces() {
        association.lock();
        try {
            if (identifyNamespaces()) {
                LOG.info("{}: namespaces now {}", id, byNsid.keySet());
                reportNamespaces();
            }
            return namespaces;
        } finally {
            association.unlock();
        }
    }

    private void reportNamespaces() {
        ControllerStateListener l = options.stateListener();
        if (l != null) {
            List<NamespaceHandle> now = namespaces;
            housekeep(() -> l.namespacesChanged(this, now));
        }
    }

    // ---------------------------------------------------------------------------------------------- recovery

    /** A queue of association {@code gen} failed (its I/O thread). */
    private void onQueueFailure(HostQueue q, int gen) {
        beginRecovery(failureOf(q), gen);
    }

    /** Any thread: the association {@code gen} is lost; the housekeeping thread tears it down and reconnects. */
    private void beginRecovery(String reason, int gen) {
        if (gen != generation || closed.get() || !state.compareAndSet(ControllerState.CONNECTED, ControllerState.RECONNECTING)) {
            return;
        }
        lastFailure = reason;
        lossStart = System.nanoTime();
        housekeep(() -> recover(reason));
    }

    /** Housekeeping thread: tear the association down, then reconnect after the delay (or give up at once). */
    private void recover(String reason) {
        association.lock();
        try {
            if (closed.get()) {
                return;
            }
            LOG.warn("{}: connection lost ({}); {}", id, reason, reconnects() ? "reconnecting every "
                    + options.reconnectDelay().toMillis() + " ms" : "not reconnecting (ctrlLossTimeout 0)");
            report(ControllerState.RECONNECTING, reason);
            tearDown(reason);
            if (!reconnects()) {
                giveUp(reason);
                return;
            }
            reconnectAttempts = 0;
            Duration fastFail = options.fastIoFailTimeout();
            if (!fastFail.isNegative()) {
                fastFailTask = housekeeping.schedule(this::fastFailExpired, fastFail.toMillis(), TimeUnit.MILLISECONDS);
            }
            housekeeping.schedule(this::reconnect, options.reconnectDelay().toMillis(), TimeUnit.MILLISECONDS);
        } finally {
            association.unlock();
        }
    }

    /**
     * Stops keep alive and fails every queue of the current association (their requests go to {@link #held}), then
     * lets the transport free them.
     */
    private void tearDown(String reason) {
        if (keepAliveTask != null) {
            keepAliveTask.cancel(false);
            keepAliveTask = null;
        }
        for (HostQueue q : ioQueues) {
            q.abort(reason);
        }
        if (admin != null) {
            admin.abort(reason);
        }
        releaseAll();
    }

    /** The association's queues are done with: the transport frees them (RDMA: queue pairs, memory). */
    private void releaseAll() {
        HostQueue[] qs = ioQueues;
        ioQueues = new HostQueue[0];
        for (HostQueue q : qs) {
            if (q != null) {
                transport.release(q);
            }
        }
        if (admin != null) {
            transport.release(admin);
        }
    }

    private void fastFailExpired() {
        if (state.get() == ControllerState.RECONNECTING) {
            LOG.warn("{}: still not reconnected after fast_io_fail_tmo {} ms; failing I/O until it is", id,
                    options.fastIoFailTimeout().toMillis());
            failFast = true;
            held.drain();
        }
    }

    /** Housekeeping thread: one reconnect attempt; on failure the next one, or giving up after ctrlLossTimeout. */
    private void reconnect() {
        association.lock();
        try {
            if (closed.get() || state.get() != ControllerState.RECONNECTING) {
                return;
            }
            reconnectAttempts++;
            int gen = ++generation;
            try {
                establish(gen);
            } catch (RuntimeException e) {
                releaseAll();
                String why = e.getMessage();
                lastFailure = "reconnect attempt " + reconnectAttempts + " failed: " + why;
                Duration limit = options.ctrlLossTimeout();
                long next = System.nanoTime() + options.reconnectDelay().toNanos();
                if (!limit.isNegative() && next - lossStart > limit.toNanos()) {
                    giveUp("no reconnect within ctrlLossTimeout " + limit.toMillis() + " ms (" + reconnectAttempts
                            + " attempts; last: " + why + ")");
                    return;
                }
                LOG.info("{}: {}; next attempt in {} ms", id, lastFailure, options.reconnectDelay().toMillis());
                housekeeping.schedule(this::reconnect, options.reconnectDelay().toMillis(), TimeUnit.MILLISECONDS);
                return;
            }
            failFast = false;
            if (fastFailTask != null) {
                fastFailTask.cancel(false);
            }
            state.set(ControllerState.CONNECTED);
            String how = "reconnected after " + reconnectAttempts + " attempt(s), "
                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lossStart) + " ms; resending " + held.size()
                    + " request(s)";
            LOG.info("{}: {}", id, how);
            started();
            report(ControllerState.CONNECTED, how);
            held.drain();
        } finally {
            association.unlock();
        }
    }

    private void giveUp(String reason) {
        lastFailure = reason;
        if (state.compareAndSet(ControllerState.RECONNECTING, ControllerState.FAILED)) {
            LOG.error("{}: giving up: {}; every request fails until the controller is closed", id, reason);
            report(ControllerState.FAILED, reason);
        }
        held.drain();
    }

    private void report(ControllerState s, String reason) {
        ControllerStateListener l = options.stateListener();
        if (l != null) {
            try {
                l.stateChanged(this, s, reason);
            } catch (RuntimeException e) {
                LOG.warn("{}: state listener threw", id, e);
            }
        }
    }

    /** Runs {@code task} on the housekeeping thread, unless the controller is closing. */
    private void housekeep(Runnable task) {
        try {
            housekeeping.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("{}: closing; housekeeping task dropped", id);
        }
    }

    private static void closeAll(HostQueue[] queues) {
        for (HostQueue q : queues) {
            if (q != null) {
                q.close();
            }
        }
    }

    // ---------------------------------------------------------------------------------------------- public API

    public int cntlid() { return cntlid; }

    public ControllerInfo info() { return info; }

    public TransportId transportId() { return id; }

    public ConnectOptions options() { return options; }

    /** The effective Keep Alive Timeout sent in Connect, in ms (0 = keep alive disabled). */
    public int keepAliveTimeoutMs() { return kato; }

    /** CAP as read at connect. */
    public long capabilities() { return cap; }

    /** Largest data transfer of one command, in bytes (MDTS, or our own cap when the controller has none). */
    public long maxTransferBytes() { return maxTransfer; }

    public List<NamespaceHandle> namespaces() { return namespaces; }

    /**
     * The handle of the namespace {@code nsid} names now (as of the last scan). After a handle failed with
     * {@link ErrorKind#NAMESPACE_GONE}, this gives the new one, if any: check its identifiers before using it.
     *
     * @throws IllegalArgumentException when {@code nsid} is not an active namespace of this controller
     */
    public NamespaceHandle namespace(long nsid) {
        NamespaceHandle ns = byNsid.get(nsid);
        if (ns == null) {
            throw new IllegalArgumentException("namespace " + nsid + " is not active on " + id + " (active: "
                    + byNsid.keySet() + ")");
        }
        return ns;
    }

    public int ioQueueCount() { return ioQueues.length; }

    /** I/O queue depth in use (1-based, after clamping to CAP.MQES and MAXCMD); 0 for discovery controllers. */
    public int queueDepth() { return queueDepth; }

    /** True while the association is up and I/O flows ({@link ControllerState#CONNECTED}). */
    public boolean isConnected() {
        return state.get() == ControllerState.CONNECTED;
    }

    public ControllerState state() {
        return state.get();
    }

    /**
     * Which association this controller is on: 0 after {@link #connect}, one more for each reconnect attempt, counted
     * before the attempt sends anything. A completion that reads N here came through association N or an earlier one,
     * never a later one; so data a program checked (a label, a checksum) under N and read again while this still reads
     * N came from the same volume as far as reconnects go (a namespace replaced live is told by
     * {@link NamespaceHandle#isCurrent()} instead). A target that restarts empty under the same identifiers is told
     * apart only this way: compare what was read before and after the number moved.
     */
    public int associationGeneration() {
        return generation;
    }

    /** Why the connection was last lost (or the last reconnect attempt failed); null if it never was. */
    public String lastFailure() {
        return lastFailure;
    }

    /** Counters of each current I/O queue: commands, bytes, in flight, waiting, timeouts, latency. */
    public List<QueueStatistics> queueStatistics() {
        List<QueueStatistics> out = new ArrayList<>();
        for (HostQueue q : ioQueues) {
            out.add(q.statistics());
        }
        return out;
    }

    /** Commands in flight plus requests waiting for a slot, over every I/O queue, plus those held while reconnecting. */
    public int outstanding() {
        int n = held.size();
        for (HostQueue q : ioQueues) {
            n += q.load();
        }
        return n;
    }

    /**
     * Waits until some I/O queue can take a command without it waiting in the overflow queue, so a caller can pace
     * itself without a semaphore of its own. Returns false after {@code timeout}, or at once when the controller is
     * closed or failed. Must not be called on an I/O thread (a callback): it would wait for itself.
     */
    public boolean awaitRoom(Duration timeout) throws InterruptedException {
        if (onEventLoop()) {
            throw new IllegalStateException("awaitRoom() cannot wait on the I/O thread (inside a callback): the slots"
                    + " it waits for are freed by that thread");
        }
        return room.await(() -> {
            ControllerState s = state.get();
            if (s == ControllerState.CLOSED || s == ControllerState.FAILED) {
                return true;
            }
            for (HostQueue q : ioQueues) {
                if (q.hasRoom()) {
                    return true;
                }
            }
            return false;
        }, timeout.toNanos()) && isConnected();
    }

    /** Raw 4096-byte Identify data for {@code cns} (CDW10 bits 7:0) and {@code nsid}. */
    public byte[] identify(int cns, long nsid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_IDENTIFY).nsid(nsid).cdw10(cns & 0xFF);
        byte[] data = new byte[IDENTIFY_LENGTH];
        execute(admin, "Identify (CNS 0x" + Integer.toHexString(cns) + ", nsid " + nsid + ")", sqe,
                HostQueue.DIR_C2H, ByteBuffer.wrap(data), data.length);
        return data;
    }

    /**
     * Get Log Page: {@code length} bytes of log {@code lid} from byte {@code offset} (dword aligned). Transfers larger
     * than MDTS are split.
     */
    public byte[] getLogPage(int lid, long nsid, int length, long offset) {
        if (length <= 0) {
            throw new IllegalArgumentException("log page length must be positive, got " + length);
        }
        if ((offset & 3) != 0 || offset < 0) {
            throw new IllegalArgumentException("log page offset must be a non-negative multiple of 4, got " + offset);
        }
        int padded = (length + 3) & ~3;
        byte[] data = new byte[padded];
        ByteBuffer buf = ByteBuffer.wrap(data);
        int chunkMax = (int) Math.min(Integer.MAX_VALUE & ~3, maxTransfer > 0 ? maxTransfer : transport.maxTransferCap());
        for (int done = 0; done < padded; ) {
            int n = Math.min(chunkMax, padded - done);
            UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
            new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_GET_LOG_PAGE).nsid(nsid).logPage(lid, n, offset + done);
            execute(admin, "Get Log Page (LID 0x" + Integer.toHexString(lid) + ", " + n + " bytes at " + (offset + done) + ")",
                    sqe, HostQueue.DIR_C2H, buf, done, n);
            done += n;
        }
        return padded == length ? data : Arrays.copyOf(data, length);
    }

    /** Get Features (current value, SEL 0); returns completion DW0. */
    public int getFeature(int fid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_GET_FEATURES).cdw10(fid & 0xFF);
        return (int) execute(admin, "Get Features (FID 0x" + Integer.toHexString(fid) + ")", sqe, HostQueue.DIR_NONE, null, 0);
    }

    /** Set Features (not saved); returns completion DW0. */
    public int setFeature(int fid, int cdw11) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(fid & 0xFF).cdw11(cdw11);
        return (int) execute(admin, "Set Features (FID 0x" + Integer.toHexString(fid) + ")", sqe, HostQueue.DIR_NONE, null, 0);
    }

    /**
     * Reads the whole discovery log (LID 70h): the header for NUMREC, then header and records together; if GENCTR
     * moved in between, the log changed under us and is read again (bounded).
     */
    public List<DiscoveryEntry> discoveryLog() {
        for (int attempt = 0; attempt < MAX_DISCOVERY_RETRIES; attempt++) {
            UnsafeBuffer header = new UnsafeBuffer(getLogPage(Opcodes.LOG_DISCOVERY, 0, DiscoveryLogHeader.LENGTH, 0));
            DiscoveryLogHeader h = new DiscoveryLogHeader().wrap(header, 0);
            long genctr = h.genctr();
            long numrec = h.numrec();
            if (numrec == 0) {
                return List.of();
            }
            // NUMREC is 64 bits: checked before it sizes anything (numrec * 1024 overflows from 2^53 on, and a large
            // enough value would ask for gigabytes).
            if (numrec < 0 || numrec > MAX_DISCOVERY_RECORDS) {
                throw new NvmeofException("discovery log of " + id + " claims " + Long.toUnsignedString(numrec)
                        + " records (NUMREC); more than " + MAX_DISCOVERY_RECORDS + " is taken for a corrupt log page"
                        + " and not read");
            }
            int total = DiscoveryLogHeader.LENGTH + (int) numrec * DiscoveryLogEntry.LENGTH;
            UnsafeBuffer log = new UnsafeBuffer(getLogPage(Opcodes.LOG_DISCOVERY, 0, total, 0));
            DiscoveryLogHeader h2 = new DiscoveryLogHeader().wrap(log, 0);
            if (h2.genctr() != genctr || h2.numrec() != numrec) {
                LOG.debug("{}: discovery log changed while reading (genctr {} -> {}), retrying", id, genctr, h2.genctr());
                continue;
            }
            List<DiscoveryEntry> entries = new ArrayList<>((int) numrec);
            DiscoveryLogEntry e = new DiscoveryLogEntry();
            for (int i = 0; i < numrec; i++) {
                e.wrap(log, DiscoveryLogHeader.entryOffset(i));
                entries.add(new DiscoveryEntry(e.trtype(), e.adrfam(), e.subtype(), e.treq(), e.portid(), e.cntlid(),
                        e.asqsz(), e.trsvcid(), e.subnqn(), e.traddr()));
            }
            return entries;
        }
        throw new NvmeofException("discovery log of " + id + " kept changing (GENCTR) over " + MAX_DISCOVERY_RETRIES
                + " reads; try again later");
    }

    /** Fabrics Property Get; {@code size} 4 or 8 bytes. */
    public long propertyGet(int offset, int size) {
        checkPropertySize(size);
        long v = execute(admin, "Property Get (offset 0x" + Integer.toHexString(offset) + ")",
                propertyGetCommand(offset, size), HostQueue.DIR_NONE, null, 0);
        return size == 4 ? v & 0xFFFF_FFFFL : v;
    }

    /** Fabrics Property Set; {@code size} 4 or 8 bytes. */
    public void propertySet(int offset, int size, long value) {
        checkPropertySize(size);
        execute(admin, "Property Set (offset 0x" + Integer.toHexString(offset) + ")", propertySetCommand(offset, size, value),
                HostQueue.DIR_NONE, null, 0);
    }

    private static UnsafeBuffer propertyGetCommand(int offset, int size) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_PROPERTY_GET).propertySize(size).propertyOffset(offset);
        return sqe;
    }

    private static UnsafeBuffer propertySetCommand(int offset, int size, long value) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_PROPERTY_SET).propertySize(size).propertyOffset(offset)
                .propertyValue(size == 4 ? value & 0xFFFF_FFFFL : value);
        return sqe;
    }

    private static void checkPropertySize(int size) {
        if (size != 4 && size != 8) {
            throw new IllegalArgumentException("property size must be 4 or 8 bytes, got " + size);
        }
    }

    /**
     * Orderly shutdown: held and outstanding I/O completes with {@link IoCallback#ERR_CLOSED}, then (when connected)
     * CC.SHN = normal and CSTS.SHST polled until complete, all within 5 s (or the command timeout if shorter) however
     * the controller behaves, then the admin queue and the event loops go. Idempotent. Called from an I/O thread it
     * skips the shutdown handshake (it would deadlock).
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        ControllerState before = state.getAndSet(ControllerState.CLOSED);
        boolean onLoop = onEventLoop();
        housekeeping.shutdownNow(); // interrupts a reconnect attempt in progress
        boolean onHousekeeping = Thread.currentThread().getName().startsWith("nvmeof-controller ");
        if (onHousekeeping) {
            Thread.interrupted();
        }
        boolean locked = false;
        try {
            locked = association.tryLock(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            if (keepAliveTask != null) {
                keepAliveTask.cancel(false);
            }
            held.drain();
            closeAll(ioQueues);
            HostQueue a = admin;
            if (before == ControllerState.CONNECTED && a != null && a.isOpen() && !onLoop) {
                long limit = Math.min(options.commandTimeout().toNanos(), SHUTDOWN_TIMEOUT.toNanos());
                try {
                    shutdownController(System.nanoTime() + limit);
                } catch (RuntimeException e) {
                    LOG.warn("{}: orderly shutdown failed: {}", id, e.getMessage());
                }
            }
            if (a != null) {
                a.close();
            }
            transport.close();
        } finally {
            if (locked) {
                association.unlock();
            }
        }
        report(ControllerState.CLOSED, "closed by this host");
        LOG.debug("{}: closed", id);
    }

    /** CC.SHN = normal, then CSTS.SHST polled until complete; every step within {@code deadline}. */
    private void shutdownController(long deadline) {
        long shn = (cc & ~(0x3L << 14)) | ((long) ControllerRegisters.SHN_NORMAL << 14);
        UnsafeBuffer sqe = propertySetCommand(ControllerRegisters.CC, 4, shn);
        executeUntil(admin, "Property Set (CC.SHN)", sqe, deadline);
        long sleep = 1;
        while (System.nanoTime() - deadline < 0) {
            long csts = executeUntil(admin, "Property Get (CSTS)", propertyGetCommand(ControllerRegisters.CSTS, 4),
                    deadline) & 0xFFFF_FFFFL;
            if (ControllerRegisters.cstsShst(csts) == ControllerRegisters.SHST_COMPLETE) {
                return;
            }
            sleepMs(sleep);
            sleep = Math.min(50, sleep * 2);
        }
        LOG.warn("{}: shutdown did not complete within {} ms", id, SHUTDOWN_TIMEOUT.toMillis());
    }

    private long executeUntil(HostQueue q, String what, UnsafeBuffer sqe, long deadline) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new NvmeofTimeoutException(what + ": no time left for the shutdown");
        }
        return execute(q, what, sqe, HostQueue.DIR_NONE, null, 0, 0, left);
    }

    /** Connect failed half way: drop whatever exists, without the shutdown handshake. */
    private void abort() {
        closed.set(true);
        state.set(ControllerState.CLOSED);
        housekeeping.shutdownNow();
        if (keepAliveTask != null) {
            keepAliveTask.cancel(false);
        }
        closeAll(ioQueues);
        if (admin != null) {
            admin.close();
        }
        transport.close();
    }

    /**
     * A direct buffer of {@code bytes} that this controller's transport moves data in and out of without a copy: over
     * RDMA it is registered with the device once (until this controller closes), over TCP it is plain direct memory.
     * The buffer stays valid after close; only its registration ends.
     */
    public ByteBuffer allocateBuffer(int bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("buffer size must be positive, got " + bytes);
        }
        return transport.allocateBuffer(bytes);
    }

    /**
     * Registers a direct buffer you allocated (its whole capacity) so RDMA transfers use it without a copy and without
     * registering on first use; slices of it are covered too. No-op over TCP. Keep the buffer reachable while
     * registered.
     */
    public void registerBuffer(ByteBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("only direct buffers can be registered");
        }
        transport.registerBuffer(direct);
    }

    /** Ends {@link #registerBuffer}; no I/O may be using the buffer. */
    public void deregisterBuffer(ByteBuffer direct) {
        transport.deregisterBuffer(direct);
    }

    /** The transport's counters, for logs (e.g. RDMA: registrations, bytes moved zero-copy and through bounce buffers). */
    public String transportStatistics() {
        return transport.statistics();
    }

    // ---------------------------------------------------------------------------------------------- internals

    /**
     * The I/O queue for the next request: of two open queues in round-robin order, the less loaded (in flight plus
     * waiting), so a slow or failed queue gets less; while reconnecting, the holder of requests.
     */
    HostQueue pickQueue() {
        HostQueue[] qs = ioQueues;
        if (qs.length == 0 && isDiscoveryControllerSafe()) {
            throw new IllegalStateException(discovery ? "a discovery controller has no I/O queues"
                    : "controller " + id + " has no I/O queues");
        }
        if (state.get() != ControllerState.CONNECTED) {
            return held;
        }
        HostQueue q = openQueue();
        return q != null ? q : held;
    }

    private boolean isDiscoveryControllerSafe() {
        return discovery || info != null && info.controllerType() == IdentifyController.CNTRLTYPE_DISCOVERY;
    }

    /** Of two open queues from the round-robin position, the less loaded; null when none is open. */
    private HostQueue openQueue() {
        HostQueue[] qs = ioQueues;
        int n = qs.length;
        if (n == 0) {
            return null;
        }
        int start = nextQueue.getAndIncrement();
        HostQueue first = null;
        for (int i = 0; i < n; i++) {
            HostQueue q = qs[Math.floorMod(start + i, n)];
            if (!q.isOpen()) {
                continue;
            }
            if (first == null) {
                first = q;
                if (n == 1) {
                    break;
                }
            } else {
                return q.load() < first.load() ? q : first;
            }
        }
        return first;
    }

    long maxTransfer() { return maxTransfer; }

    Duration commandTimeout() { return options.commandTimeout(); }

    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int length) {
        return execute(q, what, sqe, dir, data, 0, length);
    }

    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int start, int length) {
        // The queue's timeout scan normally answers first.
        return execute(q, what, sqe, dir, data, start, length, options.commandTimeout().toMillis() + 5000);
    }

    /** Runs one command synchronously, waiting at most {@code waitMs}; returns CQE DW0|DW1<<32 or throws. */
    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int start, int length,
                         long waitMs) {
        if (onEventLoop()) {
            throw new IllegalStateException(what + ": synchronous admin commands cannot run on the I/O event loop"
                    + " (e.g. inside an I/O callback); hand the work to another thread");
        }
        ControllerState st = state.get();
        if (!q.isOpen() && st != ControllerState.CONNECTED) {
            if (st == ControllerState.CLOSED) {
                throw new NvmeofException(what + ": the controller " + id + " was closed by this host",
                        ErrorKind.CLOSED_BY_CALLER);
            }
            throw new NvmeofException(what + ": the controller " + id + " is " + st.name().toLowerCase()
                    + " after losing its connection (" + lastFailure + ")", ErrorKind.CONNECTION_LOST);
        }
        Sync sync = new Sync();
        q.submit(sqe, dir, data, start, length, null, 0, sync);
        try {
            if (!sync.latch.await(waitMs, TimeUnit.MILLISECONDS)) {
                throw new NvmeofTimeoutException(what + " on " + q.label() + " got no answer within " + waitMs + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException(what + " interrupted", e);
        }
        if (sync.status != 0) {
            boolean connect = (sqe.getByte(0) & 0xFF) == io.nvmeof.protocol.Opcodes.FABRICS
                    && sqe.getByte(4) == io.nvmeof.protocol.Opcodes.FCTYPE_CONNECT;
            throw Errors.failure(what, sync.status, connect ? io.nvmeof.protocol.Status.SET_CONNECT
                    : io.nvmeof.protocol.Status.SET_ADMIN, q, options.commandTimeout());
        }
        return sync.result;
    }

    /** True on any of this controller's event loop threads, where blocking would stall or deadlock I/O. */
    private boolean onEventLoop() {
        return transport.inIoThread();
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException("interrupted", e);
        }
    }

    private static byte[] uuidBytes(UUID u) {
        // Host ID: the UUID's 16 bytes in network (big-endian) order, as nvme-cli writes /etc/nvme/hostid.
        return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits()).array();
    }

    private static final class Sync implements CompletionListener {
        final CountDownLatch latch = new CountDownLatch(1);
        volatile int status;
        volatile long result;

        @Override
        public void onCompletion(int status, long result) {
            this.status = status;
            this.result = result;
            latch.countDown();
        }
    }

    @Override
    public String toString() {
        return "NvmeofController[" + id + ", cntlid " + cntlid + (isConnected() ? "" : ", disconnected") + "]";
    }
}

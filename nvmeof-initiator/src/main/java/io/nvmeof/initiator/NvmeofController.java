package io.nvmeof.initiator;

import io.nvmeof.protocol.AgronaAccess;
import io.nvmeof.initiator.rdma.RdmaHostTransport;
import io.nvmeof.initiator.tcp.TcpHostTransport;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.HostTransport;
import io.nvmeof.initiator.transport.RoomSignal;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
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
 *
 * <p>Where things happen: this class holds the public API and the association's state that I/O reads
 * ({@code pickQueue}); {@code AssociationSetup} builds an association (Connect, enable, Identify, I/O queues) and
 * shuts it down; {@code Reconnector} decides that one is lost and reconnects; {@code AdminCommands} builds and runs
 * every admin command; {@code NamespaceScanner} keeps the namespace handles; {@code KeepAlive} and
 * {@code AsyncEvents} watch a live association.
 */
public final class NvmeofController implements AutoCloseable {
    static {
        // Every program using the initiator starts here: Agrona runs without a JVM flag (AgronaAccess).
        AgronaAccess.ensure();
    }

    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);

    /**
     * The most discovery log records read (16 MiB of log): a discovery service lists one record per subsystem port a
     * host may use, thousands at most; a NUMREC beyond this is a corrupt page, not a log to allocate memory for.
     */
    static final int MAX_DISCOVERY_RECORDS = 16384;

    // The fields below are package-private for the helpers of this controller (same package, never public API).
    final TransportId id;
    final ConnectOptions options;
    final boolean discovery;
    final int kato;
    final HostTransport transport;
    final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger nextQueue = new AtomicInteger();
    final AtomicReference<ControllerState> state = new AtomicReference<>(ControllerState.RECONNECTING);
    /** Keep alive, reconnects, rescans and state reports: one daemon thread per controller, never an I/O thread. */
    final ScheduledExecutorService housekeeping;
    /** Held by whoever builds or tears down the association (connect, reconnect, close). */
    final ReentrantLock association = new ReentrantLock();
    final RoomSignal room = new RoomSignal();
    final HeldRequests held;

    /** Which association a queue belongs to: a late failure of an old one must not restart recovery. */
    volatile int generation;
    /** See {@link #establishedGeneration()}. */
    volatile int establishedGeneration;
    volatile HostQueue admin;
    volatile HostQueue[] ioQueues = new HostQueue[0];
    // Written by AssociationSetup while it holds the association lock.
    int cntlid;
    long cap;
    long vs;
    ControllerInfo info;
    long maxTransfer;
    int queueDepth;

    // The concerns this controller hands its work to, one package-private class each.
    /** Builds and runs every admin and Fabrics command. */
    final AdminCommands adminCommands;
    /** Brings an association up (connect, each reconnect attempt) and shuts it down (close). */
    final AssociationSetup setup;
    /** Decides an association is lost, reconnects, fails fast, gives up. */
    final Reconnector recovery;
    /** The namespace handles: scans, keeps or retires them. */
    final NamespaceScanner namespaceScanner;
    final KeepAlive keepAlive;
    final AsyncEvents asyncEvents;
    /** The namespaces' ANA states: reads the ANA log. */
    final AnaStates anaStates;
    /**
     * Told whenever a path through this controller may have changed: its state (lost, reconnected, failed, closed) or
     * a namespace's ANA state. Multipath namespaces listen, to send waiting I/O on a path that became usable.
     */
    private final java.util.concurrent.CopyOnWriteArrayList<Runnable> pathListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

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
        this.adminCommands = new AdminCommands(this);
        this.setup = new AssociationSetup(this);
        this.recovery = new Reconnector(this);
        this.namespaceScanner = new NamespaceScanner(this);
        this.keepAlive = new KeepAlive(this);
        this.asyncEvents = new AsyncEvents(this);
        this.anaStates = new AnaStates(this);
        this.held = new HeldRequests(recovery, "controller " + id + " (reconnecting)");
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
            if (options.tlsKey() != null) {
                throw new IllegalArgumentException("TLS is for NVMe/TCP; NVMe/RDMA has none (leave out tlsKey, or"
                        + " connect over tcp)");
            }
            transport = RdmaHostTransport.create(id, options);
        } else {
            throw new NvmeofException("transport type '" + id.trtype() + "' is not supported by this initiator; use"
                    + " \"tcp\" or \"rdma\"");
        }
        NvmeofController c = new NvmeofController(id, options, transport);
        try {
            c.association.lock();
            try {
                c.setup.establish(0);
                c.state.set(ControllerState.CONNECTED);
                c.setup.started();
            } finally {
                c.association.unlock();
            }
            return c;
        } catch (RuntimeException | Error e) {
            c.abort();
            throw e;
        }
    }

    /**
     * Reads the active namespaces again (as after a Namespace Attribute Changed event, which triggers it by itself):
     * new ones appear in {@link #namespaces()}, removed ones go; handles of unchanged ones stay valid (a grown one with
     * its new size), those of removed or replaced ones are retired ({@link ErrorKind#NAMESPACE_GONE}). Blocks.
     */
    public List<NamespaceHandle> rescanNamespaces() {
        return namespaceScanner.rescan();
    }

    /** Runs {@code task} on the housekeeping thread, unless the controller is closing. */
    void housekeep(Runnable task) {
        try {
            housekeeping.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("{}: closing; housekeeping task dropped", id);
        }
    }

    void addPathListener(Runnable l) {
        pathListeners.add(l);
    }

    void removePathListener(Runnable l) {
        pathListeners.remove(l);
    }

    /** A path through this controller may have changed: tells the path listeners (which must not block). */
    void pathsChanged() {
        for (Runnable l : pathListeners) {
            try {
                l.run();
            } catch (RuntimeException e) {
                LOG.warn("{}: path listener threw", id, e);
            }
        }
    }

    static void closeAll(HostQueue[] queues) {
        for (HostQueue q : queues) {
            if (q != null) {
                q.close();
            }
        }
    }

    // ---------------------------------------------------------------------------------------------- public API

    public int cntlid() { return cntlid; }

    public ControllerInfo info() { return info; }

    /** Whether this controller's ANA states are read from its ANA log (CMIC says it reports ANA, and the log fits). */
    boolean reportsAna() { return anaStates.enabled(); }

    public TransportId transportId() { return id; }

    public ConnectOptions options() { return options; }

    /** The effective Keep Alive Timeout sent in Connect, in ms (0 = keep alive disabled). */
    public int keepAliveTimeoutMs() { return kato; }

    /** The quiesce time assumed of a controller that reports no CQT (Linux's nvmet and SPDK report none). */
    static final int DEFAULT_QUIESCE_TIME_MS = 1000;

    /**
     * Until when (System.nanoTime) a command sent on an association this controller lost (or closed) may still run on
     * its target; 0 when none was lost. A request that may change the media and failed with that association must not
     * run anywhere else before then (TP4129): a target that stalled (paused, a VM stall, a partition) and comes back
     * would otherwise run it after the host had written the same blocks again through another path. Reads need no
     * wait. It only moves later: set when a queue fails (before its requests are failed back), and again once the
     * association is torn down (nothing is sent on it after that).
     */
    public long fencedAtNanos() {
        return fencedAt.get();
    }

    private final java.util.concurrent.atomic.AtomicLong fencedAt = new java.util.concurrent.atomic.AtomicLong();

    /** Moves {@link #fencedAtNanos()} to {@code at} unless it is later already. Any thread. */
    void extendFence(long at) {
        while (true) {
            long now = fencedAt.get();
            if (now != 0 && now - at >= 0 || fencedAt.compareAndSet(now, at == 0 ? 1 : at)) {
                return;
            }
        }
    }

    /**
     * How long after the host lets go of an association its commands may still run: the target's Command Quiesce Time
     * (reported, else {@link #DEFAULT_QUIESCE_TIME_MS}), after the longest the target may take to notice the loss.
     * That is nothing more when the target itself ended the connection ({@code closedByPeer}: it closed or died);
     * otherwise its keep-alive deadline, TP4129's twice KATO (three times with Traffic Based Keep Alive), and at
     * least twice KATO in whole seconds (targets count it in whole seconds: ours, nvmet's timer in seconds). With no
     * keep alive (KATO 0) nothing bounds a silent target: only the quiesce time is waited, which is why an I/O
     * controller should keep KATO on.
     */
    long fenceDelayNanos(boolean closedByPeer) {
        ControllerInfo i = info;
        int cqt = i != null ? i.commandQuiesceTimeMs() : 0;
        long ms = cqt > 0 ? cqt : DEFAULT_QUIESCE_TIME_MS;
        if (!closedByPeer && kato > 0) {
            long times = i != null && i.trafficBasedKeepAlive() ? 3 : 2;
            ms += Math.max(times * kato, 2000L * ((kato + 999) / 1000));
        }
        return TimeUnit.MILLISECONDS.toNanos(ms);
    }

    /** CAP as read at connect. */
    public long capabilities() { return cap; }

    /** Largest data transfer of one command, in bytes (MDTS, or our own cap when the controller has none). */
    public long maxTransferBytes() { return maxTransfer; }

    public List<NamespaceHandle> namespaces() { return namespaceScanner.namespaces(); }

    /**
     * The handle of the namespace {@code nsid} names now (as of the last scan). After a handle failed with
     * {@link ErrorKind#NAMESPACE_GONE}, this gives the new one, if any: check its identifiers before using it.
     *
     * @throws IllegalArgumentException when {@code nsid} is not an active namespace of this controller
     */
    public NamespaceHandle namespace(long nsid) {
        return namespaceScanner.namespace(nsid);
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

    /**
     * The {@link #associationGeneration()} of the last association that came up (connected, queues open): 0 after
     * {@link #connect}; a reconnect attempt that fails does not move it. Written before the controller reads
     * {@link ControllerState#CONNECTED} and before any request is sent on that association, so a completion that came
     * through association N reads N or more here. Multipath readers (the loader) stamp data with it: attempts that
     * never connected are no new association, and the number never goes back.
     */
    public int establishedGeneration() {
        return establishedGeneration;
    }

    /** Why the connection was last lost (or the last reconnect attempt failed); null if it never was. */
    public String lastFailure() {
        return recovery.lastFailure();
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
        return adminCommands.identify(cns, nsid);
    }

    /**
     * Get Log Page: {@code length} bytes of log {@code lid} from byte {@code offset} (dword aligned). Transfers larger
     * than MDTS are split.
     */
    public byte[] getLogPage(int lid, long nsid, int length, long offset) {
        return adminCommands.getLogPage(lid, nsid, length, offset);
    }

    /** Get Features (current value, SEL 0); returns completion DW0. */
    /**
     * The Reservation Notification log entries read since the last call (the target raises an Asynchronous Event for
     * them; this controller reads the log as it comes), oldest first.
     */
    public List<ReservationNotice> takeReservationNotices() {
        List<ReservationNotice> out = new java.util.ArrayList<>();
        for (ReservationNotice n; (n = asyncEvents.reservationNotices.poll()) != null; ) {
            out.add(n);
        }
        return out;
    }

    public int getFeature(int fid) {
        return adminCommands.getFeature(fid);
    }

    /** Set Features (not saved); returns completion DW0. */
    public int setFeature(int fid, int cdw11) {
        return adminCommands.setFeature(fid, cdw11);
    }

    /**
     * Reads the whole discovery log (LID 70h): the header for NUMREC, then header and records together; if GENCTR
     * moved in between, the log changed under us and is read again (bounded).
     */
    public List<DiscoveryEntry> discoveryLog() {
        return DiscoveryLogReader.read(adminCommands, id);
    }

    /** Fabrics Property Get; {@code size} 4 or 8 bytes. */
    public long propertyGet(int offset, int size) {
        return adminCommands.propertyGet(offset, size);
    }

    /** Fabrics Property Set; {@code size} 4 or 8 bytes. */
    public void propertySet(int offset, int size, long value) {
        adminCommands.propertySet(offset, size, value);
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
            keepAlive.stop();
            held.drain();
            // Requests failed back by the close may still run on the target until it notices; a shutdown it completes
            // (SHST complete: our target drains the I/O queues first) says nothing of them runs any more.
            long priorFence = fencedAt.get();
            extendFence(System.nanoTime() + fenceDelayNanos(false));
            closeAll(ioQueues);
            HostQueue a = admin;
            if (before == ControllerState.CONNECTED && a != null && a.isOpen() && !onLoop) {
                long limit = Math.min(options.commandTimeout().toNanos(), AssociationSetup.SHUTDOWN_TIMEOUT.toNanos());
                try {
                    setup.shutdownController(System.nanoTime() + limit);
                    fencedAt.set(priorFence);
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
        recovery.report(ControllerState.CLOSED, "closed by this host");
        LOG.debug("{}: closed", id);
    }

    /** Connect failed half way: drop whatever exists, without the shutdown handshake. */
    private void abort() {
        closed.set(true);
        state.set(ControllerState.CLOSED);
        housekeeping.shutdownNow();
        keepAlive.stop();
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
    HostQueue openQueue() {
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

    /** True on any of this controller's event loop threads, where blocking would stall or deadlock I/O. */
    boolean onEventLoop() {
        return transport.inIoThread();
    }

    @Override
    public String toString() {
        return "NvmeofController[" + id + ", cntlid " + cntlid + (isConnected() ? "" : ", disconnected") + "]";
    }
}

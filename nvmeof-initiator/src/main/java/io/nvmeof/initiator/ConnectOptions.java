package io.nvmeof.initiator;

import io.nvmeof.netty.EventLoops;
import io.nvmeof.protocol.fabrics.Nqn;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;

/**
 * Immutable connection options; build with {@link #builder()}. Defaults follow the Linux host: one I/O queue of 128
 * entries, keep alive 5 s for I/O controllers (0 for discovery controllers unless set), no digests, and on a lost
 * connection a reconnect every 10 s for up to 600 s, holding I/O meanwhile ({@code nvme connect}'s
 * {@code --reconnect-delay 10 --ctrl-loss-tmo 600}, no {@code --fast_io_fail_tmo}).
 */
public final class ConnectOptions {
    /** One host id per process, as a host is one NVMe host to the subsystem however many controllers it opens. */
    private static final UUID PROCESS_HOST_ID = UUID.randomUUID();

    public static final int DEFAULT_QUEUE_DEPTH = 128;
    public static final int DEFAULT_KATO_MS = 5000;
    /** In-capsule data cap over RDMA when none is set (each slot's send buffer holds it). */
    public static final int DEFAULT_MAX_INLINE_DATA = 8192;
    /** Largest queue depth accepted: the 16-bit command id must hold the slot index. */
    public static final int MAX_QUEUE_DEPTH = 65536;
    /** Linux's NVMF_DEF_RECONNECT_DELAY. */
    public static final Duration DEFAULT_RECONNECT_DELAY = Duration.ofSeconds(10);
    /** Linux's NVMF_DEF_CTRL_LOSS_TMO. */
    public static final Duration DEFAULT_CTRL_LOSS_TIMEOUT = Duration.ofSeconds(600);
    /** For {@link Builder#ctrlLossTimeout} (reconnect forever) and {@link Builder#fastIoFailTimeout} (never fail fast). */
    public static final Duration OFF = Duration.ofSeconds(-1);

    private final String hostNqn;
    private final UUID hostId;
    private final int ioQueues;
    private final int queueDepth;
    private final int keepAliveTimeoutMs;
    private final boolean headerDigest;
    private final boolean dataDigest;
    private final Duration commandTimeout;
    private final Duration connectTimeout;
    private final Duration cmEventTimeout;
    private final int eventLoopThreads;
    private final Duration busyPoll;
    private final EventLoops.LoopPlacement eventLoopPlacement;
    private final int maxInlineData;
    private final Duration reconnectDelay;
    private final Duration ctrlLossTimeout;
    private final Duration fastIoFailTimeout;
    private final ControllerStateListener stateListener;
    private final io.nvmeof.protocol.auth.DhchapSecret dhchapSecret;
    private final io.nvmeof.protocol.auth.DhchapSecret dhchapCtrlSecret;
    private final io.nvmeof.protocol.tls.ConfiguredPsk tlsKey;

    private ConnectOptions(Builder b) {
        this.hostId = b.hostId != null ? b.hostId : b.hostNqn != null ? hostIdOf(b.hostNqn) : PROCESS_HOST_ID;
        this.hostNqn = b.hostNqn != null ? b.hostNqn : Nqn.fromUuid(this.hostId);
        this.ioQueues = b.ioQueues;
        this.queueDepth = b.queueDepth;
        this.keepAliveTimeoutMs = b.keepAliveTimeoutMs;
        this.headerDigest = b.headerDigest;
        this.dataDigest = b.dataDigest;
        this.commandTimeout = b.commandTimeout;
        this.connectTimeout = b.connectTimeout;
        this.cmEventTimeout = b.cmEventTimeout;
        this.eventLoopThreads = b.eventLoopThreads;
        this.busyPoll = b.busyPoll;
        this.eventLoopPlacement = b.eventLoopPlacement;
        this.maxInlineData = b.maxInlineData;
        this.reconnectDelay = b.reconnectDelay;
        this.ctrlLossTimeout = b.ctrlLossTimeout;
        this.fastIoFailTimeout = b.fastIoFailTimeout;
        this.stateListener = b.stateListener;
        this.dhchapSecret = b.dhchapSecret;
        this.dhchapCtrlSecret = b.dhchapCtrlSecret;
        this.tlsKey = b.tlsKey == null ? null
                : b.tlsKeyDerivation == null ? b.tlsKey : b.tlsKey.derivedAs(b.tlsKeyDerivation);
        if (dhchapCtrlSecret != null && dhchapSecret == null) {
            throw new IllegalArgumentException("dhchapCtrlSecret needs dhchapSecret: the controller proves itself only"
                    + " to a host that authenticates (nvme connect --dhchap-ctrl-secret needs --dhchap-secret too)");
        }
        if (dhchapCtrlSecret != null && dhchapCtrlSecret.sameAs(dhchapSecret)) {
            throw new IllegalArgumentException("dhchapCtrlSecret is the same secret as dhchapSecret: the controller's"
                    + " proof would then show nothing the host does not know; use a secret of its own");
        }
        String why = hostNqn.isEmpty() ? null : Nqn.validate(hostNqn);
        if (why != null) {
            throw new IllegalArgumentException("invalid host NQN '" + hostNqn + "': " + why);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    public static ConnectOptions defaults() {
        return builder().build();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.hostNqn = hostNqn;
        b.hostId = hostId;
        b.ioQueues = ioQueues;
        b.queueDepth = queueDepth;
        b.keepAliveTimeoutMs = keepAliveTimeoutMs;
        b.headerDigest = headerDigest;
        b.dataDigest = dataDigest;
        b.commandTimeout = commandTimeout;
        b.connectTimeout = connectTimeout;
        b.cmEventTimeout = cmEventTimeout;
        b.eventLoopThreads = eventLoopThreads;
        b.busyPoll = busyPoll;
        b.eventLoopPlacement = eventLoopPlacement;
        b.maxInlineData = maxInlineData;
        b.reconnectDelay = reconnectDelay;
        b.ctrlLossTimeout = ctrlLossTimeout;
        b.fastIoFailTimeout = fastIoFailTimeout;
        b.stateListener = stateListener;
        b.dhchapSecret = dhchapSecret;
        b.dhchapCtrlSecret = dhchapCtrlSecret;
        b.tlsKey = tlsKey;
        return b;
    }

    public String hostNqn() { return hostNqn; }

    /** The RDMA CM event wait set with {@link Builder#cmEventTimeout}, or null for the default. */
    public Duration cmEventTimeout() { return cmEventTimeout; }
    public UUID hostId() { return hostId; }

    private static final String UUID_NQN_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:";

    /** The default Host ID of {@code hostNqn} (see the builder's {@code hostId}). */
    static UUID hostIdOf(String hostNqn) {
        if (hostNqn.startsWith(UUID_NQN_PREFIX)) {
            try {
                return UUID.fromString(hostNqn.substring(UUID_NQN_PREFIX.length()));
            } catch (IllegalArgumentException e) {
                // not a UUID after all: derived, as any other name
            }
        }
        return UUID.nameUUIDFromBytes(("nvmeof-java host " + hostNqn).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    public int ioQueues() { return ioQueues; }
    /** Entries per I/O queue, 1-based; the wire carries {@code queueDepth - 1} (SQSIZE is 0-based). */
    public int queueDepth() { return queueDepth; }
    /** Configured keep-alive timeout in ms, or -1 when not set (then {@link #keepAliveTimeoutMs(boolean)} decides). */
    public int keepAliveTimeoutMs() { return keepAliveTimeoutMs; }
    /** Effective KATO: as set, else 5000 ms for I/O controllers and 0 (none) for discovery controllers. */
    public int keepAliveTimeoutMs(boolean discovery) {
        if (keepAliveTimeoutMs >= 0) {
            return keepAliveTimeoutMs;
        }
        return discovery ? 0 : DEFAULT_KATO_MS;
    }
    public boolean headerDigest() { return headerDigest; }
    public boolean dataDigest() { return dataDigest; }
    public Duration commandTimeout() { return commandTimeout; }
    public Duration connectTimeout() { return connectTimeout; }
    public int eventLoopThreads() { return eventLoopThreads; }
    /** NVMe/TCP: how long the queues' event loops poll without blocking after their last work (zero: not at all). */
    public Duration busyPoll() { return busyPoll; }

    /** How the NVMe/TCP event-loop threads run: as the kernel places them, or kept to CPUs (see the builder). */
    public EventLoops.LoopPlacement eventLoopPlacement() { return eventLoopPlacement; }
    /**
     * The cap set on in-capsule write data (the controller's IOCCSZ may lower it further; 0 disables in-capsule
     * writes), or -1: the transport's default (see {@link Builder#maxInlineData}).
     */
    public int maxInlineData() { return maxInlineData; }
    /** Wait before each reconnect attempt after the connection is lost. */
    public Duration reconnectDelay() { return reconnectDelay; }
    /** How long to keep reconnecting before failing for good: zero = never reconnect, negative = forever. */
    public Duration ctrlLossTimeout() { return ctrlLossTimeout; }
    /** How long I/O waits for a reconnect before failing (later I/O fails at once until reconnected); negative = off. */
    public Duration fastIoFailTimeout() { return fastIoFailTimeout; }
    /** Told of every state change (connected, reconnecting, failed, closed); null when none. */
    public ControllerStateListener stateListener() { return stateListener; }
    /** The host's DH-HMAC-CHAP secret, or null. */
    public io.nvmeof.protocol.auth.DhchapSecret dhchapSecret() { return dhchapSecret; }
    /** The controller's secret: with it the host asks the controller to authenticate too; null otherwise. */
    public io.nvmeof.protocol.auth.DhchapSecret dhchapCtrlSecret() { return dhchapCtrlSecret; }
    /** The configured TLS PSK: NVMe/TCP connections then use TLS 1.3 with the PSK derived from it; null: no TLS. */
    public io.nvmeof.protocol.tls.ConfiguredPsk tlsKey() { return tlsKey; }

    @Override
    public String toString() {
        return "ConnectOptions[hostNqn=" + hostNqn + ", hostId=" + hostId + ", ioQueues=" + ioQueues + ", queueDepth="
                + queueDepth + ", kato=" + keepAliveTimeoutMs + ", hdgst=" + headerDigest + ", ddgst=" + dataDigest
                + ", commandTimeout=" + commandTimeout + ", connectTimeout=" + connectTimeout + ", cmEventTimeout=" + cmEventTimeout + ", eventLoopThreads="
                + eventLoopThreads + ", busyPoll=" + busyPoll + ", maxInlineData=" + maxInlineData + ", reconnectDelay=" + reconnectDelay
                + ", ctrlLossTimeout=" + ctrlLossTimeout + ", fastIoFailTimeout=" + fastIoFailTimeout
                + ", dhchap=" + (dhchapSecret == null ? "none" : dhchapCtrlSecret == null ? "host" : "bidirectional")
                + ", tls=" + (tlsKey == null ? "none" : "psk, " + tlsKey.derivation().label()) + "]";
    }

    public static final class Builder {
        private String hostNqn;
        private UUID hostId;
        private int ioQueues = 1;
        private int queueDepth = DEFAULT_QUEUE_DEPTH;
        private int keepAliveTimeoutMs = -1;
        private boolean headerDigest;
        private boolean dataDigest;
        private Duration commandTimeout = Duration.ofSeconds(30);
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration cmEventTimeout;
        private int eventLoopThreads = 1;
        private Duration busyPoll = Duration.ZERO;
        private EventLoops.LoopPlacement eventLoopPlacement = EventLoops.LoopPlacement.NONE;
        private int maxInlineData = -1;
        private Duration reconnectDelay = DEFAULT_RECONNECT_DELAY;
        private Duration ctrlLossTimeout = DEFAULT_CTRL_LOSS_TIMEOUT;
        private Duration fastIoFailTimeout = OFF;
        private ControllerStateListener stateListener;
        private io.nvmeof.protocol.auth.DhchapSecret dhchapSecret;
        private io.nvmeof.protocol.auth.DhchapSecret dhchapCtrlSecret;
        private io.nvmeof.protocol.tls.ConfiguredPsk tlsKey;
        private io.nvmeof.protocol.tls.TlsPskDerivation tlsKeyDerivation;

        private Builder() {
        }

        /**
         * Host NQN; default {@code nqn.2014-08.org.nvmexpress:uuid:<hostId>}. The empty string sends an empty host
         * NQN, as SPDK's host does unless told one: subsystems that allow any host accept it, those with an
         * allowed-hosts list refuse it (Connect Invalid Host).
         */
        public Builder hostNqn(String v) { this.hostNqn = Objects.requireNonNull(v); return this; }
        /**
         * Host identifier sent in Connect. Default: with a host NQN given, one of that NQN's own (the UUID of a
         * {@code nqn.2014-08.org.nvmexpress:uuid:} NQN, as nvme-cli takes it, else one derived from the NQN), so
         * that two host NQNs of one process are two hosts, as a target that binds a Host ID to the host that
         * authenticated with it requires; without one, one random UUID per process.
         */
        public Builder hostId(UUID v) { this.hostId = Objects.requireNonNull(v); return this; }
        public Builder ioQueues(int v) { this.ioQueues = check(v, 1, 65535, "ioQueues"); return this; }
        public Builder queueDepth(int v) { this.queueDepth = check(v, 2, MAX_QUEUE_DEPTH, "queueDepth"); return this; }
        /** Keep Alive Timeout in ms; 0 disables keep alive. */
        public Builder keepAliveTimeoutMs(int v) { this.keepAliveTimeoutMs = check(v, 0, Integer.MAX_VALUE, "keepAliveTimeoutMs"); return this; }
        public Builder headerDigest(boolean v) { this.headerDigest = v; return this; }
        public Builder dataDigest(boolean v) { this.dataDigest = v; return this; }
        public Builder commandTimeout(Duration v) { this.commandTimeout = positive(v, "commandTimeout"); return this; }
        public Builder connectTimeout(Duration v) { this.connectTimeout = positive(v, "connectTimeout"); return this; }
        /**
         * NVMe/RDMA only: the longest wait for each RDMA CM event while a queue connects (address and route
         * resolved, connection established). Default: the connect timeout plus 1 s. SPDK's host waits 1 s
         * ({@code rdma_cm_event_timeout_ms}); set that to behave as it does.
         */
        public Builder cmEventTimeout(Duration v) { this.cmEventTimeout = positive(v, "cmEventTimeout"); return this; }
        public Builder eventLoopThreads(int v) { this.eventLoopThreads = check(v, 1, 1024, "eventLoopThreads"); return this; }
        /**
         * NVMe/TCP: keep each event loop polling its connections (and the requests handed to it) for this long after
         * its last work before it blocks. A queue-depth-1 round trip then pays no thread wake-up, on either side of
         * the socket when the target polls too ({@code target --busy-poll-us}); a busy loop costs a core. Default
         * zero: block at once. At most {@link EventLoops#MAX_BUSY_POLL}. (NVMe/RDMA queues always poll while busy.)
         */
        public Builder busyPoll(Duration v) { this.busyPoll = EventLoops.check(v); return this; }

        /**
         * NVMe/TCP: runs event-loop thread N through {@code v}, e.g. {@code io.nvmeof.cpu.ThreadPlacement::pinned} to
         * keep a busy-polling loop alone on a CPU of its own (the application owns the placement and closes it).
         */
        public Builder eventLoopPlacement(EventLoops.LoopPlacement v) {
            this.eventLoopPlacement = java.util.Objects.requireNonNull(v, "eventLoopPlacement");
            return this;
        }
        /**
         * The most write data sent in the command capsule (never more than the controller advertises in IOCCSZ).
         * Default: over NVMe/TCP, all the controller advertises, as the Linux host does (Linux nvmet-tcp never sends
         * R2T for a write within its in-capsule size: it waits for the data in the capsule); over RDMA,
         * {@link #DEFAULT_MAX_INLINE_DATA}. A lower cap over TCP makes such writes hang against nvmet-tcp.
         */
        public Builder maxInlineData(int v) { this.maxInlineData = check(v, 0, 1 << 20, "maxInlineData"); return this; }
        /** {@code nvme connect --reconnect-delay}: the wait before each reconnect attempt (default 10 s). */
        public Builder reconnectDelay(Duration v) { this.reconnectDelay = positive(v, "reconnectDelay"); return this; }
        /**
         * {@code nvme connect --ctrl-loss-tmo}: after a connection loss, keep reconnecting this long, then fail every
         * held and new request (default 600 s). {@link Duration#ZERO}: never reconnect, fail at once (the behaviour
         * before reconnects existed); {@link #OFF} (negative): reconnect forever.
         */
        public Builder ctrlLossTimeout(Duration v) { this.ctrlLossTimeout = java.util.Objects.requireNonNull(v, "ctrlLossTimeout"); return this; }
        /**
         * {@code nvme connect --fast_io_fail_tmo}: how long I/O is held while reconnecting before it fails; later I/O
         * then fails at once until the controller is back. Default {@link #OFF}: held until the controller loss
         * timeout.
         */
        public Builder fastIoFailTimeout(Duration v) { this.fastIoFailTimeout = java.util.Objects.requireNonNull(v, "fastIoFailTimeout"); return this; }
        /** Told of every state change, on the controller's housekeeping thread (it may call the controller). */
        public Builder stateListener(ControllerStateListener v) { this.stateListener = v; return this; }

        /**
         * {@code nvme connect --dhchap-secret}: the host's DH-HMAC-CHAP secret in the form {@code nvme gen-dhchap-key}
         * prints ({@code DHHC-1:xx:...:}), used when a controller asks the host to authenticate; null: none.
         *
         * @throws IllegalArgumentException when it is not a valid secret (the message never quotes it)
         */
        public Builder dhchapSecret(String v) {
            this.dhchapSecret = v == null ? null : io.nvmeof.protocol.auth.DhchapSecret.parse(v);
            return this;
        }
        /**
         * {@code nvme connect --dhchap-ctrl-secret}: the controller's secret; with it the host asks the controller to
         * prove it holds it (bidirectional authentication) and refuses a controller that does not.
         */
        public Builder dhchapCtrlSecret(String v) {
            this.dhchapCtrlSecret = v == null ? null : io.nvmeof.protocol.auth.DhchapSecret.parse(v);
            return this;
        }

        /**
         * {@code nvme connect --tls --tls_key}: the configured TLS PSK in the interchange format {@code nvme
         * gen-tls-key} prints ({@code NVMeTLSkey-1:xx:...:}). NVMe/TCP connections then start with a TLS 1.3
         * handshake whose PSK is derived from it for this host and the subsystem (identity version 0, {@code
         * NVMe0Rxx <hostnqn> <subnqn>}, as Linux's host offers); null: plain TCP.
         *
         * @throws IllegalArgumentException when it is not a valid key (the message never quotes it)
         */
        public Builder tlsKey(String v) {
            this.tlsKey = v == null ? null : io.nvmeof.protocol.tls.ConfiguredPsk.parse(v);
            return this;
        }

        /**
         * How the target's side derives TLS PSKs from the configured one: {@code standard} (default; the
         * specification, nvme-cli 2.16 and later) or {@code legacy} (nvme-cli 2.15 and earlier, or {@code --compat}),
         * which a Linux target whose keys were inserted by such an nvme-cli needs.
         */
        public Builder tlsKeyDerivation(String v) {
            this.tlsKeyDerivation = io.nvmeof.protocol.tls.TlsPskDerivation.parse(v);
            return this;
        }

        public ConnectOptions build() {
            return new ConnectOptions(this);
        }

        private static int check(int v, int min, int max, String name) {
            if (v < min || v > max) {
                throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + v);
            }
            return v;
        }

        private static Duration positive(Duration d, String name) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be a positive duration, got " + d);
            }
            return d;
        }
    }
}

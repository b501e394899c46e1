package io.nvmeof.cli;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.MultipathNamespace.IoPolicy;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** The nvme-cli style connection options shared by every client command. */
final class ConnectionOptions {
    @Option(names = {"-t", "--transport"}, defaultValue = "tcp", description = "Transport type: tcp or rdma. Default: ${DEFAULT-VALUE}")
    String transport;

    /** -a and -s have no default value here, so that one given next to --path is told apart from the default. */
    static final String DEFAULT_ADDRESS = "127.0.0.1";

    @Option(names = {"-a", "--traddr"}, description = "Target address. Default: " + DEFAULT_ADDRESS)
    String addressGiven;

    @Option(names = {"-s", "--trsvcid"}, description = "Target port. Default: 4420")
    Integer portGiven;

    @Option(names = "--path", paramLabel = "ADDR[:PORT]", description = "A path to the subsystem (instead of -a/-s;"
            + " IPv6 as [ADDR]:PORT; port 4420 if left out). Repeat it for multipath where the command can: one"
            + " controller per path, the namespace used through all of them (read, write, bench)")
    List<String> paths = new ArrayList<>();

    @Option(names = "--iopolicy", paramLabel = "POLICY", description = "With several --path: round-robin (each I/O"
            + " on the next path) or queue-depth (the path with the fewest I/Os outstanding), as Linux's iopolicy;"
            + " optimized paths first either way. Default: queue-depth")
    String ioPolicy;

    @Option(names = "--failover-timeout", paramLabel = "SECONDS", description = "With several --path: how long an"
            + " I/O waits for a usable path when none is, before it fails. Default: twice the target's ANA transition"
            + " time, or 10 without one")
    Double failoverTimeoutSeconds;

    @Option(names = {"-q", "--hostnqn"}, description = "Host NQN (default: derived from the host ID)")
    String hostNqn;

    @Option(names = {"-I", "--hostid"}, description = "Host ID (UUID)")
    String hostId;

    @Option(names = {"-g", "--hdr-digest"}, description = "Ask for NVMe/TCP header digests")
    boolean headerDigest;

    @Option(names = {"-G", "--data-digest"}, description = "Ask for NVMe/TCP data digests")
    boolean dataDigest;

    @Option(names = "--timeout", defaultValue = "30", description = "Seconds to wait for each command. Default: ${DEFAULT-VALUE}")
    int timeoutSeconds;

    @Option(names = {"-k", "--keep-alive-tmo"}, description = "Keep Alive Timeout in seconds, 0 to disable (default: 5 for I/O controllers, none for discovery)")
    Integer keepAliveSeconds;

    @Option(names = "--reconnect-delay", defaultValue = "10", description = "Seconds between reconnect attempts after the connection is lost. Default: ${DEFAULT-VALUE}")
    int reconnectDelaySeconds;

    @Option(names = "--ctrl-loss-tmo", defaultValue = "600", description = "Seconds to keep reconnecting before failing all I/O; 0 = never reconnect, -1 = forever. Default: ${DEFAULT-VALUE}")
    int ctrlLossSeconds;

    @Option(names = "--fast_io_fail_tmo", defaultValue = "-1", description = "Seconds I/O waits for a reconnect before failing; -1 = until --ctrl-loss-tmo. Default: ${DEFAULT-VALUE}")
    int fastIoFailSeconds;

    @Option(names = "--busy-poll-us", paramLabel = "US", defaultValue = "0", description = "NVMe/TCP: keep the"
            + " queues' event loop polling for US microseconds after its last work before it blocks (no wake-up per"
            + " round trip, at up to a core while busy); pair with target --busy-poll-us. Default: ${DEFAULT-VALUE}")
    int busyPollUs;

    @Option(names = {"-S", "--dhchap-secret"}, paramLabel = "SECRET", description = "The host's DH-HMAC-CHAP secret"
            + " (DHHC-1:xx:...:, from nvme gen-dhchap-key), for a controller that asks the host to authenticate."
            + " Anyone who can list processes sees a command line: prefer NVMEOF_DHCHAP_SECRET")
    String dhchapSecret;

    @Option(names = {"-C", "--dhchap-ctrl-secret"}, paramLabel = "SECRET", description = "The controller's secret: the"
            + " host asks the controller to prove it holds it (bidirectional). Or NVMEOF_DHCHAP_CTRL_SECRET")
    String dhchapCtrlSecret;

    @Option(names = "--tls", description = "NVMe/TCP over TLS 1.3 with a PSK (as nvme connect --tls); needs"
            + " --tls-key or NVMEOF_TLS_KEY")
    boolean tls;

    @Option(names = {"--tls-key", "--tls_key"}, paramLabel = "KEY", description = "The host's configured TLS PSK"
            + " (NVMeTLSkey-1:xx:...:, from nvme gen-tls-key); the PSK for the subsystem is derived from it. Implies"
            + " --tls. Anyone who can list processes sees a command line: prefer NVMEOF_TLS_KEY")
    String tlsKey;

    @Option(names = "--tls-key-derivation", paramLabel = "HOW", description = "How the target derives TLS PSKs:"
            + " standard (the specification, nvme-cli 2.16 and later) or legacy (nvme-cli 2.15 and earlier, e.g. a"
            + " Linux target whose keys Debian 13's nvme-cli inserted). Default: standard")
    String tlsKeyDerivation;

    ConnectOptions.Builder builder() {
        if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
            throw new IllegalArgumentException("transport '" + transport + "' is unknown; use -t tcp or -t rdma");
        }
        ConnectOptions.Builder b = ConnectOptions.builder()
                .headerDigest(headerDigest)
                .dataDigest(dataDigest)
                .commandTimeout(Duration.ofSeconds(timeoutSeconds))
                .connectTimeout(Duration.ofSeconds(Math.min(timeoutSeconds, 10)));
        if (keepAliveSeconds != null) {
            if (keepAliveSeconds < 0 || keepAliveSeconds > 65535) {
                throw new IllegalArgumentException("--keep-alive-tmo must be 0 to 65535 seconds, got " + keepAliveSeconds);
            }
            b.keepAliveTimeoutMs(keepAliveSeconds * 1000);
        }
        if (reconnectDelaySeconds < 1) {
            throw new IllegalArgumentException("--reconnect-delay must be at least 1 second, got " + reconnectDelaySeconds);
        }
        if (busyPollUs < 0 || busyPollUs > 1_000_000) {
            throw new IllegalArgumentException("--busy-poll-us must be 0 (off) to 1000000 (a second), got " + busyPollUs);
        }
        b.busyPoll(Duration.ofNanos(busyPollUs * 1000L));
        b.reconnectDelay(Duration.ofSeconds(reconnectDelaySeconds))
                .ctrlLossTimeout(ctrlLossSeconds < 0 ? ConnectOptions.OFF : Duration.ofSeconds(ctrlLossSeconds))
                .fastIoFailTimeout(fastIoFailSeconds < 0 ? ConnectOptions.OFF : Duration.ofSeconds(fastIoFailSeconds));
        if (hostId != null) {
            b.hostId(java.util.UUID.fromString(hostId));
        }
        if (hostNqn != null) {
            b.hostNqn(hostNqn);
        }
        String secret = dhchapSecret != null ? dhchapSecret : System.getenv("NVMEOF_DHCHAP_SECRET");
        String ctrlSecret = dhchapCtrlSecret != null ? dhchapCtrlSecret : System.getenv("NVMEOF_DHCHAP_CTRL_SECRET");
        try {
            b.dhchapSecret(secret);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--dhchap-secret: " + e.getMessage(), e);
        }
        try {
            b.dhchapCtrlSecret(ctrlSecret);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--dhchap-ctrl-secret: " + e.getMessage(), e);
        }
        tlsOptions(b);
        return b;
    }

    private void tlsOptions(ConnectOptions.Builder b) {
        String key = tlsKey != null ? tlsKey : tls || tlsKeyDerivation != null ? System.getenv("NVMEOF_TLS_KEY") : null;
        if (key == null) {
            if (tls || tlsKeyDerivation != null) {
                throw new IllegalArgumentException("--tls needs the host's TLS key: --tls-key KEY or NVMEOF_TLS_KEY"
                        + " (generate one with nvme gen-tls-key and give the target the same)");
            }
            return;
        }
        if (!"tcp".equals(transport)) {
            throw new IllegalArgumentException("--tls is for NVMe/TCP (-t tcp); NVMe/RDMA has no TLS");
        }
        try {
            b.tlsKey(key);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--tls-key: " + e.getMessage(), e);
        }
        if (tlsKeyDerivation != null) {
            try {
                b.tlsKeyDerivation(tlsKeyDerivation);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--tls-key-derivation: " + e.getMessage(), e);
            }
        }
    }

    /** The target address of a command that takes one path. */
    String address() {
        return onePath().address;
    }

    /** The target port of a command that takes one path. */
    int port() {
        return onePath().port;
    }

    /** The one controller of a command that takes one path. */
    NvmeofController connect(String subnqn, ConnectOptions options) {
        HostPort p = onePath();
        return NvmeofController.connect(new TransportId(transport, p.address, p.port, subnqn), options);
    }

    /**
     * Namespace {@code nsid} through every path given: one controller per path, and a multipath namespace over them
     * when there are several. A path that cannot be connected fails it, naming the path.
     */
    ConnectedNamespace connectNamespace(String subnqn, long nsid, ConnectOptions options) {
        List<HostPort> given = paths();
        IoPolicy policy = ioPolicy();
        Duration failover = failoverTimeout();
        if (given.size() == 1 && (ioPolicy != null || failoverTimeoutSeconds != null)) {
            throw new IllegalArgumentException("--iopolicy and --failover-timeout are for several paths: give --path"
                    + " once per path");
        }
        List<TransportId> ids = new ArrayList<>();
        for (HostPort p : given) {
            ids.add(new TransportId(transport, p.address, p.port, subnqn));
        }
        return ConnectedNamespace.connect(ids, nsid, options, policy, failover);
    }

    /** Where the command connects, for its output: "tcp 127.0.0.1:4420", or each path's separated by commas. */
    String where() {
        StringBuilder b = new StringBuilder(transport).append(' ');
        List<HostPort> given = paths();
        for (int i = 0; i < given.size(); i++) {
            b.append(i > 0 ? ", " : "").append(given.get(i));
        }
        return b.toString();
    }

    /** An address and port of the target. */
    record HostPort(String address, int port) {
        @Override
        public String toString() {
            return address.indexOf(':') >= 0 ? "[" + address + "]:" + port : address + ":" + port;
        }
    }

    private HostPort onePath() {
        List<HostPort> given = paths();
        if (given.size() > 1) {
            throw new IllegalArgumentException("this command takes one path; --path was given " + given.size()
                    + " times (several paths are for read, write and bench)");
        }
        return given.get(0);
    }

    /** The paths given: each --path, or -a/-s (one path), or the default address and port. */
    List<HostPort> paths() {
        if (paths.isEmpty()) {
            return List.of(new HostPort(addressGiven != null ? addressGiven : DEFAULT_ADDRESS,
                    portGiven != null ? checkPort(portGiven, "-s " + portGiven) : TransportId.DEFAULT_IO_PORT));
        }
        if (addressGiven != null || portGiven != null) {
            throw new IllegalArgumentException("give the target either as --path ADDR:PORT (repeated for several"
                    + " paths) or as -a ADDR -s PORT, not both");
        }
        List<HostPort> out = new ArrayList<>();
        for (String p : paths) {
            HostPort hp = parsePath(p);
            if (out.contains(hp)) {
                throw new IllegalArgumentException("--path " + p + " is given twice");
            }
            out.add(hp);
        }
        return out;
    }

    /** ADDR, ADDR:PORT, [IPV6] or [IPV6]:PORT ({@link TransportId#parseAddress}). */
    static HostPort parsePath(String text) {
        try {
            TransportId.Address a = TransportId.parseAddress(text, TransportId.DEFAULT_IO_PORT);
            return new HostPort(a.traddr(), a.trsvcid());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--path '" + text + "' is not ADDR[:PORT] (e.g. 10.0.0.5:4420, or"
                    + " [fe80::1]:4420 for IPv6): " + e.getMessage());
        }
    }

    private static int checkPort(int port, String what) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException(what + ": the port must be 1 to 65535, got " + port);
        }
        return port;
    }

    private IoPolicy ioPolicy() {
        if (ioPolicy == null) {
            return IoPolicy.QUEUE_DEPTH;
        }
        switch (ioPolicy) {
            case "round-robin": return IoPolicy.ROUND_ROBIN;
            case "queue-depth": return IoPolicy.QUEUE_DEPTH;
            default: throw new IllegalArgumentException("--iopolicy must be round-robin or queue-depth, got '"
                    + ioPolicy + "'");
        }
    }

    /** Null: the multipath namespace's default. */
    private Duration failoverTimeout() {
        if (failoverTimeoutSeconds == null) {
            return null;
        }
        if (!(failoverTimeoutSeconds >= 0) || failoverTimeoutSeconds > 86_400) {
            throw new IllegalArgumentException("--failover-timeout must be 0 to 86400 seconds, got "
                    + failoverTimeoutSeconds);
        }
        return Duration.ofNanos((long) (failoverTimeoutSeconds * 1e9));
    }
}

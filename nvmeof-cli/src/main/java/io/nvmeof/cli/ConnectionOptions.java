package io.nvmeof.cli;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.time.Duration;
import picocli.CommandLine.Option;

/** The nvme-cli style connection options shared by every client command. */
final class ConnectionOptions {
    @Option(names = {"-t", "--transport"}, defaultValue = "tcp", description = "Transport type: tcp or rdma. Default: ${DEFAULT-VALUE}")
    String transport;

    @Option(names = {"-a", "--traddr"}, defaultValue = "127.0.0.1", description = "Target address. Default: ${DEFAULT-VALUE}")
    String address;

    @Option(names = {"-s", "--trsvcid"}, defaultValue = "4420", description = "Target port. Default: ${DEFAULT-VALUE}")
    int port;

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

    NvmeofController connect(String subnqn, ConnectOptions options) {
        return NvmeofController.connect(new TransportId(transport, address, port, subnqn), options);
    }

    String where() {
        return transport + " " + address + ":" + port;
    }
}

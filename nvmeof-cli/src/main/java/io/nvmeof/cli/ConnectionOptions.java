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

    ConnectOptions.Builder builder() {
        if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
            throw new IllegalArgumentException("transport '" + transport + "' is unknown; use -t tcp or -t rdma");
        }
        ConnectOptions.Builder b = ConnectOptions.builder()
                .headerDigest(headerDigest)
                .dataDigest(dataDigest)
                .commandTimeout(Duration.ofSeconds(timeoutSeconds))
                .connectTimeout(Duration.ofSeconds(Math.min(timeoutSeconds, 10)));
        if (hostId != null) {
            b.hostId(java.util.UUID.fromString(hostId));
        }
        if (hostNqn != null) {
            b.hostNqn(hostNqn);
        }
        return b;
    }

    NvmeofController connect(String subnqn, ConnectOptions options) {
        return NvmeofController.connect(new TransportId(transport, address, port, subnqn), options);
    }

    String where() {
        return transport + " " + address + ":" + port;
    }
}

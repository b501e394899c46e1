package io.nvmeof.initiator;

import java.util.Objects;

/**
 * Where a subsystem lives: transport type ({@code "tcp"}), address (host name or IP literal), service id (TCP port;
 * 4420 for I/O, 8009 for discovery by convention) and the subsystem NQN.
 */
public record TransportId(String trtype, String traddr, int trsvcid, String subnqn) {
    /** The IANA port for NVMe/TCP I/O controllers. */
    public static final int DEFAULT_IO_PORT = 4420;
    /** The well-known port of NVMe/TCP discovery controllers. */
    public static final int DEFAULT_DISCOVERY_PORT = 8009;

    public TransportId {
        Objects.requireNonNull(trtype, "trtype");
        Objects.requireNonNull(traddr, "traddr");
        Objects.requireNonNull(subnqn, "subnqn");
        if (trsvcid <= 0 || trsvcid > 65535) {
            throw new IllegalArgumentException("trsvcid must be a TCP port (1-65535), got " + trsvcid);
        }
    }

    /** A TCP transport id. */
    public static TransportId tcp(String traddr, int port, String subnqn) {
        return new TransportId("tcp", traddr, port, subnqn);
    }

    /** host:port, IPv6 literals bracketed, for messages. */
    public String address() {
        return (traddr.indexOf(':') >= 0 ? "[" + traddr + "]" : traddr) + ":" + trsvcid;
    }

    @Override
    public String toString() {
        return trtype + "://" + address() + "/" + subnqn;
    }
}

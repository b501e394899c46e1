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

    /** An address and TCP port, as {@link #parseAddress} reads them. */
    public record Address(String traddr, int trsvcid) {
        @Override
        public String toString() {
            return (traddr.indexOf(':') >= 0 ? "[" + traddr + "]" : traddr) + ":" + trsvcid;
        }
    }

    /**
     * Reads {@code ADDR}, {@code ADDR:PORT}, {@code [IPV6]} or {@code [IPV6]:PORT} (as URLs and nvme-cli's users write
     * them; {@code defaultPort} when the port is left out). Throws {@link IllegalArgumentException} saying what is
     * wrong, for the caller to put after what it was reading: an unclosed bracket, an IPv6 address without brackets
     * (its last group would pass for a port), no address, a port that is not 1 to 65535.
     */
    public static Address parseAddress(String text, int defaultPort) {
        String t = text.trim();
        String host;
        String port = null;
        if (t.startsWith("[")) {
            int close = t.indexOf(']');
            if (close < 0) {
                throw new IllegalArgumentException("unclosed '['");
            }
            host = t.substring(1, close);
            if (close + 1 < t.length()) {
                if (t.charAt(close + 1) != ':') {
                    throw new IllegalArgumentException("expected ':PORT' after ']'");
                }
                port = t.substring(close + 2);
            }
        } else {
            int colon = t.indexOf(':');
            if (colon >= 0 && t.indexOf(':', colon + 1) >= 0) {
                throw new IllegalArgumentException("write an IPv6 address in brackets, as [ADDR]:PORT");
            }
            host = colon >= 0 ? t.substring(0, colon) : t;
            port = colon >= 0 ? t.substring(colon + 1) : null;
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("no address");
        }
        if (port == null) {
            return new Address(host, defaultPort);
        }
        int n;
        try {
            n = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("port '" + port + "' is not a number");
        }
        if (n < 1 || n > 65535) {
            throw new IllegalArgumentException("the port must be 1 to 65535, got " + n);
        }
        return new Address(host, n);
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

package io.nvmeof.tgt.core;

import io.nvmeof.protocol.log.DiscoveryLogEntry;

/**
 * Whether an NVMe/TCP listener secures its connections with TLS 1.3 (PSK), as nvmet's {@code addr_tsas} and
 * {@code addr_treq} say it for a port, and how the discovery log shows it (TREQ, TSAS SECTYPE).
 */
public enum TlsMode {
    /**
     * Plain TCP only (a ClientHello gets no answer but the connection's end). TREQ "not specified", as nvmet's
     * default: libnvme up to 1.x (Debian 12's nvme-cli 2.3) turns TLS on for any NVMe/TCP entry that says "required"
     * or "not required", so `nvme connect-all` failed against "not required" on kernels without TLS ("unknown
     * parameter tls").
     */
    NONE("none", DiscoveryLogEntry.TREQ_NOT_SPECIFIED, DiscoveryLogEntry.TCP_SECTYPE_NONE),
    /** TLS or plain TCP: a connection whose first byte starts a TLS handshake record gets TLS (as nvmet peeks). */
    ALLOWED("allowed", DiscoveryLogEntry.TREQ_NOT_REQUIRED, DiscoveryLogEntry.TCP_SECTYPE_TLS13),
    /** TLS only: plain NVMe/TCP is refused before any PDU is read. */
    REQUIRED("required", DiscoveryLogEntry.TREQ_REQUIRED, DiscoveryLogEntry.TCP_SECTYPE_TLS13);

    private final String label;
    private final int treq;
    private final int sectype;

    TlsMode(String label, int treq, int sectype) {
        this.label = label;
        this.treq = treq;
        this.sectype = sectype;
    }

    public String label() { return label; }

    /** TREQ bits 1:0 of the discovery log entry. */
    public int treq() { return treq; }

    /** TSAS SECTYPE of the discovery log entry. */
    public int sectype() { return sectype; }

    /** {@code none}, {@code allowed} or {@code required}; null: none. */
    public static TlsMode parse(String name) {
        if (name == null) {
            return NONE;
        }
        for (TlsMode m : values()) {
            if (m.label.equals(name)) {
                return m;
            }
        }
        throw new IllegalArgumentException("tls must be none, allowed or required, got '" + name + "'");
    }
}

package io.nvmeof.initiator;

import io.nvmeof.protocol.fabrics.Nqn;

/**
 * One record of the discovery log page (LID 70h), decoded. {@code trtype}: 1 RDMA, 3 TCP; {@code adrfam}: 1 IPv4,
 * 2 IPv6; {@code subtype}: 1 referral, 2 NVM subsystem, 3 current discovery subsystem; {@code treq} bits 1:0: secure
 * channel not specified (0), required (1), not required (2); {@code tcpSectype} (TCP's TSAS byte 0): 0 none, 2 TLS 1.3.
 */
public record DiscoveryEntry(int trtype, int adrfam, int subtype, int treq, int portid, int cntlid, int asqsz,
                             String trsvcid, String subnqn, String traddr, int tcpSectype) {
    public DiscoveryEntry(int trtype, int adrfam, int subtype, int treq, int portid, int cntlid, int asqsz,
                          String trsvcid, String subnqn, String traddr) {
        this(trtype, adrfam, subtype, treq, portid, cntlid, asqsz, trsvcid, subnqn, traddr, 0);
    }

    /**
     * Whether this entry refers the host to another discovery service (SUBTYPE 1, a referral): connecting to it with
     * {@link Nqn#DISCOVERY} and reading its log lists what it offers (this initiator does not follow referrals by
     * itself; {@code nvme connect-all} does).
     */
    public boolean isReferral() {
        return subtype == io.nvmeof.protocol.log.DiscoveryLogEntry.SUBTYPE_DISCOVERY_REFERRAL;
    }

    /** Whether the port requires a secure channel (TLS): TREQ says required. */
    public boolean tlsRequired() {
        return (treq & 3) == 1;
    }

    /**
     * This entry as a {@link TransportId} (TCP only), for connecting to it.
     *
     * @throws IllegalStateException when the entry is not for TCP (check {@link #trtype()} first)
     * @throws NvmeofException       when the discovery controller sent an entry no connection can be made to: a
     *                               TRSVCID that is not a TCP port, an empty TRADDR, an invalid SUBNQN
     */
    public TransportId toTransportId() {
        if (trtype != io.nvmeof.protocol.log.DiscoveryLogEntry.TRTYPE_TCP) {
            throw new IllegalStateException("discovery entry for " + subnqn + " is not a TCP port (trtype " + trtype + ")");
        }
        // The fields are the discovery controller's text: checked here, so what comes out connects or is refused
        // for what it is, not with a NumberFormatException or connect's IllegalArgumentException.
        String service = trsvcid.trim();
        int port = service.matches("[0-9]{1,5}") ? Integer.parseInt(service) : -1;
        if (port < 1 || port > 65535) {
            throw new NvmeofException("discovery entry for " + quoted(subnqn) + " has TRSVCID " + quoted(trsvcid)
                    + ", which is not a TCP port (1-65535)");
        }
        if (traddr.isBlank()) {
            throw new NvmeofException("discovery entry for " + quoted(subnqn) + " has no TRADDR");
        }
        String why = Nqn.validate(subnqn);
        if (why != null) {
            throw new NvmeofException("discovery entry at " + quoted(traddr) + " port " + port + " has an invalid"
                    + " SUBNQN " + quoted(subnqn) + ": " + why);
        }
        return new TransportId("tcp", traddr.trim(), port, subnqn);
    }

    /** A field as sent, quoted, with what is not printable ASCII escaped (it goes into a message). */
    private static String quoted(String field) {
        StringBuilder b = new StringBuilder(field.length() + 2).append('"');
        for (int i = 0; i < field.length(); i++) {
            char ch = field.charAt(i);
            if (ch < 0x20 || ch > 0x7E || ch == '"' || ch == '\\') {
                b.append(String.format("\\x%02x", (int) ch & 0xFF));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }
}

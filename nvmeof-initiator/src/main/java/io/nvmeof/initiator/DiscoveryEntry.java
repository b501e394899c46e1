package io.nvmeof.initiator;

/**
 * One record of the discovery log page (LID 70h), decoded. {@code trtype}: 1 RDMA, 3 TCP; {@code adrfam}: 1 IPv4,
 * 2 IPv6; {@code subtype}: 1 referral, 2 NVM subsystem, 3 current discovery subsystem.
 */
public record DiscoveryEntry(int trtype, int adrfam, int subtype, int treq, int portid, int cntlid, int asqsz,
                             String trsvcid, String subnqn, String traddr) {

    /** This entry as a {@link TransportId} (TCP only), for connecting to it. */
    public TransportId toTransportId() {
        if (trtype != io.nvmeof.protocol.log.DiscoveryLogEntry.TRTYPE_TCP) {
            throw new IllegalStateException("discovery entry for " + subnqn + " is not a TCP port (trtype " + trtype + ")");
        }
        return new TransportId("tcp", traddr, Integer.parseInt(trsvcid.trim()), subnqn);
    }
}

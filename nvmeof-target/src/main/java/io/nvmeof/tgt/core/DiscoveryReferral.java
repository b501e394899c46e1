package io.nvmeof.tgt.core;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.log.DiscoveryLogEntry;

/**
 * Another discovery service (or, SPDK's variant, one subsystem of another target) that this target's discovery log
 * points hosts to, as the log entry describes it.
 *
 * @param id      the administrator's handle for it (not on the wire)
 * @param trtype  transport type (3 TCP, 1 RDMA)
 * @param adrfam  address family (1 IPv4, 2 IPv6)
 * @param traddr  the other end's IP address, numeric
 * @param trsvcid its port
 * @param subnqn  the discovery NQN, or the NQN of the NVM subsystem referred to
 * @param tls     how the other end takes NVMe/TCP (TREQ, TSAS SECTYPE)
 * @param portId  the other end's PORTID
 */
public record DiscoveryReferral(int id, int trtype, int adrfam, String traddr, String trsvcid, String subnqn,
        TlsMode tls, int portId) {

    /** SUBTYPE: a referral to a discovery service (1), or an NVM subsystem entry (2) for a subsystem NQN. */
    public int subtype() {
        return Nqn.DISCOVERY.equals(subnqn) ? DiscoveryLogEntry.SUBTYPE_DISCOVERY_REFERRAL : DiscoveryLogEntry.SUBTYPE_NVM;
    }
}

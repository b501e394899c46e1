package io.nvmeof.tgt.core;

import java.util.Set;

/**
 * A port the target listens on, as the discovery log describes it.
 *
 * @param portId discovery log PORTID
 * @param trtype transport type (3 TCP, 1 RDMA)
 * @param adrfam address family (1 IPv4, 2 IPv6)
 * @param subsystems NQNs exported through this port; empty means every subsystem
 * @param tls whether its connections use TLS (NVMe/TCP)
 */
public record ListenerInfo(int portId, int trtype, int adrfam, String traddr, String trsvcid, Set<String> subsystems,
        TlsMode tls) {
    public ListenerInfo(int portId, int trtype, int adrfam, String traddr, String trsvcid, Set<String> subsystems) {
        this(portId, trtype, adrfam, traddr, trsvcid, subsystems, TlsMode.NONE);
    }

    public boolean exports(String nqn) {
        return subsystems.isEmpty() || subsystems.contains(nqn);
    }
}

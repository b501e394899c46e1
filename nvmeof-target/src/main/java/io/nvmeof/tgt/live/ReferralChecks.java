package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.core.DiscoveryReferral;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TlsMode;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Collection;

/**
 * The checks of a referral's description ({@link ReferralConfig}), shared by the start, the single live changes and
 * imports, and its translation into what the discovery log lists ({@link DiscoveryReferral}).
 */
public final class ReferralChecks {
    /** The port {@code nvme discover} assumes for NVMe/TCP discovery (IANA's), and for RDMA. */
    static final int TCP_DISCOVERY_PORT = 8009;
    static final int RDMA_DISCOVERY_PORT = 4420;

    private ReferralChecks() {
    }

    /**
     * {@code r} with its defaults filled in (transport tcp, the transport's discovery port, tls none written as
     * absent, the discovery NQN written as absent), checked; the id stays as given.
     */
    static ReferralConfig normalize(ReferralConfig r) {
        if (r == null) {
            throw invalid("a referral is null: give at least its address");
        }
        String transport = r.transport() != null ? r.transport() : "tcp";
        if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
            throw invalid("referral transport must be tcp or rdma, got '" + transport + "'");
        }
        if (r.address() == null || r.address().isBlank()) {
            throw invalid("referral address is required (the IP address of the other discovery service)");
        }
        InetAddress address = resolve(r.address());
        if (address.isAnyLocalAddress()) {
            throw invalid("referral address " + r.address() + " is the wildcard address: hosts cannot connect to it;"
                    + " give the other target's own address");
        }
        int port = r.port() != null ? r.port() : "tcp".equals(transport) ? TCP_DISCOVERY_PORT : RDMA_DISCOVERY_PORT;
        if (port < 1 || port > 65535) {
            throw invalid("referral port must be 1 to 65535, got " + port);
        }
        if (r.id() != null && (r.id() < 1 || r.id() > 65535)) {
            throw invalid("referral id must be 1 to 65535, got " + r.id());
        }
        if (r.portId() != null && (r.portId() < 0 || r.portId() > 65535)) {
            throw invalid("referral portId (the other end's PORTID) must be 0 to 65535, got " + r.portId());
        }
        String subsystem = r.subsystem();
        if (subsystem != null) {
            String why = Nqn.validateFormat(subsystem);
            if (why != null) {
                throw invalid("referral subsystem " + Nqn.display(subsystem) + ": " + why);
            }
            if (Nqn.DISCOVERY.equals(subsystem)) {
                subsystem = null; // the default, one spelling
            }
        }
        TlsMode tls;
        try {
            tls = TlsMode.parse(r.tls());
        } catch (IllegalArgumentException e) {
            throw invalid("referral " + e.getMessage());
        }
        if (tls != TlsMode.NONE && !"tcp".equals(transport)) {
            throw invalid("referral tls is for NVMe/TCP; an RDMA referral has none (give tls only with tcp)");
        }
        return new ReferralConfig(r.id(), transport, r.address(), port, subsystem,
                tls == TlsMode.NONE ? null : tls.label(), r.portId() != null && r.portId() != 0 ? r.portId() : null);
    }

    /**
     * Every referral of a document normalized, in order; two with one id, or two a host could not tell apart (same
     * transport, address, port and NQN), are refused.
     */
    public static java.util.List<ReferralConfig> normalizeAll(java.util.List<ReferralConfig> given) {
        java.util.List<ReferralConfig> out = new java.util.ArrayList<>();
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        java.util.Set<String> keys = new java.util.HashSet<>();
        for (int i = 0; given != null && i < given.size(); i++) {
            ReferralConfig n;
            try {
                n = normalize(given.get(i));
            } catch (LiveConfiguration.ConfigurationException e) {
                throw invalid("referrals[" + i + "]: " + e.getMessage());
            }
            if (n.id() != null && !ids.add(n.id())) {
                throw invalid("referral id " + n.id() + " is in the document twice");
            }
            if (!keys.add(key(n))) {
                throw invalid("referral to " + key(n) + " is in the document twice");
            }
            out.add(n);
        }
        return out;
    }

    /** The lowest id from 1 not in {@code taken}. */
    public static int freeId(java.util.Set<Integer> taken) {
        int id = 1;
        while (taken.contains(id)) {
            id++;
        }
        return id;
    }

    /** What the discovery log lists for a normalized referral with id {@code id}. */
    public static DiscoveryReferral toLogEntry(ReferralConfig r, int id) {
        InetAddress address = resolve(r.address());
        return new DiscoveryReferral(id,
                "rdma".equals(r.transport()) ? DiscoveryLogEntry.TRTYPE_RDMA : DiscoveryLogEntry.TRTYPE_TCP,
                address instanceof Inet6Address ? DiscoveryLogEntry.ADRFAM_IPV6 : DiscoveryLogEntry.ADRFAM_IPV4,
                address.getHostAddress(), Integer.toString(r.port()),
                r.subsystem() != null ? r.subsystem() : Nqn.DISCOVERY, TlsMode.parse(r.tls()),
                r.portId() != null ? r.portId() : 0);
    }

    /** What makes two referrals the same entry to a host: transport, address, port and NQN. */
    static String key(ReferralConfig normalized) {
        return normalized.transport() + "://" + resolve(normalized.address()).getHostAddress() + ":"
                + normalized.port() + "/" + (normalized.subsystem() != null ? normalized.subsystem() : Nqn.DISCOVERY);
    }

    /**
     * Refuses a referral to one of this target's own listeners: a host following it would read this log again, and
     * again (a loop nvme-cli only stops by remembering where it has been).
     */
    public static void refuseLoop(ReferralConfig normalized, Collection<ListenerInfo> own) {
        InetAddress to = resolve(normalized.address());
        int trtype = "rdma".equals(normalized.transport()) ? DiscoveryLogEntry.TRTYPE_RDMA : DiscoveryLogEntry.TRTYPE_TCP;
        for (ListenerInfo l : own) {
            if (l.trtype() != trtype || !l.trsvcid().equals(Integer.toString(normalized.port()))) {
                continue;
            }
            InetAddress listening;
            try {
                listening = InetAddress.getByName(l.traddr());
            } catch (UnknownHostException e) {
                continue; // it was resolved when it was bound
            }
            if (listening.equals(to) || listening.isAnyLocalAddress() && isLocal(to)) {
                throw conflict("referral to " + normalized.transport() + " " + normalized.address() + ":"
                        + normalized.port() + " points at this target's own listener " + l.portId()
                        + ": hosts following it would read this discovery log again; refer to another target");
            }
        }
    }

    private static boolean isLocal(InetAddress a) {
        if (a.isLoopbackAddress()) {
            return true;
        }
        try {
            return NetworkInterface.getByInetAddress(a) != null;
        } catch (SocketException e) {
            return false;
        }
    }

    private static InetAddress resolve(String address) {
        try {
            return InetAddress.getByName(address);
        } catch (UnknownHostException e) {
            throw invalid("referral address '" + address + "' cannot be resolved");
        }
    }
}

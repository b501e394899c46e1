package io.nvmeof.tgt.live;

import java.util.Map;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.auth.HostAuth;
import io.nvmeof.tgt.auth.HostSecurity;
import io.nvmeof.tgt.auth.HostAuthRegistry;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;

/**
 * The checks of an incoming subsystem, namespace or listener description that need nothing opened or bound, shared by
 * the single live changes ({@link LiveConfiguration}) and imports ({@link ConfigurationImport}); and the refusals
 * they throw.
 */
final class ConfigurationChecks {
    /** Longest serial (Identify SN) and model (MN) strings, in bytes. */
    static final int SERIAL_LENGTH = 20;
    static final int MODEL_LENGTH = 40;

    private ConfigurationChecks() {
    }

    /** Everything about a new subsystem's description that can be checked without opening anything. */
    static void checkSubsystem(SubsystemConfig s) {
        if (s.nqn() == null) {
            throw invalid("nqn is required");
        }
        String why = Nqn.validateFormat(s.nqn());
        if (why != null) {
            throw invalid("nqn " + Nqn.display(s.nqn()) + ": " + why);
        }
        if (s.hosts() != null) {
            for (String h : s.hosts()) {
                String bad = h == null ? "is missing" : Nqn.validateFormat(h);
                if (bad != null) {
                    throw invalid("host NQN " + Nqn.display(h) + ": " + bad);
                }
            }
        }
        if (Nqn.DISCOVERY.equals(s.nqn())) {
            throw conflict("the discovery subsystem " + Nqn.DISCOVERY + " always exists and cannot be created");
        }
        checkText("serial", s.serial(), SERIAL_LENGTH);
        checkText("model", s.model(), MODEL_LENGTH);
        if (s.maxNamespaces() != null && (s.maxNamespaces() < 1 || s.maxNamespaces() > 1024)) {
            throw invalid("maxNamespaces must be 1 to 1024, got " + s.maxNamespaces());
        }
    }

    /**
     * A host's DH-HMAC-CHAP settings given over the API or in an import, checked as a start checks them, and its NQN as
     * strictly as every name an administrator creates ({@link Nqn#validateFormat}). The secret is required: these
     * paths set or rotate one, and removing a host's settings is a request of its own.
     *
     * @throws ConfigurationException INVALID naming the host and the field, never the secret
     */
    static HostSecurity checkHostEntry(HostConfig h) {
        if (h == null || h.nqn() == null) {
            throw invalid("a host's nqn is required");
        }
        String why = Nqn.validateFormat(h.nqn());
        if (why != null) {
            throw invalid("host NQN " + Nqn.display(h.nqn()) + ": " + why);
        }
        HostAuth auth;
        io.nvmeof.protocol.tls.ConfiguredPsk tls;
        try {
            auth = HostAuthRegistry.parse(h);
            tls = io.nvmeof.tgt.auth.TlsKeys.parse(h);
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage());
        }
        if (auth == null && tls == null) {
            throw invalid("host " + Nqn.display(h.nqn()) + ": dhchapKey and tlsKey are missing; setting a host's"
                    + " security settings needs its DH-HMAC-CHAP secret (as 'nvme gen-dhchap-key' prints it), its TLS"
                    + " key (as 'nvme gen-tls-key' prints it) or both, and a host's settings are removed on their own"
                    + " (DELETE /api/v1/hosts/{hostnqn})");
        }
        return new HostSecurity(h.nqn(), auth, tls);
    }

    /**
     * A host entry that names DH-HMAC-CHAP settings without {@code dhchapKey}, or a TLS derivation without
     * {@code tlsKey}, is refused: an entry replaces a kind whole, and the secret it leaves out (never shown by a GET)
     * would silently go.
     */
    static void checkEachKindHasItsKey(HostConfig h) {
        String host = h.nqn() == null ? "the host" : "host " + Nqn.display(h.nqn());
        if (h.dhchapKey() == null && (h.dhchapCtrlKey() != null || h.dhchapHash() != null || h.dhchapDhGroup() != null)) {
            throw invalid(host + ": dhchapCtrlKey, dhchapHash and dhchapDhGroup are set with the host's secret,"
                    + " dhchapKey, which is missing: an entry replaces the host's whole DH-HMAC-CHAP setting, so give"
                    + " dhchapKey again with them (GET never shows it; keep it where you generated it)");
        }
        if (h.tlsKey() == null && h.tlsKeyDerivation() != null) {
            throw invalid(host + ": tlsKeyDerivation is set with the host's TLS key, tlsKey, which is missing: give"
                    + " tlsKey again with it");
        }
    }

    /** {@code l} with its defaults filled in (transport tcp, port 4420), checked; the id stays as given. */
    static ListenerConfig normalizeListener(ListenerConfig l) {
        String transport = l.transport() != null ? l.transport() : "tcp";
        if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
            throw invalid("transport must be tcp or rdma, got '" + transport + "'");
        }
        if (l.address() == null) {
            throw invalid("address is required (an IP address of this machine, e.g. 127.0.0.1 or 0.0.0.0)");
        }
        try {
            if (io.nvmeof.tgt.core.TlsMode.parse(l.tls()) != io.nvmeof.tgt.core.TlsMode.NONE && !"tcp".equals(transport)) {
                throw invalid("tls is for NVMe/TCP listeners; an RDMA listener has none (give tls only with tcp)");
            }
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage());
        }
        try {
            java.net.InetAddress.getByName(l.address());
        } catch (java.net.UnknownHostException e) {
            throw invalid("address '" + l.address() + "' cannot be resolved");
        }
        int port = l.port() != null ? l.port() : 4420;
        if (port < 0 || port > 65535) {
            throw invalid("port must be 0 to 65535, got " + port);
        }
        if (l.id() != null && (l.id() < 1 || l.id() > 65535)) {
            throw invalid("id (the discovery log's PORTID) must be 1 to 65535, got " + l.id());
        }
        Map<String, String> ana;
        try {
            // Left out stays null (an import keeps the live states); given, optimized groups are left out.
            ana = l.ana() == null ? null
                    : java.util.Objects.requireNonNullElse(io.nvmeof.tgt.core.AnaGroups.describe(
                            io.nvmeof.tgt.core.AnaGroups.parseStates(l.ana())), Map.of());
        } catch (IllegalArgumentException e) {
            throw invalid("listener" + (l.id() != null ? " " + l.id() : "") + ": " + e.getMessage());
        }
        return new ListenerConfig(l.id(), transport, l.address(), port, l.inlineDataSize(), l.maxH2CData(), l.subsystems(),
                l.tls(), ana);
    }

    /** A document's namespace of subsystem {@code nqn} (NSID filled in): its NSID, size and UUID. */
    static void checkNamespace(String nqn, int maxNs, NamespaceConfig n) {
        if (n.nsid() < 1 || n.nsid() > maxNs) {
            throw invalid("subsystem " + nqn + ": nsid must be 1 to " + maxNs + ", got " + n.nsid());
        }
        if (n.size() != null) {
            // Checked here, before any comparison with the live namespace reads it (found by ConfigurationFuzzTest).
            try {
                TargetConfig.parseSize(n.size());
            } catch (IllegalArgumentException e) {
                throw invalid("subsystem " + nqn + ": namespace " + n.nsid() + ": " + e.getMessage());
            }
        }
        if (n.queueDepth() != null && (n.queueDepth() < 1 || n.queueDepth() > 65535)) {
            throw invalid("subsystem " + nqn + ": namespace " + n.nsid() + ": queueDepth must be 1 to 65535, got "
                    + n.queueDepth());
        }
        if (n.anaGroup() != null && (n.anaGroup() < 1 || n.anaGroup() > io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID)) {
            throw invalid("subsystem " + nqn + ": namespace " + n.nsid() + ": anaGroup must be 1 to "
                    + io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID + ", got " + n.anaGroup());
        }
        if (n.uuid() != null) {
            try {
                java.util.UUID.fromString(n.uuid());
            } catch (IllegalArgumentException e) {
                throw invalid("subsystem " + nqn + ": namespace " + n.nsid() + ": uuid '" + n.uuid() + "' is not a UUID");
            }
        }
    }

    private static void checkText(String what, String v, int max) {
        if (v == null) {
            return;
        }
        if (v.isEmpty() || v.length() > max || !v.chars().allMatch(ch -> ch >= 0x20 && ch < 0x7F)) {
            throw invalid(what + " must be 1 to " + max + " printable ASCII characters, got '" + v + "'");
        }
    }

    static ConfigurationException invalid(String m) {
        return new ConfigurationException(ConfigurationException.Kind.INVALID, m);
    }

    static ConfigurationException notFound(String m) {
        return new ConfigurationException(ConfigurationException.Kind.NOT_FOUND, m);
    }

    static ConfigurationException conflict(String m) {
        return new ConfigurationException(ConfigurationException.Kind.CONFLICT, m);
    }
}

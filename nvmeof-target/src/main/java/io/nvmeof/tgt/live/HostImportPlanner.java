package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ImportStep.commitOnly;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.tls.ConfiguredPsk;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.auth.HostAuth;
import io.nvmeof.tgt.auth.HostAuthRegistry;
import io.nvmeof.tgt.auth.HostSecurity;
import io.nvmeof.tgt.auth.TlsKeys;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Plans an import's {@code hosts} (DH-HMAC-CHAP settings and TLS keys): each entry the document gives is set, or rotated when the
 * host has other settings; an entry equal to the live one changes nothing. Hosts the document does not name keep
 * their settings in {@code replace} mode too: exports never carry secrets, so importing an exported document must not
 * strip the hosts' authentication (removing a host's settings is a request of its own).
 *
 * <p>The steps are planned before the subsystems' so that they commit first: a host allowed on a subsystem by the
 * same import never finds that subsystem without its secret in place.
 */
final class HostImportPlanner {
    private final HostAuthRegistry registry;
    private final TlsKeys tlsKeys;
    /** The hosts' entries now, by NQN: a document entry that gives one kind of setting keeps the other. */
    private final java.util.Map<String, HostConfig> current;
    private final ImportPlan plan;

    HostImportPlanner(HostAuthRegistry registry, TlsKeys tlsKeys, java.util.Map<String, HostConfig> current,
                      ImportPlan plan) {
        this.registry = registry;
        this.tlsKeys = tlsKeys;
        this.current = current;
        this.plan = plan;
    }

    /** Checks every entry (as a start would) and plans a step per host whose settings change. */
    void planHosts(List<HostConfig> hosts) {
        Set<String> named = new HashSet<>();
        for (int i = 0; i < hosts.size(); i++) {
            String where = "hosts[" + i + "]";
            HostConfig given;
            try {
                given = hosts.get(i) == null ? null
                        : ConfigurationDocument.keepingOtherKind(hosts.get(i), current.get(hosts.get(i).nqn()));
            } catch (ConfigurationException e) {
                throw invalid(where + ": " + e.getMessage());
            }
            HostSecurity sec = checked(where, given);
            String nqn = sec.hostNqn();
            if (!named.add(nqn)) {
                throw invalid(where + ": host " + Nqn.display(nqn) + " is in the document twice");
            }
            HostAuth live = registry.lookup(nqn);
            ConfiguredPsk liveTls = tlsKeys.lookup(nqn);
            if (sec.sameAs(live, liveTls)) {
                continue;
            }
            plan.hostsAfter.put(nqn, ConfigurationDocument.entry(given, sec));
            plan.steps.add(commitOnly((live == null && liveTls == null ? "set" : "rotate") + " the security settings"
                    + " of host " + nqn + " (" + sec.summary() + ")", () -> sec.apply(registry, tlsKeys)));
        }
    }

    /** The entry checked as a PUT checks it, its place in the document named. */
    private static HostSecurity checked(String where, HostConfig entry) {
        if (entry == null) {
            throw invalid(where + " is null: give a host's nqn and dhchapKey or tlsKey there, or remove it");
        }
        try {
            return ConfigurationChecks.checkHostEntry(entry);
        } catch (ConfigurationException e) {
            throw invalid(where + ": " + e.getMessage()); // names the host and the field, never the secret
        }
    }
}

package io.nvmeof.tgt;

import static io.nvmeof.tgt.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.ImportStep.commitOnly;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.auth.HostAuth;
import io.nvmeof.tgt.auth.HostAuthRegistry;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Plans an import's {@code hosts} (DH-HMAC-CHAP settings): each entry the document gives is set, or rotated when the
 * host has other settings; an entry equal to the live one changes nothing. Hosts the document does not name keep
 * their settings in {@code replace} mode too: exports never carry secrets, so importing an exported document must not
 * strip the hosts' authentication (removing a host's settings is a request of its own).
 *
 * <p>The steps are planned before the subsystems' so that they commit first: a host allowed on a subsystem by the
 * same import never finds that subsystem without its secret in place.
 */
final class HostImportPlanner {
    private final HostAuthRegistry registry;
    private final ImportPlan plan;

    HostImportPlanner(HostAuthRegistry registry, ImportPlan plan) {
        this.registry = registry;
        this.plan = plan;
    }

    /** Checks every entry (as a start would) and plans a step per host whose settings change. */
    void planHosts(List<HostConfig> hosts) {
        Set<String> named = new HashSet<>();
        for (int i = 0; i < hosts.size(); i++) {
            String where = "hosts[" + i + "]";
            HostAuth auth = checked(where, hosts.get(i));
            if (!named.add(auth.hostNqn())) {
                throw invalid(where + ": host " + Nqn.display(auth.hostNqn()) + " is in the document twice");
            }
            HostAuth live = registry.lookup(auth.hostNqn());
            if (auth.sameSettingsAs(live)) {
                continue;
            }
            plan.hostsAfter.put(auth.hostNqn(), ConfigurationDocument.entry(hosts.get(i), auth));
            plan.steps.add(commitOnly((live == null ? "set" : "rotate") + " the DH-HMAC-CHAP settings of host "
                    + auth.hostNqn() + " (" + auth.summary() + ")", () -> registry.put(auth)));
        }
    }

    /** The entry checked as a PUT checks it, its place in the document named. */
    private static HostAuth checked(String where, HostConfig entry) {
        if (entry == null) {
            throw invalid(where + " is null: give a host's nqn and dhchapKey there, or remove it");
        }
        try {
            return ConfigurationChecks.checkHostEntry(entry);
        } catch (ConfigurationException e) {
            throw invalid(where + ": " + e.getMessage()); // names the host and the field, never the secret
        }
    }
}

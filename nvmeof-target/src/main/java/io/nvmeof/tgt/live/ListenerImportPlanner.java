package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ConfigurationChecks.normalizeListener;
import static io.nvmeof.tgt.live.ImportStep.commitOnly;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Plans an import's listeners: those the document keeps, those it adds (ids given to those without one), and, when
 * the import replaces, those it drops. Adds the steps that do it to the {@link ImportPlan}; a listener whose port a new
 * one wants stops before the new ones bind, any other dropped one serves its hosts until the import commits.
 */
final class ListenerImportPlanner {
    private final ConfigurationDocument document;
    private final NvmeTarget target;
    private final ImportMode mode;
    private final ImportPlan plan;

    ListenerImportPlanner(ConfigurationDocument document, NvmeTarget target, ImportMode mode, ImportPlan plan) {
        this.document = document;
        this.target = target;
        this.mode = mode;
        this.plan = plan;
    }

    /** {@code subsystemsAfter}: the NQNs of the subsystems the target has after the import. */
    void planListeners(List<ListenerConfig> doc, Set<String> subsystemsAfter) {
        List<ListenerConfig> wanted = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        Set<String> endpoints = new HashSet<>();
        for (int i = 0; i < doc.size(); i++) {
            ListenerConfig l = doc.get(i);
            if (l == null) {
                throw invalid("listeners[" + i + "] is null: describe a listener there (at least its address) or remove it");
            }
            ListenerConfig n = normalizeListener(l);
            if (n.id() != null && !ids.add(n.id())) {
                throw invalid("listener id " + n.id() + " is in the document twice");
            }
            if (n.port() != 0 && !endpoints.add(endpoint(n))) {
                throw invalid("listener " + endpoint(n) + " is in the document twice");
            }
            if (n.subsystems() != null) {
                for (String nqn : n.subsystems()) {
                    if (!subsystemsAfter.contains(nqn) && !Nqn.DISCOVERY.equals(nqn)) {
                        throw invalid("listener " + endpoint(n) + ": subsystem " + Nqn.display(nqn) + " is not in the"
                                + " target after this import");
                    }
                }
            }
            wanted.add(n);
        }
        Map<Integer, ListenerConfig> current = new LinkedHashMap<>(document.listeners);
        Set<Integer> kept = new HashSet<>();
        List<ListenerConfig> toAdd = new ArrayList<>();
        for (ListenerConfig n : wanted) {
            ListenerConfig match = current.values().stream()
                    .filter(c -> n.port() != 0 && endpoint(c).equals(endpoint(n))).findFirst().orElse(null);
            if (match != null && sameListener(n, match, subsystemsAfter)) {
                kept.add(match.id());
                continue;
            }
            if (mode == ImportMode.MERGE) {
                if (match != null) {
                    throw conflict("listener " + match.id() + " on " + endpoint(n) + " exists with other settings;"
                            + " remove it first or import with mode replace");
                }
                if (n.id() != null && current.containsKey(n.id())) {
                    throw conflict("listener id " + n.id() + " is taken by " + endpoint(current.get(n.id()))
                            + "; choose another id");
                }
            }
            toAdd.add(n);
        }
        for (ListenerConfig n : toAdd) {
            if (n.id() != null && kept.contains(n.id())) {
                throw invalid("listener id " + n.id() + " is taken by the listener the document keeps on "
                        + endpoint(current.get(n.id())) + "; choose another id");
            }
        }
        Set<Integer> removed = new HashSet<>();
        if (mode == ImportMode.REPLACE) {
            if (wanted.isEmpty()) {
                throw invalid("the document has no listeners: hosts could not reach the target; keep at least one");
            }
            Set<String> wantedEndpoints = new HashSet<>();
            for (ListenerConfig n : toAdd) {
                if (n.port() != 0) {
                    wantedEndpoints.add(endpoint(n));
                }
            }
            for (ListenerConfig c : current.values()) {
                if (!kept.contains(c.id())) {
                    removed.add(c.id());
                    plan.listenersRemoved.add(c.id());
                    if (wantedEndpoints.contains(endpoint(c))) {
                        // A new listener wants its port: it goes before the new ones bind.
                        plan.steps.add(removeListenerStep(c));
                    } else {
                        // Dropped, or its id given to a new one: it serves its hosts until the import commits, so a
                        // failed import never has to bind its port again (which another process may have taken).
                        plan.steps.add(commitOnly("remove listener " + c.id() + " (" + endpoint(c)
                                + "; its connections end)",
                                () -> target.removeListener(c.id(), c.port())));
                    }
                }
            }
        }
        Set<Integer> taken = new HashSet<>(current.keySet());
        taken.removeAll(removed);
        for (ListenerConfig n : toAdd) {
            if (n.id() != null) {
                taken.add(n.id()); // named in the document: not given to one without an id
            }
        }
        for (ListenerConfig n : toAdd) {
            int id = n.id() != null ? n.id() : freeId(taken);
            taken.add(id);
            addListenerStep(n.withIdAndPort(id, n.port()));
        }
    }

    private static int freeId(Set<Integer> taken) {
        int id = 1;
        while (taken.contains(id)) {
            id++;
        }
        return id;
    }

    private ImportStep removeListenerStep(ListenerConfig c) {
        return new ImportStep() {
            @Override
            public String describe() {
                return "remove listener " + c.id() + " (" + endpoint(c) + "; its connections end)";
            }

            @Override
            public void prepare() {
                // Before any new listener binds: it wants this one's port.
                target.removeListener(c.id(), c.port());
            }

            @Override
            public void undo() {
                try {
                    target.addListener(c, c.id());
                } catch (Exception e) {
                    LiveConfiguration.LOG.error("listener {} ({}) could not be restored after a failed import: {}",
                            c.id(), endpoint(c), e.getMessage());
                    document.listeners.remove(c.id());
                }
            }

            @Override
            public void commit() {
                // stopped when prepared
            }
        };
    }

    private void addListenerStep(ListenerConfig l) {
        var add = new ImportStep() {
            private int bound;

            @Override
            public String describe() {
                return "add listener " + l.id() + " (" + endpoint(l) + ")";
            }

            @Override
            public void prepare() throws Exception {
                bound = target.addListener(l, l.id());
            }

            @Override
            public void undo() {
                target.removeListener(l.id(), bound); // the listener that had the id may still run
            }

            @Override
            public void commit() {
                // listening since prepared; the discovery log shows it once the configuration changes
            }
        };
        plan.steps.add(add);
        plan.listenersAdded.add(() -> l.withIdAndPort(l.id(), add.bound));
    }

    /**
     * Whether the document's listener is the live one. Their subsystem lists are compared by what they expose after
     * the import: an empty list exposes every subsystem, and discovery is served on every listener whatever the list
     * says (so SPDK's and nvmet's explicit lists match ours).
     */
    private static boolean sameListener(ListenerConfig want, ListenerConfig have, Set<String> subsystemsAfter) {
        return (want.id() == null || want.id().equals(have.id()))
                && (want.inlineDataSize() == null || want.inlineDataSize().equals(have.inlineDataSize()))
                && (want.maxH2CData() == null || want.maxH2CData().equals(have.maxH2CData()))
                && io.nvmeof.tgt.core.TlsMode.parse(want.tls()) == io.nvmeof.tgt.core.TlsMode.parse(have.tls())
                // Both normalized: optimized groups left out, so an explicit "optimized" matches the default.
                && (want.ana() == null || want.ana().equals(have.ana() != null ? have.ana() : Map.of()))
                && exposed(want.subsystems(), subsystemsAfter).equals(exposed(have.subsystems(), subsystemsAfter));
    }

    private static Set<String> exposed(List<String> list, Set<String> all) {
        Set<String> out = new HashSet<>(list == null || list.isEmpty() ? all : list);
        out.remove(Nqn.DISCOVERY);
        out.retainAll(all);
        return out;
    }

    /** transport://address:port with the address in its canonical form (so 127.0.0.1 and 127.000.0.1 match). */
    private static String endpoint(ListenerConfig l) {
        String a = l.address();
        try {
            a = InetAddress.getByName(a).getHostAddress();
        } catch (java.net.UnknownHostException e) {
            // checked before; keep as given
        }
        return l.transport() + "://" + a + ":" + l.port();
    }
}

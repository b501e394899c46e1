package io.nvmeof.tgt;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.LiveConfiguration.ImportResult;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * One import of a configuration document into the running target, all or nothing (SPDK's {@code load_config} and
 * nvmetcli's {@code restore}, but live and atomic).
 *
 * <p>The document is compared with the live configuration and turned into steps. Each step first
 * <em>prepares</em> what can fail (opening a backend, binding a port) without hosts seeing anything; if any
 * preparation fails, the ones done are undone in reverse and the target is as it was. Then the document the import
 * leaves is saved ({@link LiveConfiguration#save}); if it cannot be, the preparations are undone too. Only then are
 * the steps <em>committed</em>, which cannot fail: namespaces appear and disappear (with their events), subsystems and
 * listeners come and go. A field left out of the document keeps its live value; in {@link ImportMode#REPLACE} whatever the
 * document does not name is removed, in {@link ImportMode#MERGE} it stays, and a clash is refused.
 */
final class ConfigurationImport {
    /** A unit of change: prepare may fail and is undone; commit may not fail. */
    private interface Step {
        String describe();

        default void prepare() throws Exception {
        }

        default void undo() {
        }

        void commit();
    }

    private final LiveConfiguration live;
    private final NvmeTarget target;
    private final ImportMode mode;
    private final Consumer<NamespaceConfig> pathCheck;
    private final List<Step> steps = new ArrayList<>();
    private final List<String> notApplied = new ArrayList<>();
    /**
     * The document after the import, as the steps leave it: subsystems removed, subsystems added or changed (their
     * entries described once their steps are prepared, from what was opened), listeners removed and added.
     */
    private final Set<String> subsystemsRemoved = new HashSet<>();
    private final Map<String, java.util.function.Supplier<SubsystemConfig>> subsystemsAfter = new LinkedHashMap<>();
    private final Set<Integer> listenersRemoved = new HashSet<>();
    private final List<java.util.function.Supplier<ListenerConfig>> listenersAdded = new ArrayList<>();
    /** The namespaces the prepared steps opened, by subsystem and NSID. */
    private final Map<String, Map<Long, Namespace>> opened = new LinkedHashMap<>();
    /**
     * The target's namespaces once the import is done, by subsystem and NSID: removals are known when planned,
     * new namespaces once prepared. Checked as a whole before anything commits ({@link NamespaceIdentities}).
     */
    private final Map<String, Map<Long, Namespace>> after = new LinkedHashMap<>();

    ConfigurationImport(LiveConfiguration live, NvmeTarget target, ImportMode mode, Consumer<NamespaceConfig> pathCheck) {
        this.live = live;
        this.target = target;
        this.mode = mode;
        this.pathCheck = pathCheck;
    }

    /** Plans, then (unless {@code dryRun}) applies; the caller holds the configuration's lock. */
    ImportResult run(TargetConfig doc, boolean dryRun) {
        plan(doc);
        List<String> changes = steps.stream().map(Step::describe).toList();
        if (dryRun) {
            return new ImportResult(mode.name().toLowerCase(Locale.ROOT), true, changes, List.copyOf(notApplied), live.export());
        }
        if (steps.isEmpty()) {
            return new ImportResult(mode.name().toLowerCase(Locale.ROOT), false, changes, List.copyOf(notApplied),
                    live.export());
        }
        List<Step> prepared = new ArrayList<>();
        Map<String, SubsystemConfig> subsystems = new LinkedHashMap<>(live.subsystems);
        Map<Integer, ListenerConfig> listeners = new java.util.TreeMap<>(live.listeners);
        try {
            for (Step s : steps) {
                s.prepare();
                prepared.add(s);
            }
            String clash = clashAfter();
            if (clash != null) {
                throw conflict("nothing was changed: " + clash);
            }
            subsystemsRemoved.forEach(subsystems::remove);
            subsystemsAfter.forEach((nqn, entry) -> subsystems.put(nqn, entry.get()));
            listenersRemoved.forEach(listeners::remove);
            listenersAdded.forEach(entry -> listeners.put(entry.get().id(), entry.get()));
            live.save(live.document(subsystems, listeners));
        } catch (Exception e) {
            for (int i = prepared.size() - 1; i >= 0; i--) {
                prepared.get(i).undo();
            }
            if (e instanceof ConfigurationException ce) {
                throw ce;
            }
            String why = e.getMessage();
            if (why == null) {
                LiveConfiguration.LOG.error("an import failed while it was prepared", e);
                why = "an internal error, logged by the target";
            }
            throw new ConfigurationException(e instanceof java.io.IOException && why.contains("ddress already in use")
                    ? ConfigurationException.Kind.CONFLICT : ConfigurationException.Kind.INVALID,
                    "nothing was changed: " + why);
        }
        for (Step s : steps) {
            s.commit();
        }
        live.subsystems.clear();
        live.subsystems.putAll(subsystems);
        live.listeners.clear();
        live.listeners.putAll(listeners);
        target.core().configChanged();
        return new ImportResult(mode.name().toLowerCase(Locale.ROOT), false, changes, List.copyOf(notApplied), live.export());
    }

    // ------------------------------------------------------------------------------------------ planning

    /** The first file or identifier two namespaces would share after the import; null when none would. */
    private String clashAfter() {
        java.util.Set<Namespace> liveNow = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        NamespaceIdentities.live(target.core()).forEach(p -> liveNow.add(p.ns()));
        List<NamespaceIdentities.Placed> kept = new ArrayList<>();
        List<NamespaceIdentities.Placed> added = new ArrayList<>();
        after.forEach((nqn, byNsid) -> byNsid.values().forEach(ns ->
                (liveNow.contains(ns) ? kept : added).add(new NamespaceIdentities.Placed(nqn, ns))));
        kept.addAll(added); // a clash names the new namespace as the one refused
        return NamespaceIdentities.clash(kept);
    }

    private void plan(TargetConfig doc) {
        globals(doc);
        for (Subsystem sub : target.core().subsystems()) {
            if (!sub.isDiscovery()) {
                after.put(sub.nqn(), new LinkedHashMap<>());
                sub.namespaces().forEach(ns -> placeAfter(sub.nqn(), ns));
            }
        }
        List<SubsystemConfig> subs = doc.subsystems() != null ? doc.subsystems() : List.of();
        Set<String> named = new HashSet<>();
        for (int i = 0; i < subs.size(); i++) {
            SubsystemConfig s = subs.get(i);
            if (s == null) { // JSON null in the list (found by AdminApiFuzzTest)
                throw invalid("subsystems[" + i + "] is null: describe a subsystem there (at least its nqn) or remove it");
            }
            LiveConfiguration.checkSubsystem(s);
            if (!named.add(s.nqn())) {
                throw invalid("subsystem " + s.nqn() + " is in the document twice");
            }
        }
        for (SubsystemConfig s : subs) {
            SubsystemConfig current = live.subsystems.get(s.nqn());
            if (current == null) {
                planCreate(s);
            } else {
                planReconcile(s, current);
            }
        }
        if (mode == ImportMode.REPLACE) {
            for (String nqn : new ArrayList<>(live.subsystems.keySet())) {
                if (!named.contains(nqn)) {
                    subsystemsRemoved.add(nqn);
                    after.remove(nqn);
                    steps.add(commitOnly("delete subsystem " + nqn + " (its hosts are disconnected)", () -> {
                        Subsystem removed = target.core().removeSubsystem(nqn);
                        removed.namespaces().forEach(ns -> target.retire(ns, removed));
                    }));
                }
            }
        }
        Set<String> nqnsAfter = new HashSet<>(named);
        if (mode == ImportMode.MERGE) {
            nqnsAfter.addAll(live.subsystems.keySet());
        }
        if (nqnsAfter.size() > LiveConfiguration.MAX_SUBSYSTEMS) {
            throw conflict("nothing was changed: the target would have " + nqnsAfter.size() + " subsystems after this"
                    + " import; it takes at most " + LiveConfiguration.MAX_SUBSYSTEMS);
        }
        planListeners(doc.listeners() != null ? doc.listeners() : List.of(), nqnsAfter);
    }

    /** Settings the running target cannot change: said, not silently dropped. */
    private void globals(TargetConfig doc) {
        TargetConfig now = live.export();
        differs("pollGroups", doc.pollGroups(), now.pollGroups());
        differs("busyPollUs", doc.busyPollUs(), now.busyPollUs());
        differs("maxIoQueues", doc.maxIoQueues(), now.maxIoQueues());
        differs("maxQueueSize", doc.maxQueueSize(), now.maxQueueSize());
        differs("maxTransferSize", doc.maxTransferSize(), now.maxTransferSize());
        differs("maxConnectionMemory", doc.maxConnectionMemory(), now.maxConnectionMemory());
        differs("maxMemory", doc.maxMemory(), now.maxMemory());
        differs("maxSparseMemory", doc.maxSparseMemory(), now.maxSparseMemory());
    }

    private void differs(String name, Object wanted, Object now) {
        if (wanted != null && !wanted.equals(now)) {
            notApplied.add(name + " " + wanted + ": fixed while the target runs (it is " + (now != null ? now : "the default")
                    + "); start the target with this document (--config) to apply it");
        }
    }

    private void planCreate(SubsystemConfig s) {
        Map<Long, NamespaceConfig> ns = numbered(s);
        for (NamespaceConfig n : ns.values()) {
            checkNamespace(s.nqn(), s.maxNamespaces() != null ? s.maxNamespaces() : 1024, n);
            pathCheck.accept(n);
        }
        SubsystemConfig full = new SubsystemConfig(s.nqn(), s.serial(), s.model(), s.maxNamespaces(), s.allowAnyHost(),
                s.hosts(), new ArrayList<>(ns.values()));
        var create = new Step() {
            private Subsystem built;

            @Override
            public String describe() {
                return "create subsystem " + s.nqn() + " with " + ns.size() + " namespace" + (ns.size() == 1 ? "" : "s");
            }

            @Override
            public void prepare() throws Exception {
                built = target.buildSubsystem(full);
                built.namespaces().forEach(ns -> placeAfter(s.nqn(), ns));
            }

            @Override
            public void undo() {
                built.namespaces().forEach(target::discard);
            }

            @Override
            public void commit() {
                target.core().addSubsystem(built);
            }
        };
        steps.add(create);
        subsystemsAfter.put(s.nqn(), () -> live.describe(create.built, full.namespaces()));
    }

    /** A live subsystem the document names: its properties, hosts and namespaces brought to the document's. */
    private void planReconcile(SubsystemConfig s, SubsystemConfig current) {
        Subsystem sub = target.core().subsystem(s.nqn());
        boolean identityChanges = changed(s.serial(), current.serial()) || changed(s.model(), current.model())
                || changed(s.maxNamespaces(), current.maxNamespaces());
        if (identityChanges && mode == ImportMode.MERGE) {
            throw conflict("subsystem " + s.nqn() + " exists with another serial, model or maxNamespaces; remove it"
                    + " first or import with mode replace (which recreates it and disconnects its hosts)");
        }
        int maxNs = s.maxNamespaces() != null ? s.maxNamespaces() : current.maxNamespaces();
        Map<Long, NamespaceConfig> wanted = numbered(s);
        Map<Long, NamespaceConfig> result = new LinkedHashMap<>();
        for (NamespaceConfig n : current.namespaces()) {
            result.put(n.nsid(), n);
        }
        List<NamespaceConfig> toOpen = new ArrayList<>();
        List<Long> toRemove = new ArrayList<>();
        for (NamespaceConfig n : wanted.values()) {
            checkNamespace(s.nqn(), maxNs, n);
            NamespaceConfig have = result.get(n.nsid());
            if (have != null && sameNamespace(n, have)) {
                continue;
            }
            if (have != null && mode == ImportMode.MERGE) {
                throw conflict("namespace " + n.nsid() + " of " + s.nqn() + " exists and differs from the document's;"
                        + " remove it first or import with mode replace");
            }
            pathCheck.accept(n);
            if (have != null) {
                toRemove.add(n.nsid());
            }
            toOpen.add(n);
            result.put(n.nsid(), n);
        }
        if (mode == ImportMode.REPLACE && s.namespaces() != null) { // left out: kept, as any other field
            for (NamespaceConfig n : current.namespaces()) {
                if (!wanted.containsKey(n.nsid())) {
                    toRemove.add(n.nsid());
                    result.remove(n.nsid());
                }
            }
        }
        subsystemsAfter.put(s.nqn(), () -> entryAfter(s, current, result));
        if (identityChanges) {
            planRecreate(s, sub, result, toOpen);
            return;
        }
        toRemove.forEach(after.get(s.nqn())::remove);
        for (long nsid : toRemove) {
            if (toOpen.stream().noneMatch(n -> n.nsid() == nsid)) { // a swap removes in its own step
                steps.add(commitOnly("remove namespace " + nsid + " from " + s.nqn(),
                        () -> target.retire(sub.removeNamespace(nsid), sub)));
            }
        }
        for (NamespaceConfig n : toOpen) {
            boolean swap = toRemove.contains(n.nsid());
            steps.add(openNamespaceStep(s.nqn(), n, swap, ns -> {
                if (swap) {
                    target.retire(sub.removeNamespace(n.nsid()), sub);
                }
                sub.addNamespace(ns);
            }));
        }
        planHosts(s, sub);
    }

    /**
     * A reconciled subsystem's document entry after the import: what the document sets, else the live value; its
     * namespaces as they stay, or as opened for those the import opens.
     */
    private SubsystemConfig entryAfter(SubsystemConfig s, SubsystemConfig current, Map<Long, NamespaceConfig> result) {
        Map<Long, Namespace> openedHere = opened.getOrDefault(s.nqn(), Map.of());
        List<NamespaceConfig> namespaces = new ArrayList<>();
        for (NamespaceConfig n : result.values()) {
            Namespace ns = openedHere.get(n.nsid());
            namespaces.add(ns != null ? LiveConfiguration.describe(ns, n) : n);
        }
        namespaces.sort(java.util.Comparator.comparing(NamespaceConfig::nsid));
        Set<String> hosts = new TreeSet<>(s.hosts() != null && mode == ImportMode.REPLACE ? s.hosts() : current.hosts());
        if (s.hosts() != null) {
            hosts.addAll(s.hosts());
        }
        return new SubsystemConfig(s.nqn(), s.serial() != null ? s.serial() : current.serial(),
                s.model() != null ? s.model() : current.model(),
                s.maxNamespaces() != null ? s.maxNamespaces() : current.maxNamespaces(),
                s.allowAnyHost() != null ? s.allowAnyHost() : current.allowAnyHost(), List.copyOf(hosts), namespaces);
    }

    private void planHosts(SubsystemConfig s, Subsystem sub) {
        if (s.allowAnyHost() != null && s.allowAnyHost() != sub.allowAnyHost()) {
            steps.add(commitOnly((s.allowAnyHost() ? "allow any host on " : "allow only the listed hosts on ") + s.nqn(),
                    () -> sub.allowAnyHost(s.allowAnyHost())));
        }
        Set<String> wanted = s.hosts() != null ? new TreeSet<>(s.hosts()) : new TreeSet<>();
        for (String h : wanted) {
            if (!sub.allowedHosts().contains(h)) {
                steps.add(commitOnly("allow host " + h + " on " + s.nqn(), () -> sub.allowedHosts().add(h)));
            }
        }
        boolean revokes = s.allowAnyHost() != null && !s.allowAnyHost() && sub.allowAnyHost();
        if (mode == ImportMode.REPLACE && s.hosts() != null) {
            for (String h : new TreeSet<>(sub.allowedHosts())) {
                if (!wanted.contains(h)) {
                    steps.add(commitOnly("stop allowing host " + h + " on " + s.nqn(), () -> sub.allowedHosts().remove(h)));
                    revokes = true;
                }
            }
        }
        if (revokes) {
            // After every host step of the subsystem, so a host the document adds is not cut off on the way.
            steps.add(commitOnly("end the associations of hosts no longer allowed on " + s.nqn(),
                    sub::endAssociationsNoLongerAllowed));
        }
    }

    /**
     * A subsystem whose serial, model or namespace limit changes is built anew (hosts cache those) and swapped in;
     * its namespaces that do not change move over with their data.
     */
    private void planRecreate(SubsystemConfig s, Subsystem old, Map<Long, NamespaceConfig> result,
                              List<NamespaceConfig> toOpen) {
        Set<Long> reopened = new HashSet<>();
        toOpen.forEach(n -> reopened.add(n.nsid()));
        after.get(s.nqn()).keySet().removeIf(nsid -> !result.containsKey(nsid) || reopened.contains(nsid));
        SubsystemConfig shell = new SubsystemConfig(s.nqn(), s.serial() != null ? s.serial() : old.serial(),
                s.model() != null ? s.model() : old.model(), s.maxNamespaces() != null ? s.maxNamespaces() : old.maxNamespaces(),
                s.allowAnyHost() != null ? s.allowAnyHost() : old.allowAnyHost(),
                s.hosts() != null && mode == ImportMode.REPLACE ? s.hosts() : mergedHosts(s, old), List.of());
        steps.add(new Step() {
            private Subsystem built;
            private final List<Namespace> openedHere = new ArrayList<>();

            @Override
            public String describe() {
                return "recreate subsystem " + s.nqn() + " (serial, model or maxNamespaces changes; its hosts are"
                        + " disconnected and reconnect) with " + result.size() + " namespaces";
            }

            @Override
            public void prepare() throws Exception {
                built = target.buildSubsystem(shell);
                for (NamespaceConfig n : toOpen) {
                    Namespace ns = target.openNamespace(s.nqn(), n.nsid(), n);
                    openedHere.add(ns);
                    opened.computeIfAbsent(s.nqn(), k -> new LinkedHashMap<>()).put(n.nsid(), ns);
                    placeAfter(s.nqn(), ns);
                }
            }

            @Override
            public void undo() {
                openedHere.forEach(target::discard);
            }

            @Override
            public void commit() {
                for (Namespace ns : openedHere) {
                    built.addNamespace(ns);
                }
                for (Namespace ns : old.namespaces()) {
                    if (result.containsKey(ns.nsid()) && !reopened.contains(ns.nsid())) {
                        built.addNamespace(ns);
                    }
                }
                target.core().removeSubsystem(s.nqn());
                target.core().addSubsystem(built);
                for (Namespace ns : old.namespaces()) {
                    if (built.namespace(ns.nsid()) != ns) {
                        target.retire(ns, old);
                    }
                }
            }
        });
    }

    private List<String> mergedHosts(SubsystemConfig s, Subsystem old) {
        Set<String> h = new TreeSet<>(old.allowedHosts());
        if (s.hosts() != null) {
            h.addAll(s.hosts());
        }
        return List.copyOf(h);
    }

    private Step openNamespaceStep(String nqn, NamespaceConfig n, boolean swap, Consumer<Namespace> commit) {
        return new Step() {
            private Namespace namespace;

            @Override
            public String describe() {
                return (swap ? "replace namespace " : "add namespace ") + n.nsid() + " of " + nqn + " ("
                        + (n.backend() != null ? n.backend() : n.path() != null ? "file" : "ram")
                        + (n.path() != null ? " " + n.path() : "") + (n.size() != null ? ", " + n.size() : "") + ")";
            }

            @Override
            public void prepare() throws Exception {
                namespace = target.openNamespace(nqn, n.nsid(), n);
                opened.computeIfAbsent(nqn, k -> new LinkedHashMap<>()).put(n.nsid(), namespace);
                placeAfter(nqn, namespace);
            }

            @Override
            public void undo() {
                target.discard(namespace);
            }

            @Override
            public void commit() {
                commit.accept(namespace);
            }
        };
    }

    private void placeAfter(String nqn, Namespace ns) {
        after.computeIfAbsent(nqn, k -> new LinkedHashMap<>()).put(ns.nsid(), ns);
    }

    // ------------------------------------------------------------------------------------------ listeners

    private void planListeners(List<ListenerConfig> doc, Set<String> subsystemsAfter) {
        List<ListenerConfig> wanted = new ArrayList<>();
        Set<Integer> ids = new HashSet<>();
        Set<String> endpoints = new HashSet<>();
        for (int i = 0; i < doc.size(); i++) {
            ListenerConfig l = doc.get(i);
            if (l == null) {
                throw invalid("listeners[" + i + "] is null: describe a listener there (at least its address) or remove it");
            }
            ListenerConfig n = LiveConfiguration.normalizeListener(l);
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
        Map<Integer, ListenerConfig> current = new LinkedHashMap<>(live.listeners);
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
                    listenersRemoved.add(c.id());
                    if (wantedEndpoints.contains(endpoint(c))) {
                        // A new listener wants its port: it goes before the new ones bind.
                        steps.add(removeListenerStep(c));
                    } else {
                        // Dropped, or its id given to a new one: it serves its hosts until the import commits, so a
                        // failed import never has to bind its port again (which another process may have taken).
                        steps.add(commitOnly("remove listener " + c.id() + " (" + endpoint(c) + "; its connections end)",
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
            addListenerStep(new ListenerConfig(id, n.transport(), n.address(), n.port(), n.inlineDataSize(),
                    n.maxH2CData(), n.subsystems()));
        }
    }

    private static int freeId(Set<Integer> taken) {
        int id = 1;
        while (taken.contains(id)) {
            id++;
        }
        return id;
    }

    private Step removeListenerStep(ListenerConfig c) {
        return new Step() {
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
                    live.listeners.remove(c.id());
                }
            }

            @Override
            public void commit() {
                // stopped when prepared
            }
        };
    }

    private void addListenerStep(ListenerConfig l) {
        var add = new Step() {
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
        steps.add(add);
        listenersAdded.add(() -> new ListenerConfig(l.id(), l.transport(), l.address(), add.bound, l.inlineDataSize(),
                l.maxH2CData(), l.subsystems()));
    }

    // ------------------------------------------------------------------------------------------ comparisons

    /** Namespaces by NSID, those without one numbered after the previous, as the configuration file does. */
    private static Map<Long, NamespaceConfig> numbered(SubsystemConfig s) {
        Map<Long, NamespaceConfig> out = new LinkedHashMap<>();
        long next = 1;
        if (s.namespaces() != null) {
            for (int i = 0; i < s.namespaces().size(); i++) {
                NamespaceConfig n = s.namespaces().get(i);
                if (n == null) {
                    throw invalid("subsystem " + s.nqn() + ": namespaces[" + i + "] is null: describe a namespace there"
                            + " or remove it");
                }
                long nsid = n.nsid() != null ? n.nsid() : next;
                if (out.containsKey(nsid)) {
                    throw invalid("subsystem " + s.nqn() + ": namespace " + nsid + " is in the document twice");
                }
                out.put(nsid, n.withNsid(nsid));
                next = nsid + 1;
            }
        }
        return out;
    }

    private static void checkNamespace(String nqn, int maxNs, NamespaceConfig n) {
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
        if (n.uuid() != null) {
            try {
                java.util.UUID.fromString(n.uuid());
            } catch (IllegalArgumentException e) {
                throw invalid("subsystem " + nqn + ": namespace " + n.nsid() + ": uuid '" + n.uuid() + "' is not a UUID");
            }
        }
    }

    /** Whether the document's namespace describes the live one (fields it leaves out match anything). */
    private static boolean sameNamespace(NamespaceConfig want, NamespaceConfig have) {
        String kind = want.backend() != null ? want.backend() : want.path() != null ? "file" : null;
        return (kind == null || kind.equals(have.backend()))
                && (want.path() == null || want.path().equals(have.path()))
                && (want.size() == null || TargetConfig.parseSize(want.size()) == TargetConfig.parseSize(have.size()))
                && (want.blockSize() == null || want.blockSize().equals(have.blockSize()))
                && (want.uuid() == null || want.uuid().equalsIgnoreCase(have.uuid()))
                && (want.nguid() == null || want.nguid().equalsIgnoreCase(have.nguid() != null ? have.nguid()
                        : have.uuid().replace("-", "")));
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

    private static boolean changed(Object want, Object have) {
        return want != null && !Objects.equals(want, have);
    }

    private static Step commitOnly(String what, Runnable commit) {
        return new Step() {
            @Override
            public String describe() {
                return what;
            }

            @Override
            public void commit() {
                commit.run();
            }
        };
    }

    private static ConfigurationException invalid(String m) {
        return new ConfigurationException(ConfigurationException.Kind.INVALID, m);
    }

    private static ConfigurationException conflict(String m) {
        return new ConfigurationException(ConfigurationException.Kind.CONFLICT, m);
    }
}

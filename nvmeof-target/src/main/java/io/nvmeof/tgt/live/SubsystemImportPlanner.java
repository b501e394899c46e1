package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.checkNamespace;
import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ImportStep.commitOnly;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * Plans an import's subsystems, their namespaces and hosts: each subsystem the document names is created, brought to
 * the document's (namespaces added, replaced or removed; hosts allowed or no longer), or recreated when its identity
 * changes. Adds the steps that do it, with what each prepares and undoes, to the {@link ImportPlan}.
 */
final class SubsystemImportPlanner {
    private final NvmeTarget target;
    private final ImportMode mode;
    private final Consumer<NamespaceConfig> pathCheck;
    private final ImportPlan plan;

    SubsystemImportPlanner(NvmeTarget target, ImportMode mode, Consumer<NamespaceConfig> pathCheck, ImportPlan plan) {
        this.target = target;
        this.mode = mode;
        this.pathCheck = pathCheck;
        this.plan = plan;
    }

    void planCreate(SubsystemConfig s) {
        Map<Long, NamespaceConfig> ns = numbered(s);
        for (NamespaceConfig n : ns.values()) {
            checkNamespace(s.nqn(), s.maxNamespaces() != null ? s.maxNamespaces() : 1024, n);
            pathCheck.accept(n);
        }
        SubsystemConfig full = s.withNamespaces(new ArrayList<>(ns.values()));
        var create = new ImportStep() {
            private Subsystem built;

            @Override
            public String describe() {
                return "create subsystem " + s.nqn() + " with " + ns.size() + " namespace" + (ns.size() == 1 ? "" : "s");
            }

            @Override
            public void prepare() throws Exception {
                built = target.buildSubsystem(full);
                built.namespaces().forEach(ns -> plan.placeAfter(s.nqn(), ns));
            }

            @Override
            public void undo() {
                built.namespaces().forEach(target::discard);
                built.stopSharingReservations();
            }

            @Override
            public void commit() {
                target.core().addSubsystem(built);
            }
        };
        plan.steps.add(create);
        plan.subsystemsAfter.put(s.nqn(), () -> ConfigurationDocument.describe(create.built, full.namespaces()));
    }

    /** A live subsystem the document names: its properties, hosts and namespaces brought to the document's. */
    void planReconcile(SubsystemConfig s, SubsystemConfig current) {
        Subsystem sub = target.core().subsystem(s.nqn());
        refuseSharedReservationsChange(s, sub);
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
            if (have != null && sameNamespace(n.withQueueDepth(have.queueDepth()).withAnaGroup(have.anaGroup()), have)) {
                // Only the depth or the ANA group differs: set on the live namespace, its data and hosts kept.
                NamespaceConfig after = have;
                if (n.queueDepth() != null && !n.queueDepth().equals(have.queueDepth())) {
                    planQueueDepth(s.nqn(), sub, n, have);
                    after = after.withQueueDepth(n.queueDepth());
                }
                if (n.anaGroup() != null && n.anaGroup() != anaGroupOf(have)) {
                    planAnaGroup(s.nqn(), sub, n);
                    after = after.withAnaGroup(n.anaGroup() != 1 ? n.anaGroup() : null);
                }
                result.put(n.nsid(), after);
                continue;
            }
            if (have != null && (n.path() == null || n.path().equals(have.path())) && n.bufferedIo() != null
                    && n.bufferedIo() != Boolean.TRUE.equals(have.bufferedIo())) {
                // Reopening the same file or device the other way: a block device is held exclusively by the live
                // namespace (the new open would fail), and buffered writes still draining would meet direct ones.
                throw conflict("namespace " + n.nsid() + " of " + s.nqn() + ": bufferedIo changes how its "
                        + have.backend() + " is opened; remove the namespace and add it again to change it");
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
        plan.subsystemsAfter.put(s.nqn(), () -> entryAfter(s, current, result));
        if (identityChanges) {
            planRecreate(s, sub, result, toOpen);
            return;
        }
        toRemove.forEach(plan.after.get(s.nqn())::remove);
        for (long nsid : toRemove) {
            if (toOpen.stream().noneMatch(n -> n.nsid() == nsid)) { // a swap removes in its own step
                plan.steps.add(commitOnly("remove namespace " + nsid + " from " + s.nqn(),
                        () -> target.retire(sub.removeNamespace(nsid), sub)));
            }
        }
        for (NamespaceConfig n : toOpen) {
            boolean swap = toRemove.contains(n.nsid());
            plan.steps.add(openNamespaceStep(s.nqn(), n, swap, ns -> {
                if (swap) {
                    target.retire(sub.removeNamespace(n.nsid()), sub);
                }
                sub.addNamespace(ns);
            }));
        }
        planCntlidRange(s, sub);
        planHosts(s, sub);
    }

    private static int anaGroupOf(NamespaceConfig n) {
        return n.anaGroup() != null ? n.anaGroup() : 1;
    }

    /** Moves a live namespace to another ANA group; its hosts are told (ANA change notice), as nvmet does. */
    private void planAnaGroup(String nqn, Subsystem sub, NamespaceConfig want) {
        int group = want.anaGroup();
        Namespace live = sub.namespace(want.nsid());
        plan.steps.add(commitOnly("move namespace " + want.nsid() + " of " + nqn + " to ANA group " + group,
                () -> {
                    live.anaGroup(group);
                    target.core().ana().namespaceMoved(sub);
                }));
    }

    /** Sets a namespace's queue depth to its device in place: no reopening (a block device is held exclusively). */
    private void planQueueDepth(String nqn, Subsystem sub, NamespaceConfig want, NamespaceConfig have) {
        if ("ram".equals(have.backend())) {
            throw invalid("namespace " + want.nsid() + " of " + nqn + ": queueDepth is for file and block namespaces");
        }
        int depth = want.queueDepth();
        Namespace live = sub.namespace(want.nsid()); // the object itself: a recreated subsystem moves it
        plan.steps.add(commitOnly("set the queue depth of namespace " + want.nsid() + " of " + nqn + " to " + depth,
                () -> live.limitDeviceQueue(depth)));
    }

    /**
     * A reconciled subsystem's document entry after the import: what the document sets, else the live value; its
     * namespaces as they stay, or as opened for those the import opens.
     */
    private SubsystemConfig entryAfter(SubsystemConfig s, SubsystemConfig current, Map<Long, NamespaceConfig> result) {
        Map<Long, Namespace> openedHere = plan.opened.getOrDefault(s.nqn(), Map.of());
        List<NamespaceConfig> namespaces = new ArrayList<>();
        for (NamespaceConfig n : result.values()) {
            Namespace ns = openedHere.get(n.nsid());
            namespaces.add(ns != null ? ConfigurationDocument.describe(ns, n) : n);
        }
        namespaces.sort(java.util.Comparator.comparing(NamespaceConfig::nsid));
        Set<String> hosts = new TreeSet<>(s.hosts() != null && mode == ImportMode.REPLACE ? s.hosts() : current.hosts());
        if (s.hosts() != null) {
            hosts.addAll(s.hosts());
        }
        return new SubsystemConfig(s.nqn(), s.serial() != null ? s.serial() : current.serial(),
                s.model() != null ? s.model() : current.model(),
                s.maxNamespaces() != null ? s.maxNamespaces() : current.maxNamespaces(),
                s.allowAnyHost() != null ? s.allowAnyHost() : current.allowAnyHost(), List.copyOf(hosts), namespaces,
                s.cntlidMin() != null ? s.cntlidMin() : current.cntlidMin(),
                s.cntlidMax() != null ? s.cntlidMax() : current.cntlidMax(),
                s.sharedReservations() != null ? s.sharedReservations() : current.sharedReservations());
    }

    private static String sharedDirectory(Subsystem sub) {
        return sub.sharedReservations() != null ? sub.sharedReservations().directory().toString() : null;
    }

    private static Integer nonDefault(int value, int byDefault) {
        return value != byDefault ? value : null;
    }

    /**
     * Where a subsystem shares its reservations is fixed while it lives: the state of its namespaces came from there,
     * and hosts' registrations with it.
     */
    private void refuseSharedReservationsChange(SubsystemConfig s, Subsystem sub) {
        String now = sharedDirectory(sub);
        if (s.sharedReservations() != null && !java.nio.file.Path.of(s.sharedReservations()).toAbsolutePath()
                .normalize().equals(now != null ? java.nio.file.Path.of(now) : null)) {
            throw invalid("subsystem " + s.nqn() + ": sharedReservations cannot change while the subsystem exists (now "
                    + (now != null ? now : "none") + "); remove the subsystem and add it again with the new directory,"
                    + " or restart the target with the new configuration");
        }
    }

    /** A changed controller ID range applies to the controllers created from now on (nvmet's likewise). */
    private void planCntlidRange(SubsystemConfig s, Subsystem sub) {
        if (s.cntlidMin() == null && s.cntlidMax() == null) {
            return;
        }
        int min = s.cntlidMin() != null ? s.cntlidMin() : sub.cntlidMin();
        int max = s.cntlidMax() != null ? s.cntlidMax() : sub.cntlidMax();
        if (min < Subsystem.CNTLID_MIN || max > Subsystem.CNTLID_MAX || min > max) {
            throw invalid("subsystem " + s.nqn() + ": cntlidMin and cntlidMax must be a range within 1 to 65519"
                    + " (0xFFEF), got " + min + " to " + max);
        }
        boolean rangeOfItsOwn = min != Subsystem.CNTLID_MIN || max != Subsystem.CNTLID_MAX;
        if (rangeOfItsOwn && sub.sharedReservations() == null
                && sub.namespaces().stream().anyMatch(ns -> ns.reservations().inUse())) {
            throw invalid("subsystem " + s.nqn() + ": a controller ID range (several targets) without sharedReservations"
                    + " offers no reservations, and hosts have registrations or a reservation on its namespaces now;"
                    + " have them release and unregister first (nvme resv-release, resv-register --rrega=1), or give"
                    + " every target of the subsystem a sharedReservations directory");
        }
        if (min != sub.cntlidMin() || max != sub.cntlidMax()) {
            plan.steps.add(commitOnly("give the new controllers of " + s.nqn() + " IDs " + min + " to " + max,
                    () -> sub.cntlidRange(min, max)));
        }
    }

    private void planHosts(SubsystemConfig s, Subsystem sub) {
        if (s.allowAnyHost() != null && s.allowAnyHost() != sub.allowAnyHost()) {
            plan.steps.add(commitOnly((s.allowAnyHost() ? "allow any host on " : "allow only the listed hosts on ")
                    + s.nqn(),
                    () -> sub.allowAnyHost(s.allowAnyHost())));
        }
        Set<String> wanted = s.hosts() != null ? new TreeSet<>(s.hosts()) : new TreeSet<>();
        for (String h : wanted) {
            if (!sub.allowedHosts().contains(h)) {
                plan.steps.add(commitOnly("allow host " + h + " on " + s.nqn(), () -> sub.allowedHosts().add(h)));
            }
        }
        boolean revokes = s.allowAnyHost() != null && !s.allowAnyHost() && sub.allowAnyHost();
        if (mode == ImportMode.REPLACE && s.hosts() != null) {
            for (String h : new TreeSet<>(sub.allowedHosts())) {
                if (!wanted.contains(h)) {
                    plan.steps.add(commitOnly("stop allowing host " + h + " on " + s.nqn(),
                            () -> sub.allowedHosts().remove(h)));
                    revokes = true;
                }
            }
        }
        if (revokes) {
            // After every host step of the subsystem, so a host the document adds is not cut off on the way.
            plan.steps.add(commitOnly("end the associations of hosts no longer allowed on " + s.nqn(),
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
        plan.after.get(s.nqn()).keySet().removeIf(nsid -> !result.containsKey(nsid) || reopened.contains(nsid));
        SubsystemConfig shell = new SubsystemConfig(s.nqn(), s.serial() != null ? s.serial() : old.serial(),
                s.model() != null ? s.model() : old.model(), s.maxNamespaces() != null ? s.maxNamespaces() : old.maxNamespaces(),
                s.allowAnyHost() != null ? s.allowAnyHost() : old.allowAnyHost(),
                s.hosts() != null && mode == ImportMode.REPLACE ? s.hosts() : mergedHosts(s, old), List.of(),
                s.cntlidMin() != null ? s.cntlidMin() : nonDefault(old.cntlidMin(), Subsystem.CNTLID_MIN),
                s.cntlidMax() != null ? s.cntlidMax() : nonDefault(old.cntlidMax(), Subsystem.CNTLID_MAX),
                s.sharedReservations() != null ? s.sharedReservations() : sharedDirectory(old));
        plan.steps.add(new ImportStep() {
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
                    plan.opened.computeIfAbsent(s.nqn(), k -> new LinkedHashMap<>()).put(n.nsid(), ns);
                    plan.placeAfter(s.nqn(), ns);
                }
            }

            @Override
            public void undo() {
                openedHere.forEach(target::discard);
                if (built != null) {
                    built.stopSharingReservations();
                }
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

    private ImportStep openNamespaceStep(String nqn, NamespaceConfig n, boolean swap, Consumer<Namespace> commit) {
        return new ImportStep() {
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
                plan.opened.computeIfAbsent(nqn, k -> new LinkedHashMap<>()).put(n.nsid(), namespace);
                plan.placeAfter(nqn, namespace);
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

    /** Whether the document's namespace describes the live one (fields it leaves out match anything). */
    private static boolean sameNamespace(NamespaceConfig want, NamespaceConfig have) {
        String kind = want.backend() != null ? want.backend() : want.path() != null ? "file" : null;
        return (kind == null || kind.equals(have.backend()))
                && (want.path() == null || want.path().equals(have.path()))
                && (want.size() == null || TargetConfig.parseSize(want.size()) == TargetConfig.parseSize(have.size()))
                && (want.blockSize() == null || want.blockSize().equals(have.blockSize()))
                && (want.bufferedIo() == null || want.bufferedIo() == Boolean.TRUE.equals(have.bufferedIo()))
                && (want.queueDepth() == null || want.queueDepth().equals(have.queueDepth()))
                && (want.anaGroup() == null || want.anaGroup() == anaGroupOf(have))
                && (want.uuid() == null || want.uuid().equalsIgnoreCase(have.uuid()))
                && (want.nguid() == null || want.nguid().equalsIgnoreCase(have.nguid() != null ? have.nguid()
                        : have.uuid().replace("-", "")));
    }

    private static boolean changed(Object want, Object have) {
        return want != null && !Objects.equals(want, have);
    }
}

package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.checkSubsystem;
import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ImportStep.commitOnly;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.live.LiveConfiguration.ImportResult;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One import of a configuration document into the running target, all or nothing (SPDK's {@code load_config} and
 * nvmetcli's {@code restore}, but live and atomic).
 *
 * <p>The document is compared with the live configuration and turned into steps. Each step first
 * <em>prepares</em> what can fail (opening a backend, binding a port) without hosts seeing anything; if any
 * preparation fails, the ones done are undone in reverse and the target is as it was. Then the document the import
 * leaves is saved ({@link ConfigurationDocument#save}); if it cannot be, the preparations are undone too. Only then are
 * the steps <em>committed</em>, which cannot fail: hosts' DH-HMAC-CHAP settings are set, namespaces appear and
 * disappear (with their events), subsystems and listeners come and go. A field left out of the document keeps its live
 * value; in {@link ImportMode#REPLACE} whatever the document does not name is removed (but hosts' DH-HMAC-CHAP
 * settings: {@link HostImportPlanner}), in {@link ImportMode#MERGE} it stays, and a clash is refused.
 *
 * <p>This class runs the import (prepare, save, commit, or undo); the steps are planned by {@link
 * HostImportPlanner}, {@link SubsystemImportPlanner} and {@link ListenerImportPlanner} into an {@link ImportPlan}.
 */
final class ConfigurationImport {
    private final ConfigurationDocument document;
    private final NvmeTarget target;
    private final ImportMode mode;
    private final ImportPlan plan = new ImportPlan();
    private final SubsystemImportPlanner subsystemPlanner;
    private final ListenerImportPlanner listenerPlanner;
    private final HostImportPlanner hostPlanner;
    private final ReferralImportPlanner referralPlanner;

    ConfigurationImport(ConfigurationDocument document, NvmeTarget target, ImportMode mode,
                        Consumer<NamespaceConfig> pathCheck) {
        this.document = document;
        this.target = target;
        this.mode = mode;
        this.subsystemPlanner = new SubsystemImportPlanner(target, mode, pathCheck, plan);
        this.listenerPlanner = new ListenerImportPlanner(document, target, mode, plan);
        this.hostPlanner = new HostImportPlanner(target.core().hostAuth(), target.core().tlsKeys(), document.hosts, plan);
        this.referralPlanner = new ReferralImportPlanner(document.referrals, target.core(), mode, plan);
    }

    /** Plans, then (unless {@code dryRun}) applies; the caller holds the configuration's lock. */
    ImportResult run(TargetConfig doc, boolean dryRun) {
        plan(doc);
        List<String> changes = plan.steps.stream().map(ImportStep::describe).toList();
        if (dryRun) {
            return new ImportResult(mode.name().toLowerCase(Locale.ROOT), true, changes, List.copyOf(plan.notApplied),
                    document.current());
        }
        if (plan.steps.isEmpty()) {
            return new ImportResult(mode.name().toLowerCase(Locale.ROOT), false, changes, List.copyOf(plan.notApplied),
                    document.current());
        }
        List<ImportStep> prepared = new ArrayList<>();
        Map<String, SubsystemConfig> subsystems = new LinkedHashMap<>(document.subsystems);
        Map<Integer, ListenerConfig> listeners = new java.util.TreeMap<>(document.listeners);
        Map<String, HostConfig> hosts = new LinkedHashMap<>(document.hosts);
        hosts.putAll(plan.hostsAfter);
        Map<Integer, TargetConfig.ReferralConfig> referrals = new java.util.TreeMap<>(document.referrals);
        plan.referralsRemoved.forEach(referrals::remove);
        referrals.putAll(plan.referralsAdded);
        try {
            for (ImportStep s : plan.steps) {
                s.prepare();
                prepared.add(s);
            }
            String clash = clashAfter();
            if (clash != null) {
                throw conflict("nothing was changed: " + clash);
            }
            plan.subsystemsRemoved.forEach(subsystems::remove);
            plan.subsystemsAfter.forEach((nqn, entry) -> subsystems.put(nqn, entry.get()));
            plan.listenersRemoved.forEach(listeners::remove);
            plan.listenersAdded.forEach(entry -> listeners.put(entry.get().id(), entry.get()));
            document.save(document.of(subsystems, listeners, hosts, referrals));
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
        for (ImportStep s : plan.steps) {
            s.commit();
        }
        document.subsystems.clear();
        document.subsystems.putAll(subsystems);
        document.listeners.clear();
        document.listeners.putAll(listeners);
        document.hosts.putAll(plan.hostsAfter);
        document.referrals.clear();
        document.referrals.putAll(referrals);
        target.core().configChanged();
        return new ImportResult(mode.name().toLowerCase(Locale.ROOT), false, changes, List.copyOf(plan.notApplied),
                document.current());
    }

    /** The first file or identifier two namespaces would share after the import; null when none would. */
    private String clashAfter() {
        java.util.Set<Namespace> liveNow = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        NamespaceIdentities.live(target.core()).forEach(p -> liveNow.add(p.ns()));
        List<NamespaceIdentities.Placed> kept = new ArrayList<>();
        List<NamespaceIdentities.Placed> added = new ArrayList<>();
        plan.after.forEach((nqn, byNsid) -> byNsid.values().forEach(ns ->
                (liveNow.contains(ns) ? kept : added).add(new NamespaceIdentities.Placed(nqn, ns))));
        kept.addAll(added); // a clash names the new namespace as the one refused
        return NamespaceIdentities.clash(kept);
    }

    private void plan(TargetConfig doc) {
        globals(doc);
        hostPlanner.planHosts(doc.hosts() != null ? doc.hosts() : List.of()); // first: their steps commit first
        for (Subsystem sub : target.core().subsystems()) {
            if (!sub.isDiscovery()) {
                plan.after.put(sub.nqn(), new LinkedHashMap<>());
                sub.namespaces().forEach(ns -> plan.placeAfter(sub.nqn(), ns));
            }
        }
        List<SubsystemConfig> subs = doc.subsystems() != null ? doc.subsystems() : List.of();
        Set<String> named = new HashSet<>();
        for (int i = 0; i < subs.size(); i++) {
            SubsystemConfig s = subs.get(i);
            if (s == null) { // JSON null in the list (found by AdminApiFuzzTest)
                throw invalid("subsystems[" + i + "] is null: describe a subsystem there (at least its nqn) or remove it");
            }
            checkSubsystem(s);
            if (!named.add(s.nqn())) {
                throw invalid("subsystem " + s.nqn() + " is in the document twice");
            }
        }
        for (SubsystemConfig s : subs) {
            SubsystemConfig current = document.subsystems.get(s.nqn());
            if (current == null) {
                subsystemPlanner.planCreate(s);
            } else {
                subsystemPlanner.planReconcile(s, current);
            }
        }
        if (mode == ImportMode.REPLACE) {
            for (String nqn : new ArrayList<>(document.subsystems.keySet())) {
                if (!named.contains(nqn)) {
                    plan.subsystemsRemoved.add(nqn);
                    plan.after.remove(nqn);
                    plan.steps.add(commitOnly("delete subsystem " + nqn + " (its hosts are disconnected)", () -> {
                        Subsystem removed = target.core().removeSubsystem(nqn);
                        removed.namespaces().forEach(ns -> target.retire(ns, removed));
                    }));
                }
            }
        }
        Set<String> nqnsAfter = new HashSet<>(named);
        if (mode == ImportMode.MERGE) {
            nqnsAfter.addAll(document.subsystems.keySet());
        }
        if (nqnsAfter.size() > LiveConfiguration.MAX_SUBSYSTEMS) {
            throw conflict("nothing was changed: the target would have " + nqnsAfter.size() + " subsystems after this"
                    + " import; it takes at most " + LiveConfiguration.MAX_SUBSYSTEMS);
        }
        listenerPlanner.planListeners(doc.listeners() != null ? doc.listeners() : List.of(), nqnsAfter);
        // Checked against the listeners running now: one the import adds on port 0 has no port yet.
        referralPlanner.planReferrals(doc.referrals(), target.core().listeners());
    }

    /** Settings the running target cannot change: said, not silently dropped. */
    private void globals(TargetConfig doc) {
        TargetConfig now = document.current();
        differs("pollGroups", doc.pollGroups(), now.pollGroups());
        differs("busyPollUs", doc.busyPollUs(), now.busyPollUs());
        if (doc.pollGroupCpus() != null) {
            try {
                io.nvmeof.cpu.CpuList.parse(doc.pollGroupCpus());
            } catch (IllegalArgumentException e) {
                throw new ConfigurationException(ConfigurationException.Kind.INVALID, "pollGroupCpus: "
                        + e.getMessage());
            }
        }
        differs("pollGroupCpus", cpus(doc.pollGroupCpus()), cpus(now.pollGroupCpus()));
        differs("maxIoQueues", doc.maxIoQueues(), now.maxIoQueues());
        differs("maxQueueSize", doc.maxQueueSize(), now.maxQueueSize());
        differs("maxTransferSize", doc.maxTransferSize(), now.maxTransferSize());
        differs("maxConnectionMemory", doc.maxConnectionMemory(), now.maxConnectionMemory());
        differs("maxMemory", doc.maxMemory(), now.maxMemory());
        differs("maxSparseMemory", doc.maxSparseMemory(), now.maxSparseMemory());
    }

    /** A CPU list as a set ("2,3" is "2-3"; checked before). */
    private static Object cpus(String list) {
        return list == null ? null : io.nvmeof.cpu.CpuList.parse(list);
    }

    private void differs(String name, Object wanted, Object now) {
        if (wanted != null && !wanted.equals(now)) {
            plan.notApplied.add(name + " " + wanted + ": fixed while the target runs (it is "
                    + (now != null ? now : "the default")
                    + "); start the target with this document (--config) to apply it");
        }
    }
}

package io.nvmeof.tgt.live;

import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What an import's planners ({@link SubsystemImportPlanner}, {@link ListenerImportPlanner}) build up for {@link
 * ConfigurationImport} to carry out: the steps in order, what cannot be applied, and the document and namespaces the
 * steps leave behind.
 */
final class ImportPlan {
    final List<ImportStep> steps = new ArrayList<>();
    final List<String> notApplied = new ArrayList<>();
    /**
     * The document after the import, as the steps leave it: subsystems removed, subsystems added or changed (their
     * entries described once their steps are prepared, from what was opened), listeners removed and added, host
     * entries set.
     */
    final Set<String> subsystemsRemoved = new HashSet<>();
    final Map<String, java.util.function.Supplier<SubsystemConfig>> subsystemsAfter = new LinkedHashMap<>();
    final Set<Integer> listenersRemoved = new HashSet<>();
    final List<java.util.function.Supplier<ListenerConfig>> listenersAdded = new ArrayList<>();
    /** Referrals the import removes, and those it adds or changes (normalized, ids given), by id. */
    final Set<Integer> referralsRemoved = new HashSet<>();
    final Map<Integer, io.nvmeof.tgt.config.TargetConfig.ReferralConfig> referralsAdded = new LinkedHashMap<>();
    /** Host entries (DH-HMAC-CHAP settings) set or rotated, by host NQN, as the state file keeps them. */
    final Map<String, HostConfig> hostsAfter = new LinkedHashMap<>();
    /** The namespaces the prepared steps opened, by subsystem and NSID. */
    final Map<String, Map<Long, Namespace>> opened = new LinkedHashMap<>();
    /**
     * The target's namespaces once the import is done, by subsystem and NSID: removals are known when planned,
     * new namespaces once prepared. Checked as a whole before anything commits ({@link NamespaceIdentities}).
     */
    final Map<String, Map<Long, Namespace>> after = new LinkedHashMap<>();

    /** Records {@code ns} as subsystem {@code nqn}'s namespace once the import is done. */
    void placeAfter(String nqn, Namespace ns) {
        after.computeIfAbsent(nqn, k -> new LinkedHashMap<>()).put(ns.nsid(), ns);
    }
}

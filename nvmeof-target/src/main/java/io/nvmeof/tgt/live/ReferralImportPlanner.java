package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ImportStep.commitOnly;

import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.core.DiscoveryReferral;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TargetCore;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Plans an import's referrals: a document referral equal to a live one (same transport, address, port and NQN, same
 * settings) keeps it; others are added (ids given to those without one). In {@code replace} mode the document's
 * referrals become the target's (a document without {@code referrals} has none); in {@code merge} mode the live ones
 * stay, and one that differs from the document's for the same entry, or whose id the document gives another, is a
 * clash. Nothing here can fail once planned: every address is resolved now, so the steps only commit.
 */
final class ReferralImportPlanner {
    private final Map<Integer, ReferralConfig> current;
    private final TargetCore core;
    private final ImportMode mode;
    private final ImportPlan plan;

    ReferralImportPlanner(Map<Integer, ReferralConfig> current, TargetCore core, ImportMode mode, ImportPlan plan) {
        this.current = current;
        this.core = core;
        this.mode = mode;
        this.plan = plan;
    }

    /** {@code own}: this target's listeners, which no referral may point at. */
    void planReferrals(List<ReferralConfig> doc, Collection<ListenerInfo> own) {
        List<ReferralConfig> wanted = ReferralChecks.normalizeAll(doc);
        Set<Integer> kept = new HashSet<>();
        List<ReferralConfig> toAdd = new ArrayList<>();
        for (ReferralConfig w : wanted) {
            ReferralChecks.refuseLoop(w, own);
            ReferralConfig match = current.values().stream()
                    .filter(c -> ReferralChecks.key(c).equals(ReferralChecks.key(w))).findFirst().orElse(null);
            if (match != null && sameSettings(w, match)) {
                kept.add(match.id());
                continue;
            }
            if (mode == ImportMode.MERGE) {
                if (match != null) {
                    throw conflict("referral " + match.id() + " to " + ReferralChecks.key(w) + " exists with other"
                            + " settings; remove it first or import with mode replace");
                }
                if (w.id() != null && current.containsKey(w.id())) {
                    throw conflict("referral id " + w.id() + " is taken by the referral to "
                            + ReferralChecks.key(current.get(w.id())) + "; choose another id");
                }
            }
            // Changed in replace mode: the new entry keeps the old one's id unless the document gives one.
            toAdd.add(w.id() == null && match != null ? w.withId(match.id()) : w);
        }
        Set<Integer> taken = new HashSet<>(kept);
        if (mode == ImportMode.MERGE) {
            taken.addAll(current.keySet());
        }
        for (ReferralConfig a : toAdd) {
            if (a.id() != null && !taken.add(a.id())) {
                throw invalid("referral id " + a.id() + " is taken by a referral the document keeps; choose another id");
            }
        }
        if (mode == ImportMode.REPLACE) {
            for (ReferralConfig c : current.values()) {
                if (!kept.contains(c.id())) {
                    plan.referralsRemoved.add(c.id());
                    plan.steps.add(commitOnly("remove referral " + c.id() + " (" + ReferralChecks.key(c) + ")",
                            () -> core.removeReferral(c.id())));
                }
            }
        }
        for (ReferralConfig a : toAdd) {
            int id = a.id() != null ? a.id() : ReferralChecks.freeId(taken);
            taken.add(id);
            ReferralConfig entry = a.withId(id);
            DiscoveryReferral logEntry = ReferralChecks.toLogEntry(entry, id);
            plan.referralsAdded.put(id, entry);
            plan.steps.add(commitOnly("add referral " + id + " (" + ReferralChecks.key(entry) + ")",
                    () -> core.putReferral(logEntry)));
        }
    }

    /** Both normalized and naming the same entry: whether they also say the same of it. */
    private static boolean sameSettings(ReferralConfig want, ReferralConfig have) {
        return (want.id() == null || want.id().equals(have.id())) && Objects.equals(want.tls(), have.tls())
                && Objects.equals(want.portId(), have.portId());
    }
}

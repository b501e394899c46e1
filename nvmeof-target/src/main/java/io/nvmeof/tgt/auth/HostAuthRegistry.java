package io.nvmeof.tgt.auth;

import io.nvmeof.protocol.auth.DhGroup;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The target's hosts that must authenticate, by host NQN, target-wide as nvmet keeps them under {@code hosts/}. A
 * host listed here must complete DH-HMAC-CHAP on every queue before any other command; a host not listed connects
 * as before (its NQN alone is checked against the subsystem's allowed hosts).
 *
 * <p>The admin API sets, rotates and removes entries while the target runs ({@link #put}, {@link #remove}): a Connect
 * and every DH-HMAC-CHAP transaction look the host up when they start, so they use the settings of that moment, and
 * queues that authenticated before keep their standing (as Linux nvmet and SPDK rotate keys).
 */
public final class HostAuthRegistry {
    private final Map<String, HostAuth> hosts = new ConcurrentHashMap<>();

    /** The settings of {@code hostNqn}, or null when that host need not authenticate. */
    public HostAuth lookup(String hostNqn) {
        return hosts.get(hostNqn);
    }

    /** Sets or replaces one host's settings (already checked by {@link #parse}). */
    public void put(HostAuth auth) {
        hosts.put(auth.hostNqn(), auth);
    }

    /** Removes one host's settings: from now on it connects without authenticating. */
    public void remove(String hostNqn) {
        hosts.remove(hostNqn);
    }

    /**
     * Checks every entry (NQN, secrets, hash, group) and only then takes them all; a bad entry changes nothing.
     *
     * @throws IllegalArgumentException naming the host and the field, never a secret
     */
    public void load(List<HostConfig> entries) {
        if (entries == null) {
            return;
        }
        Map<String, HostAuth> parsed = new HashMap<>();
        for (HostConfig h : entries) {
            HostAuth a = parse(h);
            if (a == null) {
                continue;
            }
            if (parsed.put(a.hostNqn(), a) != null) {
                throw new IllegalArgumentException("host " + Nqn.display(a.hostNqn()) + " is listed twice in hosts");
            }
        }
        hosts.putAll(parsed);
    }

    /** One entry checked; null when it sets no secret (nothing to enforce). */
    public static HostAuth parse(HostConfig h) {
        if (h == null || h.nqn() == null) {
            throw new IllegalArgumentException("a hosts entry has no nqn");
        }
        String why = Nqn.validate(h.nqn());
        if (why != null) {
            throw new IllegalArgumentException("hosts entry " + Nqn.display(h.nqn()) + ": " + why);
        }
        String who = "host " + Nqn.display(h.nqn());
        if (h.dhchapKey() == null) {
            if (h.dhchapCtrlKey() != null) {
                throw new IllegalArgumentException(who + ": dhchapCtrlKey needs dhchapKey (the controller authenticates"
                        + " itself only to a host that authenticated)");
            }
            return null;
        }
        DhchapSecret key = secret(who + ": dhchapKey", h.dhchapKey());
        DhchapSecret ctrl = h.dhchapCtrlKey() == null ? null : secret(who + ": dhchapCtrlKey", h.dhchapCtrlKey());
        if (ctrl != null && ctrl.sameAs(key)) {
            // nvmet refuses it too: a reflection attack answers the host's challenge with the host's own response.
            throw new IllegalArgumentException(who + ": dhchapCtrlKey is the same secret as dhchapKey; give the"
                    + " controller a secret of its own (nvme gen-dhchap-key)");
        }
        DhchapHash hash;
        DhGroup group;
        try {
            hash = h.dhchapHash() == null ? null : DhchapHash.parse(h.dhchapHash());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(who + ": dhchapHash: " + e.getMessage(), e);
        }
        try {
            group = h.dhchapDhGroup() == null ? null : DhGroup.parse(h.dhchapDhGroup());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(who + ": dhchapDhGroup: " + e.getMessage(), e);
        }
        return new HostAuth(h.nqn(), key, ctrl, hash, group);
    }

    private static DhchapSecret secret(String what, String text) {
        try {
            return DhchapSecret.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
        }
    }
}

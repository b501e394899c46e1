package io.nvmeof.tgt.live;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.live.LiveConfiguration.Store;
import io.nvmeof.tgt.auth.HostAuth;
import io.nvmeof.tgt.auth.HostSecurity;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The configuration document ({@link TargetConfig}) kept in step with the live target: its subsystems and listeners
 * as the file would say them, how the document a change leaves is built, and saving that document before the change is
 * made live. Guarded by the {@link LiveConfiguration}'s monitor, as everything that changes it.
 */
final class ConfigurationDocument {
    private final TargetConfig base;
    /** The document: subsystems by NQN, in creation order, each with its effective values filled in. */
    final Map<String, SubsystemConfig> subsystems = new LinkedHashMap<>();
    /** Listeners by port ID, with the port each is bound to. */
    final Map<Integer, ListenerConfig> listeners = new java.util.TreeMap<>();
    /** The hosts' DH-HMAC-CHAP entries by host NQN, secrets included: saved, never exported. */
    final Map<String, HostConfig> hosts = new LinkedHashMap<>();
    /** Referrals by id, normalized ({@link ReferralChecks#normalize}). */
    final Map<Integer, ReferralConfig> referrals = new java.util.TreeMap<>();
    private volatile Store store;

    /** The document of a target just started from {@code started}, with the ports its listeners got. */
    ConfigurationDocument(NvmeTarget target, TargetConfig started) {
        this.base = started;
        int portId = 1;
        for (ListenerConfig l : started.listeners()) {
            int id = l.id() != null ? l.id() : portId;
            listeners.put(id, new ListenerConfig(id, l.transport() != null ? l.transport() : "tcp",
                    l.address() != null ? l.address() : "127.0.0.1", boundPort(target, id, l), l.inlineDataSize(),
                    l.maxH2CData(), l.subsystems(), l.tls(),
                    io.nvmeof.tgt.core.AnaGroups.describe(io.nvmeof.tgt.core.AnaGroups.parseStates(l.ana()))));
            portId++;
        }
        if (started.hosts() != null) {
            started.hosts().forEach(h -> hosts.put(h.nqn(), h));
        }
        if (started.referrals() != null) {
            started.referrals().forEach(r -> referrals.put(r.id(), r)); // ids given when the target started
        }
        if (started.subsystems() != null) {
            for (SubsystemConfig s : started.subsystems()) {
                Subsystem sub = target.core().subsystem(s.nqn());
                subsystems.put(s.nqn(), describe(sub, s.namespaces()));
            }
        }
    }

    private static int boundPort(NvmeTarget target, int id, ListenerConfig l) {
        for (io.nvmeof.tgt.core.ListenerInfo info : target.core().listeners()) {
            if (info.portId() == id) {
                return Integer.parseInt(info.trsvcid());
            }
        }
        return l.port() != null ? l.port() : 4420;
    }

    /** Where {@link #save} keeps documents (null: nowhere). */
    void store(Store store) {
        this.store = store;
    }

    /** The document as it is now. */
    TargetConfig current() {
        return of(subsystems, listeners);
    }

    /** The document with these subsystems and listeners. */
    TargetConfig of(Map<String, SubsystemConfig> subs, Map<Integer, ListenerConfig> ls) {
        return of(subs, ls, hosts);
    }

    /** The document with these subsystems, listeners and host entries (none: no {@code hosts} at all). */
    TargetConfig of(Map<String, SubsystemConfig> subs, Map<Integer, ListenerConfig> ls, Map<String, HostConfig> hs) {
        return of(subs, ls, hs, referrals);
    }

    /** The document with these subsystems, listeners, host entries and referrals (none: no such key at all). */
    TargetConfig of(Map<String, SubsystemConfig> subs, Map<Integer, ListenerConfig> ls, Map<String, HostConfig> hs,
                    Map<Integer, ReferralConfig> refs) {
        return base.withContents(List.copyOf(ls.values()), List.copyOf(subs.values()))
                .withHosts(hs.isEmpty() ? null : List.copyOf(hs.values()))
                .withReferrals(refs.isEmpty() ? null : List.copyOf(refs.values()));
    }

    /** The document with {@code entry} as referral {@code id} (null: without it). */
    TargetConfig withReferral(int id, ReferralConfig entry) {
        return of(subsystems, listeners, hosts, withEntry(new java.util.TreeMap<>(referrals), id, entry));
    }

    /** The document with {@code entry} as host {@code hostNqn}'s DH-HMAC-CHAP settings (null: without any). */
    TargetConfig withHost(String hostNqn, HostConfig entry) {
        return of(subsystems, listeners, withEntry(new LinkedHashMap<>(hosts), hostNqn, entry));
    }

    /** The document with {@code entry} as the subsystem {@code nqn} (null: without it). */
    TargetConfig with(String nqn, SubsystemConfig entry) {
        return of(withEntry(new LinkedHashMap<>(subsystems), nqn, entry), listeners);
    }

    /** The document with {@code entry} as listener {@code id} (null: without it). */
    TargetConfig with(int id, ListenerConfig entry) {
        return of(subsystems, withEntry(new java.util.TreeMap<>(listeners), id, entry));
    }

    /** {@code copy} (of one of the document's maps) with {@code entry} at {@code key}; a null entry removes it. */
    private static <K, V> Map<K, V> withEntry(Map<K, V> copy, K key, V entry) {
        if (entry == null) {
            copy.remove(key);
        } else {
            copy.put(key, entry);
        }
        return copy;
    }

    /**
     * Saves the document a change will leave, before the change is made live; refuses the change when it cannot be
     * saved. The caller undoes what it prepared (an opened backend, a bound port) when this throws.
     */
    void save(TargetConfig next) {
        Store s = store;
        if (s == null) {
            return;
        }
        try {
            s.save(next);
        } catch (IOException | RuntimeException e) {
            String why = e.getMessage() != null ? e.getMessage() : "the store failed";
            LiveConfiguration.LOG.error("a change was refused because the configuration could not be saved: {}", why);
            throw new ConfigurationException(ConfigurationException.Kind.NOT_SAVED, "nothing was changed: the new"
                    + " configuration could not be saved (" + why + "); the target runs as before. Make the state"
                    + " directory writable (free space, permissions), then send the request again");
        }
    }

    /**
     * The document entry for a host's checked settings: the secrets in their canonical form (as {@code nvme
     * gen-dhchap-key} prints them, without the spaces or line ends they may have come with), hash and group as given.
     */
    /**
     * {@code given} with the kind of setting it leaves out taken from {@code current} (the host's entry now, or null):
     * an entry with only DH-HMAC-CHAP fields keeps the host's TLS key, one with only TLS fields keeps its secret. (A
     * kind is removed with the host's whole settings, DELETE, then set again.) A kind named without its key is
     * refused, whatever the host has: taken whole it would remove the secret the body left out, and only where the
     * other kind is set would that be accepted (issue 51).
     */
    static HostConfig keepingOtherKind(HostConfig given, HostConfig current) {
        if (given != null) {
            ConfigurationChecks.checkEachKindHasItsKey(given);
        }
        if (current == null) {
            return given;
        }
        boolean dhchap = given.dhchapKey() != null || given.dhchapCtrlKey() != null || given.dhchapHash() != null
                || given.dhchapDhGroup() != null;
        boolean tls = given.tlsKey() != null || given.tlsKeyDerivation() != null;
        if (!dhchap && !tls) {
            return given; // sets nothing: refused as such, not taken as "keep all"
        }
        HostConfig d = dhchap ? given : current;
        HostConfig t = tls ? given : current;
        return new HostConfig(given.nqn(), d.dhchapKey(), d.dhchapCtrlKey(), d.dhchapHash(), d.dhchapDhGroup(),
                t.tlsKey(), t.tlsKeyDerivation());
    }

    static HostConfig entry(HostConfig given, HostSecurity sec) {
        HostAuth auth = sec.dhchap();
        return new HostConfig(sec.hostNqn(), auth != null ? auth.hostKey().representation() : null,
                auth != null && auth.ctrlKey() != null ? auth.ctrlKey().representation() : null,
                auth != null ? given.dhchapHash() : null, auth != null ? given.dhchapDhGroup() : null,
                sec.tls() != null ? given.tlsKey().trim() : null,
                sec.tls() != null ? sec.tls().derivation().label() : null);
    }

    /** The document entry for a live subsystem: its effective values; namespaces as configured, NSIDs and UUIDs filled. */
    static SubsystemConfig describe(Subsystem sub, List<NamespaceConfig> configured) {
        Map<Long, NamespaceConfig> byNsid = new LinkedHashMap<>();
        if (configured != null) {
            long next = 1;
            for (NamespaceConfig n : configured) {
                long nsid = n.nsid() != null ? n.nsid() : next;
                byNsid.put(nsid, n);
                next = nsid + 1;
            }
        }
        List<NamespaceConfig> namespaces = new ArrayList<>();
        for (Namespace ns : sub.namespaces()) {
            namespaces.add(describe(ns, byNsid.get(ns.nsid())));
        }
        namespaces.sort(Comparator.comparing(NamespaceConfig::nsid));
        return new SubsystemConfig(sub.nqn(), sub.serial(), sub.model(), sub.maxNamespaces(), sub.allowAnyHost(),
                sub.allowedHosts().stream().sorted().toList(), namespaces,
                sub.cntlidMin() != Subsystem.CNTLID_MIN ? sub.cntlidMin() : null,
                sub.cntlidMax() != Subsystem.CNTLID_MAX ? sub.cntlidMax() : null,
                sub.sharedReservations() != null ? sub.sharedReservations().directory().toString() : null);
    }

    /** The document entry for an opened namespace: its effective values, and what only its configuration says. */
    static NamespaceConfig describe(Namespace ns, NamespaceConfig n) {
        String backend = ns.backend() instanceof io.nvmeof.tgt.backend.FileBackend f
                ? (f.isBlockDevice() ? "block" : "file") : "ram";
        String path = n != null ? n.path() : null;
        String nguid = n != null && n.nguid() != null ? n.nguid().toLowerCase(java.util.Locale.ROOT) : null;
        Boolean sparse = ns.backend() instanceof io.nvmeof.tgt.backend.RamBackend r && r.sparse() ? true : null;
        // A RAM namespace's UUID is its own only while it lives (see NvmeTarget.namespaceUuid): restored from a
        // document, the empty volume would claim the identity of the one whose data is gone.
        String uuid = "ram".equals(backend) && (n == null || n.uuid() == null) ? null : ns.uuid().toString();
        // As asked: a namespace served buffered only because direct I/O is unavailable here is saved as direct.
        Boolean bufferedIo = n != null ? n.bufferedIo() : null;
        return new NamespaceConfig(ns.nsid(), backend, Long.toString(ns.sizeBytes()), ns.blockSize(), path, uuid, nguid,
                sparse, bufferedIo, n != null ? n.queueDepth() : null, ns.anaGroup() != 1 ? ns.anaGroup() : null);
    }
}

package io.nvmeof.tgt.live;

import static io.nvmeof.tgt.live.ConfigurationChecks.checkSubsystem;
import static io.nvmeof.tgt.live.ConfigurationChecks.conflict;
import static io.nvmeof.tgt.live.ConfigurationChecks.invalid;
import static io.nvmeof.tgt.live.ConfigurationChecks.normalizeListener;
import static io.nvmeof.tgt.live.ConfigurationChecks.notFound;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running target's configuration, changed live while hosts are connected: subsystems, their namespaces and allowed
 * hosts, and the hosts' DH-HMAC-CHAP settings (as SPDK's {@code nvmf_create_subsystem}, {@code nvmf_subsystem_add_ns},
 * {@code nvmf_subsystem_add_host} and nvmetcli do). Alongside, it keeps the configuration document ({@link TargetConfig}, the vocabulary of the file the
 * target starts from) in step with every change, so the live target can be exported and restored exactly (same NQNs,
 * NSIDs, UUIDs, serials).
 *
 * <p>Each change is checked completely before anything is touched, and what can fail (opening a backend, binding a
 * port) is prepared where hosts do not use it yet; then the document it leaves is saved ({@link #saveChangesWith}),
 * then it is applied. It applies completely or not at all, and never unsaved. Changes are serialized (one monitor);
 * the data path never takes it: it reads the lock-free maps of {@link Subsystem} and
 * {@link io.nvmeof.tgt.core.TargetCore}. Adding or removing a namespace raises the Namespace Attribute Changed
 * event on every controller of the subsystem; changes hosts may discover bump the discovery log's generation
 * counter.
 *
 * <p>This class makes the changes; the checks of incoming descriptions are {@link ConfigurationChecks}, the document
 * and its saving {@link ConfigurationDocument}, and a whole document's import {@link ConfigurationImport}.
 */
public final class LiveConfiguration {
    static final Logger LOG = LoggerFactory.getLogger(LiveConfiguration.class);
    /**
     * Most NVM subsystems a target takes (the discovery subsystem not counted): SPDK's default max_subsystems. Every
     * change saves the whole document, so this also bounds the cost of a change.
     */
    public static final int MAX_SUBSYSTEMS = 1024;

    /** Why a change was refused; an API maps the kind to its status (400, 404, 409, 507). */
    public static final class ConfigurationException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** NOT_SAVED: the change was valid but could not be saved ({@link Store}), so it was not made live. */
        public enum Kind { INVALID, NOT_FOUND, CONFLICT, NOT_SAVED }

        private final Kind kind;

        ConfigurationException(Kind kind, String message) {
            super(message);
            this.kind = kind;
        }

        public Kind kind() {
            return kind;
        }
    }

    /**
     * How an imported document meets the live configuration: {@code REPLACE} makes the target exactly the document
     * (what it does not name is removed); {@code MERGE} adds what the document has and the target lacks, refusing
     * clashes. Either way, a field the document leaves out keeps its live value.
     */
    public enum ImportMode { REPLACE, MERGE }

    /**
     * What an import did, or would do for a dry run: the changes in the order applied, settings that cannot change
     * while the target runs, and the configuration afterwards.
     */
    public record ImportResult(String mode, boolean dryRun, List<String> changes, List<String> notApplied,
                               TargetConfig config) {
    }

    private final NvmeTarget target;
    private final TargetMonitoring monitoring;
    private final HostSecrets hostSecrets;
    /** The configuration document, saved before every change is made live. */
    private final ConfigurationDocument document;

    /** Keeps the configuration document durably (the admin API's state file). */
    @FunctionalInterface
    public interface Store {
        /** Keeps {@code document}; throws when it could not, with a message that names the file and why. */
        void save(TargetConfig document) throws IOException;
    }

    /** Made once per target, by {@link NvmeTarget#start}: the configuration it serves, changed live from here. */
    public LiveConfiguration(NvmeTarget target, TargetConfig started) {
        this.target = target;
        this.monitoring = new TargetMonitoring(target, this::subsystemNames);
        this.document = new ConfigurationDocument(target, started);
        this.hostSecrets = new HostSecrets(target, document, this);
        // Saving may block: not on the poll group thread that ended the transition.
        target.core().ana().onTransitionExpired((port, group) -> java.util.concurrent.ForkJoinPool.commonPool()
                .execute(() -> keepExpiredTransition(port, group)));
    }

    /** A transition that outlasted ANATT ended inaccessible: the document says so too (if no one changed it since). */
    private synchronized void keepExpiredTransition(int id, int group) {
        ListenerConfig l = document.listeners.get(id);
        if (l == null || l.ana() == null || !"change".equals(l.ana().get(Integer.toString(group)))
                || target.core().ana().port(id).state(group) != io.nvmeof.protocol.log.AnaState.INACCESSIBLE) {
            return; // changed again since: the document already says what hosts were told
        }
        try {
            setAnaState(id, group, io.nvmeof.protocol.log.AnaState.INACCESSIBLE.label());
        } catch (RuntimeException e) {
            LOG.warn("listener {}: ANA group {} ended its transition inaccessible, but the configuration could not be"
                    + " saved ({}): after a restart it starts in the change state again", id, group, e.getMessage());
        }
    }

    /**
     * Saves every change with {@code store} before the change is made live (on the changing thread, under the change
     * lock, so documents arrive in order). A change that cannot be saved is refused ({@link
     * ConfigurationException.Kind#NOT_SAVED}) and nothing of it is made live: the saved document and the live target
     * never disagree, and the request can simply be sent again once the store works.
     */
    public void saveChangesWith(Store store) {
        document.store(store);
    }

    /** The whole target as one configuration document, with every effective value (serials, NSIDs, UUIDs). */
    public synchronized TargetConfig export() {
        // Never the hosts' secrets: an export is shown, copied and attached to tickets. The state file keeps them.
        return document.current().withHosts(null);
    }

    /**
     * Imports a whole configuration document, atomically: everything that can fail (opening backends, binding ports)
     * is done first, invisibly to hosts, and undone if any of it fails; then the changes are made live at once and
     * saved once. The document's {@code hosts} are set or rotated; hosts it does not name keep their DH-HMAC-CHAP
     * settings in both modes ({@link HostImportPlanner}). {@code pathCheck} vets the path of every namespace the import would open (the admin API's
     * directory policy) and throws to refuse. A dry run only says what would change.
     */
    public synchronized ImportResult importConfiguration(TargetConfig doc, ImportMode mode, boolean dryRun,
                                                         Consumer<NamespaceConfig> pathCheck) {
        ImportResult r = new ConfigurationImport(document, target, mode, pathCheck).run(doc, dryRun);
        // The answer shows the resulting document: never with the hosts' secrets (export() leaves them out too).
        return new ImportResult(r.mode(), r.dryRun(), r.changes(), r.notApplied(), r.config().withHosts(null));
    }

    // ------------------------------------------------------------------------------------------ listeners

    public synchronized List<ListenerConfig> listeners() {
        return List.copyOf(document.listeners.values());
    }

    /**
     * Starts listening (tcp or rdma) while the target runs; the discovery log lists it at once. Port 0 binds any free
     * port (the answer says which). {@code subsystems} limits what the discovery log shows there (empty: all).
     */
    public synchronized ListenerConfig addListener(ListenerConfig l) {
        l = normalizeListener(l);
        int id;
        if (l.id() != null) {
            id = l.id();
            if (document.listeners.containsKey(id)) {
                throw conflict("listener " + id + " already exists; choose another id or remove it first");
            }
        } else {
            id = 1;
            while (document.listeners.containsKey(id)) {
                id++;
            }
        }
        String transport = l.transport();
        int port = l.port();
        if (l.subsystems() != null) {
            for (String nqn : l.subsystems()) {
                if (!document.subsystems.containsKey(nqn) && !Nqn.DISCOVERY.equals(nqn)) {
                    throw invalid("listener subsystems: " + Nqn.display(nqn) + " does not exist");
                }
            }
        }
        ListenerConfig want = l.withIdAndPort(id, port);
        int bound;
        try {
            bound = target.addListener(want, id);
        } catch (IOException | RuntimeException e) {
            throw conflict(e.getMessage());
        }
        ListenerConfig d = l.withIdAndPort(id, bound);
        try {
            document.save(document.with(id, d)); // after binding: the document records the port it got (port 0: any)
        } catch (ConfigurationException e) {
            target.removeListener(id, bound);
            throw e;
        }
        document.listeners.put(id, d);
        LOG.info("listener {} added: {} {}:{}", id, transport, l.address(), bound);
        return d;
    }

    /** Stops a listener; the connections made through it end (their hosts reconnect through another, if any). */
    public synchronized void removeListener(int id) {
        if (!document.listeners.containsKey(id)) {
            throw notFound("listener " + id + " does not exist");
        }
        if (document.listeners.size() == 1) {
            throw conflict("listener " + id + " is the target's last: hosts could not reach it any more; add another first");
        }
        document.save(document.with(id, null));
        target.removeListener(id);
        document.listeners.remove(id);
        LOG.info("listener {} removed", id);
    }

    /** An ANA group's state on one listener (port). */
    public record AnaGroupView(int group, String state, long changeCount) {
    }

    /**
     * The ANA states on listener {@code id}: group 1, every group a namespace is in, and every group set on it, in
     * group order.
     */
    public synchronized List<AnaGroupView> anaStates(int id) {
        if (!document.listeners.containsKey(id)) {
            throw notFound("listener " + id + " does not exist");
        }
        java.util.SortedSet<Integer> groups = new java.util.TreeSet<>();
        groups.add(1);
        for (io.nvmeof.tgt.core.Subsystem sub : target.core().subsystems()) {
            sub.namespaces().forEach(ns -> groups.add(ns.anaGroup()));
        }
        io.nvmeof.tgt.core.PortAnaStates port = target.core().ana().port(id);
        groups.addAll(port.explicitStates().keySet());
        List<AnaGroupView> out = new java.util.ArrayList<>();
        for (int g : groups) {
            out.add(new AnaGroupView(g, port.state(g).label(), port.changeCount(g)));
        }
        return out;
    }

    /**
     * Sets ANA group {@code group}'s state on listener {@code id} (nvmet's {@code ana_groups/G/ana_state}, SPDK's
     * {@code nvmf_subsystem_listener_set_ana_state}): saved first, then live; the hosts connected through it get an
     * ANA change notice at once and read the new state from the ANA log.
     */
    public synchronized AnaGroupView setAnaState(int id, int group, String state) {
        ListenerConfig l = document.listeners.get(id);
        if (l == null) {
            throw notFound("listener " + id + " does not exist");
        }
        io.nvmeof.protocol.log.AnaState want;
        java.util.SortedMap<Integer, io.nvmeof.protocol.log.AnaState> states;
        try {
            io.nvmeof.tgt.core.AnaGroups.checkGroupId(group);
            want = io.nvmeof.protocol.log.AnaState.parse(state);
            states = io.nvmeof.tgt.core.AnaGroups.parseStates(l.ana());
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage());
        }
        states.put(group, want);
        ListenerConfig d = l.withAna(io.nvmeof.tgt.core.AnaGroups.describe(states));
        document.save(document.with(id, d));
        document.listeners.put(id, d);
        target.core().ana().set(id, group, want);
        io.nvmeof.tgt.core.PortAnaStates port = target.core().ana().port(id);
        return new AnaGroupView(group, port.state(group).label(), port.changeCount(group));
    }

    // ------------------------------------------------------------------------------------------ referrals

    /** The discovery log's referrals to other discovery services, in id order. */
    public synchronized List<ReferralConfig> referrals() {
        return List.copyOf(document.referrals.values());
    }

    /**
     * Adds a referral (nvmet's {@code ports/N/referrals}, SPDK's {@code nvmf_discovery_add_referral}): saved first,
     * then every host's discovery log lists it, the generation counter grows, and the discovery controllers that asked
     * get a Discovery Log Change notice. Refused: an id or an entry (transport, address, port, NQN) the target already
     * has, and a referral to one of this target's own listeners.
     */
    public synchronized ReferralConfig addReferral(ReferralConfig given) {
        ReferralConfig r = ReferralChecks.normalize(given);
        if (r.id() != null && document.referrals.containsKey(r.id())) {
            throw conflict("referral " + r.id() + " already exists; choose another id or remove it first");
        }
        String key = ReferralChecks.key(r);
        for (ReferralConfig have : document.referrals.values()) {
            if (ReferralChecks.key(have).equals(key)) {
                throw conflict("referral " + have.id() + " already refers to " + key);
            }
        }
        ReferralChecks.refuseLoop(r, target.core().listeners());
        int id = r.id() != null ? r.id() : ReferralChecks.freeId(document.referrals.keySet());
        ReferralConfig entry = r.withId(id);
        io.nvmeof.tgt.core.DiscoveryReferral logEntry = ReferralChecks.toLogEntry(entry, id);
        document.save(document.withReferral(id, entry));
        document.referrals.put(id, entry);
        target.core().putReferral(logEntry);
        LOG.info("referral {} added: {}", id, key);
        return entry;
    }

    /** Removes a referral; the discovery log drops it and its discovery controllers are told. */
    public synchronized void removeReferral(int id) {
        if (!document.referrals.containsKey(id)) {
            throw notFound("referral " + id + " does not exist");
        }
        document.save(document.withReferral(id, null));
        document.referrals.remove(id);
        target.core().removeReferral(id);
        LOG.info("referral {} removed", id);
    }

    public synchronized List<SubsystemConfig> subsystems() {
        return List.copyOf(document.subsystems.values());
    }

    public synchronized SubsystemConfig subsystem(String nqn) {
        SubsystemConfig s = document.subsystems.get(nqn);
        if (s == null) {
            throw notFound("subsystem " + Nqn.display(nqn) + " does not exist");
        }
        return s;
    }

    // ------------------------------------------------------------------------------------------ subsystems

    /**
     * Creates a subsystem (with its namespaces and hosts, if given). Defaults: serial derived from the NQN, model
     * "nvmeof-java", 1024 namespaces at most, any host allowed unless hosts are listed.
     */
    public synchronized SubsystemConfig createSubsystem(SubsystemConfig s) {
        checkSubsystem(s);
        if (document.subsystems.containsKey(s.nqn()) || target.core().subsystem(s.nqn()) != null) {
            throw conflict("subsystem " + s.nqn() + " already exists");
        }
        if (document.subsystems.size() >= MAX_SUBSYSTEMS) {
            throw conflict("the target has its maximum of " + MAX_SUBSYSTEMS + " subsystems; delete one first");
        }
        Subsystem sub;
        try {
            sub = target.buildSubsystem(s);
        } catch (IllegalArgumentException | IOException e) {
            throw invalid(e.getMessage());
        }
        refuseClash(sub.namespaces().stream().map(ns -> new NamespaceIdentities.Placed(s.nqn(), ns)).toList(),
                () -> {
                    sub.namespaces().forEach(target::discard);
                    sub.stopSharingReservations();
                });
        SubsystemConfig d = ConfigurationDocument.describe(sub, s.namespaces());
        try {
            document.save(document.with(s.nqn(), d));
        } catch (ConfigurationException e) {
            sub.namespaces().forEach(target::discard);
            sub.stopSharingReservations();
            throw e;
        }
        target.core().addSubsystem(sub);
        document.subsystems.put(s.nqn(), d);
        LOG.info("subsystem {} created ({} namespaces)", s.nqn(), sub.namespaces().size());
        return d;
    }

    /**
     * Removes a subsystem: its controllers are disconnected. Refused while a listener names it: the listener would
     * name a subsystem that does not exist, which no document imports (as an import that drops it is refused).
     */
    public synchronized void deleteSubsystem(String nqn) {
        subsystem(nqn);
        for (ListenerConfig l : document.listeners.values()) {
            if (l.subsystems() != null && l.subsystems().contains(nqn)) {
                throw conflict("subsystem " + nqn + " is named by listener " + l.id() + " (" + l.transport() + " "
                        + l.address() + ":" + l.port() + ", which exposes " + l.subsystems() + "): remove that listener"
                        + " first, then add it again without the subsystem if it should stay");
            }
        }
        document.save(document.with(nqn, null));
        Subsystem removed = target.core().removeSubsystem(nqn);
        document.subsystems.remove(nqn);
        for (Namespace ns : removed.namespaces()) {
            target.retire(ns, removed);
        }
        LOG.info("subsystem {} deleted", nqn);
    }

    /** Changes whether any host may connect (the one property of a subsystem that changes live, as in nvmet). */
    public synchronized SubsystemConfig setAllowAnyHost(String nqn, boolean allow) {
        SubsystemConfig current = subsystem(nqn);
        SubsystemConfig d = current.withAccess(allow, current.hosts());
        document.save(document.with(nqn, d));
        Subsystem sub = target.core().subsystem(nqn);
        sub.allowAnyHost(allow);
        target.core().configChanged();
        sub.endAssociationsNoLongerAllowed();
        document.subsystems.put(nqn, d);
        return d;
    }

    // ------------------------------------------------------------------------------------------ namespaces

    /**
     * Adds a namespace to a running subsystem; connected hosts are told (Namespace Attribute Changed). The NSID, when
     * not given, is the lowest free one. Returns the namespace as the document records it.
     */
    public synchronized NamespaceConfig addNamespace(String nqn, NamespaceConfig n) {
        subsystem(nqn);
        Subsystem sub = target.core().subsystem(nqn);
        long nsid;
        if (n.nsid() != null) {
            nsid = n.nsid();
            if (nsid < 1 || nsid > sub.maxNamespaces()) {
                throw invalid("nsid must be 1 to " + sub.maxNamespaces() + " (the subsystem's maxNamespaces), got " + nsid);
            }
            if (sub.namespace(nsid) != null) {
                throw conflict("namespace " + nsid + " already exists in " + nqn + "; remove it first or choose another nsid");
            }
        } else {
            nsid = 1;
            while (sub.namespace(nsid) != null) {
                nsid++;
            }
            if (nsid > sub.maxNamespaces()) {
                throw conflict("subsystem " + nqn + " already has its maximum of " + sub.maxNamespaces() + " namespaces");
            }
        }
        if (n.uuid() != null) {
            try {
                UUID.fromString(n.uuid());
            } catch (IllegalArgumentException e) {
                throw invalid("uuid '" + n.uuid() + "' is not a UUID");
            }
        }
        Namespace ns;
        try {
            ns = target.openNamespace(nqn, nsid, n);
        } catch (IllegalArgumentException | IOException e) {
            throw invalid(e.getMessage());
        }
        refuseClash(List.of(new NamespaceIdentities.Placed(nqn, ns)), () -> target.discard(ns));
        NamespaceConfig d = ConfigurationDocument.describe(ns, n.withNsid(nsid));
        List<NamespaceConfig> after = new ArrayList<>(document.subsystems.get(nqn).namespaces());
        after.add(d);
        after.sort(Comparator.comparing(NamespaceConfig::nsid));
        SubsystemConfig entry = document.subsystems.get(nqn).withNamespaces(after);
        try {
            document.save(document.with(nqn, entry));
        } catch (ConfigurationException e) {
            target.discard(ns);
            throw e;
        }
        sub.addNamespace(ns);
        document.subsystems.put(nqn, entry);
        LOG.info("subsystem {}: namespace {} added ({} x {} B on {})", nqn, nsid, ns.blockCount(), ns.blockSize(),
                ns.backend().describe());
        return d;
    }

    /**
     * Removes a namespace; connected hosts are told. Commands already parsed finish against it; new ones fail with
     * Invalid Namespace. Its backend is closed once those have finished.
     */
    public synchronized void removeNamespace(String nqn, long nsid) {
        SubsystemConfig current = subsystem(nqn);
        Subsystem sub = target.core().subsystem(nqn);
        if (sub.namespace(nsid) == null) {
            throw notFound("namespace " + nsid + " does not exist in " + nqn);
        }
        SubsystemConfig entry = current.withNamespaces(current.namespaces().stream().filter(n -> n.nsid() != nsid).toList());
        document.save(document.with(nqn, entry));
        target.retire(sub.removeNamespace(nsid), sub);
        document.subsystems.put(nqn, entry);
        LOG.info("subsystem {}: namespace {} removed", nqn, nsid);
    }

    /**
     * Grows a namespace (file backends extend their file; block backends take the device's new size); connected hosts
     * are told (Namespace Attribute Changed) and see the new size when they re-read Identify Namespace, as the Linux
     * host does. Shrinking is refused: a host may still address the end.
     */
    public synchronized NamespaceConfig resizeNamespace(String nqn, long nsid, String size) {
        NamespaceConfig current = namespaceOf(nqn, nsid);
        Subsystem sub = target.core().subsystem(nqn);
        Namespace ns = sub.namespace(nsid);
        long bytes;
        try {
            bytes = TargetConfig.parseSize(size);
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage());
        }
        if (bytes % ns.blockSize() != 0) {
            throw invalid("size " + size + " is not a whole number of " + ns.blockSize() + "-byte blocks");
        }
        if (bytes < ns.sizeBytes()) {
            throw conflict("namespace " + nsid + " of " + nqn + " has " + ns.sizeBytes() + " bytes; namespaces grow,"
                    + " never shrink (a host may still address the end); create a smaller one and copy instead");
        }
        if (bytes == ns.sizeBytes()) {
            return current;
        }
        if ("ram".equals(current.backend())) {
            throw conflict("namespace " + nsid + " of " + nqn + " cannot grow (ram namespaces cannot be resized; file"
                    + " and block ones can)");
        }
        NamespaceConfig grown = current.withSize(Long.toString(bytes));
        SubsystemConfig before = document.subsystems.get(nqn);
        SubsystemConfig entry = before.withNamespaces(before.namespaces().stream()
                .map(n -> n.nsid() == nsid ? grown : n).toList());
        document.save(document.with(nqn, entry));
        try {
            ns.grow(bytes);
        } catch (UnsupportedOperationException | IllegalArgumentException | IOException e) {
            // Saved first so that no grown size goes unsaved: the saved document goes back to the live one.
            try {
                document.save(document.current());
            } catch (ConfigurationException again) {
                LOG.error("namespace {} of {} was not grown, but the saved configuration says {} bytes: {}", nsid, nqn,
                        bytes, again.getMessage());
            }
            if (e instanceof UnsupportedOperationException) {
                throw conflict("namespace " + nsid + " of " + nqn + ": " + e.getMessage() + " (" + current.backend()
                        + " namespaces cannot be resized; file and block ones can)");
            }
            throw invalid(e.getMessage());
        }
        sub.namespaceAttributesChanged(nsid);
        document.subsystems.put(nqn, entry);
        LOG.info("subsystem {}: namespace {} grown to {} bytes", nqn, nsid, bytes);
        return grown;
    }

    public synchronized NamespaceConfig namespaceOf(String nqn, long nsid) {
        for (NamespaceConfig n : subsystem(nqn).namespaces()) {
            if (n.nsid() == nsid) {
                return n;
            }
        }
        throw notFound("namespace " + nsid + " does not exist in " + nqn);
    }

    // ------------------------------------------------------------------------------------------ hosts

    /** Allows a host NQN to connect. Listing a host does not by itself stop others: see {@link #setAllowAnyHost}. */
    public synchronized SubsystemConfig addHost(String nqn, String hostNqn) {
        SubsystemConfig current = subsystem(nqn);
        String why = hostNqn == null ? "is required" : Nqn.validateFormat(hostNqn);
        if (why != null) {
            throw invalid("host NQN " + Nqn.display(hostNqn) + ": " + why);
        }
        Subsystem sub = target.core().subsystem(nqn);
        if (sub.allowedHosts().contains(hostNqn)) {
            throw conflict("host " + hostNqn + " is already allowed on " + nqn);
        }
        List<String> hosts = new ArrayList<>(current.hosts());
        hosts.add(hostNqn);
        hosts.sort(null);
        SubsystemConfig entry = current.withAccess(current.allowAnyHost(), hosts);
        document.save(document.with(nqn, entry));
        sub.allowedHosts().add(hostNqn);
        target.core().configChanged();
        document.subsystems.put(nqn, entry);
        return entry;
    }

    /**
     * Stops allowing a host: new connections are refused, and unless the subsystem allows any host its associations
     * end now (as SPDK's {@code nvmf_subsystem_remove_host}; nvmet leaves them until they reconnect).
     */
    public synchronized SubsystemConfig removeHost(String nqn, String hostNqn) {
        SubsystemConfig current = subsystem(nqn);
        Subsystem sub = target.core().subsystem(nqn);
        if (!sub.allowedHosts().contains(hostNqn)) {
            throw notFound("host " + Nqn.display(hostNqn) + " is not allowed on " + nqn);
        }
        SubsystemConfig entry = current.withAccess(current.allowAnyHost(),
                current.hosts().stream().filter(h -> !h.equals(hostNqn)).toList());
        document.save(document.with(nqn, entry));
        sub.allowedHosts().remove(hostNqn);
        target.core().configChanged();
        sub.endAssociationsNoLongerAllowed();
        document.subsystems.put(nqn, entry);
        return entry;
    }

    // ------------------------------------------------------------------------------------------ hosts' secrets

    /** The hosts' DH-HMAC-CHAP secrets and TLS keys: set, rotated, removed and shown (whether set, never what). */
    public HostSecrets hostSecrets() {
        return hostSecrets;
    }

    private synchronized List<String> subsystemNames() {
        return List.copyOf(document.subsystems.keySet());
    }

    // ------------------------------------------------------------------------------------------ controllers

    /** What the target is doing (controllers, queues, I/O statistics, authentications), read without changing it. */
    public TargetMonitoring monitoring() {
        return monitoring;
    }


    /** Ends one association, as if the host had gone: every queue is closed. */
    public void disconnect(String nqn, int cntlid) {
        Subsystem sub = target.core().subsystem(nqn);
        if (sub == null || Nqn.DISCOVERY.equals(nqn)) {
            throw notFound("subsystem " + Nqn.display(nqn) + " does not exist");
        }
        Controller c = sub.controller(cntlid);
        if (c == null || c.isDead()) {
            throw notFound("controller " + cntlid + " of " + nqn + " is not connected");
        }
        c.teardown("disconnected by the administrator");
    }

    /**
     * Refuses (409) namespaces about to be added that would share a file or an identifier with another of the target
     * ({@link NamespaceIdentities}), running {@code undo} (closing what was opened for them) first.
     */
    private void refuseClash(List<NamespaceIdentities.Placed> adding, Runnable undo) {
        String clash = NamespaceIdentities.clashAdding(target.core(), adding);
        if (clash != null) {
            undo.run();
            throw conflict(clash);
        }
    }

}

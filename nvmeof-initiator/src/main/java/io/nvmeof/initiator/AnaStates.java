package io.nvmeof.initiator;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.log.AnaLog;
import io.nvmeof.protocol.log.AnaState;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's Asymmetric Namespace Access states: reads the ANA log (0Ch) when Identify Controller CMIC says the
 * controller reports ANA, at each association set-up and rescan, on each ANA Change notice, and soon after an I/O met
 * a path status; sets each namespace handle's group and state, and tells the controller's path listeners (multipath
 * namespaces) when a state changed. As Linux ({@code nvme_parse_ana_log}, {@code nvme_mpath_add_disk}): a log whose
 * descriptors run past its end is refused whole (the states stay as they were); a namespace it does not list keeps its
 * state, unless it never had one from a log (a new namespace: inaccessible until a log lists it); a log larger than
 * the controller's MDTS disables ANA for the controller (read in pieces it could mix two versions of the log), and its
 * namespaces are all taken as optimized, as they are on a controller without ANA.
 */
final class AnaStates {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);
    /** The most group descriptors sized for: ANAGRPMAX beyond this is a corrupt Identify, not memory to spend. */
    private static final long MAX_GROUPS = 65536;

    private final NvmeofController ctrl;
    /** A read is queued on the housekeeping thread: I/O threads that meet path statuses queue one, not one each. */
    private final AtomicBoolean readQueued = new AtomicBoolean();
    /** A read after ANATT is scheduled (a namespace was in ANA change). */
    private final AtomicBoolean transitionCheckQueued = new AtomicBoolean();
    /** The log does not fit one command: ANA is off for this controller (decided at each association set-up). */
    private volatile boolean tooLarge;

    AnaStates(NvmeofController ctrl) {
        this.ctrl = ctrl;
    }

    /**
     * Reads the ANA log and applies it to the current namespace handles (blocks: an admin command). No-op for a
     * controller that does not report ANA. Under the association lock, so the handles it applies to are the ones the
     * scan published.
     */
    /** Whether the controller reports ANA and its log fits one command. */
    boolean enabled() {
        ControllerInfo info = ctrl.info;
        return info != null && info.anaReporting() && !tooLarge;
    }

    void refresh() {
        try {
            readAndApply();
        } finally {
            recheckAfterTransition();
        }
    }

    private void readAndApply() {
        ControllerInfo info = ctrl.info;
        if (info == null || !info.anaReporting()) {
            return;
        }
        ctrl.association.lock();
        try {
            List<NamespaceHandle> handles = ctrl.namespaceScanner.namespaces();
            long groups = Math.min(info.anaGroupCount(), MAX_GROUPS);
            // Sized as Linux sizes it (MNAN NSIDs, else NN), and never smaller than the namespaces known.
            long limit = info.maxNamespaces() > 0 ? info.maxNamespaces() : info.nn();
            long nsids = Math.min(Math.max(limit, handles.size()), NamespaceScanner.MAX_NAMESPACES);
            int length = AnaLog.length((int) groups, (int) nsids);
            long maxTransfer = ctrl.maxTransfer;
            boolean fits = maxTransfer <= 0 || length <= maxTransfer;
            if (fits == tooLarge) {
                tooLarge = !fits;
                if (tooLarge) {
                    LOG.warn("{}: the ANA log ({} bytes) is larger than the controller's MDTS ({} bytes); ANA is off"
                            + " for this controller, as Linux does: its namespaces are taken as optimized", ctrl.id,
                            length, maxTransfer);
                    for (NamespaceHandle h : handles) {
                        h.anaState(h.anaGroup(), AnaState.OPTIMIZED);
                    }
                    ctrl.pathsChanged();
                }
            }
            if (tooLarge) {
                return;
            }
            byte[] page;
            try {
                page = ctrl.adminCommands.getLogPage(Opcodes.LOG_ANA, 0xFFFF_FFFFL, length, 0);
            } catch (NvmeStatusException e) {
                // Refused, though CMIC says ANA: the states stay as they were (a connect must not fail over it).
                LOG.warn("{}: the controller reports ANA but refused its ANA log ({}); ANA states unchanged",
                        ctrl.id, e.getMessage());
                return;
            }
            if (apply(page, handles)) {
                ctrl.pathsChanged();
            }
        } finally {
            ctrl.association.unlock();
        }
    }

    /** Any thread (an I/O thread that met a path status): reads the log soon on the housekeeping thread. */
    void refreshSoon() {
        if (readQueued.compareAndSet(false, true)) {
            ctrl.housekeep(() -> {
                readQueued.set(false);
                try {
                    refresh();
                } catch (NvmeofException e) {
                    LOG.debug("{}: reading the ANA log: {}", ctrl.id, e.getMessage());
                }
            });
        }
    }

    /**
     * A namespace still in ANA change (transition) is looked at again after ANATT: the log is read then, whether or not
     * a notice came (a lost notice, or a log read that failed, must not leave the path unusable for good). Linux arms
     * its ANATT timer for the same reason. At most one such read is pending.
     */
    private void recheckAfterTransition() {
        ControllerInfo info = ctrl.info;
        if (info == null || !enabled() || ctrl.closed.get() || transitionCheckQueued.get()) {
            return;
        }
        for (NamespaceHandle h : ctrl.namespaceScanner.namespaces()) {
            if (h.anaState() == AnaState.CHANGE) {
                if (transitionCheckQueued.compareAndSet(false, true)) {
                    long seconds = Math.max(1, info.anaTransitionTimeSeconds());
                    try {
                        ctrl.housekeeping.schedule(() -> {
                            transitionCheckQueued.set(false);
                            refreshSoon();
                        }, seconds, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (java.util.concurrent.RejectedExecutionException e) {
                        transitionCheckQueued.set(false); // closing
                    }
                }
                return;
            }
        }
    }

    /** What one ANA log says: each listed namespace's group and state, and each group's state. */
    record Parsed(Map<Long, AnaState> byNsid, Map<Long, Long> groupOf, Map<Long, AnaState> byGroup) {
    }

    /**
     * Parses an ANA log; throws {@link IllegalArgumentException}, saying where, when a descriptor runs past the end
     * (Linux's {@code nvme_parse_ana_log} refuses such a log whole). A group's unknown state is taken as inaccessible.
     */
    static Parsed parse(byte[] page, Object id) {
        if (page.length < AnaLog.HEADER_LENGTH) {
            throw new IllegalArgumentException("the ANA log is " + page.length + " bytes, shorter than its header");
        }
        AnaLog log = new AnaLog().wrap(new UnsafeBuffer(page), 0);
        Map<Long, AnaState> byNsid = new HashMap<>();
        Map<Long, Long> groupOf = new HashMap<>();
        Map<Long, AnaState> byGroup = new HashMap<>();
        int at = AnaLog.HEADER_LENGTH;
        for (int g = 0; g < log.groupCount(); g++) {
            if (at + AnaLog.DESCRIPTOR_LENGTH > page.length) {
                throw new IllegalArgumentException("the ANA log lists " + log.groupCount()
                        + " groups but ends after " + g);
            }
            long group = log.descriptorGroupId(at);
            int count = log.descriptorNsidCount(at);
            if (count < 0 || at + AnaLog.DESCRIPTOR_LENGTH + (long) count * 4 > page.length) {
                throw new IllegalArgumentException("ANA group " + group + " lists "
                        + Integer.toUnsignedString(count) + " NSIDs, beyond the log's " + page.length + " bytes");
            }
            AnaState state;
            try {
                state = log.descriptorState(at);
            } catch (IllegalArgumentException e) {
                LOG.warn("{}: ANA group {} has an unknown state ({}); its namespaces are taken as inaccessible",
                        id, group, e.getMessage());
                state = AnaState.INACCESSIBLE;
            }
            byGroup.put(group, state);
            for (int i = 0; i < count; i++) {
                long nsid = log.descriptorNsid(at, i);
                byNsid.put(nsid, state);
                groupOf.put(nsid, group);
            }
            at += AnaLog.DESCRIPTOR_LENGTH + count * 4;
        }
        return new Parsed(byNsid, groupOf, byGroup);
    }

    /** Sets each handle's group and state from the log; returns whether any state changed. */
    private boolean apply(byte[] page, List<NamespaceHandle> handles) {
        Parsed log;
        try {
            log = parse(page, ctrl.id);
        } catch (IllegalArgumentException e) {
            LOG.warn("{}: malformed ANA log ({}); ANA states unchanged", ctrl.id, e.getMessage());
            return false;
        }
        boolean changed = false;
        for (NamespaceHandle h : handles) {
            AnaState state = log.byNsid().get(h.nsid());
            long group = log.groupOf().getOrDefault(h.nsid(), h.anaGroup());
            if (state == null) {
                state = log.byGroup().get(group);
            }
            if (state == null) {
                if (h.anaFromLog()) {
                    LOG.debug("{}: namespace {} (ANA group {}) is in no group of this ANA log; its state stays {}",
                            ctrl.id, h.nsid(), group, h.anaState().label());
                    continue;
                }
                LOG.warn("{}: namespace {} (ANA group {}) is in no group of the ANA log; inaccessible until a log"
                        + " lists it", ctrl.id, h.nsid(), group);
                changed |= h.anaState() != AnaState.INACCESSIBLE;
                h.anaStateSeen(AnaState.INACCESSIBLE);
                continue;
            }
            AnaState before = h.anaState();
            if (before != state) {
                if (h.anaFromLog()) {
                    LOG.info("{}: namespace {} (ANA group {}) {} -> {}", ctrl.id, h.nsid(), group, before.label(),
                            state.label());
                } else {
                    // The first log read at connect: a state, not a change worth telling every program about.
                    LOG.debug("{}: namespace {} (ANA group {}) {}", ctrl.id, h.nsid(), group, state.label());
                }
                changed = true;
            }
            h.anaState(group, state);
        }
        return changed;
    }
}

package io.nvmeof.initiator;

import io.nvmeof.protocol.log.AnaState;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.identify.NamespaceDescriptor;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller's namespaces and their {@link NamespaceHandle}s: scans the active namespace list (at each connect,
 * reconnect and rescan), decides which handles still name the same namespace, and retires the others.
 */
final class NamespaceScanner {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);
    /** NSID FFFFFFFFh: all namespaces, never one of them. */
    private static final long BROADCAST_NSID = 0xFFFF_FFFFL;
    /**
     * The most active namespaces taken from a controller (64 pages of the list): each costs an Identify at every
     * connect and rescan; Linux nvmet allows 1024 per subsystem. More is taken for a list that never ends.
     */
    static final int MAX_NAMESPACES = 65536;

    private final NvmeofController ctrl;
    private final TransportId id;
    private volatile List<NamespaceHandle> namespaces = List.of();
    private volatile Map<Long, NamespaceHandle> byNsid = Map.of();

    NamespaceScanner(NvmeofController ctrl) {
        this.ctrl = ctrl;
        this.id = ctrl.id;
    }

    /** The handles of the active namespaces, as of the last scan. */
    List<NamespaceHandle> namespaces() {
        return namespaces;
    }

    /** The handle of the namespace {@code nsid} names now (as of the last scan): {@link NvmeofController#namespace}. */
    NamespaceHandle namespace(long nsid) {
        NamespaceHandle ns = byNsid.get(nsid);
        if (ns == null) {
            throw new IllegalArgumentException("namespace " + nsid + " is not active on " + id + " (active: "
                    + byNsid.keySet() + ")");
        }
        return ns;
    }

    /** Scans again and tells the state listener of a change; see {@link NvmeofController#rescanNamespaces()}. */
    List<NamespaceHandle> rescan() {
        ctrl.association.lock();
        try {
            boolean changed = identifyNamespaces();
            try {
                ctrl.anaStates.refresh();
            } finally {
                // Told even when the ANA log could not be read: the new handles are published already.
                if (changed) {
                    LOG.info("{}: namespaces now {}", id, byNsid.keySet());
                    report();
                }
            }
            return namespaces;
        } finally {
            ctrl.association.unlock();
        }
    }

    /** Tells the state listener (on the housekeeping thread) the namespaces are now {@link #namespaces()}. */
    void report() {
        ControllerStateListener l = ctrl.options.stateListener();
        if (l != null) {
            List<NamespaceHandle> now = namespaces;
            ctrl.housekeep(() -> l.namespacesChanged(ctrl, now));
        }
    }

    /**
     * Reads the active namespace list and each namespace's Identify data and identifiers. A handle is kept when its
     * NSID still names the same namespace: the same identifiers (compared as Linux's {@code nvme_ns_ids_equal}; for a
     * controller that reports none, the same size) and the same block size; a kept handle's size follows a namespace
     * that grew. Every other old handle is retired ({@link NamespaceHandle#retire}): its requests not yet sent fail
     * with {@link IoCallback#ERR_NAMESPACE_GONE}. Returns whether anything changed (handles or sizes).
     *
     * <p>Ordering, which keeps a retired handle's requests off the wire: the retirement is a volatile write made here,
     * on the thread holding {@link NvmeofController#association}. On a reconnect this runs inside
     * {@link AssociationSetup#establish}, before the new I/O queues are published ({@code ioQueues}) and before
     * {@code state} becomes CONNECTED; until then {@link NvmeofController#pickQueue} gives out
     * {@link NvmeofController#held}, and the old association's queues are failed already, so every request of the old
     * handle is either held or handed back to {@link NvmeofController#held}, and {@link HeldRequests#drain} (which
     * reads CONNECTED, or runs after it on this thread) sees the retirement. A request that reaches a queue anyway
     * (picked just before, a live rescan) is checked again on that queue's I/O thread just before it is written
     * ({@code SlotQueue.pollSubmitted}, and {@code startPending} for the overflow queue): a check that comes after
     * this write in the synchronization order sees it, one that comes before was a send already under way when the
     * host retired the handle (as one on the wire, outside its control).
     */
    boolean identifyNamespaces() {
        // CNS 02h lists active NSIDs greater than the given one, in increasing order, 1024 per page, zero-terminated.
        // A list that breaks the rules is taken as Linux takes it (each NSID it names is scanned), less what cannot be
        // a namespace: the broadcast NSID and repeats. Paging goes on from the highest NSID seen, and stops at a full
        // page with nothing beyond the last one, which would otherwise be asked for again forever.
        java.util.TreeSet<Long> nsids = new java.util.TreeSet<>();
        long after = 0;
        String oddity = null;
        while (true) {
            ByteBuffer list = ByteBuffer.wrap(ctrl.adminCommands.identify(Opcodes.CNS_ACTIVE_NAMESPACE_LIST, after))
                    .order(ByteOrder.LITTLE_ENDIAN);
            int n = 0;
            long highest = after;
            for (int i = 0; i < AdminCommands.IDENTIFY_LENGTH / 4; i++) {
                long nsid = list.getInt(i * 4) & 0xFFFF_FFFFL;
                if (nsid == 0) {
                    break;
                }
                n++;
                if (nsid == BROADCAST_NSID) {
                    oddity = "NSID FFFFFFFFh (the broadcast value, no namespace) listed; skipped";
                    continue;
                }
                if (nsid <= after || !nsids.add(nsid)) {
                    oddity = "NSID " + nsid + " out of order or listed twice (the list must increase)";
                    continue;
                }
                if (nsids.size() > MAX_NAMESPACES) {
                    throw new NvmeofException("controller " + id + " lists more than " + MAX_NAMESPACES + " active"
                            + " namespaces; this initiator handles at most " + MAX_NAMESPACES);
                }
                highest = Math.max(highest, nsid);
            }
            if (n < AdminCommands.IDENTIFY_LENGTH / 4 || highest == after) {
                break;
            }
            after = highest;
        }
        if (oddity != null) {
            LOG.warn("{}: the active namespace list breaks the specification's rules: {}", id, oddity);
        }
        Map<Long, NamespaceHandle> map = new LinkedHashMap<>();
        Map<NamespaceHandle, Long> resized = new java.util.IdentityHashMap<>();
        for (long nsid : nsids) {
            byte[] data;
            try {
                data = ctrl.adminCommands.identify(Opcodes.CNS_NAMESPACE, nsid);
            } catch (NvmeStatusException e) {
                // The controller refused this one namespace (removed since the list, or listed by mistake): the others
                // are still served, as Linux skips a namespace whose Identify fails. Transport errors still fail.
                LOG.warn("{}: namespace {} listed as active but its Identify failed ({}); skipped", id, nsid,
                        e.getMessage());
                continue;
            }
            IdentifyNamespace ns = new IdentifyNamespace().<IdentifyNamespace>wrap(new UnsafeBuffer(data), 0);
            if (ns.nsze() == 0) {
                LOG.debug("{}: namespace {} reports size 0, skipped", id, nsid);
                continue;
            }
            int format = ns.formatIndex(); // bits 6:5 too: a format above 15 is not the one bits 3:0 name
            int shift = ns.lbafDataSizeShift(format);
            if (shift < 9 || shift > 30) {
                LOG.warn("{}: namespace {} has an unusable LBA data size 2^{}, skipped", id, nsid, shift);
                continue;
            }
            if (1L << shift > ctrl.maxTransfer) {
                // No read or write of one block fits a command; Linux does not add such a namespace either.
                LOG.warn("{}: namespace {} has blocks of {} bytes, more than one command may carry ({} bytes, MDTS);"
                        + " skipped", id, nsid, 1 << shift, ctrl.maxTransfer);
                continue;
            }
            // NSZE is 64 bits: the size in bytes must fit a long (sizeBytes, byte offsets); no real namespace is near.
            if (ns.nsze() < 0 || ns.nsze() > Long.MAX_VALUE >>> shift) {
                LOG.warn("{}: namespace {} claims {} blocks of {} bytes, beyond 2^63 bytes; skipped", id, nsid,
                        Long.toUnsignedString(ns.nsze()), 1 << shift);
                continue;
            }
            if (ns.lbafMetadataSize(format) != 0 && (ns.flbas() & 0x10) != 0) {
                LOG.warn("{}: namespace {} uses extended LBAs with {} bytes of metadata; this initiator transfers data only",
                        id, nsid, ns.lbafMetadataSize(format));
            }
            NamespaceIdentifiers ids = namespaceIdentifiers(nsid, ns);
            int blockSize = 1 << shift;
            NamespaceHandle old = byNsid.get(nsid);
            if (old != null && sameNamespace(old, ids, ns.nsze(), blockSize)) {
                if (old.blockCount() != ns.nsze()) {
                    resized.put(old, ns.nsze());
                }
                map.put(nsid, old);
                old.anaGroupIdentified(ns.anagrpid());
            } else {
                NamespaceHandle h = new NamespaceHandle(ctrl, nsid, ns.nsze(), blockSize, ids);
                if (ctrl.reportsAna()) {
                    // As Linux's ANA-pending namespace: no usable state until an ANA log lists it (read next).
                    h.anaStateSeen(AnaState.INACCESSIBLE);
                }
                h.anaGroupIdentified(ns.anagrpid());
                map.put(nsid, h);
            }
        }
        Map<Long, NamespaceHandle> before = byNsid;
        boolean changed = !map.equals(before) || !resized.isEmpty();
        resized.forEach((h, blocks) -> {
            LOG.info("{}: namespace {} ({}) resized from {} to {} blocks of {} bytes", id, h.nsid(), h.identifiers(),
                    h.blockCount(), blocks, h.blockSize());
            h.resize(blocks);
        });
        // The new handles first, so a caller told its handle was retired finds the new one at once.
        byNsid = Collections.unmodifiableMap(map);
        namespaces = List.copyOf(map.values());
        for (NamespaceHandle old : before.values()) {
            NamespaceHandle now = map.get(old.nsid());
            if (now != old) {
                String why = retirement(old, now, nsids.contains(old.nsid()));
                LOG.warn("{}; its handle fails every request not yet sent", why);
                old.retire(why);
            }
        }
        return changed;
    }

    /**
     * Whether {@code old} is still the namespace Identify now describes: as Linux's {@code nvme_ns_ids_equal} (every
     * identifier equal, all-zero ones counting as none) with the same block size; without any identifier on either
     * side, size and block size are all there is to go by.
     */
    private static boolean sameNamespace(NamespaceHandle old, NamespaceIdentifiers ids, long nsze, int blockSize) {
        if (old.blockSize() != blockSize) {
            return false;
        }
        if (!ids.any() && !old.identifiers().any()) {
            return old.blockCount() == nsze;
        }
        return old.identifiers().sameAs(ids);
    }

    /** Why {@code old} is retired, for its requests' errors and the log: which NSID, removed or replaced and how. */
    private String retirement(NamespaceHandle old, NamespaceHandle now, boolean listed) {
        String ns = "namespace " + old.nsid() + " of " + id;
        if (now == null) {
            return ns + " was removed (" + (listed ? "listed, but its Identify failed or it is no longer usable"
                    : "no longer in the active namespace list") + ")";
        }
        NamespaceIdentifiers was = old.identifiers();
        NamespaceIdentifiers is = now.identifiers();
        if (!was.sameAs(is)) {
            return ns + " was replaced: its identifiers changed (" + was.changesTo(is) + ")";
        }
        if (old.blockSize() != now.blockSize()) {
            return ns + " was replaced: its block size changed from " + old.blockSize() + " to " + now.blockSize()
                    + " bytes";
        }
        return ns + " was replaced: the controller reports no identifiers, and its size changed from "
                + old.blockCount() + " to " + now.blockCount() + " blocks";
    }

    /**
     * NGUID and EUI-64 of Identify Namespace, and the Namespace Identification Descriptor list (CNS 03h) for the UUID,
     * as Linux reads it: from NVMe 1.3 on, and a controller that refuses it or returns an empty or malformed list
     * just reports no UUID. Identifiers the list gives win over Identify Namespace's (as in Linux), which fill in
     * those it does not give.
     */
    private NamespaceIdentifiers namespaceIdentifiers(long nsid, IdentifyNamespace ns) {
        byte[] nguid = new byte[NamespaceIdentifiers.NGUID_LENGTH];
        byte[] eui64 = new byte[NamespaceIdentifiers.EUI64_LENGTH];
        ns.readNguid(nguid);
        ns.readEui64(eui64);
        UUID uuid = null;
        if (ctrl.vs >= ControllerRegisters.VERSION_1_3) {
            byte[] list = null;
            try {
                list = ctrl.adminCommands.identify(Opcodes.CNS_NAMESPACE_DESCRIPTORS, nsid);
            } catch (NvmeStatusException e) {
                LOG.debug("{}: namespace {}: no Namespace Identification Descriptor list ({})", id, nsid,
                        e.getMessage());
            }
            NamespaceIdentifiers listed = list == null ? null : descriptors(nsid, list);
            if (listed != null) {
                if (listed.nguid() != null) {
                    nguid = listed.nguid();
                }
                if (listed.eui64() != null) {
                    eui64 = listed.eui64();
                }
                uuid = listed.uuid();
            }
        }
        return new NamespaceIdentifiers(nguid, eui64, uuid);
    }

    /** Parses a descriptor list; null (and a warning) when an entry's length does not fit its type or the page. */
    private NamespaceIdentifiers descriptors(long nsid, byte[] list) {
        byte[] nguid = null;
        byte[] eui64 = null;
        UUID uuid = null;
        NamespaceDescriptor d = new NamespaceDescriptor();
        UnsafeBuffer page = new UnsafeBuffer(list);
        for (int at = 0; at + NamespaceDescriptor.NID <= list.length; ) {
            d.wrap(page, at);
            int type = d.nidt();
            int len = d.nidl();
            if (len == 0) {
                break; // the list ends at the first entry without an identifier
            }
            int expected = type == NamespaceDescriptor.TYPE_EUI64 ? NamespaceIdentifiers.EUI64_LENGTH
                    : type == NamespaceDescriptor.TYPE_NGUID || type == NamespaceDescriptor.TYPE_UUID ? 16 : -1;
            if (at + NamespaceDescriptor.NID + len > list.length || expected >= 0 && len != expected) {
                LOG.warn("{}: namespace {}: malformed Namespace Identification Descriptor (type {}, length {} at"
                        + " offset {}); its list is ignored", id, nsid, type, len, at);
                return null;
            }
            byte[] nid = new byte[len];
            d.nid(nid);
            if (type == NamespaceDescriptor.TYPE_EUI64) {
                eui64 = nid;
            } else if (type == NamespaceDescriptor.TYPE_NGUID) {
                nguid = nid;
            } else if (type == NamespaceDescriptor.TYPE_UUID) {
                ByteBuffer b = ByteBuffer.wrap(nid); // RFC 4122 byte order, as Linux's uuid_t
                uuid = new UUID(b.getLong(), b.getLong());
            }
            at += NamespaceDescriptor.NID + len;
        }
        return new NamespaceIdentifiers(nguid, eui64, uuid);
    }
}

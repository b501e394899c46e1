package io.nvmeof.loader;

import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.MultipathNamespace;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetLabel;
import io.nvmeof.loader.layout.DatasetPart;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether bytes read from a dataset's namespaces can be the dataset's: a target that restarted (a RAM namespace comes
 * back empty, perhaps under the identifiers a restored configuration gives it) or a namespace replaced behind a
 * reconnect serves other bytes at the same addresses, and nothing in a fixed-size record tells zeros from data.
 *
 * <p>A <em>stamp</em> names the controllers' associations: twice the sum of their
 * {@link NvmeofController#establishedGeneration()}s (the last association each brought up: written before any request
 * goes on it, never going back, not moved by attempts that failed), plus one while a path of a multipath part is
 * usable (connected, ANA optimized or non-optimized: {@link MultipathNamespace} may send reads on it) without its
 * label checked through it alone on its current association. A read that completed seeing stamp S came through
 * associations no later than S's. An even stamp S is <em>trusted</em> once every namespace, checked while the stamp
 * stayed S, was still the handle opened (same identifiers) and still held the label read at open; the stamp at open is
 * trusted so. An odd stamp never is. Data read under a trusted stamp is handed out; data read under another is not:
 * {@link #verify} checks the associations now, and what was read through one that is gone unchecked is read again.
 *
 * <p>A part over several paths counts every path's controller in the stamp, and each connected path's label is
 * checked on its own ({@link #checkEachPath}). A path that is connected but cannot read its label (ANA inaccessible: a
 * standby) stays unchecked and takes no reads; once it is usable it makes the stamp odd, so nothing read then is
 * handed out before its label is checked through it.
 */
final class ReconnectCheck {
    private static final Logger LOG = LoggerFactory.getLogger(ReconnectCheck.class);
    /** Reconnects that keep coming while the labels are checked: give up after this many tries, saying so. */
    private static final int ATTEMPTS = 10;
    /** The longest wait for one path's label while its controller stays connected on one association. */
    private static final long LABEL_WAIT_NANOS = 10_000_000_000L;
    /** Not verified through this path on any association. */
    private static final int UNVERIFIED = -1;

    private final List<DatasetPart> parts;
    private final NvmeofController[] controllers;
    /** By part: its paths when it has several, else null. */
    private final NamespaceHandle[][] multipaths;
    /**
     * By part (a multipath part's) and path: the {@link NvmeofController#establishedGeneration()} on which the label
     * was last read through that path alone and found the dataset's, or {@link #UNVERIFIED}.
     */
    private final AtomicIntegerArray[] verifiedAt;
    private final Set<Integer> trusted = new HashSet<>();
    /** No stamp: stamps are never negative. */
    private static final int NONE = Integer.MIN_VALUE;
    /** The stamp trusted last: what nearly every check compares with. */
    private volatile int lastTrusted = NONE;

    /**
     * Trusts nothing until {@link #opened}.
     *
     * @param partPaths by part, its handle on each path (one for a single-path part): every path's controller counts,
     *                  a reconnect of any, even one no read goes through now, may bring back a path to other bytes
     */
    ReconnectCheck(List<DatasetPart> parts, NamespaceHandle[][] partPaths) {
        this.parts = parts;
        List<NamespaceHandle> every = new ArrayList<>();
        this.multipaths = new NamespaceHandle[partPaths.length][];
        this.verifiedAt = new AtomicIntegerArray[partPaths.length];
        for (int p = 0; p < partPaths.length; p++) {
            every.addAll(List.of(partPaths[p]));
            if (partPaths[p].length > 1) {
                multipaths[p] = partPaths[p];
                verifiedAt[p] = new AtomicIntegerArray(partPaths[p].length);
                for (int i = 0; i < partPaths[p].length; i++) {
                    verifiedAt[p].set(i, UNVERIFIED);
                }
            }
        }
        this.controllers = controllersOf(every).toArray(new NvmeofController[0]);
    }

    /**
     * The labels were read at open (every path's, for a multipath part): trusts {@code openedAt}, the stamp before,
     * if nothing moved since (no reconnect, no path usable unchecked).
     */
    synchronized void opened(int openedAt) {
        if (stamp() == openedAt) {
            trusted.add(openedAt);
            lastTrusted = openedAt;
        }
    }

    /** The distinct controllers of {@code namespaces}, in order. */
    static List<NvmeofController> controllersOf(List<NamespaceHandle> namespaces) {
        List<NvmeofController> out = new ArrayList<>();
        for (NamespaceHandle ns : namespaces) {
            if (!out.contains(ns.controller())) {
                out.add(ns.controller());
            }
        }
        return out;
    }

    /**
     * The stamp of these namespaces' controllers now, no path counted as unchecked (taken before their labels are
     * read at open).
     */
    static int stampOf(List<NamespaceHandle> namespaces) {
        int s = 0;
        for (NvmeofController c : controllersOf(namespaces)) {
            s += c.establishedGeneration();
        }
        return s * 2;
    }

    /** The controllers' associations now, odd while a usable path is unchecked. Any thread; no allocation. */
    int stamp() {
        int s = 0;
        for (NvmeofController c : controllers) {
            s += c.establishedGeneration();
        }
        return s * 2 + (usableUnchecked() ? 1 : 0);
    }

    /** Whether a path of a multipath part may take reads (as {@link MultipathNamespace} chooses) unchecked. */
    private boolean usableUnchecked() {
        for (int p = 0; p < multipaths.length; p++) {
            NamespaceHandle[] paths = multipaths[p];
            for (int i = 0; paths != null && i < paths.length; i++) {
                if (MultipathNamespace.usable(paths[i]) && verifiedAt[p].get(i) != paths[i].controller().establishedGeneration()) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether data read under {@code stamp} is the dataset's. */
    boolean trusted(int stamp) {
        if (stamp == lastTrusted) {
            return true;
        }
        synchronized (this) {
            return trusted.contains(stamp);
        }
    }

    /** The current stamp, {@link #verify verified} first unless it is trusted. */
    int trustedNow(NvmeofDataset ds) throws IOException {
        int now = stamp();
        return trusted(now) ? now : verify(ds);
    }

    /**
     * Makes the current stamp trusted, checking every part's namespace and label if it is not, and returns it. Blocks
     * for the label reads of single-path parts (a reconnect in progress holds them), and of a multipath part none of
     * whose paths is connected (its multipath namespace waits for one); a path's own label read is waited for only
     * while its controller stays connected on one association.
     *
     * @throws DatasetChangedException if a namespace was replaced or removed, or its label is no longer the one read
     *                                 at open
     * @throws IOException             if a label cannot be read (the connection stays lost)
     */
    synchronized int verify(NvmeofDataset ds) throws IOException {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int before = stamp();
            if (trusted.contains(before)) {
                return before;
            }
            boolean whole = true;
            for (int p = 0; p < parts.size(); p++) {
                whole &= check(ds, p);
            }
            // Odd: a usable path is unchecked (it became usable during the checks, or its label could not be read).
            if (whole && stamp() == before && (before & 1) == 0) {
                trusted.add(before);
                lastTrusted = before;
                LOG.info("{}: its namespaces reconnected; each still holds it (identifiers and label unchanged)", ds);
                return before;
            }
        }
        throw new IOException(ds + ": the connection to its namespaces was lost again every time its labels were"
                + " checked (" + ATTEMPTS + " tries); read on once the targets are reachable");
    }

    /** Checks part {@code part}; false if a path was lost during the check (check again). */
    private boolean check(NvmeofDataset ds, int part) throws IOException {
        DatasetPart p = parts.get(part);
        NamespaceHandle ns = p.namespace();
        if (!ds.isCurrent(part)) {
            throw changed(ds, part, retired(ns));
        }
        NamespaceHandle[] paths = ds.paths(part);
        if (paths.length > 1) {
            int checked = checkEachPath(ds, part, paths);
            if (checked != 0) {
                return checked > 0;
            }
        }
        // One path, or none of several connected and readable now: through the part's reader, which waits for a path
        // (the controller holds the read while it reconnects; a multipath namespace, up to its failover timeout). A
        // multipath read checks no path in particular: the path it went through, back on a new association, makes the
        // stamp move (and odd), so the next attempt checks it on its own.
        DatasetLabel now;
        NamespaceIo io = ds.reader(part);
        try {
            now = DatasetPart.readLabel(io);
        } catch (IOException e) {
            if (!ds.isCurrent(part)) {
                throw changed(ds, part, retired(ns));
            }
            if (e.getCause() instanceof IllegalArgumentException bad) {
                throw changed(ds, part, "its label is not the dataset's any more (" + bad.getMessage() + ")");
            }
            throw e;
        } finally {
            ds.returnReader(part, io);
        }
        compare(ds, part, now, "");
        return true;
    }

    /**
     * Checks the label through each path of a multipath part that is connected now, each through its own handle: a
     * label read through the multipath namespace would check only the path it picked, and a path back from a
     * reconnect to other bytes (a RAM target restarted alone under the same identifiers) would then serve reads
     * unchecked. A path not connected takes no reads (they go to the others); its reconnect moves the stamp and brings
     * a check again. A path whose label cannot be read while it is connected (an ANA state that refuses I/O, an error)
     * stays unchecked: while it is usable the stamp is odd, never trusted.
     *
     * @return how many paths were checked; 0 if none could be (check through the multipath namespace, which waits for
     *         a path); -1 if a path was lost during its check (its read abandoned: check again)
     */
    private int checkEachPath(NvmeofDataset ds, int part, NamespaceHandle[] paths) throws IOException {
        IOException unread = null;
        int checked = 0;
        boolean lost = false;
        for (int i = 0; i < paths.length; i++) {
            NamespaceHandle path = paths[i];
            if (path.controller().state() != ControllerState.CONNECTED || !path.isCurrent()) {
                continue;
            }
            String where = " (through path " + i + ", " + path.controller().transportId().address() + ")";
            DatasetLabel now;
            try {
                now = readPathLabel(ds, part, i);
            } catch (NamespaceIo.GaveUpException e) {
                lost = true;
                continue;
            } catch (IOException e) {
                if (e.getCause() instanceof IllegalArgumentException bad) {
                    throw changed(ds, part, "its label is not the dataset's any more" + where + " ("
                            + bad.getMessage() + ")");
                }
                unread = e;
                continue;
            }
            compare(ds, part, now, where);
            checked++;
        }
        if (unread != null && checked > 0) {
            LOG.info("{}, part {}: its label could not be read through one of its paths, checked through {} other(s);"
                    + " that path is checked before reads through it are used: {}", ds, part + 1, checked,
                    unread.getMessage());
        }
        return lost ? -1 : checked;
    }

    /**
     * Reads part {@code part}'s label through path {@code path} alone, waiting only while that path's controller stays
     * connected on one association (at most {@link #LABEL_WAIT_NANOS}); a label that is the dataset's marks the path
     * checked on that association. Under this check's lock, or at open.
     *
     * @throws NamespaceIo.GaveUpException if the path was lost (or stayed silent) during the read; its reader, whose
     *                                     read is still in flight, is dropped
     */
    DatasetLabel readPathLabel(NvmeofDataset ds, int part, int path) throws IOException {
        NamespaceHandle h = ds.paths(part)[path];
        NvmeofController c = h.controller();
        int gen = c.establishedGeneration();
        long deadline = System.nanoTime() + Math.min(LABEL_WAIT_NANOS, c.options().commandTimeout().toNanos());
        NamespaceIo io = ds.pathReader(part, path).patience(() -> c.isConnected() && h.isCurrent()
                && c.establishedGeneration() == gen && System.nanoTime() - deadline < 0);
        DatasetLabel label;
        try {
            label = DatasetPart.readLabel(io);
        } finally {
            if (!io.settled()) {
                ds.dropPathReader(part, path);
            }
        }
        if (parts.get(part).label().equals(label) && c.establishedGeneration() == gen) {
            verifiedAt[part].set(path, gen);
        }
        return label;
    }

    /** Throws if {@code now}, read from part {@code part} ({@code where}: through which path), is not its label. */
    private void compare(NvmeofDataset ds, int part, DatasetLabel now, String where) throws DatasetChangedException {
        DatasetLabel was = parts.get(part).label();
        if (now == null) {
            throw changed(ds, part, "it holds no dataset label any more" + where + " (it reads as an empty namespace:"
                    + " a RAM namespace whose target restarted?)");
        }
        if (!now.datasetId().equals(was.datasetId())) {
            throw changed(ds, part, "it now holds dataset " + now.name() + " (" + now.datasetId() + ")" + where);
        }
        if (!now.equals(was)) {
            throw changed(ds, part, "its label changed" + where + " (written at " + now.writtenAtMs() + " ms, was "
                    + was.writtenAtMs() + " ms: imported again?)");
        }
    }

    private static String retired(NamespaceHandle ns) {
        return "the initiator retired its handle (" + ns.retiredBecause().orElse("the namespace was replaced") + ")";
    }

    private static DatasetChangedException changed(NvmeofDataset ds, int part, String what) {
        return new DatasetChangedException("dataset " + ds.name() + " (" + ds.id() + "), part " + (part + 1) + " of "
                + ds.parts().size() + " on " + DatasetPart.describe(ds.parts().get(part).namespace()) + ", is gone or"
                + " changed after a reconnect: " + what + ". Nothing read from it since was handed out. Bring the"
                + " dataset back there (restart the target with its data, or import it again) and resume from the"
                + " loader's last checkpoint; if it was replaced on purpose, open the dataset again");
    }
}

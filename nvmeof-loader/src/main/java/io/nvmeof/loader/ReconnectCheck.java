package io.nvmeof.loader;

import io.nvmeof.initiator.ControllerState;
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
 * <p>A <em>stamp</em> names the controllers' associations: the sum of their
 * {@link NvmeofController#associationGeneration()}s, which only grows and grows with every reconnect attempt (for
 * the controllers {@link NvmeofDataset#connect} opened, a controller that is down counts as the association it lost
 * until it connects again: {@link AssociationReports}). A read
 * that completed seeing stamp S came through associations no later than S. Stamp S is <em>trusted</em> once every
 * namespace, checked while the stamp stayed S, was still the handle opened (same identifiers) and still held the label
 * read at open; the stamp at open is trusted so. Data read under a trusted stamp is handed out; data read under
 * another is not: {@link #verify} checks the associations now, and what was read through one that is gone unchecked
 * is read again.
 *
 * <p>A part over several paths counts every path's controller in the stamp, and each connected path's label is
 * checked on its own ({@link #checkEachPath}); a path that is down counts as the association it lost, so it moves the
 * stamp (and brings a check through it) when it connects again, not at each failed attempt meanwhile.
 */
final class ReconnectCheck {
    private static final Logger LOG = LoggerFactory.getLogger(ReconnectCheck.class);
    /** Reconnects that keep coming while the labels are checked: give up after this many tries, saying so. */
    private static final int ATTEMPTS = 10;

    private final List<DatasetPart> parts;
    private final NvmeofController[] controllers;
    /** By controller: what it reported of its associations (null for a caller's controllers). */
    private final AtomicIntegerArray[] reports;
    private final Set<Integer> trusted = new HashSet<>();
    /** No stamp: stamps are sums of generations, never negative. */
    private static final int NONE = Integer.MIN_VALUE;
    /** The stamp trusted last: what nearly every check compares with. */
    private volatile int lastTrusted;

    /**
     * @param controllers every path's controller: a reconnect of any, even one no read goes through now, may bring
     *                    back a path to other bytes
     * @param reports     what the controllers reported of their associations, or null (a caller's controllers)
     * @param openedAt    the stamp before the parts' labels were read at open; trusted if nothing moved since
     */
    ReconnectCheck(List<DatasetPart> parts, List<NvmeofController> controllers, AssociationReports reports,
                   int openedAt) {
        this.parts = parts;
        this.controllers = controllers.toArray(new NvmeofController[0]);
        this.reports = reportsOf(this.controllers, reports);
        // A reconnect while the labels were read at open: nothing is trusted until the first check.
        this.lastTrusted = stamp() == openedAt ? openedAt : NONE;
        if (lastTrusted != NONE) {
            trusted.add(openedAt);
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
     * The stamp of these namespaces' controllers now (taken before their labels are read at open).
     *
     * @param reports what they reported of their associations, or null (a caller's controllers)
     */
    static int stampOf(List<NamespaceHandle> namespaces, AssociationReports reports) {
        NvmeofController[] cs = controllersOf(namespaces).toArray(new NvmeofController[0]);
        return stampOf(cs, reportsOf(cs, reports));
    }

    private static AtomicIntegerArray[] reportsOf(NvmeofController[] controllers, AssociationReports reports) {
        AtomicIntegerArray[] out = new AtomicIntegerArray[controllers.length];
        for (int i = 0; reports != null && i < out.length; i++) {
            out[i] = reports.of(controllers[i]);
        }
        return out;
    }

    private static int stampOf(NvmeofController[] controllers, AtomicIntegerArray[] reports) {
        int s = 0;
        for (int i = 0; i < controllers.length; i++) {
            s += AssociationReports.association(controllers[i], reports[i]);
        }
        return s;
    }

    /** The controllers' associations now. Any thread; no allocation. */
    int stamp() {
        return stampOf(controllers, reports);
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
     * for the label reads (a reconnect in progress holds them).
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
            for (int p = 0; p < parts.size(); p++) {
                check(ds, p);
            }
            if (stamp() == before) {
                trusted.add(before);
                lastTrusted = before;
                LOG.info("{}: its namespaces reconnected; each still holds it (identifiers and label unchanged)", ds);
                return before;
            }
        }
        throw new IOException(ds + ": the connection to its namespaces was lost again every time its labels were"
                + " checked (" + ATTEMPTS + " tries); read on once the targets are reachable");
    }

    private void check(NvmeofDataset ds, int part) throws IOException {
        DatasetPart p = parts.get(part);
        NamespaceHandle ns = p.namespace();
        if (!ds.isCurrent(part)) {
            throw changed(ds, part, retired(ns));
        }
        NamespaceHandle[] paths = ds.paths(part);
        if (paths.length > 1 && checkEachPath(ds, part, paths)) {
            return;
        }
        // One path, or none of several connected now: through the part's reader, which waits for a path (the
        // controller holds the read while it reconnects; a multipath namespace, up to its failover timeout).
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
    }

    /**
     * Checks the label through each path of a multipath part that is connected now, each through its own handle: a
     * label read through the multipath namespace would check only the path it picked, and a path back from a
     * reconnect to other bytes (a RAM target restarted alone under the same identifiers) would then serve reads
     * unchecked. A path not connected takes no reads (they go to the others); its reconnect moves the stamp and brings
     * a check again. A path whose label cannot be read while it is connected (an ANA state that refuses I/O, an error)
     * is passed over, logged, if another path's label was checked.
     *
     * @return false if no path was connected and current, so nothing was checked
     */
    private boolean checkEachPath(NvmeofDataset ds, int part, NamespaceHandle[] paths) throws IOException {
        IOException unread = null;
        int checked = 0;
        for (int i = 0; i < paths.length; i++) {
            NamespaceHandle path = paths[i];
            if (path.controller().state() != ControllerState.CONNECTED || !path.isCurrent()) {
                continue;
            }
            String where = " (through path " + i + ", " + path.controller().transportId().address() + ")";
            DatasetLabel now;
            try {
                now = DatasetPart.readLabel(ds.pathReader(part, i));
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
        if (unread != null) {
            if (checked == 0) {
                throw unread;
            }
            LOG.warn("{}, part {}: its label could not be read through one of its paths, checked through {} other(s):"
                    + " {}", ds, part + 1, checked, unread.getMessage());
        }
        return checked > 0;
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

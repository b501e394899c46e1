package io.nvmeof.loader;

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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether bytes read from a dataset's namespaces can be the dataset's: a target that restarted (a RAM namespace comes
 * back empty, perhaps under the identifiers a restored configuration gives it) or a namespace replaced behind a
 * reconnect serves other bytes at the same addresses, and nothing in a fixed-size record tells zeros from data.
 *
 * <p>A <em>stamp</em> names the controllers' associations: the sum of their
 * {@link NvmeofController#associationGeneration()}s, which only grows and grows with every reconnect attempt. A read
 * that completed seeing stamp S came through associations no later than S. Stamp S is <em>trusted</em> once every
 * namespace, checked while the stamp stayed S, was still the handle opened (same identifiers) and still held the label
 * read at open; the stamp at open is trusted so. Data read under a trusted stamp is handed out; data read under
 * another is not: {@link #verify} checks the associations now, and what was read through one that is gone unchecked
 * is read again.
 */
final class ReconnectCheck {
    private static final Logger LOG = LoggerFactory.getLogger(ReconnectCheck.class);
    /** Reconnects that keep coming while the labels are checked: give up after this many tries, saying so. */
    private static final int ATTEMPTS = 10;

    private final List<DatasetPart> parts;
    private final NvmeofController[] controllers;
    private final Set<Integer> trusted = new HashSet<>();
    /** No stamp: stamps are sums of generations, never negative. */
    private static final int NONE = Integer.MIN_VALUE;
    /** The stamp trusted last: what nearly every check compares with. */
    private volatile int lastTrusted;

    /**
     * @param openedAt the stamp before the parts' labels were read at open; trusted if nothing moved since
     */
    ReconnectCheck(List<DatasetPart> parts, int openedAt) {
        this.parts = parts;
        List<NamespaceHandle> namespaces = new ArrayList<>();
        for (DatasetPart p : parts) {
            namespaces.add(p.namespace());
        }
        this.controllers = controllersOf(namespaces).toArray(new NvmeofController[0]);
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

    /** The stamp of these namespaces' controllers now (taken before their labels are read at open). */
    static int stampOf(List<NamespaceHandle> namespaces) {
        return stampOf(controllersOf(namespaces).toArray(new NvmeofController[0]));
    }

    private static int stampOf(NvmeofController[] controllers) {
        int s = 0;
        for (NvmeofController c : controllers) {
            s += c.associationGeneration();
        }
        return s;
    }

    /** The controllers' associations now. Any thread; no allocation. */
    int stamp() {
        return stampOf(controllers);
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
        if (!ns.isCurrent()) {
            throw changed(ds, part, retired(ns));
        }
        DatasetLabel now;
        NamespaceIo io = ds.reader(part);
        try {
            now = DatasetPart.readLabel(io);
        } catch (IOException e) {
            if (!ns.isCurrent()) {
                throw changed(ds, part, retired(ns));
            }
            if (e.getCause() instanceof IllegalArgumentException bad) {
                throw changed(ds, part, "its label is not the dataset's any more (" + bad.getMessage() + ")");
            }
            throw e;
        } finally {
            ds.returnReader(part, io);
        }
        DatasetLabel was = p.label();
        if (now == null) {
            throw changed(ds, part, "it holds no dataset label any more (it reads as an empty namespace: a RAM namespace"
                    + " whose target restarted?)");
        }
        if (!now.datasetId().equals(was.datasetId())) {
            throw changed(ds, part, "it now holds dataset " + now.name() + " (" + now.datasetId() + ")");
        }
        if (!now.equals(was)) {
            throw changed(ds, part, "its label changed (written at " + now.writtenAtMs() + " ms, was " + was.writtenAtMs()
                    + " ms: imported again?)");
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

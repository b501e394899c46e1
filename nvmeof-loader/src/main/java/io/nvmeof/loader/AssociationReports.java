package io.nvmeof.loader;

import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.ControllerStateListener;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * What {@link NvmeofDataset#connect} controllers reported of their associations, for {@link ReconnectCheck}: the
 * generation each last turned connected on and the one it last lost. A controller's
 * {@link NvmeofController#associationGeneration()} grows with every reconnect attempt, the failed ones too; with
 * several paths, one path down for minutes (its attempts failing every reconnect delay) would make every read of the
 * others look as if it came through a new association, to be checked and read again, over and over. A failed attempt
 * carried no data, so while a controller is down its part of the stamp is the association it lost (see
 * {@link #association}). Passes every report on to the listener the caller's options named.
 */
final class AssociationReports implements ControllerStateListener {
    /** No report yet. */
    static final int NONE = -1;
    private static final int UP = 0;
    private static final int DOWN = 1;

    private final ControllerStateListener next;
    private final Map<NvmeofController, AtomicIntegerArray> byController = new ConcurrentHashMap<>();

    /** @param next the caller's listener, or null */
    AssociationReports(ControllerStateListener next) {
        this.next = next;
    }

    /** {@code c}'s reports: [generation last connected on, generation last lost], {@link #NONE} before the first. */
    AtomicIntegerArray of(NvmeofController c) {
        return byController.computeIfAbsent(c, k -> new AtomicIntegerArray(new int[] {NONE, NONE}));
    }

    @Override
    public void stateChanged(NvmeofController c, ControllerState state, String reason) {
        // On the housekeeping thread: a loss is reported before the first attempt to reconnect, so the generation is
        // still the lost association's; a reconnect is reported once connected, on the generation of that attempt.
        if (state == ControllerState.CONNECTED) {
            of(c).set(UP, c.associationGeneration());
        } else if (state == ControllerState.RECONNECTING) {
            of(c).set(DOWN, c.associationGeneration());
        }
        if (next != null) {
            next.stateChanged(c, state, reason);
        }
    }

    @Override
    public void namespacesChanged(NvmeofController c, List<NamespaceHandle> namespaces) {
        if (next != null) {
            next.namespacesChanged(c, namespaces);
        }
    }

    /**
     * The association {@code c}'s reads may have come through, for a stamp: its generation while it is connected (or
     * its loss is not reported yet: no attempt has begun); once its loss is reported and until it connects again, the
     * generation it lost, however many attempts failed since. {@code reports} null (a caller's controller, no
     * reports): its generation. Any thread; no allocation.
     *
     * <p>Not covered: a controller that connects and loses that association again before its reconnect is reported
     * (microseconds on its housekeeping thread) is counted at the association before; what it read then is trusted
     * unchecked.
     */
    static int association(NvmeofController c, AtomicIntegerArray reports) {
        int gen = c.associationGeneration();
        if (reports == null || c.state() == ControllerState.CONNECTED) {
            return gen;
        }
        int lost = reports.get(DOWN);
        return lost != NONE && lost >= reports.get(UP) ? lost : gen;
    }
}

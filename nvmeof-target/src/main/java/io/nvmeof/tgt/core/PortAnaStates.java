package io.nvmeof.tgt.core;

import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.log.AnaState;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The ANA state of every ANA group on one port (a listener, nvmet's {@code ports/N/ana_groups/G/ana_state}): optimized
 * unless set otherwise. I/O queues read it per command ({@link #ioStatus}: one array read); the admin API writes it
 * through {@link AnaGroups}, which counts the changes and tells the port's controllers.
 */
public final class PortAnaStates {
    private final int portId;
    /** Per group: the status an I/O command gets (0: served). */
    private final AtomicIntegerArray ioStatus = new AtomicIntegerArray(AnaGroups.MAX_GROUP_ID + 1);
    // Guarded by this: the states set (absent: optimized), each group's change count, and when a change began.
    private final AnaState[] states = new AnaState[AnaGroups.MAX_GROUP_ID + 1];
    private final long[] changeCounts = new long[AnaGroups.MAX_GROUP_ID + 1];
    private final long[] transitionSince = new long[AnaGroups.MAX_GROUP_ID + 1];

    PortAnaStates(int portId) {
        this.portId = portId;
    }

    public int portId() { return portId; }

    /** What an I/O command to a namespace of {@code group} gets through this port: success, or a path error. */
    public int ioStatus(int group) {
        return ioStatus.get(group);
    }

    public synchronized AnaState state(int group) {
        AnaState s = states[group];
        return s != null ? s : AnaState.OPTIMIZED;
    }

    /** The group's change count: the ANA change count when its state last changed here (0: never). */
    public synchronized long changeCount(int group) {
        return changeCounts[group];
    }

    /** The groups set to something else than optimized, by group ID. */
    public synchronized Map<Integer, AnaState> explicitStates() {
        Map<Integer, AnaState> out = new TreeMap<>();
        for (int g = 1; g < states.length; g++) {
            if (states[g] != null && states[g] != AnaState.OPTIMIZED) {
                out.put(g, states[g]);
            }
        }
        return out;
    }

    /** Sets a group's state; returns whether it changed. {@code changeCount} is the ANA change count it gets. */
    synchronized boolean set(int group, AnaState state, long changeCount, long nowNanos) {
        if (state(group) == state) {
            return false;
        }
        states[group] = state;
        changeCounts[group] = changeCount;
        transitionSince[group] = nowNanos;
        ioStatus.set(group, state.ioStatus() == Status.SUCCESS ? 0 : state.ioStatus());
        return true;
    }

    /** Ends a transition begun before {@code deadline} (inaccessible); false when the group is not in one any more. */
    synchronized boolean expireTransition(int group, long deadline, long changeCount, long nowNanos) {
        if (states[group] != AnaState.CHANGE || transitionSince[group] - deadline >= 0) {
            return false;
        }
        return set(group, AnaState.INACCESSIBLE, changeCount, nowNanos);
    }

    /** Groups in the change state since before {@code deadline} (nanoTime), lowest first; empty when none. */
    synchronized int[] transitionsStartedBefore(long deadline) {
        int n = 0;
        int[] out = new int[0];
        for (int g = 1; g < states.length; g++) {
            if (states[g] == AnaState.CHANGE && transitionSince[g] - deadline < 0) {
                out = java.util.Arrays.copyOf(out, n + 1);
                out[n++] = g;
            }
        }
        return out;
    }
}

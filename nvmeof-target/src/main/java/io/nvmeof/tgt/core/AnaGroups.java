package io.nvmeof.tgt.core;

import io.nvmeof.protocol.log.AnaState;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asymmetric Namespace Access for the whole target, as nvmet has it: every namespace is in one ANA group (1 unless
 * configured), every port (listener) has a state per group, and a host reaching a namespace through a port learns the
 * state of its group there from the ANA log, and of a change from an Asynchronous Event. One change count for the
 * target, as nvmet's: every state change increments it, and the log's header and the group's descriptor carry it.
 *
 * <p>A group put in the change state is a promise that the transition ends within ANATT (Identify Controller): one
 * still in it after {@link #TRANSITION_SECONDS} becomes inaccessible (and hosts are told), so a host never waits on a
 * transition an administrator forgot to finish; Linux resets the controller after twice ANATT.
 */
public final class AnaGroups {
    private static final Logger LOG = LoggerFactory.getLogger(AnaGroups.class);

    /** ANAGRPMAX and NANAGRPID: group IDs are 1..128 (nvmet's NVMET_MAX_ANAGRPS). */
    public static final int MAX_GROUP_ID = 128;
    /** ANATT, seconds (nvmet's value). */
    public static final int TRANSITION_SECONDS = 10;

    private final TargetCore core;
    private final Map<Integer, PortAnaStates> ports = new ConcurrentHashMap<>();
    private final AtomicLong changeCount = new AtomicLong();
    /** What a controller that came through no listener (in-process transports) sees: every group optimized. */
    private final PortAnaStates unlisted = new PortAnaStates(0);

    AnaGroups(TargetCore core) {
        this.core = core;
    }

    /** The ANA change count (the log header's CHGCNT). */
    public long changeCount() {
        return changeCount.get();
    }

    /** The states on port {@code portId} (every group optimized until set). */
    public PortAnaStates port(int portId) {
        return ports.computeIfAbsent(portId, PortAnaStates::new);
    }

    /** The states a controller created through {@code listener} sees (null: none, every group optimized). */
    public PortAnaStates of(ListenerInfo listener) {
        return listener == null ? unlisted : port(listener.portId());
    }

    /** Checks an ANA group ID from outside (configuration, admin API). */
    public static void checkGroupId(long group) {
        if (group < 1 || group > MAX_GROUP_ID) {
            throw new IllegalArgumentException("ANA group " + group + " is not between 1 and " + MAX_GROUP_ID);
        }
    }

    /**
     * Sets a group's state on a port; when it changed, the port's controllers are told (an ANA Change notice to each
     * that enabled it and has an Asynchronous Event Request waiting: within milliseconds). Returns whether it changed.
     */
    public boolean set(int portId, int group, AnaState state) {
        checkGroupId(group);
        PortAnaStates p = port(portId);
        boolean changed;
        synchronized (this) { // one count per change, in the order the changes were made
            changed = p.set(group, state, changeCount.get() + 1, System.nanoTime());
            if (changed) {
                changeCount.incrementAndGet();
            }
        }
        if (changed) {
            LOG.info("port {}: ANA group {} is now {}", portId, group, state.label());
            tell(p);
        }
        return changed;
    }

    /** An ANA Change notice to every controller whose host connected through {@code p}. */
    private void tell(PortAnaStates p) {
        for (Controller c : core.controllers()) {
            if (c.anaStates() == p) {
                c.anaChanged();
            }
        }
    }

    /**
     * Parses a listener's configured states ({@code {"2": "inaccessible"}}), every group ID and state checked; an
     * absent map is every group optimized.
     */
    public static java.util.SortedMap<Integer, AnaState> parseStates(Map<String, String> configured) {
        java.util.SortedMap<Integer, AnaState> out = new java.util.TreeMap<>();
        if (configured == null) {
            return out;
        }
        for (Map.Entry<String, String> e : configured.entrySet()) {
            int group;
            try {
                group = Integer.parseInt(e.getKey().trim());
            } catch (NumberFormatException | NullPointerException x) {
                throw new IllegalArgumentException("ana: '" + e.getKey() + "' is not an ANA group ID (1 to "
                        + MAX_GROUP_ID + ")");
            }
            checkGroupId(group);
            out.put(group, AnaState.parse(e.getValue()));
        }
        return out;
    }

    /** The configured form of {@code states}: group IDs in order, optimized ones left out; null when none is left. */
    public static Map<String, String> describe(java.util.SortedMap<Integer, AnaState> states) {
        Map<String, String> out = new java.util.LinkedHashMap<>();
        states.forEach((g, s) -> {
            if (s != AnaState.OPTIMIZED) {
                out.put(Integer.toString(g), s.label());
            }
        });
        return out.isEmpty() ? null : out;
    }

    /** Makes the port's states exactly {@code states} (groups left out: optimized), telling hosts of what changed. */
    public void apply(int portId, java.util.SortedMap<Integer, AnaState> states) {
        PortAnaStates p = port(portId);
        for (int g = 1; g <= MAX_GROUP_ID; g++) {
            AnaState want = states.getOrDefault(g, AnaState.OPTIMIZED);
            if (p.state(g) != want) {
                set(portId, g, want);
            }
        }
    }

    /**
     * A namespace of {@code subsystem} moved to another ANA group (nvmet allows it live too): the change count grows
     * and every controller of the subsystem is told to read the ANA log again.
     */
    public void namespaceMoved(Subsystem subsystem) {
        changeCount.incrementAndGet();
        for (Controller c : subsystem.controllers()) {
            c.anaChanged();
        }
    }

    /** Forgets a removed port's states: a listener added later under its ID starts with every group optimized. */
    public void forget(int portId) {
        ports.remove(portId);
    }

    private volatile java.util.function.BiConsumer<Integer, Integer> transitionExpired = (port, group) -> { };

    /**
     * Tells {@code listener} (port ID, group) of each transition ended for taking longer than ANATT, so the saved
     * configuration says what hosts were told. It is called on a poll group's thread: it must not block.
     */
    public void onTransitionExpired(java.util.function.BiConsumer<Integer, Integer> listener) {
        transitionExpired = listener;
    }

    /** Ends transitions older than ANATT: those groups become inaccessible. Called by the keep-alive check. */
    public void expireTransitions(long now) {
        long deadline = now - TimeUnit.SECONDS.toNanos(TRANSITION_SECONDS);
        for (PortAnaStates p : ports.values()) {
            for (int group : p.transitionsStartedBefore(deadline)) {
                boolean expired;
                synchronized (this) {
                    // Only a transition still under way since before the deadline: an administrator may have ended
                    // it, or started another, since the groups were listed.
                    expired = p.expireTransition(group, deadline, changeCount.get() + 1, now);
                    if (expired) {
                        changeCount.incrementAndGet();
                    }
                }
                if (expired) {
                    LOG.warn("port {}: ANA group {} stayed in the change state longer than ANATT ({} s): now"
                            + " inaccessible; set its state to end a transition", p.portId(), group, TRANSITION_SECONDS);
                    tell(p);
                    transitionExpired.accept(p.portId(), group);
                }
            }
        }
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;
import static io.nvmeof.admin.migration.Migration.orEmpty;
import static io.nvmeof.admin.migration.SpdkExport.call;
import static io.nvmeof.admin.migration.SpdkExport.putIfSet;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code nvmf_create_transport} and {@code nvmf_subsystem_add_listener} of an SPDK save_config document on export:
 * one transport per transport our listeners use, carrying the global limits and the listeners' in-capsule data
 * size, then an add_listener per listener and subsystem it exposes, in listener order.
 */
final class SpdkListenerExport {
    private final TargetConfig c;
    private final List<String> notMapped;
    private final ArrayNode nvmfConfig;
    /** Every subsystem's NQN, in document order: what a listener with no subsystem list exposes. */
    private final List<String> allNqns;

    SpdkListenerExport(TargetConfig c, List<String> notMapped, ArrayNode nvmfConfig, List<String> allNqns) {
        this.c = c;
        this.notMapped = notMapped;
        this.nvmfConfig = nvmfConfig;
        this.allNqns = allNqns;
    }

    private static String transportOf(ListenerConfig l) {
        return l.transport() != null ? l.transport().toLowerCase(Locale.ROOT) : "tcp";
    }

    /** One nvmf_create_transport per transport a listener uses (and lines for the limits SPDK cannot take). */
    void writeTransports() {
        List<ListenerConfig> listeners = orEmpty(c.listeners());
        Map<String, Integer> firstListener = new LinkedHashMap<>();
        for (int i = 0; i < listeners.size(); i++) {
            ListenerConfig l = listeners.get(i);
            if (l == null) {
                throw new IllegalArgumentException("listeners[" + i + "] is missing");
            }
            String t = transportOf(l);
            if (t.equals("tcp") || t.equals("rdma")) {
                firstListener.putIfAbsent(t, i);
            }
        }
        if (firstListener.isEmpty()) {
            listUnexportedLimits();
        }
        // SPDK bounds data buffers by count (num_shared_buffers of io_unit_size), not connections by bytes.
        String memory = ": SPDK has no such limit (its data buffers are num_shared_buffers per transport); "
                + "not exported";
        if (c.maxConnectionMemory() != null) {
            notMapped.add("maxConnectionMemory=" + c.maxConnectionMemory() + memory);
        }
        if (c.maxMemory() != null) {
            notMapped.add("maxMemory=" + c.maxMemory() + memory);
        }
        if (c.maxSparseMemory() != null) {
            notMapped.add("maxSparseMemory=" + c.maxSparseMemory() + ": SPDK's Malloc bdevs take their memory up"
                    + " front; not exported");
        }
        for (String t : firstListener.keySet()) {
            ObjectNode params = call(nvmfConfig, "nvmf_create_transport");
            params.put("trtype", t.toUpperCase(Locale.ROOT));
            putIfSet(params, "max_queue_depth", c.maxQueueSize());
            putIfSet(params, "max_io_qpairs_per_ctrlr", c.maxIoQueues());
            putIfSet(params, "max_io_size", c.maxTransferSize());
            putIfSet(params, "in_capsule_data_size", inCapsuleDataSize(t, listeners));
        }
    }

    private void listUnexportedLimits() {
        String why = ": SPDK sets it per transport and no listener uses one; not exported";
        if (c.maxQueueSize() != null) {
            notMapped.add("maxQueueSize=" + c.maxQueueSize() + why);
        }
        if (c.maxIoQueues() != null) {
            notMapped.add("maxIoQueues=" + c.maxIoQueues() + why);
        }
        if (c.maxTransferSize() != null) {
            notMapped.add("maxTransferSize=" + c.maxTransferSize() + why);
        }
    }

    /** SPDK has one in-capsule data size per transport: the first listener's that sets one; others are listed. */
    private Integer inCapsuleDataSize(String transport, List<ListenerConfig> listeners) {
        Integer chosen = null;
        int from = -1;
        for (int i = 0; i < listeners.size(); i++) {
            ListenerConfig l = listeners.get(i);
            if (transportOf(l).equals(transport) && l.inlineDataSize() != null) {
                chosen = l.inlineDataSize();
                from = i;
                break;
            }
        }
        for (int i = 0; i < listeners.size(); i++) {
            ListenerConfig l = listeners.get(i);
            if (chosen != null && transportOf(l).equals(transport) && !chosen.equals(l.inlineDataSize())) {
                notMapped.add("listeners[" + i + "].inlineDataSize="
                        + (l.inlineDataSize() != null ? l.inlineDataSize() : "(unset)") + ": SPDK has one "
                        + "in_capsule_data_size per transport; " + transport.toUpperCase(Locale.ROOT) + " uses "
                        + chosen + " (from listeners[" + from + "])");
            }
        }
        return chosen;
    }

    /** An nvmf_subsystem_add_listener per listener and subsystem it exposes, in listener order. */
    void writeListeners() {
        List<ListenerConfig> listeners = orEmpty(c.listeners());
        int exported = 0;
        for (int i = 0; i < listeners.size(); i++) {
            ListenerConfig l = listeners.get(i);
            String where = "listeners[" + i + "]";
            String transport = transportOf(l);
            if (!transport.equals("tcp") && !transport.equals("rdma")) {
                notMapped.add(where + ".transport=" + l.transport() + ": unknown transport; not exported");
                continue;
            }
            List<String> nqns = exposedSubsystems(l, where);
            if (nqns.isEmpty()) {
                notMapped.add(where + ": exposes no subsystem and SPDK has no listener without one; not exported");
                continue;
            }
            exported++;
            if (l.id() != null && l.id() != exported) {
                notMapped.add(where + ".id=" + l.id() + ": SPDK assigns port IDs itself; not exported");
            }
            if (l.maxH2CData() != null) {
                notMapped.add(where + ".maxH2CData=" + l.maxH2CData() + ": SPDK has no setting for it; "
                        + "not exported");
            }
            String address = l.address() != null ? l.address() : "127.0.0.1";
            int port = l.port() != null ? l.port() : 4420;
            for (String nqn : nqns) {
                ObjectNode params = call(nvmfConfig, "nvmf_subsystem_add_listener");
                params.put("nqn", nqn);
                ObjectNode a = params.putObject("listen_address");
                a.put("trtype", transport.toUpperCase(Locale.ROOT));
                a.put("adrfam", address.contains(":") ? "IPv6" : "IPv4");
                a.put("traddr", address);
                a.put("trsvcid", Integer.toString(port));
            }
        }
    }

    /** Null or empty: every subsystem. The discovery NQN stays: SPDK has explicit discovery listeners. */
    private List<String> exposedSubsystems(ListenerConfig l, String where) {
        if (l.subsystems() == null || l.subsystems().isEmpty()) {
            return allNqns;
        }
        List<String> nqns = new ArrayList<>();
        for (int j = 0; j < l.subsystems().size(); j++) {
            String nqn = l.subsystems().get(j);
            if (!DISCOVERY_NQN.equals(nqn) && !allNqns.contains(nqn)) {
                notMapped.add(where + ".subsystems[" + j + "]=" + nqn + ": no such subsystem in this "
                        + "configuration; not exported");
            } else if (!nqns.contains(nqn)) {
                nqns.add(nqn);
            }
        }
        return nqns;
    }
}

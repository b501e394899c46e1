package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;

import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * {@code nvmf_create_transport} and {@code nvmf_subsystem_add_listener} of an SPDK save_config document on import:
 * listen addresses become our listeners (with their transport's in-capsule data size), and the per-transport limits
 * our global ones.
 */
final class SpdkListenerImport {

    private static final Set<String> IP_TRANSPORTS = Set.of("TCP", "RDMA");

    /** Why a transport parameter has no equivalent; parameters not named here get the generic reason. */
    private static final Map<String, String> TRANSPORT_REASONS = Map.ofEntries(
            Map.entry("num_shared_buffers", "no equivalent (buffers are per queue here)"),
            Map.entry("buf_cache_size", "no equivalent (buffers are per queue here)"),
            Map.entry("io_unit_size", "no equivalent (transfers are not split into I/O units here)"),
            Map.entry("max_aq_depth", "the admin queue size is fixed here"),
            Map.entry("dif_insert_or_strip", "protection information is not supported"),
            Map.entry("zcopy", "no equivalent (zero-copy is not configurable here)"),
            Map.entry("sock_priority", "no equivalent (socket priority is not configurable here)"),
            Map.entry("tgt_name", "there is one NVMe-oF target here"));

    /** What nvmf_create_transport says that we map. */
    record Transport(String type, Integer inCapsule, Integer maxQueueDepth, Integer maxIoQpairs,
            Integer maxIoSize) {
    }

    /** Where a listener listens: calls with the same key add subsystems to one listener. */
    private record ListenerKey(String trtype, String traddr, int trsvcid) {
    }

    private final ImportReport notMapped;
    private final SpdkSubsystemImport subsystems;
    private final Map<String, Transport> transports = new LinkedHashMap<>();
    /** Per listener: whether each subsystem's listener on it asked for a secure channel (TLS). */
    private final Map<ListenerKey, java.util.Map<String, Boolean>> secureChannel = new java.util.LinkedHashMap<>();
    private final Map<ListenerKey, List<String>> listeners = new LinkedHashMap<>();

    SpdkListenerImport(ImportReport notMapped, SpdkSubsystemImport subsystems) {
        this.notMapped = notMapped;
        this.subsystems = subsystems;
    }

    void readTransport(SpdkCall call) {
        JsonAt p = call.params();
        String type = call.text("trtype").toUpperCase(Locale.ROOT);
        String label = "nvmf_create_transport(" + type + ")";
        if (!IP_TRANSPORTS.contains(type)) {
            notMapped.add(label + ": transport not supported (tcp and rdma only); ignored");
            return;
        }
        if (transports.containsKey(type)) {
            throw new IllegalArgumentException(p.field("trtype").path() + ": transport " + type
                    + " is created twice");
        }
        Integer maxIoQpairs = optInt(p.field("max_io_qpairs_per_ctrlr"), 1);
        Integer allQpairs = optInt(p.field("max_qpairs_per_ctrlr"), 2); // deprecated: admin queue included
        if (maxIoQpairs == null && allQpairs != null) {
            maxIoQpairs = allQpairs - 1;
        }
        transports.put(type, new Transport(type, optInt(p.field("in_capsule_data_size"), 0),
                optInt(p.field("max_queue_depth"), 2), maxIoQpairs, optInt(p.field("max_io_size"), 1)));
        Set<String> mapped = Set.of("trtype", "in_capsule_data_size", "max_queue_depth", "max_io_qpairs_per_ctrlr",
                "max_qpairs_per_ctrlr", "max_io_size");
        for (String key : p.fieldNames()) {
            if (!mapped.contains(key)) {
                notMapped.add(label + "." + key + "=" + p.field(key).display() + ": "
                        + TRANSPORT_REASONS.getOrDefault(key, "no equivalent here") + "; ignored");
            }
        }
    }

    private static Integer optInt(JsonAt at, long min) {
        Long value = at.optInteger(min, Integer.MAX_VALUE);
        return value != null ? value.intValue() : null;
    }

    void readListener(SpdkCall call) {
        String nqn = call.text("nqn");
        if (!nqn.equals(DISCOVERY_NQN)) {
            subsystems.requireCreated(call);
        }
        JsonAt address = call.params().field("listen_address").requireObject();
        String trtype = address.field("trtype").nonEmptyText().toUpperCase(Locale.ROOT);
        String traddr = address.field("traddr").nonEmptyText();
        String label = "nvmf_subsystem_add_listener(" + nqn + ", " + trtype + " " + traddr + ":"
                + address.field("trsvcid").display() + ")";
        if (!IP_TRANSPORTS.contains(trtype)) {
            notMapped.add(label + ": transport " + trtype + " is not supported (tcp and rdma only); not imported");
            return;
        }
        int trsvcid = (int) address.field("trsvcid").integer(1, 65535);
        String adrfam = address.field("adrfam").optText();
        if (adrfam != null && !adrfam.equalsIgnoreCase("IPv4") && !adrfam.equalsIgnoreCase("IPv6")) {
            notMapped.add(label + ": address family " + adrfam + " is not supported (IPv4 and IPv6 only); "
                    + "not imported");
            return;
        }
        listListenerExtras(call, address, label);
        ListenerKey where = new ListenerKey(trtype, traddr, trsvcid);
        boolean secure = call.params().field("secure_channel").present()
                && !call.params().field("secure_channel").display().equals("false");
        secureChannel.computeIfAbsent(where, k -> new java.util.TreeMap<>()).put(nqn, secure);
        List<String> nqns = listeners.computeIfAbsent(where, k -> new ArrayList<>());
        if (!nqns.contains(nqn)) {
            nqns.add(nqn);
        }
    }

    private void listListenerExtras(SpdkCall call, JsonAt address, String label) {
        for (String key : address.fieldNames()) {
            if (!Set.of("trtype", "adrfam", "traddr", "trsvcid").contains(key)) {
                notMapped.add(label + ".listen_address." + key + "=" + address.field(key).display()
                        + ": no equivalent here; ignored");
            }
        }
        for (String key : call.params().fieldNames()) {
            String value = call.params().field(key).display();
            String reason = switch (key) {
                case "nqn", "listen_address", "secure_channel" -> null;
                case "ana_state" -> "asymmetric namespace access is not supported; ignored";
                case "sock_impl" -> "the socket implementation is not selectable here; ignored";
                default -> "no equivalent here; ignored";
            };
            if (reason != null) {
                notMapped.add(label + "." + key + "=" + value + ": " + reason);
            }
        }
    }

    /**
     * A listener's TLS: SPDK's secure_channel is per subsystem listener, ours per listener. All secure: required; none:
     * none; some: allowed (a host with a TLS key must still use it, but the others may connect to those subsystems in
     * plain TCP, which is listed as security lost).
     */
    private String tls(ListenerKey key) {
        java.util.Map<String, Boolean> bySubsystem = secureChannel.getOrDefault(key, java.util.Map.of());
        long secure = bySubsystem.values().stream().filter(b -> b).count();
        if (secure == 0) {
            return null;
        }
        if (!key.trtype().equalsIgnoreCase("tcp")) {
            notMapped.securityLost(key.traddr() + ":" + key.trsvcid() + ": secure_channel on a " + key.trtype()
                    + " listener: TLS is for NVMe/TCP only here");
            return null;
        }
        if (secure == bySubsystem.size()) {
            return "required";
        }
        for (java.util.Map.Entry<String, Boolean> e : bySubsystem.entrySet()) {
            if (e.getValue()) {
                notMapped.securityLost("nvmf_subsystem_add_listener(" + e.getKey() + ") " + key.traddr() + ":"
                        + key.trsvcid() + ".secure_channel=true: the same port serves other subsystems in plain TCP, so"
                        + " it allows TLS without requiring it here; hosts without a TLS key may reach "
                        + e.getKey() + " in plain TCP");
            }
        }
        return "allowed";
    }

    /** Our listeners: one per (trtype, traddr, trsvcid), numbered 1, 2, ... in order of first appearance. */
    List<ListenerConfig> build() {
        List<ListenerConfig> result = new ArrayList<>();
        int id = 1;
        for (Map.Entry<ListenerKey, List<String>> e : listeners.entrySet()) {
            ListenerKey key = e.getKey();
            Transport t = transports.get(key.trtype());
            result.add(new ListenerConfig(id++, key.trtype().toLowerCase(Locale.ROOT), key.traddr(),
                    key.trsvcid(), t != null ? t.inCapsule() : null, null, List.copyOf(e.getValue()), tls(key)));
        }
        return result;
    }

    /** A per-transport SPDK limit as our single global one: the smallest, and a line for each larger one. */
    Integer global(String param, Function<Transport, Integer> get) {
        Transport smallest = null;
        for (Transport t : transports.values()) {
            if (get.apply(t) != null && (smallest == null || get.apply(t) < get.apply(smallest))) {
                smallest = t;
            }
        }
        if (smallest == null) {
            return null;
        }
        int value = get.apply(smallest);
        for (Transport t : transports.values()) {
            if (get.apply(t) != null && get.apply(t) != value) {
                notMapped.add("nvmf_create_transport(" + t.type() + ")." + param + "=" + get.apply(t)
                        + ": this target has one limit for all transports; " + smallest.type() + "'s smaller "
                        + value + " is used");
            }
        }
        return value;
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;
import static io.nvmeof.admin.migration.Migration.orEmpty;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Writing our document as an nvmetcli config.json ({@link NvmetcliFormat#write}, whose comment says what maps to
 * what): hosts, ports and subsystems with their namespaces, and a line for each setting nvmet cannot take.
 */
final class NvmetcliExport {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private NvmetcliExport() {
    }

    /** Our document {@code c}, not null, as an nvmetcli config.json. */
    static Exported write(TargetConfig c) {
        List<String> notMapped = new ArrayList<>();
        listGlobals(c, notMapped);
        List<SubsystemConfig> subsystems = orEmpty(c.subsystems());
        List<String> allNqns = new ArrayList<>();
        ArrayNode subsystemsOut = JSON.arrayNode();
        Set<String> hosts = new LinkedHashSet<>();
        for (int i = 0; i < subsystems.size(); i++) {
            SubsystemConfig s = subsystems.get(i);
            if (s == null || s.nqn() == null) {
                throw new IllegalArgumentException("subsystems[" + i + "].nqn is missing");
            }
            allNqns.add(s.nqn());
            hosts.addAll(orEmpty(s.hosts()));
            subsystemsOut.add(writeSubsystem(s, "subsystems[" + i + "]", notMapped));
        }
        ArrayNode referrals = NvmetcliReferrals.write(c.referrals(), notMapped, true);
        ArrayNode portsOut = writePorts(orEmpty(c.listeners()), allNqns, referrals, notMapped);
        ObjectNode root = JSON.objectNode();
        ArrayNode hostsOut = root.putArray("hosts");
        hosts.forEach(h -> hostsOut.addObject().put("nqn", h));
        root.set("ports", portsOut);
        root.set("subsystems", subsystemsOut);
        return new Exported(Migration.pretty(root), notMapped);
    }

    private static void listGlobals(TargetConfig c, List<String> notMapped) {
        if (c.pollGroups() != null) {
            notMapped.add("pollGroups=" + c.pollGroups() + ": nvmet runs in the kernel's own threads; not exported");
        }
        if (c.busyPollUs() != null) {
            notMapped.add("busyPollUs=" + c.busyPollUs() + ": nvmet-tcp's queues are driven by the kernel"
                    + " (net.core.busy_poll is the host's knob); not exported");
        }
        if (c.pollGroupCpus() != null) {
            notMapped.add("pollGroupCpus=" + c.pollGroupCpus() + ": nvmet's work runs on the kernel's own threads "
                    + "(place them with the NIC's IRQ affinity and isolcpus); not exported");
        }
        if (c.maxIoQueues() != null) {
            notMapped.add("maxIoQueues=" + c.maxIoQueues() + ": nvmet sets it per subsystem (attr_qid_max); "
                    + "not exported");
        }
        if (c.maxQueueSize() != null) {
            notMapped.add("maxQueueSize=" + c.maxQueueSize() + ": nvmet sets it per port (param_max_queue_size, "
                    + "recent kernels); not exported");
        }
        if (c.maxTransferSize() != null) {
            notMapped.add("maxTransferSize=" + c.maxTransferSize() + ": nvmet derives it from the transport; "
                    + "not exported");
        }
        if (c.maxConnectionMemory() != null) {
            notMapped.add("maxConnectionMemory=" + c.maxConnectionMemory() + ": nvmet has no memory limit; not exported");
        }
        if (c.maxMemory() != null) {
            notMapped.add("maxMemory=" + c.maxMemory() + ": nvmet has no memory limit; not exported");
        }
        if (c.maxSparseMemory() != null) {
            notMapped.add("maxSparseMemory=" + c.maxSparseMemory() + ": nvmet has no RAM namespaces; not exported");
        }
    }

    private static ArrayNode writePorts(List<ListenerConfig> listeners, List<String> allNqns, ArrayNode referrals,
            List<String> notMapped) {
        Set<Integer> used = new HashSet<>();
        listeners.stream().filter(l -> l != null && l.id() != null).forEach(l -> used.add(l.id()));
        ArrayNode ports = JSON.arrayNode();
        int nextFree = 1;
        for (int i = 0; i < listeners.size(); i++) {
            ListenerConfig l = listeners.get(i);
            String where = "listeners[" + i + "]";
            if (l == null) {
                throw new IllegalArgumentException(where + " is missing");
            }
            String transport = l.transport() != null ? l.transport().toLowerCase(Locale.ROOT) : "tcp";
            if (!transport.equals("tcp") && !transport.equals("rdma")) {
                notMapped.add(where + ".transport=" + l.transport() + ": unknown transport; not exported");
                continue;
            }
            int portid;
            if (l.id() != null) {
                portid = l.id();
            } else {
                while (used.contains(nextFree)) {
                    nextFree++;
                }
                portid = nextFree;
                used.add(portid);
            }
            if (l.maxH2CData() != null) {
                notMapped.add(where + ".maxH2CData=" + l.maxH2CData() + ": nvmet has no setting for it; not exported");
            }
            ObjectNode port = writePort(l, portid, transport, exposedSubsystems(l, where, allNqns, notMapped));
            port.set("referrals", referrals.deepCopy()); // ours are target-wide: hosts saw them on every port
            ports.add(port);
        }
        return ports;
    }

    /** Ours: null/empty = all, and discovery is served everywhere. nvmet: the list is exact, discovery implied. */
    private static List<String> exposedSubsystems(ListenerConfig l, String where, List<String> allNqns,
            List<String> notMapped) {
        if (l.subsystems() == null || l.subsystems().isEmpty()) {
            return allNqns;
        }
        List<String> exposed = new ArrayList<>();
        for (int j = 0; j < l.subsystems().size(); j++) {
            String nqn = l.subsystems().get(j);
            if (DISCOVERY_NQN.equals(nqn)) {
                continue;
            }
            if (!allNqns.contains(nqn)) {
                // nvmetcli restore aborts on a link to a subsystem that does not exist.
                notMapped.add(where + ".subsystems[" + j + "]=" + nqn + ": no such subsystem in this configuration; "
                        + "not exported");
                continue;
            }
            exposed.add(nqn);
        }
        return exposed;
    }

    private static ObjectNode writePort(ListenerConfig l, int portid, String transport, List<String> subsystems) {
        String address = l.address() != null ? l.address() : "127.0.0.1";
        ObjectNode port = JSON.objectNode();
        ObjectNode addr = port.putObject("addr");
        addr.put("adrfam", address.contains(":") ? "ipv6" : "ipv4");
        addr.put("traddr", address);
        addr.put("treq", "not specified");
        addr.put("trsvcid", Integer.toString(l.port() != null ? l.port() : 4420));
        addr.put("trtype", transport);
        ObjectNode param = port.putObject("param");
        if (l.inlineDataSize() != null) {
            param.put("inline_data_size", Integer.toString(l.inlineDataSize()));
        }
        port.put("portid", portid);
        port.putArray("referrals");
        ArrayNode linked = port.putArray("subsystems");
        subsystems.forEach(linked::add);
        return port;
    }

    private static ObjectNode writeSubsystem(SubsystemConfig s, String where, List<String> notMapped) {
        ObjectNode out = JSON.objectNode();
        ArrayNode allowed = out.putArray("allowed_hosts");
        orEmpty(s.hosts()).forEach(allowed::add);
        ObjectNode attr = out.putObject("attr");
        attr.put("allow_any_host", Migration.effectiveAllowAnyHost(s) ? "1" : "0");
        attr.put("model", Migration.effectiveModel(s));
        attr.put("serial", Migration.effectiveSerial(s));
        if (s.maxNamespaces() != null) {
            notMapped.add(where + ".maxNamespaces=" + s.maxNamespaces() + ": nvmet has no per-subsystem namespace "
                    + "limit; not exported");
        }
        ArrayNode namespaces = out.putArray("namespaces");
        long next = 1;
        List<NamespaceConfig> list = orEmpty(s.namespaces());
        for (int j = 0; j < list.size(); j++) {
            NamespaceConfig n = list.get(j);
            if (n == null) {
                throw new IllegalArgumentException(where + ".namespaces[" + j + "] is missing");
            }
            long nsid = n.nsid() != null ? n.nsid() : next; // the target's numbering of unnumbered namespaces
            next = nsid + 1;
            ObjectNode ns = writeNamespace(s.nqn(), n, nsid, where + ".namespaces[" + j + "]", notMapped);
            if (ns != null) {
                namespaces.add(ns);
            }
        }
        out.put("nqn", s.nqn());
        return out;
    }

    private static ObjectNode writeNamespace(String nqn, NamespaceConfig n, long nsid, String where,
            List<String> notMapped) {
        String label = where + " (nsid " + nsid + ")";
        String backend = Migration.effectiveBackend(n);
        if (backend.equals("ram")) {
            notMapped.add(label + ": RAM namespaces have no nvmet equivalent; not exported (back it with a file, or "
                    + "with a null_blk or brd device such as /dev/ram0, and add it by hand)");
            return null;
        }
        if (!backend.equals("file") && !backend.equals("block")) {
            throw new IllegalArgumentException(where + ".backend '" + n.backend() + "' is not ram, file or block");
        }
        if (n.path() == null || n.path().isBlank()) {
            throw new IllegalArgumentException(where + ".path is missing");
        }
        if (n.size() != null) {
            notMapped.add(where + ".size=" + n.size() + ": nvmet always serves the whole " + backend
                    + "; not exported");
        }
        if (backend.equals("file") && n.blockSize() != null && n.blockSize() != 512) {
            notMapped.add(where + ".blockSize=" + n.blockSize() + ": nvmet takes a file's block size from its "
                    + "filesystem; not exported");
        }
        String uuid = Migration.effectiveUuid(nqn, nsid, n, where);
        ObjectNode ns = JSON.objectNode();
        ns.put("ana_grpid", 1);
        ObjectNode device = ns.putObject("device");
        device.put("nguid", dashed(Migration.effectiveNguid(uuid, n, where)));
        device.put("path", n.path());
        device.put("uuid", uuid);
        ns.put("enable", 1);
        ns.put("nsid", nsid);
        return ns;
    }

    /** nvmet prints an NGUID like a UUID ({@code %pUb}): 8-4-4-4-12 lower-case hex digits. */
    private static String dashed(String hex32) {
        return hex32.substring(0, 8) + "-" + hex32.substring(8, 12) + "-" + hex32.substring(12, 16) + "-"
                + hex32.substring(16, 20) + "-" + hex32.substring(20);
    }
}

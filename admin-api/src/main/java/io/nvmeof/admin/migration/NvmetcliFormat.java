package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;

import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.auth.HostAuthRegistry;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Linux kernel target's saved configuration: the {@code /etc/nvmet/config.json} that {@code nvmetcli save} writes
 * (a dump of {@code /sys/kernel/config/nvmet}) and {@code nvmetcli restore} reads. Shape (nvmetcli
 * {@code nvmet/nvme.py}, the {@code dump()} and {@code setup()} methods):
 *
 * <pre>{@code
 * { "hosts": [ {"nqn": ...} ],
 *   "ports": [ {"portid": 1, "addr": {"adrfam", "traddr", "treq", "trsvcid", "trtype"}, "param": {"inline_data_size"},
 *               "referrals": [...], "ana_groups": [{"grpid": 1, "ana": {"state": "optimized"}}],
 *               "subsystems": [nqn...]} ],
 *   "subsystems": [ {"nqn": ..., "attr": {"allow_any_host": "0", "serial", "model", "version", ...},
 *                    "allowed_hosts": [nqn...],
 *                    "namespaces": [ {"nsid": 1, "enable": 1, "ana_grpid": 1,
 *                                     "device": {"path", "uuid", "nguid"}, "ana": {"grpid"}, "resv": {"enable"}} ]} ] }
 * }</pre>
 *
 * Configfs attribute values are strings ("1", "4420"); nvmetcli writes {@code portid}, {@code nsid}, {@code enable}
 * and {@code ana_grpid} as numbers. Both spellings are accepted everywhere.
 *
 * <h2>Import</h2>
 * <ul>
 * <li>A port becomes a listener ({@code portid} is its id) when its {@code trtype} is tcp or rdma; loop, fc and
 *     others are listed and skipped, as are ports whose {@code adrfam} is not ipv4/ipv6. An nvmet port with an empty
 *     {@code subsystems} list exposes only discovery, ours with an empty list exposes everything, so it becomes
 *     {@code [nqn.2014-08.org.nvmexpress.discovery]}.</li>
 * <li>{@code param.inline_data_size} becomes {@code inlineDataSize}; {@code "-1"} is nvmet's "let the transport
 *     choose", i.e. unset.</li>
 * <li>A namespace whose {@code enable} is 0 or absent is not imported (nvmetcli restore leaves a namespace without
 *     {@code enable} disabled). {@code device.path} under {@code /dev/} is a block backend, anything else a file;
 *     size is null (the file's or device's own). The block size is left unset (512): nvmet took it from the device
 *     (its logical block size) or, for a file, from the filesystem (min(block size, 4096)), which a saved
 *     configuration does not record; set {@code blockSize} if hosts saw 4096-byte blocks.</li>
 * <li>A subsystem without {@code attr.allow_any_host} gets {@code allowAnyHost=false}, nvmet's default.</li>
 * <li>The top-level {@code hosts} declare host NQNs for {@code allowed_hosts} to link to; a host with a
 *     DH-HMAC-CHAP key ({@code dhchap_key}, {@code dhchap_ctrl_key}, {@code dhchap_hash}, {@code dhchap_dhgroup},
 *     flat or as the group {@code dhchap}) becomes an entry of our {@code hosts}, so it must authenticate here too.</li>
 * <li>A port's enabled {@code referrals} become our {@code referrals} ({@code addr.trtype}, {@code traddr},
 *     {@code trsvcid}, {@code portid}; {@code treq} "required" as {@code tls} required): ours are target-wide, so one
 *     listed under several ports is one, and one under some ports only is listed as widened to every listener.</li>
 * <li>Security this target does not have is listed in {@link Imported#securityLost()} too: a port's
 *     {@code addr.treq} "required" or TLS {@code addr.tsas}.</li>
 * </ul>
 * Values equal to nvmet's defaults carry no information and are skipped without a line: port {@code param}s equal to
 * {@code "-1"} (transport default) and {@code pi_enable "0"}; {@code addr.treq} "not specified"/"not required" and
 * {@code addr.tsas} "none" (no secure channel); subsystem {@code attr} {@code cntlid_min "1"},
 * {@code cntlid_max "65519"} (the full controller ID range) and {@code pi_enable "0"}; namespace
 * {@code ana_grpid}/{@code ana.grpid} 1 and {@code resv.enable "0"}; the default ANA group 1 in state optimized. Ports'
 * {@code ana_groups} become the listener's {@code ana} and namespaces' {@code ana_grpid} their {@code anaGroup};
 * subsystem {@code cntlid_min}/{@code cntlid_max} become {@code cntlidMin}/{@code cntlidMax}. Every
 * other attribute (version, ieee_oui, firmware, qid_max, ...) is listed with its value.
 *
 * <h2>Export</h2>
 * Keys are written sorted, as {@code nvmetcli save} does. A listener without id gets the lowest free port ID;
 * transport, address and port default as the target does (tcp, 127.0.0.1, 4420); {@code adrfam} follows the
 * address. A null or empty listener subsystem list (all) becomes the list of every subsystem NQN; the discovery NQN
 * is dropped (nvmet serves discovery on every port). Serial and model numbers, namespace UUIDs and NGUIDs are written
 * with their effective values (the target's derived defaults included) so hosts recognise controllers and namespaces
 * on nvmet; {@code allow_any_host} is the effective flag too. RAM namespaces cannot be expressed and are listed.
 * Every referral is written under every port (ours are target-wide), as {@code referral-ID}; one that names a
 * subsystem (SPDK's kind) cannot be and is listed. {@code ana_groups} are left out: {@code nvmetcli restore} keeps the default group, and writing it fails on kernels
 * without ANA.
 */
public final class NvmetcliFormat {

    private static final Set<String> ROOT_KEYS = Set.of("hosts", "ports", "subsystems");
    private static final Set<String> PORT_KEYS = Set.of("portid", "addr", "param", "referrals", "ana_groups",
            "subsystems");
    private static final Set<String> SUBSYSTEM_KEYS = Set.of("nqn", "attr", "allowed_hosts", "namespaces", "passthru");
    private static final Set<String> NAMESPACE_KEYS = Set.of("nsid", "enable", "device", "ana_grpid", "ana", "resv");

    /** nvmet's subsystem attribute defaults (drivers/nvme/target/configfs.c, core.c): skipped when equal. */
    private static final Map<String, String> DEFAULT_SUBSYSTEM_ATTRS = Map.of(
            "cntlid_min", "1", "cntlid_max", "65519", "pi_enable", "0");

    private NvmetcliFormat() {
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Import

    /** Reads an nvmetcli config.json. */
    public static Imported read(String json) {
        JsonAt root = Migration.parse(json);
        ImportReport notMapped = new ImportReport();
        for (String key : root.fieldNames()) {
            if (!ROOT_KEYS.contains(key)) {
                notMapped.add(key + ": not part of an nvmetcli configuration; ignored");
            }
        }
        List<HostConfig> hosts = readHosts(root.field("hosts"), notMapped);
        List<SubsystemConfig> subsystems = readSubsystems(root.field("subsystems"), notMapped);
        Set<String> nqns = new HashSet<>();
        subsystems.forEach(s -> nqns.add(s.nqn()));
        NvmetcliReferrals referrals = new NvmetcliReferrals(notMapped);
        List<ListenerConfig> listeners = readPorts(root.field("ports"), nqns, referrals, notMapped);
        return notMapped.imported(new TargetConfig(null, null, null, null, listeners, subsystems)
                .withHosts(hosts.isEmpty() ? null : hosts)
                .withReferrals(referrals.build(listeners.stream().map(l -> (long) l.id()).toList())));
    }

    /**
     * The host list declares NQNs for {@code allowed_hosts}; each entry still has to be well formed. A host's
     * DH-HMAC-CHAP settings (configfs {@code dhchap_key}, {@code dhchap_ctrl_key}, {@code dhchap_hash} and
     * {@code dhchap_dhgroup}, written flat or as the attribute group {@code dhchap} with {@code key}, {@code ctrl_key},
     * {@code hash}, {@code dhgroup}) become its {@code hosts} entry, checked as the target checks its own; a host
     * without a key needs no entry ({@code nvmetcli save} writes the hash and group of every host).
     */
    private static List<HostConfig> readHosts(JsonAt hosts, ImportReport notMapped) {
        List<HostConfig> entries = new ArrayList<>();
        for (JsonAt host : hosts.elements()) {
            host.requireObject();
            String nqn = host.field("nqn").nonEmptyText();
            Map<String, JsonAt> dhchap = new TreeMap<>();
            for (String key : host.fieldNames()) {
                JsonAt value = host.field(key);
                if (key.equals("dhchap") && value.node().isObject()) {
                    value.fieldNames().forEach(attr -> dhchap.put(attr, value.field(attr)));
                } else if (key.startsWith("dhchap_")) {
                    dhchap.put(key.substring(7), value);
                } else if (!key.equals("nqn")) {
                    notMapped.add(value.path() + ": host attributes other than DH-HMAC-CHAP's are not supported;"
                            + " ignored");
                }
            }
            HostConfig entry = hostEntry(host, nqn, dhchap, notMapped);
            if (entry != null) {
                entries.add(entry);
            }
        }
        return entries;
    }

    /** A host's entry from its dhchap attributes (key, ctrl_key, hash, dhgroup); null when it has no key. */
    private static HostConfig hostEntry(JsonAt host, String nqn, Map<String, JsonAt> dhchap, ImportReport notMapped) {
        for (Map.Entry<String, JsonAt> e : dhchap.entrySet()) {
            if (!Set.of("key", "ctrl_key", "hash", "dhgroup").contains(e.getKey())) {
                notMapped.add(e.getValue().path() + ": not an nvmet host attribute; ignored");
            }
        }
        String key = secretText(dhchap.get("key"));
        String ctrlKey = secretText(dhchap.get("ctrl_key"));
        if (key == null) {
            if (ctrlKey != null) {
                // nvmet authenticates nobody without the host's key, so neither side proves anything.
                notMapped.add(dhchap.get("ctrl_key").path() + " (host " + nqn + "): a controller key without the"
                        + " host's key, which nvmet does not use; ignored");
            }
            return null;
        }
        HostConfig entry = new HostConfig(nqn, key, ctrlKey, optionalText(dhchap.get("hash")),
                optionalText(dhchap.get("dhgroup")));
        try {
            HostAuthRegistry.parse(entry);
        } catch (IllegalArgumentException e) {
            // The message names the host and the field, never the secret.
            throw new IllegalArgumentException(host.path() + ": " + e.getMessage(), e);
        }
        return entry;
    }

    /** A key attribute's text, null when absent or empty (nvmet's "no key"). Never shown in a message. */
    private static String secretText(JsonAt value) {
        if (value == null || !value.present()) {
            return null;
        }
        if (!value.node().isTextual()) {
            throw new IllegalArgumentException(value.path() + " must be a string (a DHHC-1 secret)");
        }
        return value.node().textValue().isBlank() ? null : value.node().textValue();
    }

    /** A hash or group attribute's text; null when absent or empty (the default). */
    private static String optionalText(JsonAt value) {
        String text = value == null ? null : value.optText();
        return text == null || text.isBlank() ? null : text;
    }

    private static List<ListenerConfig> readPorts(JsonAt ports, Set<String> nqns, NvmetcliReferrals referrals,
            ImportReport notMapped) {
        List<ListenerConfig> listeners = new ArrayList<>();
        Set<Long> ids = new HashSet<>();
        for (JsonAt port : ports.elements()) {
            ListenerConfig l = readPort(port, ids, nqns, referrals, notMapped);
            if (l != null) {
                listeners.add(l);
            }
        }
        return listeners;
    }

    private static ListenerConfig readPort(JsonAt port, Set<Long> ids, Set<String> nqns, NvmetcliReferrals referrals,
            ImportReport notMapped) {
        port.requireObject();
        long portid = port.field("portid").integer(1, 65535);
        if (!ids.add(portid)) {
            throw new IllegalArgumentException(port.field("portid").path() + " " + portid + " is used by another port");
        }
        listUnknownKeys(port, PORT_KEYS, "not an nvmetcli port field", notMapped);
        JsonAt addr = port.field("addr").requireObject();
        String trtype = addr.field("trtype").text().toLowerCase(Locale.ROOT);
        String where = port.path() + " (portid " + portid + ")";
        if (!trtype.equals("tcp") && !trtype.equals("rdma")) {
            notMapped.add(where + ": transport " + (trtype.isEmpty() ? "(none)" : trtype)
                    + " is not supported (tcp and rdma only); not imported");
            return null;
        }
        String adrfam = addr.field("adrfam").optText();
        if (adrfam != null && !adrfam.isEmpty() && !adrfam.equalsIgnoreCase("ipv4")
                && !adrfam.equalsIgnoreCase("ipv6")) {
            notMapped.add(where + ": address family " + adrfam + " is not supported (ipv4 and ipv6 only); "
                    + "not imported");
            return null;
        }
        String traddr = addr.field("traddr").nonEmptyText();
        int trsvcid = (int) addr.field("trsvcid").integer(1, 65535);
        String tls = readAddrExtras(addr, trtype, notMapped);
        Integer inlineDataSize = readParams(port.field("param").optObject(), notMapped);
        referrals.readPort(port.field("referrals"), portid);
        Map<String, String> ana = readAnaGroups(port.field("ana_groups"), notMapped);
        List<String> exposed = new ArrayList<>();
        for (JsonAt s : port.field("subsystems").elements()) {
            String nqn = s.nonEmptyText();
            if (!nqns.contains(nqn)) {
                throw new IllegalArgumentException(s.path() + ": subsystem " + nqn + " is not in subsystems");
            }
            exposed.add(nqn);
        }
        // nvmet: no subsystem linked = the port serves discovery only. Ours: empty = every subsystem.
        List<String> subsystems = exposed.isEmpty() ? List.of(DISCOVERY_NQN) : List.copyOf(exposed);
        return new ListenerConfig((int) portid, trtype, traddr, trsvcid, inlineDataSize, null, subsystems, tls, ana);
    }

    /**
     * The port's TLS from its tsas and treq (nvmet: tsas tls1.3 secures the port; treq says whether TLS is required,
     * which it is unless "not required"), as our listener's tls: null (none), "required" or "allowed". Other addr keys
     * are unknown. The hosts' TLS keys live in the kernel's keyring, not in the document: they are set per host here.
     */
    private static String readAddrExtras(JsonAt addr, String trtype, ImportReport notMapped) {
        String treq = null;
        String tsas = null;
        for (String key : addr.fieldNames()) {
            JsonAt value = addr.field(key);
            switch (key) {
                case "trtype", "adrfam", "traddr", "trsvcid":
                    break;
                case "treq":
                    treq = value.optText();
                    break;
                case "tsas":
                    tsas = value.optText();
                    break;
                default:
                    notMapped.add(value.path() + "=" + value.display() + ": not an nvmet port address field; ignored");
            }
        }
        boolean tls13 = tsas != null && tsas.equals("tls1.3");
        boolean secureRequired = treq != null && treq.equals("required");
        if (tsas != null && !tls13 && !tsas.isEmpty() && !tsas.equals("none") && !tsas.equals("not specified")) {
            notMapped.securityLost(addr.path() + ".tsas=" + tsas + ": only TLS 1.3 (tls1.3) secures NVMe/TCP here;"
                    + " the port would be in clear text");
            return null;
        }
        if (!tls13) {
            if (secureRequired) {
                notMapped.securityLost(addr.path() + ".treq=required: the port admits hosts only over a secure channel,"
                        + " but names none (tsas); here they would connect in clear text");
            }
            return null;
        }
        if (!trtype.equals("tcp")) {
            notMapped.securityLost(addr.path() + ".tsas=tls1.3 on a " + trtype + " port: TLS is for NVMe/TCP only");
            return null;
        }
        notMapped.add(addr.path() + ".tsas=tls1.3: the hosts' TLS keys are in the kernel's keyring, not in the document;"
                + " give each host its key (PUT /api/v1/hosts/{hostnqn} with tlsKey, tlsKeyDerivation legacy for keys"
                + " that nvme-cli 2.15 or earlier derived)");
        return treq != null && treq.equals("not required") ? "allowed" : "required";
    }

    /** Returns inline_data_size (null: the transport's default); lists every other non-default parameter. */
    private static Integer readParams(JsonAt param, ImportReport notMapped) {
        if (param == null) {
            return null;
        }
        Integer inlineDataSize = null;
        for (String key : param.fieldNames()) {
            JsonAt value = param.field(key);
            if (key.equals("inline_data_size")) {
                long size = value.integer(-1, Integer.MAX_VALUE);
                inlineDataSize = size < 0 ? null : (int) size; // -1: "let the transport choose"
            } else if (!isDefaultParam(key, value)) {
                notMapped.add(value.path() + "=" + value.display() + ": no per-port equivalent here; ignored");
            }
        }
        return inlineDataSize;
    }

    private static boolean isDefaultParam(String key, JsonAt value) {
        String text = value.display().trim();
        return text.equals("-1") || (key.equals("pi_enable") && text.equals("0"));
    }

    /**
     * The port's ANA groups as the listener's {@code ana} (group ID to state; optimized ones left out, null when none
     * is left). nvmet numbers groups up to 128 as we do; a state nvmet would not take is listed and left out.
     */
    private static Map<String, String> readAnaGroups(JsonAt groups, ImportReport notMapped) {
        Map<String, String> states = new java.util.TreeMap<>();
        for (JsonAt group : groups.elements()) {
            group.requireObject();
            long grpid = group.field("grpid").integer(1, 1024);
            String state = group.field("ana").field("state").present() ? group.field("ana").field("state").text()
                    : "optimized";
            if (grpid > io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID) {
                notMapped.add(group.path() + " (ANA group " + grpid + ", " + state + "): ANA group IDs are 1 to "
                        + io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID + " here; not imported");
                continue;
            }
            try {
                io.nvmeof.protocol.log.AnaState parsed = io.nvmeof.protocol.log.AnaState.parse(state);
                if (parsed != io.nvmeof.protocol.log.AnaState.OPTIMIZED) {
                    states.put(Long.toString(grpid), parsed.label());
                }
            } catch (IllegalArgumentException e) {
                notMapped.add(group.path() + ".ana.state=" + state + ": " + e.getMessage() + "; not imported");
            }
        }
        return states.isEmpty() ? null : states;
    }

    private static List<SubsystemConfig> readSubsystems(JsonAt subsystems, ImportReport notMapped) {
        List<SubsystemConfig> result = new ArrayList<>();
        Set<String> nqns = new HashSet<>();
        for (JsonAt s : subsystems.elements()) {
            SubsystemConfig subsystem = readSubsystem(s, notMapped);
            if (!nqns.add(subsystem.nqn())) {
                throw new IllegalArgumentException(s.field("nqn").path() + ": subsystem " + subsystem.nqn()
                        + " appears twice");
            }
            result.add(subsystem);
        }
        return result;
    }

    private static SubsystemConfig readSubsystem(JsonAt s, ImportReport notMapped) {
        s.requireObject();
        String nqn = s.field("nqn").nonEmptyText();
        if (nqn.equals(DISCOVERY_NQN)) {
            throw new IllegalArgumentException(s.field("nqn").path()
                    + ": the discovery subsystem cannot be configured");
        }
        listUnknownKeys(s, SUBSYSTEM_KEYS, "not an nvmetcli subsystem field", notMapped);
        JsonAt attr = s.field("attr").optObject();
        Boolean allowAnyHost = attr != null ? attr.field("allow_any_host").optFlag() : null;
        String serial = attr != null ? identifyField(attr.field("serial"), 20, notMapped) : null;
        String model = attr != null ? identifyField(attr.field("model"), 40, notMapped) : null;
        if (attr != null) {
            listOtherAttrs(attr, notMapped);
        }
        List<String> hosts = new ArrayList<>();
        for (JsonAt host : s.field("allowed_hosts").elements()) {
            hosts.add(host.nonEmptyText());
        }
        List<NamespaceConfig> namespaces = readNamespaces(s.field("namespaces"), notMapped);
        if (!s.field("passthru").elements().isEmpty()) {
            notMapped.add(s.field("passthru").path() + ": passthrough controllers are not supported; not imported");
        }
        Integer cntlidMin = attr != null ? cntlidAttr(attr.field("cntlid_min"), 1) : null;
        Integer cntlidMax = attr != null ? cntlidAttr(attr.field("cntlid_max"), 65519) : null;
        return new SubsystemConfig(nqn, serial, model, null, allowAnyHost != null ? allowAnyHost : false,
                List.copyOf(hosts), namespaces, cntlidMin, cntlidMax);
    }

    /** A controller ID range bound nvmetcli writes (as text), or null when absent or nvmet's default. */
    private static Integer cntlidAttr(JsonAt at, int byDefault) {
        Long v = at.optInteger(1, 65519);
        return v == null || v == byDefault ? null : v.intValue();
    }

    /** A serial or model number that fits Identify Controller, else null and a line. */
    private static String identifyField(JsonAt at, int max, ImportReport notMapped) {
        String value = at.optText();
        if (value == null) {
            return null;
        }
        if (!Migration.fitsIdentifyField(value, max)) {
            notMapped.add(at.path() + "=" + value + ": must be 1 to " + max
                    + " printable ASCII characters here; not imported (the target's default is used)");
            return null;
        }
        return value;
    }

    private static void listOtherAttrs(JsonAt attr, ImportReport notMapped) {
        for (String key : attr.fieldNames()) {
            if (key.equals("allow_any_host") || key.equals("serial") || key.equals("model") || key.equals("cntlid_min")
                    || key.equals("cntlid_max")) {
                continue;
            }
            JsonAt value = attr.field(key);
            String text = value.display();
            if (!text.equals(DEFAULT_SUBSYSTEM_ATTRS.get(key))) {
                notMapped.add(value.path() + "=" + text + ": " + attrReason(key) + "; ignored");
            }
        }
    }

    private static String attrReason(String key) {
        return switch (key) {
            case "version" -> "the NVMe version reported is this target's own";
            case "firmware" -> "the firmware revision reported is this target's own";
            case "ieee_oui" -> "the IEEE OUI reported is this target's own";
            case "qid_max" -> "set maxIoQueues for a target-wide limit";
            case "pi_enable" -> "protection information is not supported";
            default -> "no equivalent here";
        };
    }

    private static List<NamespaceConfig> readNamespaces(JsonAt namespaces, ImportReport notMapped) {
        List<NamespaceConfig> result = new ArrayList<>();
        Set<Long> nsids = new HashSet<>();
        for (JsonAt n : namespaces.elements()) {
            n.requireObject();
            long nsid = n.field("nsid").integer(1, 0xFFFFFFFEL);
            if (!nsids.add(nsid)) {
                throw new IllegalArgumentException(n.field("nsid").path() + " " + nsid + " appears twice");
            }
            NamespaceConfig ns = readNamespace(n, nsid, notMapped);
            if (ns != null) {
                result.add(ns);
            }
        }
        return result;
    }

    private static NamespaceConfig readNamespace(JsonAt n, long nsid, ImportReport notMapped) {
        Long enable = n.field("enable").optInteger(0, 1);
        JsonAt device = n.field("device").optObject();
        if (enable == null || enable == 0) {
            String path = device != null && device.field("path").present() ? ", " + device.field("path").display() : "";
            notMapped.add(n.path() + " (nsid " + nsid + path + "): "
                    + (enable == null ? "has no enable flag, so nvmet leaves it disabled"
                            : "disabled in nvmet (enable 0)")
                    + "; not imported");
            return null;
        }
        listUnknownKeys(n, NAMESPACE_KEYS, "not an nvmetcli namespace field", notMapped);
        if (device == null) {
            n.field("device").requireObject(); // throws: "... device is missing"
        }
        String path = device.field("path").nonEmptyText();
        String uuid = Migration.uuid(device.field("uuid"));
        String nguid = Migration.nguid(device.field("nguid"));
        for (String key : device.fieldNames()) {
            if (!key.equals("path") && !key.equals("uuid") && !key.equals("nguid")) {
                JsonAt value = device.field(key);
                notMapped.add(value.path() + "=" + value.display() + ": no equivalent here; ignored");
            }
        }
        // nvmetcli writes the group twice: "ana_grpid" and the configfs attribute group "ana" {"grpid"}.
        Integer anaGroup = readAnaGroupId(n.field("ana_grpid"), notMapped);
        JsonAt ana = n.field("ana").optObject();
        if (ana != null) {
            for (String key : ana.fieldNames()) {
                if (!key.equals("grpid")) {
                    notMapped.add(ana.field(key).path() + "=" + ana.field(key).display() + ": no equivalent here; "
                            + "ignored");
                } else if (!n.field("ana_grpid").present()) {
                    anaGroup = readAnaGroupId(ana.field("grpid"), notMapped);
                }
            }
        }
        JsonAt resv = n.field("resv").optObject();
        if (resv != null) {
            for (String key : resv.fieldNames()) {
                JsonAt value = resv.field(key);
                if (!(key.equals("enable") && value.display().equals("0"))) {
                    notMapped.add(value.path() + "=" + value.display() + ": reservation settings are not "
                            + "configurable here; ignored");
                }
            }
        }
        return new NamespaceConfig(nsid, Migration.backendFor(path), null, null, path, uuid, nguid, null, null, null,
                anaGroup);
    }

    /** A namespace's ANA group: null for nvmet's default (1), else the group; one beyond ours is listed. */
    private static Integer readAnaGroupId(JsonAt grpid, ImportReport notMapped) {
        Long id = grpid.optInteger(0, 1024);
        if (id == null || id == 1) {
            return null;
        }
        if (id < 1 || id > io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID) {
            notMapped.add(grpid.path() + "=" + id + ": ANA group IDs are 1 to " + io.nvmeof.tgt.core.AnaGroups.MAX_GROUP_ID
                    + " here; the namespace is imported in group 1");
            return null;
        }
        return id.intValue();
    }

    private static void listUnknownKeys(JsonAt object, Set<String> known, String why, ImportReport notMapped) {
        for (String key : object.fieldNames()) {
            if (!known.contains(key)) {
                JsonAt value = object.field(key);
                notMapped.add(value.path() + "=" + value.display() + ": " + why + "; ignored");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Export

    /** Writes our document as an nvmetcli config.json. */
    public static Exported write(TargetConfig c) {
        if (c == null) {
            throw new IllegalArgumentException("the configuration is missing");
        }
        return NvmetcliExport.write(c);
    }
}

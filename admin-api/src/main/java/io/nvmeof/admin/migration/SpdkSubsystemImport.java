package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;

import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.admin.migration.SpdkBdevImport.Bdev;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code nvmf_create_subsystem}, {@code nvmf_subsystem_add_host} and {@code nvmf_subsystem_add_ns} of an SPDK
 * save_config document on import: our subsystems with their allowed hosts and their namespaces, each namespace backed
 * by a bdev of {@link SpdkBdevImport}.
 */
final class SpdkSubsystemImport {

    /** Values SPDK's save_config always writes that mean "off" / "the default" (see {@link SpdkFormat}). */
    private static final Map<String, String> SUBSYSTEM_DEFAULTS = Map.of("min_cntlid", "1", "max_cntlid", "65519",
            "ana_reporting", "false", "max_discard_size_kib", "0", "max_write_zeroes_size_kib", "0",
            "passthrough", "false", "enable_nssr", "false");

    /** A subsystem being read: nvmf_create_subsystem's settings, then the hosts and namespaces added to it. */
    private static final class SubsystemBuilder {
        final String nqn;
        final String serial;
        final String model;
        final Integer maxNamespaces;
        final boolean allowAnyHost;
        final List<String> hosts = new ArrayList<>();
        final List<NamespaceConfig> namespaces = new ArrayList<>();
        final Set<Long> nsids = new HashSet<>();

        SubsystemBuilder(String nqn, String serial, String model, Integer maxNamespaces, boolean allowAnyHost) {
            this.nqn = nqn;
            this.serial = serial;
            this.model = model;
            this.maxNamespaces = maxNamespaces;
            this.allowAnyHost = allowAnyHost;
        }

        SubsystemConfig build() {
            return new SubsystemConfig(nqn, serial, model, maxNamespaces, allowAnyHost, List.copyOf(hosts),
                    List.copyOf(namespaces));
        }

        long lowestFreeNsid() {
            long nsid = 1;
            while (nsids.contains(nsid)) {
                nsid++;
            }
            return nsid;
        }
    }

    private final ImportReport notMapped;
    private final SpdkBdevImport bdevs;
    private final SpdkHostKeys hostKeys;
    private final Map<String, SubsystemBuilder> subsystems = new LinkedHashMap<>();

    SpdkSubsystemImport(ImportReport notMapped, SpdkBdevImport bdevs, SpdkHostKeys hostKeys) {
        this.notMapped = notMapped;
        this.bdevs = bdevs;
        this.hostKeys = hostKeys;
    }

    void readSubsystem(SpdkCall call) {
        JsonAt p = call.params();
        String nqn = call.text("nqn");
        if (nqn.equals(DISCOVERY_NQN)) {
            throw new IllegalArgumentException(p.field("nqn").path()
                    + ": the discovery subsystem cannot be created");
        }
        if (subsystems.containsKey(nqn)) {
            throw new IllegalArgumentException(p.field("nqn").path() + ": subsystem " + nqn + " is created twice");
        }
        String label = "nvmf_create_subsystem(" + nqn + ")";
        String serial = identifyField(p.field("serial_number"), label, 20);
        String model = identifyField(p.field("model_number"), label, 40);
        Boolean allowAnyHost = p.field("allow_any_host").optFlag();
        Integer maxNamespaces = maxNamespaces(p.field("max_namespaces"), label);
        for (String key : p.fieldNames()) {
            if (Set.of("nqn", "serial_number", "model_number", "allow_any_host", "max_namespaces").contains(key)) {
                continue;
            }
            String value = p.field(key).display();
            if (!value.equals(SUBSYSTEM_DEFAULTS.get(key))) {
                notMapped.add(label + "." + key + "=" + value + ": " + subsystemReason(key) + "; ignored");
            }
        }
        subsystems.put(nqn, new SubsystemBuilder(nqn, serial, model, maxNamespaces,
                allowAnyHost != null && allowAnyHost)); // SPDK's default: no host is allowed
    }

    private String identifyField(JsonAt at, String label, int max) {
        String value = at.optText();
        if (value == null || Migration.fitsIdentifyField(value, max)) {
            return value;
        }
        notMapped.add(label + "." + at.path().substring(at.path().lastIndexOf('.') + 1) + "=" + value
                + ": must be 1 to " + max + " printable ASCII characters here; not imported (the target's "
                + "default is used)");
        return null;
    }

    /** 0 is SPDK's "no limit set"; more than 1024 we cannot take. */
    private Integer maxNamespaces(JsonAt at, String label) {
        Long value = at.optInteger(0, 0xFFFFFFFFL);
        if (value == null || value == 0) {
            return null;
        }
        if (value > 1024) {
            notMapped.add(label + ".max_namespaces=" + value + ": at most 1024 here; not imported (1024 applies)");
            return null;
        }
        return value.intValue();
    }

    private static String subsystemReason(String key) {
        return switch (key) {
            case "ana_reporting" -> "asymmetric namespace access is not supported";
            case "min_cntlid", "max_cntlid" -> "controller ID ranges are not configurable here";
            case "passthrough" -> "passthrough subsystems are not supported";
            case "tgt_name" -> "there is one NVMe-oF target here";
            default -> "no equivalent here";
        };
    }

    private SubsystemBuilder subsystem(SpdkCall call) {
        String nqn = call.text("nqn");
        SubsystemBuilder s = subsystems.get(nqn);
        if (s == null) {
            throw new IllegalArgumentException(call.params().field("nqn").path() + ": subsystem " + nqn
                    + " is not created by any nvmf_create_subsystem");
        }
        return s;
    }

    /** Throws unless an nvmf_create_subsystem created the call's {@code nqn}. */
    void requireCreated(SpdkCall call) {
        subsystem(call);
    }

    void readHost(SpdkCall call) {
        SubsystemBuilder s = subsystem(call);
        String host = call.text("host");
        String label = "nvmf_subsystem_add_host(" + s.nqn + ", " + host + ")";
        for (String key : call.params().fieldNames()) {
            switch (key) {
                case "nqn", "host", "dhchap_key", "dhchap_ctrlr_key", "psk" -> { } // the keys: SpdkHostKeys
                default -> notMapped.add(label + "." + key + "=" + call.params().field(key).display()
                        + ": no equivalent here; ignored");
            }
        }
        hostKeys.readHost(call, host, label);
        if (!s.hosts.contains(host)) {
            s.hosts.add(host);
        }
    }

    void readNamespace(SpdkCall call) {
        SubsystemBuilder s = subsystem(call);
        JsonAt ns = call.params().field("namespace").requireObject();
        String bdevName = ns.field("bdev_name").nonEmptyText();
        Long given = ns.field("nsid").optInteger(0, 0xFFFFFFFEL);
        long nsid = given == null || given == 0 ? s.lowestFreeNsid() : given; // 0 or none: SPDK picks
        if (!s.nsids.add(nsid)) {
            throw new IllegalArgumentException(ns.field("nsid").path() + ": namespace " + nsid + " of " + s.nqn
                    + " is added twice");
        }
        String label = "nvmf_subsystem_add_ns(" + s.nqn + ", nsid " + nsid + ")";
        Bdev bdev = bdevs.get(bdevName);
        if (bdev == null) {
            notMapped.add(label + ": bdev " + bdevName + " " + bdevs.foreignOrigin(bdevName)
                    + "; namespace not imported");
            return;
        }
        bdev.used = true;
        if (bdev.unusable != null) {
            notMapped.add(label + ": bdev " + bdevName + " " + bdev.unusable + "; namespace not imported");
            return;
        }
        listNamespaceExtras(call, ns, label); // only for namespaces we import: the others have their line
        if (bdev.readonly) {
            notMapped.securityLost(bdev.label + ".readonly=true: hosts cannot write namespace " + nsid + " of "
                    + s.nqn + "; here they could (read-only namespaces are not supported)");
        }
        String uuid = Migration.uuid(ns.field("uuid"));
        s.namespaces.add(new NamespaceConfig(nsid, bdev.backend, bdev.size, bdev.blockSize, bdev.path,
                uuid != null ? uuid : bdev.uuid, Migration.nguid(ns.field("nguid"))));
    }

    private void listNamespaceExtras(SpdkCall call, JsonAt ns, String label) {
        for (String key : ns.fieldNames()) {
            String value = ns.field(key).display();
            if (key.equals("no_auto_visible") && !value.equals("false")) {
                notMapped.securityLost(label + ".no_auto_visible=" + value + ": only the hosts nvmf_ns_add_host"
                        + " names see the namespace; here every host allowed on the subsystem would (per-host"
                        + " visibility is not supported)");
                continue;
            }
            String reason = switch (key) {
                case "nsid", "bdev_name", "uuid", "nguid", "no_auto_visible" -> null;
                case "eui64" -> "EUI-64 identifiers are not supported; ignored";
                case "ptpl_file" -> "persistent reservations are not supported; ignored";
                case "anagrpid" -> "asymmetric namespace access is not supported; ignored";
                default -> "no equivalent here; ignored";
            };
            if (reason != null) {
                notMapped.add(label + "." + key + "=" + value + ": " + reason);
            }
        }
        for (String key : call.params().fieldNames()) {
            if (!key.equals("nqn") && !key.equals("namespace")) {
                notMapped.add(label + "." + key + "=" + call.params().field(key).display()
                        + ": no equivalent here; ignored");
            }
        }
    }

    /** Our subsystems, in the order nvmf_create_subsystem created them. */
    List<SubsystemConfig> build() {
        List<SubsystemConfig> subs = new ArrayList<>();
        subsystems.values().forEach(s -> subs.add(s.build()));
        return subs;
    }
}

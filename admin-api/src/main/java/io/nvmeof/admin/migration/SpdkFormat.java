package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;
import static io.nvmeof.admin.migration.Migration.orEmpty;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.LiveConfiguration;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * SPDK's saved configuration: what {@code rpc.py save_config} writes and {@code rpc.py load_config} /
 * {@code spdk_tgt -c} replays. It is a list of RPC calls per SPDK subsystem (lib/init/json_config.c;
 * lib/nvmf/nvmf.c {@code spdk_nvmf_tgt_write_config_json}; each bdev module's {@code write_config_json}):
 *
 * <pre>{@code
 * {"subsystems": [
 *   {"subsystem": "bdev", "config": [ {"method": "bdev_malloc_create", "params": {"name": "Malloc0", ...}}, ... ]},
 *   {"subsystem": "nvmf", "config": [ {"method": "nvmf_create_transport", "params": {"trtype": "TCP", ...}},
 *                                     {"method": "nvmf_create_subsystem", "params": {"nqn": ..., ...}},
 *                                     {"method": "nvmf_subsystem_add_listener", "params": {"nqn": ...,
 *                                        "listen_address": {"trtype": "TCP", "adrfam": "IPv4", "traddr", "trsvcid"}}},
 *                                     {"method": "nvmf_subsystem_add_host", ...}, {"method": "nvmf_subsystem_add_ns",
 *                                        "params": {"nqn": ...,
 *                                                   "namespace": {"nsid", "bdev_name", "uuid", "nguid"}}}]},
 *   {"subsystem": "iobuf", "config": [...]}, ... ]}
 * }</pre>
 *
 * <h2>Import</h2>
 * <ul>
 * <li>bdevs: {@code bdev_malloc_create} is a RAM namespace (size = num_blocks x block_size, written with the largest
 *     exact binary unit, e.g. {@code 64MiB}); {@code bdev_aio_create} and {@code bdev_uring_create} are a block
 *     backend for paths under {@code /dev/}, else a file (block size when given and non-zero; size null: the whole
 *     file). A bdev with a block size other than 512/4096 cannot back a namespace here. Other bdev kinds and
 *     settings are listed; so is a bdev no namespace uses.</li>
 * <li>Transports: {@code in_capsule_data_size} is the inlineDataSize of that transport's listeners;
 *     {@code max_queue_depth}, {@code max_io_qpairs_per_ctrlr} ({@code max_qpairs_per_ctrlr} - 1 for the deprecated
 *     spelling) and {@code max_io_size} are maxQueueSize, maxIoQueues and maxTransferSize, which are global here: when
 *     TCP and RDMA disagree the smaller wins and the other is listed. Every other transport parameter is listed.</li>
 * <li>Listeners: identical (trtype, traddr, trsvcid) added to several subsystems are one listener whose subsystems
 *     are those subsystems (the discovery NQN included when the discovery subsystem added it), numbered 1, 2, ... in
 *     order of first appearance.</li>
 * <li>A namespace without nsid gets the lowest free one, as SPDK does; its UUID is the namespace's, else the
 *     bdev's (SPDK's rule). NGUIDs are kept as 32 lower-case hex digits.</li>
 * <li>Other SPDK subsystems (iobuf, sock, keyring, accel, vmd, scheduler, ...) with calls: each method is listed
 *     once; empty ones are skipped.</li>
 * <li>Security this target does not have is listed in {@link Imported#securityLost()} too: a host's {@code psk},
 *     {@code dhchap_key} and {@code dhchap_ctrlr_key} (never their values), a namespace's {@code no_auto_visible}, a
 *     listener's {@code secure_channel}, and a {@code readonly} bdev a namespace uses.</li>
 * </ul>
 * Parameters that {@code save_config} always writes and whose value means "feature off" are skipped without a line:
 * {@code nvmf_create_subsystem} {@code min_cntlid 1}, {@code max_cntlid 65519}, {@code ana_reporting false},
 * {@code max_discard_size_kib 0}, {@code max_write_zeroes_size_kib 0}, {@code passthrough false},
 * {@code enable_nssr false}; {@code nvmf_subsystem_add_ns} {@code no_auto_visible false};
 * {@code nvmf_subsystem_add_listener} {@code secure_channel false}; bdev {@code readonly}, {@code fallocate},
 * {@code nowait}, {@code md_interleave}, {@code dif_is_head_of_md} false, {@code optimal_io_boundary},
 * {@code md_size}, {@code dif_type}, {@code dif_pi_format} 0, {@code numa_id -1} and a {@code physical_block_size}
 * equal to the block size (or 0). Transport parameters are always listed, defaults or not.
 *
 * <h2>Export</h2>
 * A {@code save_config}-shaped document with the "bdev" and "nvmf" subsystems: RAM namespaces become
 * {@code bdev_malloc_create} ({@code Malloc0}, {@code Malloc1}, ...), file and block namespaces
 * {@code bdev_aio_create} ({@code AIO0}, ...; a file always gets a block_size, 512 unless set, because SPDK cannot
 * detect a regular file's); one {@code nvmf_create_transport} per transport in use; per subsystem
 * {@code nvmf_create_subsystem}, {@code nvmf_subsystem_add_host}s and {@code nvmf_subsystem_add_ns}s; then, listener by
 * listener, an {@code nvmf_subsystem_add_listener} per subsystem it exposes (all of them when its list is null or
 * empty; the discovery NQN as a discovery listener), so listener order, and with it the port IDs an import assigns,
 * is kept. Serial and model numbers, namespace UUIDs and NGUIDs are written with their effective values (the target's
 * derived defaults included) so hosts recognise controllers and namespaces on SPDK.
 */
public final class SpdkFormat {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private static final Set<String> IP_TRANSPORTS = Set.of("TCP", "RDMA");

    /** Values SPDK's save_config always writes that mean "off" / "the default" (see the class comment). */
    private static final Map<String, String> SUBSYSTEM_DEFAULTS = Map.of("min_cntlid", "1", "max_cntlid", "65519",
            "ana_reporting", "false", "max_discard_size_kib", "0", "max_write_zeroes_size_kib", "0",
            "passthrough", "false", "enable_nssr", "false");
    private static final Map<String, String> BDEV_DEFAULTS = Map.of("readonly", "false", "fallocate", "false",
            "nowait", "false", "md_interleave", "false", "dif_is_head_of_md", "false", "optimal_io_boundary", "0",
            "md_size", "0", "dif_type", "0", "dif_pi_format", "0", "numa_id", "-1");

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

    private SpdkFormat() {
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Import

    /** Reads an SPDK save_config document. */
    public static Imported read(String json) {
        JsonAt root = Migration.parse(json);
        return new Importer().read(root);
    }

    /** One RPC call of the document: its method and its params (an empty object when absent). */
    private record Call(String method, JsonAt params) {
        static Call of(JsonAt at) {
            at.requireObject();
            String method = at.field("method").nonEmptyText();
            JsonAt params = at.field("params");
            params = params.present() ? params.requireObject() : new JsonAt(JSON.objectNode(), params.path());
            return new Call(method, params);
        }

        String text(String name) {
            return params.field(name).nonEmptyText();
        }
    }

    /** A bdev a namespace can use; {@code unusable} says why it cannot, when it cannot. */
    private static final class Bdev {
        final String label; // bdev_malloc_create(Malloc0)
        final String backend;
        final String size;
        final Integer blockSize;
        final String path;
        final String uuid;
        final String unusable;
        boolean used;
        /** SPDK's readonly: hosts cannot write it; here they could. */
        boolean readonly;

        Bdev(String label, String backend, String size, Integer blockSize, String path, String uuid, String unusable) {
            this.label = label;
            this.backend = backend;
            this.size = size;
            this.blockSize = blockSize;
            this.path = path;
            this.uuid = uuid;
            this.unusable = unusable;
        }
    }

    /** What nvmf_create_transport says that we map. */
    private record Transport(String type, Integer inCapsule, Integer maxQueueDepth, Integer maxIoQpairs,
            Integer maxIoSize) {
    }

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

    private record ListenerKey(String trtype, String traddr, int trsvcid) {
    }

    /** One import: the state built up while reading the calls in order. */
    private static final class Importer {
        private final ImportReport notMapped = new ImportReport();
        private final Map<String, Bdev> bdevs = new LinkedHashMap<>();
        /** Bdev names created by kinds we do not have (bdev_null_create...), to explain a namespace using one. */
        private final Map<String, String> foreignBdevs = new LinkedHashMap<>();
        private final Map<String, Transport> transports = new LinkedHashMap<>();
        private final Map<String, SubsystemBuilder> subsystems = new LinkedHashMap<>();
        private final Map<ListenerKey, List<String>> listeners = new LinkedHashMap<>();

        Imported read(JsonAt root) {
            for (String key : root.fieldNames()) {
                if (!key.equals("subsystems")) {
                    notMapped.add(key + ": not part of an SPDK configuration; ignored");
                }
            }
            JsonAt list = root.field("subsystems");
            if (!list.present()) {
                list.requireObject(); // throws "subsystems is missing"
            }
            List<Call> bdevCalls = new ArrayList<>();
            List<Call> nvmfCalls = new ArrayList<>();
            for (JsonAt subsystem : list.elements()) {
                subsystem.requireObject();
                String name = subsystem.field("subsystem").nonEmptyText();
                List<Call> calls = new ArrayList<>();
                for (JsonAt call : subsystem.field("config").elements()) {
                    calls.add(Call.of(call));
                }
                switch (name) {
                    case "bdev" -> bdevCalls.addAll(calls);
                    case "nvmf" -> nvmfCalls.addAll(calls);
                    default -> listOtherSubsystem(name, calls);
                }
            }
            bdevCalls.forEach(this::readBdevCall);
            readNvmf(nvmfCalls);
            for (Bdev b : bdevs.values()) {
                if (!b.used) {
                    notMapped.add(b.label + ": not used by any namespace; not imported");
                }
            }
            return notMapped.imported(buildConfig());
        }

        private void listOtherSubsystem(String name, List<Call> calls) {
            Set<String> methods = new LinkedHashSet<>();
            calls.forEach(c -> methods.add(c.method()));
            for (String method : methods) {
                notMapped.add(name + ": " + method + ": SPDK's " + name + " settings have no equivalent here; ignored");
            }
        }

        // --- bdevs

        private void readBdevCall(Call call) {
            switch (call.method()) {
                case "bdev_malloc_create" -> readMalloc(call);
                case "bdev_aio_create", "bdev_uring_create" -> readFileBdev(call);
                default -> readForeignBdevCall(call);
            }
        }

        private void readMalloc(Call call) {
            String name = call.text("name");
            String label = call.method() + "(" + name + ")";
            long blocks = call.params().field("num_blocks").integer(1, Long.MAX_VALUE);
            int blockSize = (int) call.params().field("block_size").integer(1, 1 << 20);
            String uuid = Migration.uuid(call.params().field("uuid"));
            long bytes;
            try {
                bytes = Math.multiplyExact(blocks, blockSize);
            } catch (ArithmeticException e) {
                throw call.params().field("num_blocks").invalid("is too large for block_size " + blockSize);
            }
            listExtras(call, label, Set.of("name", "num_blocks", "block_size", "uuid"), blockSize);
            addBdev(name, call, new Bdev(label, "ram", Migration.formatSize(bytes), blockSize, null, uuid,
                    unusableBlockSize(blockSize)));
        }

        private void readFileBdev(Call call) {
            String name = call.text("name");
            String label = call.method() + "(" + name + ")";
            String filename = call.text("filename");
            Long blockSize = call.params().field("block_size").optInteger(0, 1 << 20);
            Integer bs = blockSize == null || blockSize == 0 ? null : blockSize.intValue(); // 0: detect
            String uuid = Migration.uuid(call.params().field("uuid"));
            listExtras(call, label, Set.of("name", "filename", "block_size", "uuid"), bs);
            addBdev(name, call, new Bdev(label, Migration.backendFor(filename), null, bs, filename, uuid,
                    bs == null ? null : unusableBlockSize(bs)));
        }

        private static String unusableBlockSize(int blockSize) {
            return blockSize == 512 || blockSize == 4096 ? null
                    : "has block_size " + blockSize + " (512 and 4096 only here)";
        }

        private void addBdev(String name, Call call, Bdev bdev) {
            if (bdevs.containsKey(name) || foreignBdevs.containsKey(name)) {
                throw new IllegalArgumentException(call.params().field("name").path() + ": bdev " + name
                        + " is created twice");
            }
            bdev.readonly = Boolean.TRUE.equals(call.params().field("readonly").optFlag());
            bdevs.put(name, bdev);
        }

        /**
         * Bdev parameters we do not map: listed unless they hold the value that means "off"; readonly is listed
         * where a namespace uses the bdev (a security setting only then).
         */
        private void listExtras(Call call, String label, Set<String> mapped, Integer blockSize) {
            for (String key : call.params().fieldNames()) {
                if (mapped.contains(key) || key.equals("readonly")) {
                    continue;
                }
                String value = call.params().field(key).display();
                boolean off = value.equals(BDEV_DEFAULTS.get(key)) || (key.equals("physical_block_size")
                        && (value.equals("0") || value.equals(String.valueOf(blockSize))));
                if (!off) {
                    notMapped.add(label + "." + key + "=" + value + ": " + bdevReason(key) + "; ignored");
                }
            }
        }

        private static String bdevReason(String key) {
            return switch (key) {
                case "md_size", "md_interleave", "dif_type", "dif_is_head_of_md", "dif_pi_format" ->
                        "metadata and protection information are not supported";
                default -> "no equivalent here";
            };
        }

        private void readForeignBdevCall(Call call) {
            JsonAt name = call.params().field("name");
            if (name.present() && name.node().isTextual()) {
                foreignBdevs.put(name.node().textValue(), call.method());
                notMapped.add(call.method() + "(" + name.display() + "): this kind of bdev has no equivalent here; "
                        + "not imported");
            } else {
                notMapped.add(call.method() + ": no equivalent here; ignored");
            }
        }

        // --- nvmf

        /** Transports and subsystems first, so calls that refer to them need not come after them. */
        private void readNvmf(List<Call> calls) {
            for (Call call : calls) {
                switch (call.method()) {
                    case "nvmf_create_transport" -> readTransport(call);
                    case "nvmf_create_subsystem" -> readSubsystem(call);
                    default -> { }
                }
            }
            for (Call call : calls) {
                switch (call.method()) {
                    case "nvmf_create_transport", "nvmf_create_subsystem" -> { }
                    case "nvmf_subsystem_add_host" -> readHost(call);
                    case "nvmf_subsystem_add_ns" -> readNamespace(call);
                    case "nvmf_subsystem_add_listener" -> readListener(call);
                    default -> listOtherNvmfCall(call);
                }
            }
        }

        private void readTransport(Call call) {
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

        private void readSubsystem(Call call) {
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

        private SubsystemBuilder subsystem(Call call) {
            String nqn = call.text("nqn");
            SubsystemBuilder s = subsystems.get(nqn);
            if (s == null) {
                throw new IllegalArgumentException(call.params().field("nqn").path() + ": subsystem " + nqn
                        + " is not created by any nvmf_create_subsystem");
            }
            return s;
        }

        private void readHost(Call call) {
            SubsystemBuilder s = subsystem(call);
            String host = call.text("host");
            String label = "nvmf_subsystem_add_host(" + s.nqn + ", " + host + ")";
            for (String key : call.params().fieldNames()) {
                switch (key) {
                    case "nqn", "host" -> { }
                    // The key's name in SPDK's keyring, or (older SPDK) the key itself: never repeated.
                    case "psk" -> notMapped.securityLost(label + ".psk: the host must connect over TLS with this"
                            + " pre-shared key; here it would connect in clear text (not supported)");
                    case "dhchap_key" -> notMapped.securityLost(label + ".dhchap_key: the host must authenticate"
                            + " itself (DH-HMAC-CHAP); here it would connect without authentication (not supported)");
                    case "dhchap_ctrlr_key" -> notMapped.securityLost(label + ".dhchap_ctrlr_key: the target"
                            + " authenticates itself to the host (DH-HMAC-CHAP); here it would not (not supported)");
                    default -> notMapped.add(label + "." + key + "=" + call.params().field(key).display()
                            + ": no equivalent here; ignored");
                }
            }
            if (!s.hosts.contains(host)) {
                s.hosts.add(host);
            }
        }

        private void readNamespace(Call call) {
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
                notMapped.add(label + ": bdev " + bdevName + " " + foreignOrigin(bdevName)
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

        /** Why a bdev name is unknown: it comes from a bdev kind we do not have, or from nothing in the document. */
        private String foreignOrigin(String bdevName) {
            if (foreignBdevs.containsKey(bdevName)) {
                return "comes from " + foreignBdevs.get(bdevName) + ", which has no equivalent here";
            }
            for (Map.Entry<String, String> e : foreignBdevs.entrySet()) {
                // bdev_nvme_attach_controller "Nvme0" creates one bdev per namespace: Nvme0n1, Nvme0n2, ...
                if (bdevName.matches(java.util.regex.Pattern.quote(e.getKey()) + "n\\d+")) {
                    return "comes from " + e.getValue() + "(" + e.getKey() + "), which has no equivalent here";
                }
            }
            return "is not created by bdev_malloc_create, bdev_aio_create or bdev_uring_create";
        }

        private void listNamespaceExtras(Call call, JsonAt ns, String label) {
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

        private void readListener(Call call) {
            String nqn = call.text("nqn");
            if (!nqn.equals(DISCOVERY_NQN)) {
                subsystem(call);
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
            List<String> nqns = listeners.computeIfAbsent(new ListenerKey(trtype, traddr, trsvcid),
                    k -> new ArrayList<>());
            if (!nqns.contains(nqn)) {
                nqns.add(nqn);
            }
        }

        private void listListenerExtras(Call call, JsonAt address, String label) {
            for (String key : address.fieldNames()) {
                if (!Set.of("trtype", "adrfam", "traddr", "trsvcid").contains(key)) {
                    notMapped.add(label + ".listen_address." + key + "=" + address.field(key).display()
                            + ": no equivalent here; ignored");
                }
            }
            for (String key : call.params().fieldNames()) {
                String value = call.params().field(key).display();
                if (key.equals("secure_channel") && !value.equals("false")) {
                    notMapped.securityLost(label + ".secure_channel=" + value + ": hosts connect over TLS there;"
                            + " here they would connect in clear text (not supported)");
                    continue;
                }
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

        private void listOtherNvmfCall(Call call) {
            String reason = switch (call.method()) {
                case "nvmf_set_max_subsystems" -> "the limit here is fixed at " + LiveConfiguration.MAX_SUBSYSTEMS
                        + " subsystems; ignored";
                case "nvmf_set_crdt" -> "command retry delay times are not supported; ignored";
                case "nvmf_set_config" -> "target-wide SPDK options have no equivalent here; ignored";
                case "nvmf_discovery_add_referral" -> "referrals are not supported; not imported";
                case "nvmf_ns_add_host" -> "per-host namespace visibility is not supported; ignored";
                default -> "no equivalent here; ignored";
            };
            String what = switch (call.method()) {
                case "nvmf_discovery_add_referral" -> "(" + call.params().field("address").field("trtype").display()
                        + " " + call.params().field("address").field("traddr").display() + ":"
                        + call.params().field("address").field("trsvcid").display() + ")";
                case "nvmf_ns_add_host" -> "(" + call.params().field("nqn").display() + ", nsid "
                        + call.params().field("nsid").display() + ", " + call.params().field("host").display() + ")";
                default -> "";
            };
            notMapped.add(call.method() + what + ": " + reason);
        }

        // --- result

        private TargetConfig buildConfig() {
            List<ListenerConfig> result = new ArrayList<>();
            int id = 1;
            for (Map.Entry<ListenerKey, List<String>> e : listeners.entrySet()) {
                ListenerKey key = e.getKey();
                Transport t = transports.get(key.trtype());
                result.add(new ListenerConfig(id++, key.trtype().toLowerCase(Locale.ROOT), key.traddr(),
                        key.trsvcid(), t != null ? t.inCapsule() : null, null, List.copyOf(e.getValue())));
            }
            List<SubsystemConfig> subs = new ArrayList<>();
            subsystems.values().forEach(s -> subs.add(s.build()));
            return new TargetConfig(null, global("max_io_qpairs_per_ctrlr", Transport::maxIoQpairs),
                    global("max_queue_depth", Transport::maxQueueDepth), global("max_io_size", Transport::maxIoSize),
                    result, subs);
        }

        /** A per-transport SPDK limit as our single global one: the smallest, and a line for each larger one. */
        private Integer global(String param, Function<Transport, Integer> get) {
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

    // ---------------------------------------------------------------------------------------------------------------
    // Export

    /** Writes our document as an SPDK save_config document. */
    public static Exported write(TargetConfig c) {
        if (c == null) {
            throw new IllegalArgumentException("the configuration is missing");
        }
        return new Exporter(c).write();
    }

    private static final class Exporter {
        private final TargetConfig c;
        private final List<String> notMapped = new ArrayList<>();
        private final ArrayNode bdevConfig = JSON.arrayNode();
        private final ArrayNode nvmfConfig = JSON.arrayNode();
        private final List<String> allNqns = new ArrayList<>();
        private int mallocs;
        private int aios;

        Exporter(TargetConfig c) {
            this.c = c;
        }

        Exported write() {
            if (c.pollGroups() != null) {
                notMapped.add("pollGroups=" + c.pollGroups() + ": SPDK runs a poll group per reactor (choose its "
                        + "cores with spdk_tgt -m); not exported");
            }
            if (c.busyPollUs() != null) {
                notMapped.add("busyPollUs=" + c.busyPollUs() + ": SPDK's poll groups always poll (its interrupt mode"
                        + " is spdk_tgt --interrupt-mode); not exported");
            }
            List<SubsystemConfig> subsystems = orEmpty(c.subsystems());
            for (int i = 0; i < subsystems.size(); i++) {
                SubsystemConfig s = subsystems.get(i);
                if (s == null || s.nqn() == null) {
                    throw new IllegalArgumentException("subsystems[" + i + "].nqn is missing");
                }
                allNqns.add(s.nqn());
            }
            writeTransports();
            for (int i = 0; i < subsystems.size(); i++) {
                writeSubsystem(subsystems.get(i), "subsystems[" + i + "]");
            }
            writeListeners();
            ObjectNode root = JSON.objectNode();
            ArrayNode list = root.putArray("subsystems");
            list.addObject().put("subsystem", "bdev").set("config", bdevConfig);
            list.addObject().put("subsystem", "nvmf").set("config", nvmfConfig);
            return new Exported(Migration.pretty(root), notMapped);
        }

        private static String transportOf(ListenerConfig l) {
            return l.transport() != null ? l.transport().toLowerCase(Locale.ROOT) : "tcp";
        }

        private void writeTransports() {
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

        private void writeSubsystem(SubsystemConfig s, String where) {
            ObjectNode params = call(nvmfConfig, "nvmf_create_subsystem");
            params.put("nqn", s.nqn());
            params.put("allow_any_host", Migration.effectiveAllowAnyHost(s));
            params.put("serial_number", Migration.effectiveSerial(s));
            params.put("model_number", Migration.effectiveModel(s));
            putIfSet(params, "max_namespaces", s.maxNamespaces());
            for (String host : orEmpty(s.hosts())) {
                ObjectNode h = call(nvmfConfig, "nvmf_subsystem_add_host");
                h.put("nqn", s.nqn());
                h.put("host", host);
            }
            long next = 1;
            List<NamespaceConfig> namespaces = orEmpty(s.namespaces());
            for (int j = 0; j < namespaces.size(); j++) {
                NamespaceConfig n = namespaces.get(j);
                String at = where + ".namespaces[" + j + "]";
                if (n == null) {
                    throw new IllegalArgumentException(at + " is missing");
                }
                long nsid = n.nsid() != null ? n.nsid() : next; // the target's numbering of unnumbered namespaces
                next = nsid + 1;
                writeNamespace(s.nqn(), n, nsid, at);
            }
        }

        private void writeNamespace(String nqn, NamespaceConfig n, long nsid, String where) {
            String backend = Migration.effectiveBackend(n);
            String bdevName = switch (backend) {
                case "ram" -> writeMalloc(n, where);
                case "file", "block" -> writeAio(n, backend, where);
                default -> throw new IllegalArgumentException(where + ".backend '" + n.backend()
                        + "' is not ram, file or block");
            };
            ObjectNode params = call(nvmfConfig, "nvmf_subsystem_add_ns");
            params.put("nqn", nqn);
            ObjectNode ns = params.putObject("namespace");
            ns.put("nsid", nsid);
            ns.put("bdev_name", bdevName);
            if ("ram".equals(backend) && n.uuid() == null && n.nguid() == null) {
                // A RAM namespace made there is a new, empty volume: SPDK gives it identifiers of its own, as the
                // target does each time it makes one (NvmeTarget.namespaceUuid).
                return;
            }
            String uuid = Migration.effectiveUuid(nqn, nsid, n, where);
            // As SPDK writes it: 32 upper-case hex digits.
            ns.put("nguid", Migration.effectiveNguid(uuid, n, where).toUpperCase(Locale.ROOT));
            ns.put("uuid", uuid);
        }

        private String writeMalloc(NamespaceConfig n, String where) {
            int blockSize = n.blockSize() != null ? n.blockSize() : 512;
            long bytes;
            try {
                bytes = TargetConfig.parseSize(n.size() != null ? n.size() : "1GiB"); // the target's default
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + ".size: " + e.getMessage(), e);
            }
            long blocks = bytes / blockSize;
            if (blocks == 0) {
                throw new IllegalArgumentException(where + ".size " + n.size() + " is less than one block of "
                        + blockSize + " bytes");
            }
            if (bytes % blockSize != 0) {
                notMapped.add(where + ".size=" + n.size() + ": not a multiple of the block size " + blockSize
                        + "; exported as " + blocks + " blocks");
            }
            String name = "Malloc" + mallocs++;
            ObjectNode params = call(bdevConfig, "bdev_malloc_create");
            params.put("name", name);
            params.put("num_blocks", blocks);
            params.put("block_size", blockSize);
            if (n.uuid() != null) {
                params.put("uuid", n.uuid().toLowerCase(Locale.ROOT));
            }
            return name;
        }

        private String writeAio(NamespaceConfig n, String backend, String where) {
            if (n.path() == null || n.path().isBlank()) {
                throw new IllegalArgumentException(where + ".path is missing");
            }
            if (n.size() != null) {
                notMapped.add(where + ".size=" + n.size() + ": SPDK's aio bdev serves the whole " + backend
                        + "; not exported");
            }
            String name = "AIO" + aios++;
            ObjectNode params = call(bdevConfig, "bdev_aio_create");
            params.put("name", name);
            params.put("filename", n.path());
            // A block device's logical block size is detected; a regular file's cannot be, so it is always written.
            Integer blockSize = n.blockSize() != null ? n.blockSize() : backend.equals("file") ? 512 : null;
            putIfSet(params, "block_size", blockSize);
            return name;
        }

        private void writeListeners() {
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

        /** Appends {@code {"method": method, "params": {}}} to {@code config} and returns the params. */
        private static ObjectNode call(ArrayNode config, String method) {
            ObjectNode call = config.addObject();
            call.put("method", method);
            return call.putObject("params");
        }

        private static void putIfSet(ObjectNode params, String name, Integer value) {
            if (value != null) {
                params.put(name, value);
            }
        }
    }
}

package io.nvmeof.tgt.config;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The target's one configuration document: listeners, subsystems, their namespaces and allowed hosts. The CLI reads
 * it with {@code --config}; the admin API will export, import and persist the same document.
 *
 * <pre>{@code
 * {
 *   "pollGroups": 2, "busyPollUs": 50, "pollGroupCpus": "2-3",
 *   "listeners": [ {"transport": "tcp", "address": "127.0.0.1", "port": 4420} ],
 *   "referrals": [ {"transport": "tcp", "address": "192.168.1.20", "port": 4420} ],
 *   "subsystems": [ {
 *       "nqn": "nqn.2026-11.io.nvmeof:default", "allowAnyHost": true, "hosts": [],
 *       "namespaces": [ {"nsid": 1, "backend": "ram", "size": "1GiB", "blockSize": 512} ] } ]
 * }
 * }</pre>
 *
 * @param busyPollUs how long, in microseconds, an NVMe/TCP poll group keeps polling its connections without blocking
 *                   after its last work (SPDK's poll groups always poll; Linux's {@code net.core.busy_poll} is the same
 *                   idea): lower latency for a core's worth of CPU while busy; null or 0 blocks at once (interrupt mode)
 * @param pollGroupCpus the CPUs the poll groups run on, one each, in the cpulist form of {@code taskset -c}
 *                   ({@code 2-3,6}): poll group N on the Nth CPU, every other thread of the JVM (compilers, GC,
 *                   timers, backend workers, the admin API) on the CPUs of the process that are left; null: the
 *                   kernel places every thread. Without it a polling thread shares its core with those threads and
 *                   loses it for a scheduler tick whenever one wakes (docs/performance.md, "Tails")
 * @param maxConnectionMemory the most one connection may hold (its request slots and buffers, and its commands' data
 *                   in flight), with a unit ({@code 64MiB}); null: 64 MiB. A Connect for a queue that could not run its
 *                   largest transfer within it is refused; commands beyond it wait for the connection's earlier ones
 * @param maxMemory  the most all connections together may hold, with a unit ({@code 2GiB}); null: half the JVM's
 *                   heap limit, at least 256 MiB. A Connect beyond it is refused as Controller Busy (the host retries);
 *                   commands beyond it wait for memory other connections give back
 * @param maxSparseMemory the most the sparse RAM namespaces may promise together (the sum of their sizes), with a
 *                   unit ({@code 256GiB}); null: 4 times the machine's memory. A sparse namespace beyond it is refused
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"pollGroups", "busyPollUs", "pollGroupCpus", "maxIoQueues", "maxQueueSize", "maxTransferSize",
        "maxConnectionMemory", "maxMemory", "maxSparseMemory", "hosts", "referrals"})
public record TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
        List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs,
        String maxConnectionMemory, String maxMemory, String maxSparseMemory, String pollGroupCpus,
        List<HostConfig> hosts, List<ReferralConfig> referrals) {

    public TargetConfig {
        // 0 is the default (block at once): one spelling, so an export, an import and a comparison agree.
        if (busyPollUs != null && busyPollUs == 0) {
            busyPollUs = null;
        }
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs,
            String maxConnectionMemory, String maxMemory, String maxSparseMemory, String pollGroupCpus,
            List<HostConfig> hosts) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs,
                maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, hosts, null);
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs,
            String maxConnectionMemory, String maxMemory, String maxSparseMemory, String pollGroupCpus) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs,
                maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, null);
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs,
            String maxConnectionMemory, String maxMemory, String maxSparseMemory) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs,
                maxConnectionMemory, maxMemory, maxSparseMemory, null);
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs,
            String maxConnectionMemory, String maxMemory) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs,
                maxConnectionMemory, maxMemory, null);
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, null);
    }

    public TargetConfig(Integer pollGroups, Integer maxIoQueues, Integer maxQueueSize, Integer maxTransferSize,
            List<ListenerConfig> listeners, List<SubsystemConfig> subsystems, Integer busyPollUs) {
        this(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs, null, null);
    }

    /** This configuration with {@code us} microseconds of busy polling (0: none). */
    public TargetConfig withBusyPollUs(int us) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, us,
                maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, hosts, referrals);
    }

    /** This configuration with its poll groups on {@code cpus} (a cpulist; null: placed by the kernel). */
    public TargetConfig withPollGroupCpus(String cpus) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems,
                busyPollUs, maxConnectionMemory, maxMemory, maxSparseMemory, cpus, hosts, referrals);
    }

    /** This configuration with {@code n} poll groups (null: one per core). */
    public TargetConfig withPollGroups(Integer n) {
        return new TargetConfig(n, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems, busyPollUs,
                maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, hosts, referrals);
    }

    /** This configuration with the given memory limits (sizes with units; null: the default). */
    public TargetConfig withMemoryLimits(String perConnection, String total) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems,
                busyPollUs, perConnection, total, maxSparseMemory, pollGroupCpus, hosts, referrals);
    }

    /** This configuration with other listeners and subsystems, every global setting kept. */
    public TargetConfig withContents(List<ListenerConfig> newListeners, List<SubsystemConfig> newSubsystems) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, newListeners, newSubsystems,
                busyPollUs, maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, hosts, referrals);
    }

    public static final String DEFAULT_NQN = "nqn.2026-11.io.nvmeof:default";

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    /** This configuration with other host entries (their DH-HMAC-CHAP secrets); null: none. */
    public TargetConfig withHosts(List<HostConfig> newHosts) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems,
                busyPollUs, maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, newHosts, referrals);
    }

    /** This configuration with other referrals (null: none). */
    public TargetConfig withReferrals(List<ReferralConfig> newReferrals) {
        return new TargetConfig(pollGroups, maxIoQueues, maxQueueSize, maxTransferSize, listeners, subsystems,
                busyPollUs, maxConnectionMemory, maxMemory, maxSparseMemory, pollGroupCpus, hosts, newReferrals);
    }

    /**
     * A referral: an entry of this target's discovery log that sends hosts to another discovery service (nvmet's
     * {@code ports/N/referrals/NAME}, SPDK's {@code nvmf_discovery_add_referral}), so one discovery controller can
     * point hosts at every target of a deployment. Target-wide: every host reads it on every listener (nvmet keeps
     * referrals per port).
     *
     * @param id        this target's handle for the referral (1 to 65535; null: the lowest free), for the admin API
     * @param transport {@code tcp} (default) or {@code rdma}
     * @param address   the other service's IP address (a name is resolved once, when the referral is set: the log
     *                  carries the address, as kernel hosts need one)
     * @param port      its port; null: the one {@code nvme discover} assumes, 8009 (the IANA NVMe/TCP discovery port)
     *                  for tcp and 4420 for rdma. This target serves discovery on every listener, usually 4420
     * @param subsystem null (default) or the discovery NQN: a referral to a discovery service (SUBTYPE 1); an NVM
     *                  subsystem's NQN: a direct entry for that subsystem there (SUBTYPE 2, as SPDK's {@code subnqn})
     * @param tls       how the other end takes NVMe/TCP: {@code none} (default), {@code allowed} or {@code required}
     *                  (TREQ and TSAS as our listeners say theirs; SPDK's {@code secure_channel} is required)
     * @param portId    the PORTID of the other end's port (nvmet's {@code addr_portid}); null: 0, as SPDK gives
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ReferralConfig(Integer id, String transport, String address, Integer port, String subsystem,
            String tls, Integer portId) {
        /** This referral with another id (what the admin API or an import gave it). */
        public ReferralConfig withId(int newId) {
            return new ReferralConfig(newId, transport, address, port, subsystem, tls, portId);
        }
    }

    /**
     * A host's in-band authentication settings, target-wide as nvmetcli's {@code hosts} (a subsystem's {@code hosts}
     * list says which hosts it admits; this says how a host proves it is the one named). Secrets are in the form
     * {@code nvme gen-dhchap-key} prints ({@code DHHC-1:xx:...:}); an exported document never carries them.
     *
     * @param nqn           the host NQN
     * @param dhchapKey     the host's secret: a host with one must authenticate (DH-HMAC-CHAP) on every queue
     * @param dhchapCtrlKey the controller's secret, for a host that asks the controller to authenticate too
     *                      (bidirectional); null: such a request is refused
     * @param dhchapHash    the hash the target asks for when the host offers it: {@code sha256} (default),
     *                      {@code sha384}, {@code sha512} ({@code hmac(sha256)} as nvmetcli writes it is taken too)
     * @param dhchapDhGroup the DH group the target asks for: {@code null} (default: no key exchange, as nvmet's
     *                      default), {@code ffdhe2048} ... {@code ffdhe8192}
     * @param tlsKey        the host's configured TLS PSK in the interchange format {@code nvme gen-tls-key} prints
     *                      ({@code NVMeTLSkey-1:xx:...:}): a host with one must connect over TLS (NVMe/TCP), with the
     *                      PSK derived from it for its host NQN and the subsystem's NQN
     * @param tlsKeyDerivation how the host's nvme-cli derives TLS PSKs: {@code standard} (default; the NVMe/TCP
     *                      specification, nvme-cli 2.16 and later) or {@code legacy} (nvme-cli 2.15 and earlier,
     *                      such as Debian 13's, or a later one given {@code --compat})
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record HostConfig(String nqn, String dhchapKey, String dhchapCtrlKey, String dhchapHash,
            String dhchapDhGroup, String tlsKey, String tlsKeyDerivation) {
        public HostConfig(String nqn, String dhchapKey, String dhchapCtrlKey, String dhchapHash, String dhchapDhGroup) {
            this(nqn, dhchapKey, dhchapCtrlKey, dhchapHash, dhchapDhGroup, null, null);
        }

        @Override
        public String toString() {
            // Never the secrets: a record's own toString would print them into a log line.
            return "HostConfig[nqn=" + nqn + ", dhchapKey=" + (dhchapKey == null ? "none" : "set") + ", dhchapCtrlKey="
                    + (dhchapCtrlKey == null ? "none" : "set") + ", dhchapHash=" + dhchapHash + ", dhchapDhGroup="
                    + dhchapDhGroup + ", tlsKey=" + (tlsKey == null ? "none" : "set") + ", tlsKeyDerivation="
                    + tlsKeyDerivation + "]";
        }
    }

    /**
     * @param subsystems NQNs exported on this listener; null or empty exports all.
     * @param tls        NVMe/TCP only: {@code none} (default: plain TCP), {@code required} (TLS 1.3 with a PSK; the
     *                   discovery log says so) or {@code allowed} (either; a connection that starts with a TLS
     *                   ClientHello gets TLS), as nvmet's {@code addr_tsas} and {@code addr_treq}
     * @param ana        the ANA state of ANA groups on this port, by group ID ({@code {"2": "inaccessible"}}): one of
     *                   optimized, non-optimized, inaccessible, persistent-loss, change (nvmet's
     *                   {@code ana_groups/G/ana_state}); a group left out is optimized
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ListenerConfig(Integer id, String transport, String address, Integer port, Integer inlineDataSize,
            Integer maxH2CData, List<String> subsystems, String tls, java.util.Map<String, String> ana) {
        public ListenerConfig(Integer id, String transport, String address, Integer port, Integer inlineDataSize,
                Integer maxH2CData, List<String> subsystems, String tls) {
            this(id, transport, address, port, inlineDataSize, maxH2CData, subsystems, tls, null);
        }

        public ListenerConfig(Integer id, String transport, String address, Integer port, Integer inlineDataSize,
                Integer maxH2CData, List<String> subsystems) {
            this(id, transport, address, port, inlineDataSize, maxH2CData, subsystems, null, null);
        }

        /** This listener with another id and port (what an import or the admin API gave it), its settings kept. */
        public ListenerConfig withIdAndPort(int newId, int newPort) {
            return new ListenerConfig(newId, transport, address, newPort, inlineDataSize, maxH2CData, subsystems, tls, ana);
        }

        /** This listener with other ANA group states (group ID to state; null: every group optimized). */
        public ListenerConfig withAna(java.util.Map<String, String> states) {
            return new ListenerConfig(id, transport, address, port, inlineDataSize, maxH2CData, subsystems, tls, states);
        }
    }

    /**
     * @param cntlidMin the lowest controller ID this target gives the subsystem's controllers (default 1), as nvmet's
     *                  {@code attr_cntlid_min}: targets that export the same subsystem (same NQN, namespaces with the
     *                  same NGUID and UUID over a shared backend) must give disjoint ranges, or a host connected to
     *                  two of them sees two controllers with one ID and drops one path
     * @param cntlidMax the highest (default 65519, FFEFh)
     * @param sharedReservations a directory every target exporting the subsystem reaches (on the shared storage, or a
     *                  cluster file system), where they share its namespaces' reservations, so that a host fenced
     *                  through one target is fenced through all; null: each target keeps its own, and a subsystem
     *                  with a controller ID range (exported by several targets) then offers no reservations at all
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record SubsystemConfig(String nqn, String serial, String model, Integer maxNamespaces, Boolean allowAnyHost,
            List<String> hosts, List<NamespaceConfig> namespaces, Integer cntlidMin, Integer cntlidMax,
            String sharedReservations) {
        public SubsystemConfig(String nqn, String serial, String model, Integer maxNamespaces, Boolean allowAnyHost,
                List<String> hosts, List<NamespaceConfig> namespaces) {
            this(nqn, serial, model, maxNamespaces, allowAnyHost, hosts, namespaces, null, null);
        }

        public SubsystemConfig(String nqn, String serial, String model, Integer maxNamespaces, Boolean allowAnyHost,
                List<String> hosts, List<NamespaceConfig> namespaces, Integer cntlidMin, Integer cntlidMax) {
            this(nqn, serial, model, maxNamespaces, allowAnyHost, hosts, namespaces, cntlidMin, cntlidMax, null);
        }

        /** This subsystem with other access rules: whether any host may connect, and the hosts listed. */
        public SubsystemConfig withAccess(Boolean anyHost, List<String> newHosts) {
            return new SubsystemConfig(nqn, serial, model, maxNamespaces, anyHost, newHosts, namespaces, cntlidMin,
                    cntlidMax, sharedReservations);
        }

        /** This subsystem with other namespaces. */
        public SubsystemConfig withNamespaces(List<NamespaceConfig> newNamespaces) {
            return new SubsystemConfig(nqn, serial, model, maxNamespaces, allowAnyHost, hosts, newNamespaces,
                    cntlidMin, cntlidMax, sharedReservations);
        }
    }

    /**
     * @param backend {@code ram}, {@code file} or {@code block} (a block device)
     * @param size    bytes or with a unit (512MiB, 1GiB, 4k); for file and block backends, null means the file's or
     *                device's own size
     * @param nguid   32 hex digits; null: the UUID's 16 bytes (a migrated namespace keeps the NGUID hosts knew)
     * @param sparse  ram only: true commits memory on first write; null or false commits it all when the namespace
     *                is created (SPDK's Malloc bdev does), so writes never pay for it
     * @param bufferedIo file and block only: true serves the namespace through the page cache (nvmet's
     *                {@code buffered_io}); null or false with direct I/O (O_DIRECT through the poll groups' io_uring)
     * @param queueDepth file and block only: the namespace's reads, writes and flushes at the device at once per poll
     *                group (1 to 65535); null: as many as the poll group's ring takes (128 by default)
     * @param anaGroup the namespace's ANA group (1 to 128; null: 1), whose state each listener sets ({@code ana})
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid,
            String nguid, Boolean sparse, Boolean bufferedIo, Integer queueDepth, Integer anaGroup) {
        public NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid,
                String nguid, Boolean sparse, Boolean bufferedIo, Integer queueDepth) {
            this(nsid, backend, size, blockSize, path, uuid, nguid, sparse, bufferedIo, queueDepth, null);
        }

        public NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid,
                String nguid, Boolean sparse, Boolean bufferedIo) {
            this(nsid, backend, size, blockSize, path, uuid, nguid, sparse, bufferedIo, null);
        }

        public NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid,
                String nguid, Boolean sparse) {
            this(nsid, backend, size, blockSize, path, uuid, nguid, sparse, null, null);
        }

        public NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid,
                String nguid) {
            this(nsid, backend, size, blockSize, path, uuid, nguid, null, null, null);
        }

        public NamespaceConfig(Long nsid, String backend, String size, Integer blockSize, String path, String uuid) {
            this(nsid, backend, size, blockSize, path, uuid, null, null, null, null);
        }

        /** This namespace with {@code id} as its NSID. */
        public NamespaceConfig withNsid(long id) {
            return new NamespaceConfig(id, backend, size, blockSize, path, uuid, nguid, sparse, bufferedIo, queueDepth,
                    anaGroup);
        }

        /** This namespace with another size (bytes or with a unit). */
        public NamespaceConfig withSize(String newSize) {
            return new NamespaceConfig(nsid, backend, newSize, blockSize, path, uuid, nguid, sparse, bufferedIo,
                    queueDepth, anaGroup);
        }

        /** This namespace with another queue depth to its device (null: the poll group's ring's). */
        public NamespaceConfig withQueueDepth(Integer depth) {
            return new NamespaceConfig(nsid, backend, size, blockSize, path, uuid, nguid, sparse, bufferedIo, depth,
                    anaGroup);
        }

        /** This namespace in another ANA group (null: group 1). */
        public NamespaceConfig withAnaGroup(Integer group) {
            return new NamespaceConfig(nsid, backend, size, blockSize, path, uuid, nguid, sparse, bufferedIo, queueDepth,
                    group);
        }

        /** This namespace with its memory committed on first write ({@code true}) or up front. */
        public NamespaceConfig withSparse(boolean on) {
            return new NamespaceConfig(nsid, backend, size, blockSize, path, uuid, nguid, on ? true : null, bufferedIo,
                    queueDepth, anaGroup);
        }
    }

    /** The embedded default: one 1 GiB RAM namespace on NVMe/TCP 127.0.0.1:4420. */
    public static TargetConfig defaults(String address, int port, String size, int blockSize, String file) {
        return defaults("tcp", address, port, size, blockSize, file);
    }

    /** As {@link #defaults(String, int, String, int, String)} on the given transport (tcp or rdma). */
    public static TargetConfig defaults(String transport, String address, int port, String size, int blockSize, String file) {
        NamespaceConfig ns = file == null ? new NamespaceConfig(1L, "ram", size, blockSize, null, null)
                : new NamespaceConfig(1L, "file", size, blockSize, file, null);
        return new TargetConfig(null, null, null, null,
                List.of(new ListenerConfig(1, transport, address, port, null, null, null)),
                List.of(new SubsystemConfig(DEFAULT_NQN, null, null, null, true, null, List.of(ns))));
    }

    /** This configuration with every subsystem's namespaces changed by {@code change}. */
    public TargetConfig withNamespaces(java.util.function.UnaryOperator<NamespaceConfig> change) {
        List<SubsystemConfig> subs = subsystems == null ? null : subsystems.stream()
                .map(s -> s.withNamespaces(s.namespaces() == null ? null : s.namespaces().stream().map(change).toList()))
                .toList();
        return withContents(listeners, subs);
    }

    public static TargetConfig load(Path file) throws IOException {
        try {
            return MAPPER.readValue(Files.readAllBytes(file), TargetConfig.class);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            // The API's words (the field's path, the names that belong there), not Jackson's (Java classes).
            throw new IOException("config " + file + " is not valid: " + JsonErrors.describe(e)
                    + (e.getLocation() != null && e.getLocation().getLineNr() > 0 ? " (line " + e.getLocation().getLineNr()
                    + ")" : ""), e);
        }
    }

    public static TargetConfig parse(String json) throws IOException {
        return MAPPER.readValue(json, TargetConfig.class);
    }

    public String toJson() {
        try {
            return MAPPER.writeValueAsString(this);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The bytes a size names: {@link ByteSize} says which forms are accepted and why. */
    public static long parseSize(String text) {
        return ByteSize.parse(text);
    }

    /**
     * Checks every size of this document (memory limits, namespaces) as a start would read it, so that
     * {@code --print-config} never prints one the target then refuses.
     *
     * @throws IllegalArgumentException naming the field ({@code subsystems[0].namespaces[1].size}) and the forms
     */
    public void checkSizes() {
        checkSize("maxConnectionMemory", maxConnectionMemory);
        checkSize("maxMemory", maxMemory);
        checkSize("maxSparseMemory", maxSparseMemory);
        if (subsystems == null) {
            return;
        }
        for (int i = 0; i < subsystems.size(); i++) {
            List<NamespaceConfig> namespaces = subsystems.get(i) == null ? null : subsystems.get(i).namespaces();
            for (int j = 0; namespaces != null && j < namespaces.size(); j++) {
                if (namespaces.get(j) != null) {
                    checkSize("subsystems[" + i + "].namespaces[" + j + "].size", namespaces.get(j).size());
                }
            }
        }
    }

    private static void checkSize(String field, String text) {
        if (text == null) {
            return;
        }
        try {
            ByteSize.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(field + ": " + e.getMessage(), e);
        }
    }
}

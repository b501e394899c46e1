package io.nvmeof.admin.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class NvmetcliFormatTest {

    private static final String DB = "nqn.2023-06.com.example:db";
    private static final String SCRATCH = "nqn.2023-06.com.example:scratch";
    private static final String HOST_A = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4710-8052-b4c04f4d3232";
    private static final String HOST_B = "nqn.2014-08.org.nvmexpress:uuid:a9f3c0de-7b21-4e8a-9d55-0c6f2e1b7a44";
    private static final ObjectMapper JSON = new ObjectMapper();

    static String resource(String name) throws IOException {
        try (InputStream in = NvmetcliFormatTest.class.getResourceAsStream("/migration/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    // --- import

    @Test
    void importsPortsAsListeners() throws IOException {
        TargetConfig c = NvmetcliFormat.read(resource("nvmetcli-config.json")).config();

        assertEquals(3, c.listeners().size(), "the loop port is not imported");
        ListenerConfig tcp = c.listeners().get(0);
        assertEquals(1, tcp.id());
        assertEquals("tcp", tcp.transport());
        assertEquals("192.168.10.5", tcp.address());
        assertEquals(4420, tcp.port());
        assertEquals(16384, tcp.inlineDataSize());
        assertNull(tcp.maxH2CData());
        assertEquals(List.of(DB, SCRATCH), tcp.subsystems());

        ListenerConfig rdma = c.listeners().get(1);
        assertEquals(2, rdma.id());
        assertEquals("rdma", rdma.transport());
        assertEquals("10.0.0.5", rdma.address());
        assertEquals(4420, rdma.port());
        assertNull(rdma.inlineDataSize(), "-1 is nvmet's 'let the transport choose'");
        assertEquals(List.of(DB), rdma.subsystems());
        assertEquals(java.util.Map.of("2", "inaccessible"), rdma.ana(), "its ana_groups (group 1 optimized is the default)");
        assertNull(tcp.ana(), "group 1 optimized only");

        ListenerConfig discoveryOnly = c.listeners().get(2);
        assertEquals(4, discoveryOnly.id());
        assertEquals("fd00::5", discoveryOnly.address());
        assertEquals(8009, discoveryOnly.port());
        assertEquals(List.of(Migration.DISCOVERY_NQN), discoveryOnly.subsystems(),
                "an nvmet port without subsystems serves discovery only; ours with an empty list would serve all");
        assertNull(c.pollGroups());
        assertNull(c.maxIoQueues());
        assertNull(c.maxQueueSize());
        assertNull(c.maxTransferSize());
    }

    @Test
    void importsSubsystemsHostsAndNamespaces() throws IOException {
        TargetConfig c = NvmetcliFormat.read(resource("nvmetcli-config.json")).config();

        assertEquals(2, c.subsystems().size());
        SubsystemConfig db = c.subsystems().get(0);
        assertEquals(DB, db.nqn());
        assertEquals("5f1e0c2b9a7d4e31", db.serial());
        assertEquals("Linux", db.model());
        assertNull(db.maxNamespaces());
        assertEquals(false, db.allowAnyHost());
        assertEquals(List.of(HOST_A, HOST_B), db.hosts());
        assertEquals(List.of(
                new NamespaceConfig(1L, "block", null, null, "/dev/nvme0n1", "d592cdf3-5d1c-44e0-8412-3fcf7d99df27",
                        "ef90689c6c46d44c89c14067801309a8"),
                new NamespaceConfig(2L, "file", null, null, "/srv/nvmet/db-log.img",
                        "3c1f8b52-4e0a-4d7b-9a61-2b8e5f0c7d19", null, null, null, null, 2)), db.namespaces(),
                "nsid 3 is disabled; an all-zero NGUID is unset");

        SubsystemConfig scratch = c.subsystems().get(1);
        assertEquals(SCRATCH, scratch.nqn());
        assertNull(scratch.serial(), "longer than 20 characters");
        assertEquals("Linux", scratch.model());
        assertEquals(true, scratch.allowAnyHost());
        assertEquals(List.of(), scratch.hosts());
        assertEquals(List.of(new NamespaceConfig(1L, "file", null, null, "/var/lib/nvmet/scratch.img",
                "e4a1c9d0-6b3f-4f2e-8c7a-1d5b9e0f2a36", null)), scratch.namespaces());
    }

    @Test
    void listsEverythingItCannotImport() throws IOException {
        Imported imported = NvmetcliFormat.read(resource("nvmetcli-config.json"));

        assertEquals(List.of(
                "subsystems[0].attr.firmware=6.8.0-45: the firmware revision reported is this target's own; ignored",
                "subsystems[0].attr.ieee_oui=0x000000: the IEEE OUI reported is this target's own; ignored",
                "subsystems[0].attr.qid_max=128: set maxIoQueues for a target-wide limit; ignored",
                "subsystems[0].attr.version=1.3: the NVMe version reported is this target's own; ignored",
                "subsystems[0].namespaces[2] (nsid 3, /dev/ram0): disabled in nvmet (enable 0); not imported",
                "subsystems[1].attr.serial=this-serial-is-far-too-long-for-nvme: must be 1 to 20 printable ASCII "
                        + "characters here; not imported (the target's default is used)",
                "subsystems[1].attr.version=1.3: the NVMe version reported is this target's own; ignored",
                "ports[2] (portid 3): transport loop is not supported (tcp and rdma only); not imported",
                "ports[3].addr.treq=required: the port admits hosts only over a secure channel, but names none (tsas);"
                        + " here they would connect in clear text",
                "ports[1].referrals[0] (referral peer-b to rdma 10.0.0.6:4420): nvmet lists it on port(s) [2] only;"
                        + " referrals are target-wide here, so hosts see it on every listener"),
                imported.notMapped());
        assertEquals(List.of(imported.notMapped().get(imported.notMapped().size() - 2)), imported.securityLost(),
                "a port that requires TLS is security the import would drop");
        assertEquals(List.of(new TargetConfig.ReferralConfig(null, "rdma", "10.0.0.6", 4420, null, null, null)),
                imported.config().referrals(), "the port's referral, target-wide");
    }

    /**
     * A host's DH-HMAC-CHAP attributes, flat ({@code dhchap_key} ...) or as the attribute group {@code dhchap}
     * ({@code key}, {@code ctrl_key}, {@code hash}, {@code dhgroup}), become its entry in our {@code hosts}: no longer
     * security the import would drop (issue 34). An empty key is nvmet's "none": no entry.
     */
    @Test
    void carriesTheHostsDhchapSettingsOver() throws IOException {
        Imported imported = NvmetcliFormat.read(resource("nvmetcli-secured.json").replace("@PORT@", "4420"));
        assertEquals(List.of(
                new TargetConfig.HostConfig("nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000001",
                        "DHHC-1:00:bnZtZXQtaG9zdC0xLWtleS1ub3QtdG8tYmUtc2hvd27KT0Z8:", null, "hmac(sha256)", "null"),
                new TargetConfig.HostConfig("nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000002",
                        "DHHC-1:01:bnZtZXQtaG9zdC0yLWtleS1ub3QtdG8tYmUtc2hvd24tYW55d2hlcmUtYXQtYWxsG5f/lA==:",
                        "DHHC-1:01:bnZtZXQtaG9zdC0yLWN0cmwta2V5LW5vdC10by1iZS1zaG93bi1hbnl3aGVyZSEh90Y//A==:",
                        "hmac(sha384)", "ffdhe2048")), imported.config().hosts());
        assertEquals(List.of(), imported.securityLost(), "the port's TLS is carried over too");
        assertEquals("required", imported.config().listeners().get(0).tls(), "addr_tsas tls1.3, addr_treq required");
        assertTrue(imported.notMapped().stream().noneMatch(l -> l.contains("DHHC-1")), imported.notMapped().toString());
        String keyless = """
                {"hosts": [{"nqn": "nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000003",
                            "dhchap": {"key": "", "ctrl_key": "", "hash": "hmac(sha256)", "dhgroup": "null"}}]}
                """;
        assertNull(NvmetcliFormat.read(keyless).config().hosts(), "no key, no entry");
        assertEquals(List.of(), NvmetcliFormat.read(keyless).notMapped());
    }

    /** A key that is no DH-HMAC-CHAP secret (a CRC that does not match) is refused naming the host, never shown. */
    @Test
    void aBadHostKeyIsRefusedWithoutRepeatingIt() {
        String bad = "DHHC-1:00:AnZtZXQtaG9zdC0xLWtleS1ub3QtdG8tYmUtc2hvd27KT0Z8:";
        String json = """
                {"hosts": [{"nqn": "nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000001",
                            "dhchap_key": "%s"}]}
                """.formatted(bad);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NvmetcliFormat.read(json));
        assertTrue(e.getMessage().startsWith("hosts[0]: ") && e.getMessage().contains("dhchapKey")
                && e.getMessage().contains("CRC"), e.getMessage());
        assertTrue(!e.getMessage().contains(bad.substring(10, 40)), e.getMessage());
    }

    @Test
    void acceptsTheOldestDumpsToo() {
        // nvmetcli's own examples (examples/rdma.json): no ana groups, no attr defaults, NGUID only.
        String json = """
                {"hosts": [{"nqn": "hostnqn"}],
                 "ports": [{"addr": {"adrfam": "ipv4", "traddr": "192.168.6.68", "treq": "not specified",
                                     "trsvcid": "4420", "trtype": "rdma"},
                            "portid": 2, "referrals": [], "subsystems": ["testnqn"]}],
                 "subsystems": [{"allowed_hosts": [], "attr": {"allow_any_host": "1"},
                                 "namespaces": [{"device": {"nguid": "ef90689c-6c46-d44c-89c1-4067801309a8",
                                                            "path": "/dev/nvme0n1"}, "enable": 1, "nsid": 1}],
                                 "nqn": "testnqn"}]}
                """;
        Imported imported = NvmetcliFormat.read(json);
        assertEquals(List.of(), imported.notMapped());
        assertEquals(new TargetConfig(null, null, null, null,
                List.of(new ListenerConfig(2, "rdma", "192.168.6.68", 4420, null, null, List.of("testnqn"))),
                List.of(new SubsystemConfig("testnqn", null, null, null, true, List.of(),
                        List.of(new NamespaceConfig(1L, "block", null, null, "/dev/nvme0n1", null,
                                "ef90689c6c46d44c89c14067801309a8"))))), imported.config());
    }

    /** Issue 35: a port's ANA groups, namespaces' groups and controller ID ranges come over; beyond ours is listed. */
    @Test
    void importsAnaGroupsAndControllerIdRanges() {
        Imported imported = NvmetcliFormat.read("""
                {"ports": [{"addr": {"adrfam": "ipv4", "traddr": "10.0.0.1", "trsvcid": "4420", "trtype": "tcp"},
                            "ana_groups": [{"ana": {"state": "optimized"}, "grpid": 1},
                                           {"ana": {"state": "non-optimized"}, "grpid": 5},
                                           {"ana": {"state": "change"}, "grpid": 300}],
                            "portid": 1, "subsystems": ["testnqn"]}],
                 "subsystems": [{"allowed_hosts": [], "attr": {"allow_any_host": "1", "cntlid_min": "1000",
                                                              "cntlid_max": "1999"},
                                 "namespaces": [{"device": {"path": "/dev/nvme0n1"}, "enable": 1, "nsid": 1,
                                                 "ana_grpid": 5},
                                                {"device": {"path": "/dev/nvme1n1"}, "enable": 1, "nsid": 2,
                                                 "ana": {"grpid": "200"}}],
                                 "nqn": "testnqn"}]}
                """);
        assertEquals(java.util.Map.of("5", "non-optimized"), imported.config().listeners().get(0).ana());
        SubsystemConfig s = imported.config().subsystems().get(0);
        assertEquals(1000, s.cntlidMin());
        assertEquals(1999, s.cntlidMax());
        assertEquals(5, s.namespaces().get(0).anaGroup());
        assertNull(s.namespaces().get(1).anaGroup());
        assertEquals(List.of("subsystems[0].namespaces[1].ana.grpid=200: ANA group IDs are 1 to 128 here; the namespace"
                        + " is imported in group 1",
                "ports[0].ana_groups[2] (ANA group 300, change): ANA group IDs are 1 to 128 here; not imported"),
                imported.notMapped());
    }

    @Test
    void aNamespaceWithoutEnableStaysDisabledAsNvmetcliRestoreLeavesIt() {
        Imported imported = NvmetcliFormat.read("""
                {"subsystems": [{"nqn": "n1", "namespaces": [{"nsid": 4, "device": {"path": "/dev/sdc"}}]}]}
                """);
        assertEquals(List.of(), imported.config().subsystems().get(0).namespaces());
        assertEquals(false, imported.config().subsystems().get(0).allowAnyHost(), "nvmet's default");
        assertEquals(List.of("subsystems[0].namespaces[0] (nsid 4, /dev/sdc): has no enable flag, so nvmet leaves "
                + "it disabled; not imported"), imported.notMapped());
    }

    // --- export

    /** Everything nvmetcli can express, in the form an import produces. */
    static TargetConfig canonical() {
        return new TargetConfig(null, null, null, null,
                List.of(new ListenerConfig(1, "tcp", "192.168.10.5", 4420, 16384, null, List.of(DB, SCRATCH)),
                        new ListenerConfig(2, "rdma", "10.0.0.5", 4420, null, null, List.of(DB)),
                        new ListenerConfig(7, "tcp", "fd00::5", 8009, null, null, List.of(Migration.DISCOVERY_NQN))),
                List.of(new SubsystemConfig(DB, "SN-DB-0001", "Linux", null, false, List.of(HOST_A, HOST_B),
                                List.of(new NamespaceConfig(1L, "block", null, null, "/dev/nvme0n1",
                                                "d592cdf3-5d1c-44e0-8412-3fcf7d99df27",
                                                "ef90689c6c46d44c89c14067801309a8"),
                                        new NamespaceConfig(5L, "file", null, null, "/srv/nvmet/db-log.img",
                                                "3c1f8b52-4e0a-4d7b-9a61-2b8e5f0c7d19",
                                                "00112233445566778899aabbccddeeff"))),
                        new SubsystemConfig(SCRATCH, "SN-SCRATCH", "nvmeof-java", null, true, List.of(),
                                List.of(new NamespaceConfig(1L, "file", null, null, "/var/lib/scratch.img",
                                        "e4a1c9d0-6b3f-4f2e-8c7a-1d5b9e0f2a36",
                                        "e4a1c9d06b3f4f2e8c7a1d5b9e0f2a36")))))
                .withReferrals(List.of(new TargetConfig.ReferralConfig(null, "tcp", "192.168.10.9", 8009, null,
                        "required", 3)));
    }

    /** SPDK's kind of referral, to one subsystem, is not one nvmet has. */
    @Test
    void aReferralToOneSubsystemIsNotExported() throws IOException {
        Exported exported = NvmetcliFormat.write(canonical().withReferrals(List.of(new TargetConfig.ReferralConfig(
                4, "tcp", "10.0.0.1", 4420, "nqn.2026-12.io.example:remote", null, null))));
        assertEquals(List.of("referrals[0].subsystem=nqn.2026-12.io.example:remote: nvmet's referrals name discovery"
                + " services only; not exported"), exported.notMapped());
        assertEquals(0, JSON.readTree(exported.document()).at("/ports/0/referrals").size());
    }

    @Test
    void roundTripKeepsEverythingMappable() {
        TargetConfig ours = canonical();
        Exported exported = NvmetcliFormat.write(ours);
        assertEquals(List.of(), exported.notMapped());
        Imported back = NvmetcliFormat.read(exported.document());
        assertEquals(List.of(), back.notMapped());
        assertEquals(ours, back.config());
    }

    @Test
    void exportsTheShapeNvmetcliRestoreReads() throws IOException {
        JsonNode doc = JSON.readTree(NvmetcliFormat.write(canonical()).document());

        assertEquals(List.of("hosts", "ports", "subsystems"), fieldNames(doc));
        assertEquals(HOST_A, doc.at("/hosts/0/nqn").asText(), "hosts are declared before allowed_hosts link them");
        assertEquals(HOST_B, doc.at("/hosts/1/nqn").asText());
        assertEquals(2, doc.get("hosts").size());

        JsonNode port = doc.at("/ports/0");
        assertEquals(1, port.get("portid").intValue());
        assertEquals("ipv4", port.at("/addr/adrfam").asText());
        assertEquals("192.168.10.5", port.at("/addr/traddr").asText());
        assertEquals("not specified", port.at("/addr/treq").asText());
        assertTrue(port.at("/addr/trsvcid").isTextual(), "configfs values are strings");
        assertEquals("4420", port.at("/addr/trsvcid").asText());
        assertEquals("tcp", port.at("/addr/trtype").asText());
        assertEquals("16384", port.at("/param/inline_data_size").asText());
        assertEquals(1, port.get("referrals").size(), "every referral under every port");
        assertEquals(port.get("referrals"), doc.at("/ports/1/referrals"));
        JsonNode referral = port.at("/referrals/0");
        assertEquals(List.of("addr", "enable", "name"), fieldNames(referral));
        assertEquals(List.of("adrfam", "portid", "traddr", "treq", "trsvcid", "trtype"), fieldNames(referral.get("addr")));
        assertEquals("192.168.10.9", referral.at("/addr/traddr").asText());
        assertEquals("8009", referral.at("/addr/trsvcid").asText());
        assertEquals("required", referral.at("/addr/treq").asText());
        assertEquals("3", referral.at("/addr/portid").asText());
        assertEquals(1, referral.get("enable").intValue());
        assertEquals("referral-1", referral.get("name").asText());
        assertEquals(List.of(DB, SCRATCH), texts(port.get("subsystems")));
        assertEquals("rdma", doc.at("/ports/1/addr/trtype").asText());
        assertTrue(doc.at("/ports/1/param").isObject() && doc.at("/ports/1/param").isEmpty());
        assertEquals("ipv6", doc.at("/ports/2/addr/adrfam").asText());
        assertEquals(7, doc.at("/ports/2/portid").intValue());
        assertEquals(0, doc.at("/ports/2/subsystems").size(), "discovery only: no subsystem linked");

        JsonNode db = doc.at("/subsystems/0");
        assertEquals(DB, db.get("nqn").asText());
        assertEquals("0", db.at("/attr/allow_any_host").asText());
        assertEquals("SN-DB-0001", db.at("/attr/serial").asText());
        assertEquals("Linux", db.at("/attr/model").asText());
        assertEquals(List.of(HOST_A, HOST_B), texts(db.get("allowed_hosts")));
        JsonNode ns = db.at("/namespaces/0");
        assertEquals(1, ns.get("nsid").intValue());
        assertEquals(1, ns.get("enable").intValue());
        assertEquals("/dev/nvme0n1", ns.at("/device/path").asText());
        assertEquals("d592cdf3-5d1c-44e0-8412-3fcf7d99df27", ns.at("/device/uuid").asText());
        assertEquals("ef90689c-6c46-d44c-89c1-4067801309a8", ns.at("/device/nguid").asText(),
                "nvmet prints NGUIDs like UUIDs");
        assertEquals(5, db.at("/namespaces/1/nsid").intValue());
        assertEquals("1", doc.at("/subsystems/1/attr/allow_any_host").asText());
    }

    @Test
    void exportListsWhatNvmetCannotExpress() throws IOException {
        TargetConfig ours = new TargetConfig(4, 16, 256, 1 << 20,
                List.of(new ListenerConfig(null, null, null, null, null, 65536, null),
                        new ListenerConfig(3, "tcp", "10.1.1.1", 4420, null, null, List.of("nqn.x:gone", "n1"))),
                List.of(new SubsystemConfig("n1", null, null, 64, null, null,
                        List.of(new NamespaceConfig(null, "ram", "1GiB", 512, null, null),
                                new NamespaceConfig(null, "file", "10GiB", 4096, "/data/n1.img", null),
                                new NamespaceConfig(null, null, null, null, "/dev/nvme1n1", null)))));
        Exported exported = NvmetcliFormat.write(ours.withBusyPollUs(50));

        assertEquals(List.of(
                "pollGroups=4: nvmet runs in the kernel's own threads; not exported",
                "busyPollUs=50: nvmet-tcp's queues are driven by the kernel (net.core.busy_poll is the host's knob);"
                        + " not exported",
                "maxIoQueues=16: nvmet sets it per subsystem (attr_qid_max); not exported",
                "maxQueueSize=256: nvmet sets it per port (param_max_queue_size, recent kernels); not exported",
                "maxTransferSize=1048576: nvmet derives it from the transport; not exported",
                "subsystems[0].maxNamespaces=64: nvmet has no per-subsystem namespace limit; not exported",
                "subsystems[0].namespaces[0] (nsid 1): RAM namespaces have no nvmet equivalent; not exported (back it "
                        + "with a file, or with a null_blk or brd device such as /dev/ram0, and add it by hand)",
                "subsystems[0].namespaces[1].size=10GiB: nvmet always serves the whole file; not exported",
                "subsystems[0].namespaces[1].blockSize=4096: nvmet takes a file's block size from its "
                        + "filesystem; not exported",
                "listeners[0].maxH2CData=65536: nvmet has no setting for it; not exported",
                "listeners[1].subsystems[0]=nqn.x:gone: no such subsystem in this configuration; not exported"),
                exported.notMapped());

        JsonNode doc = JSON.readTree(exported.document());
        // Defaults are written as the target applies them.
        assertEquals(1, doc.at("/ports/0/portid").intValue(), "the lowest port ID the other listeners leave free");
        assertEquals("tcp", doc.at("/ports/0/addr/trtype").asText());
        assertEquals("127.0.0.1", doc.at("/ports/0/addr/traddr").asText());
        assertEquals("4420", doc.at("/ports/0/addr/trsvcid").asText());
        assertEquals(List.of("n1"), texts(doc.at("/ports/0/subsystems")), "null: every subsystem");
        assertEquals(List.of("n1"), texts(doc.at("/ports/1/subsystems")));
        JsonNode n1 = doc.at("/subsystems/0");
        assertEquals("1", n1.at("/attr/allow_any_host").asText(), "unset and no hosts: any host");
        assertEquals("nvmeof-java", n1.at("/attr/model").asText());
        assertEquals(16, n1.at("/attr/serial").asText().length(), "the serial the target derives from the NQN");
        assertEquals(2, n1.get("namespaces").size());
        assertEquals(2, n1.at("/namespaces/0/nsid").intValue(), "unnumbered namespaces follow the previous one");
        assertEquals(3, n1.at("/namespaces/1/nsid").intValue());
        String uuid = n1.at("/namespaces/1/device/uuid").asText();
        assertEquals(java.util.UUID.nameUUIDFromBytes("n1/3//dev/nvme1n1".getBytes(StandardCharsets.UTF_8)).toString(),
                uuid, "the UUID the target derives (NQN, NSID, path), so hosts recognise the namespace");
        assertEquals(uuid, n1.at("/namespaces/1/device/nguid").asText(), "the target's NGUID is the UUID's bytes");
    }

    // --- errors

    @Test
    void malformedInputNamesTheLocation() {
        assertError("subsystems[1].namespaces[0].device.path is missing", """
                {"subsystems": [{"nqn": "a"},
                                {"nqn": "b", "namespaces": [{"nsid": 1, "enable": 1, "device": {"uuid": ""}}]}]}""");
        assertError("subsystems[0].namespaces[0].device is missing",
                "{\"subsystems\": [{\"nqn\": \"a\", \"namespaces\": [{\"nsid\": 1, \"enable\": 1}]}]}");
        assertError("subsystems[0].nqn is missing", "{\"subsystems\": [{\"attr\": {}}]}");
        assertError("subsystems[0].attr.allow_any_host must be true/false or 1/0, got \"yes\"",
                "{\"subsystems\": [{\"nqn\": \"a\", \"attr\": {\"allow_any_host\": \"yes\"}}]}");
        assertError("subsystems[0].namespaces[0].nsid must be an integer from 1 to 4294967294, got 0",
                "{\"subsystems\": [{\"nqn\": \"a\", \"namespaces\": [{\"nsid\": 0}]}]}");
        assertError("subsystems[0].namespaces[0].device.nguid must be an NGUID (32 hex digits, dashes allowed), "
                + "got \"xyz\"", "{\"subsystems\": [{\"nqn\": \"a\", \"namespaces\": [{\"nsid\": 1, \"enable\": 1, "
                + "\"device\": {\"path\": \"/dev/sda\", \"nguid\": \"xyz\"}}]}]}");
        assertError("ports[0].portid is missing", "{\"ports\": [{\"addr\": {\"trtype\": \"tcp\"}}]}");
        assertError("ports[0].portid must be an integer, got \"one\"", "{\"ports\": [{\"portid\": \"one\"}]}");
        assertError("ports[0].addr.trsvcid must be an integer from 1 to 65535, got \"99999\"", """
                {"ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.0.0.1", "trsvcid": "99999"}}]}""");
        assertError("ports[0].addr is missing", "{\"ports\": [{\"portid\": 1}]}");
        assertError("ports[1].portid 1 is used by another port", """
                {"ports": [{"portid": 1, "addr": {"trtype": "loop"}}, {"portid": 1, "addr": {"trtype": "loop"}}]}""");
        assertError("ports[0].subsystems[0]: subsystem nqn.x:none is not in subsystems", """
                {"ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.0.0.1", "trsvcid": "4420"},
                            "subsystems": ["nqn.x:none"]}]}""");
        assertError("ports must be a JSON array, got {}", "{\"ports\": {}}");
        assertError("hosts[0].nqn is missing", "{\"hosts\": [{}]}");
        assertError("the document must be a JSON object, got []", "[]");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> NvmetcliFormat.read("{\"ports\": ["))
                .getMessage().startsWith("the document is not valid JSON: "));
    }

    @Test
    void invalidDocumentsOfOursAreRefusedOnExport() {
        TargetConfig noPath = new TargetConfig(null, null, null, null, List.of(), List.of(new SubsystemConfig("n1",
                null, null, null, true, null, List.of(new NamespaceConfig(1L, "block", null, null, null, null)))));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NvmetcliFormat.write(noPath));
        assertEquals("subsystems[0].namespaces[0].path is missing", e.getMessage());
        TargetConfig badUuid = new TargetConfig(null, null, null, null, List.of(), List.of(new SubsystemConfig("n1",
                null, null, null, true, null, List.of(new NamespaceConfig(1L, "file", null, null, "/f", "nope")))));
        e = assertThrows(IllegalArgumentException.class, () -> NvmetcliFormat.write(badUuid));
        assertEquals("subsystems[0].namespaces[0].uuid must be a UUID (8-4-4-4-12 hex digits), got 'nope'",
                e.getMessage());
    }

    private static void assertError(String message, String json) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NvmetcliFormat.read(json));
        assertEquals(message, e.getMessage());
    }

    static List<String> fieldNames(JsonNode node) {
        List<String> names = new java.util.ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    static List<String> texts(JsonNode array) {
        List<String> texts = new java.util.ArrayList<>();
        array.forEach(n -> texts.add(n.asText()));
        return texts;
    }
}

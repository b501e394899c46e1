package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.NvmetcliFormatTest.resource;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SpdkFormatTest {

    private static final String CNODE1 = "nqn.2016-06.io.spdk:cnode1";
    private static final String CNODE2 = "nqn.2016-06.io.spdk:cnode2";
    private static final String DISCOVERY = Migration.DISCOVERY_NQN;
    private static final String HOST_A = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4710-8052-b4c04f4d3232";
    private static final String HOST_B = "nqn.2014-08.org.nvmexpress:uuid:a9f3c0de-7b21-4e8a-9d55-0c6f2e1b7a44";
    private static final ObjectMapper JSON = new ObjectMapper();

    // --- import

    @Test
    void importsTransportsAndListeners() throws IOException {
        TargetConfig c = SpdkFormat.read(resource("spdk-save-config.json")).config();

        assertNull(c.pollGroups());
        assertEquals(127, c.maxIoQueues(), "max_io_qpairs_per_ctrlr of both transports");
        assertEquals(128, c.maxQueueSize(), "TCP 128 and RDMA 256: one global limit here, the smaller");
        assertEquals(131072, c.maxTransferSize());

        assertEquals(List.of(
                new ListenerConfig(1, "tcp", "192.168.10.5", 8009, 8192, null, List.of(DISCOVERY)),
                new ListenerConfig(2, "tcp", "192.168.10.5", 4420, 8192, null, List.of(CNODE1, CNODE2)),
                new ListenerConfig(3, "rdma", "10.0.0.5", 4420, 4096, null, List.of(CNODE1))), c.listeners(),
                "one listener per address, numbered in order of first appearance, with the subsystems that added it "
                        + "and the in-capsule data size of its transport");
    }

    @Test
    void importsSubsystemsHostsAndNamespacesFromTheirBdevs() throws IOException {
        TargetConfig c = SpdkFormat.read(resource("spdk-save-config.json")).config();

        assertEquals(2, c.subsystems().size());
        SubsystemConfig cnode1 = c.subsystems().get(0);
        assertEquals(CNODE1, cnode1.nqn());
        assertEquals("SPDK00000000000001", cnode1.serial());
        assertEquals("SPDK bdev Controller", cnode1.model());
        assertEquals(32, cnode1.maxNamespaces());
        assertEquals(false, cnode1.allowAnyHost());
        assertEquals(List.of(HOST_A, HOST_B), cnode1.hosts());
        assertEquals(List.of(
                // Malloc0: 131072 x 512 B; the namespace's own UUID wins over the bdev's.
                new NamespaceConfig(1L, "ram", "64MiB", 512, null, "11111111-2222-4333-8444-555555555555",
                        "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
                // AIO0 on a block device, block size detected: the device's own.
                new NamespaceConfig(2L, "block", null, null, "/dev/sdb", "51e8a0b2-c3d4-4e5f-9061-72a3b4c5d6e7", null)),
                cnode1.namespaces(), "nsid 3 is an NVMe bdev we cannot serve");

        SubsystemConfig cnode2 = c.subsystems().get(1);
        assertEquals(CNODE2, cnode2.nqn());
        assertEquals("SPDK00000000000002", cnode2.serial());
        assertNull(cnode2.maxNamespaces(), "save_config leaves max_namespaces out when it is 0 (no limit)");
        assertEquals(true, cnode2.allowAnyHost());
        assertEquals(List.of(), cnode2.hosts());
        assertEquals(List.of(
                new NamespaceConfig(1L, "file", null, 4096, "/var/lib/spdk/data.img",
                        "c0ffee00-1234-4abc-8def-0123456789ab", null),
                // No nsid given: the lowest free one (1 to 3 are taken, even by namespaces we cannot import);
                // no UUID given: the bdev's.
                new NamespaceConfig(4L, "ram", "512MiB", 4096, null, "2a7e9c41-0d3b-4f58-a6e2-9b1c7d4f8e03", null)),
                cnode2.namespaces());
    }

    @Test
    void listsEverythingItCannotImport() throws IOException {
        Imported imported = SpdkFormat.read(resource("spdk-save-config.json"));
        List<String> expected = new ArrayList<>(List.of(
                "iobuf: iobuf_set_options: SPDK's iobuf settings have no equivalent here; ignored",
                "sock: sock_set_default_impl: SPDK's sock settings have no equivalent here; ignored",
                "sock: sock_impl_set_options: SPDK's sock settings have no equivalent here; ignored",
                "accel: accel_set_options: SPDK's accel settings have no equivalent here; ignored",
                "scheduler: framework_set_scheduler: SPDK's scheduler settings have no equivalent here; ignored",
                "bdev_set_options: no equivalent here; ignored",
                "bdev_raid_set_options: no equivalent here; ignored",
                "bdev_iscsi_set_options: no equivalent here; ignored",
                "bdev_nvme_set_options: no equivalent here; ignored",
                "bdev_nvme_set_hotplug: no equivalent here; ignored",
                "bdev_null_create(Null0): this kind of bdev has no equivalent here; not imported",
                "bdev_nvme_attach_controller(Nvme0): this kind of bdev has no equivalent here; not imported",
                "bdev_wait_for_examine: no equivalent here; ignored",
                "nvmf_create_transport(TCP).io_unit_size=131072: no equivalent (transfers are not split into I/O "
                        + "units here); ignored",
                "nvmf_create_transport(TCP).max_aq_depth=128: the admin queue size is fixed here; ignored",
                "nvmf_create_transport(TCP).num_shared_buffers=511: no equivalent (buffers are per queue here); "
                        + "ignored",
                "nvmf_create_transport(TCP).buf_cache_size=4294967295: no equivalent (buffers are per queue here); "
                        + "ignored",
                "nvmf_create_transport(TCP).dif_insert_or_strip=false: protection information is not supported; "
                        + "ignored",
                "nvmf_create_transport(TCP).zcopy=false: no equivalent (zero-copy is not configurable here); ignored",
                "nvmf_create_transport(TCP).c2h_success=true: no equivalent here; ignored",
                "nvmf_create_transport(TCP).sock_priority=0: no equivalent (socket priority is not configurable here); "
                        + "ignored",
                "nvmf_create_transport(TCP).abort_timeout_sec=1: no equivalent here; ignored",
                "nvmf_create_transport(TCP).ack_timeout=0: no equivalent here; ignored",
                "nvmf_create_transport(TCP).data_wr_pool_size=0: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).io_unit_size=8192: no equivalent (transfers are not split into I/O "
                        + "units here); ignored",
                "nvmf_create_transport(RDMA).max_aq_depth=128: the admin queue size is fixed here; ignored",
                "nvmf_create_transport(RDMA).num_shared_buffers=4095: no equivalent (buffers are per queue here); "
                        + "ignored",
                "nvmf_create_transport(RDMA).buf_cache_size=4294967295: no equivalent (buffers are per queue here); "
                        + "ignored",
                "nvmf_create_transport(RDMA).dif_insert_or_strip=false: protection information is not supported; "
                        + "ignored",
                "nvmf_create_transport(RDMA).zcopy=false: no equivalent (zero-copy is not configurable here); ignored",
                "nvmf_create_transport(RDMA).max_srq_depth=4096: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).no_srq=false: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).acceptor_backlog=100: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).no_wr_batching=false: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).abort_timeout_sec=1: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).ack_timeout=0: no equivalent here; ignored",
                "nvmf_create_transport(RDMA).data_wr_pool_size=0: no equivalent here; ignored",
                "nvmf_create_subsystem(" + CNODE2 + ").min_cntlid=10: controller ID ranges are not configurable here; "
                        + "ignored",
                "nvmf_create_subsystem(" + CNODE2 + ").ana_reporting=true: asymmetric namespace access is not "
                        + "supported; ignored",
                "nvmf_set_config: target-wide SPDK options have no equivalent here; ignored",
                "nvmf_set_config.dhchap_digests=[\"sha256\",\"sha384\",\"sha512\"]: what hosts may use is set per host"
                        + " here (dhchapHash, dhchapDhGroup; the defaults sha256 and the null group); ignored",
                "nvmf_set_config.dhchap_dhgroups=[\"null\",\"ffdhe2048\",\"ffdhe3072\",\"ffdhe4096\",\"ffdhe6144\","
                        + "\"ffdhe8192\"]: what hosts may use is set per host here (dhchapHash, dhchapDhGroup; the"
                        + " defaults sha256 and the null group); ignored",
                "nvmf_set_max_subsystems: the limit here is fixed at 1024 subsystems; ignored",
                "nvmf_set_crdt: command retry delay times are not supported; ignored",
                "nvmf_subsystem_add_host(" + CNODE1 + ", " + HOST_B + ").psk: key key0 is not in the document's keyring"
                        + " (a Linux kernel keyring key cannot be read here): the host would connect without TLS; give it"
                        + " its TLS key with PUT /api/v1/hosts/{hostnqn} (tlsKey) after the import",
                "nvmf_subsystem_add_ns(" + CNODE1 + ", nsid 2).eui64=ABCDEF0123456789: EUI-64 identifiers are not "
                        + "supported; ignored",
                "nvmf_subsystem_add_ns(" + CNODE1 + ", nsid 3): bdev Nvme0n1 comes from "
                        + "bdev_nvme_attach_controller(Nvme0), which has no equivalent here; namespace not imported",
                "nvmf_subsystem_add_ns(" + CNODE2 + ", nsid 1).anagrpid=1: asymmetric namespace access is not "
                        + "supported; ignored",
                "nvmf_subsystem_add_ns(" + CNODE2 + ", nsid 2): bdev Null0 comes from bdev_null_create, which has no "
                        + "equivalent here; namespace not imported",
                "nvmf_subsystem_add_ns(" + CNODE2 + ", nsid 3): bdev Malloc3 has block_size 520 (512 and 4096 only "
                        + "here); namespace not imported",
                "bdev_malloc_create(Malloc2): not used by any namespace; not imported",
                "nvmf_create_transport(RDMA).max_queue_depth=256: this target has one limit for all transports; "
                        + "TCP's smaller 128 is used"));
        assertEquals(expected, imported.notMapped());
        assertEquals(expected.stream().filter(l -> l.contains(".psk:")).toList(), imported.securityLost(),
                "the TLS key is security the import would drop, and its name is not repeated");
    }

    private static final String KEY_0 = "DHHC-1:00:c3Bkay1rZXkwLWhvc3Qta2V5LW5vdC10by1iZS1zaG+OUJjk:";
    private static final String CKEY_0 = "DHHC-1:00:c3Bkay1ja2V5MC1jdHJsLWtleS1ub3QtdG8tYmUtc2hk6Wlq:";

    /** A document whose hosts use keys of SPDK's file keyring; {@code addHosts} are the nvmf_subsystem_add_host calls. */
    private static String keyringDocument(String addHosts) {
        return """
                {"subsystems": [
                  {"subsystem": "keyring", "config": [
                    {"method": "keyring_file_add_key", "params": {"name": "key0", "path": "/keys/key0"}},
                    {"method": "keyring_file_add_key", "params": {"name": "ckey0", "path": "/keys/ckey0"}},
                    {"method": "keyring_file_add_key", "params": {"name": "spare", "path": "/keys/spare"}}]},
                  {"subsystem": "nvmf", "config": [
                    {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a"}},
                    {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:b"}},
                """ + addHosts + "]}]}";
    }

    private static String addHost(String subsystem, String host, String keys) {
        return "{\"method\": \"nvmf_subsystem_add_host\", \"params\": {\"nqn\": \"" + subsystem + "\", \"host\": \""
                + host + "\"" + keys + "}}";
    }

    /** The key files a test has: their content by path; every read is recorded. */
    private static KeyFiles.Reader files(List<String> read) {
        return (name, path) -> {
            read.add(name + " " + path);
            return switch (path) {
                case "/keys/key0" -> KEY_0;
                case "/keys/ckey0" -> CKEY_0;
                default -> throw new IllegalArgumentException("keyring_file_add_key(" + name + ") path " + path
                        + " does not exist");
            };
        };
    }

    /**
     * nvmf_subsystem_add_host's dhchap_key and dhchap_ctrlr_key name keyring keys whose files become the host's entry
     * (issue 34); keys no host uses are listed and their files not read; a host given keys on one subsystem only is
     * said to authenticate on all of them here.
     */
    @Test
    void carriesHostKeysFromTheKeyring() {
        List<String> read = new ArrayList<>();
        Imported imported = SpdkFormat.read(keyringDocument(String.join(",",
                addHost("nqn.x:a", HOST_A, ", \"dhchap_key\": \"key0\", \"dhchap_ctrlr_key\": \"ckey0\""),
                addHost("nqn.x:b", HOST_A, ""), addHost("nqn.x:b", HOST_B, ""))), files(read));
        assertEquals(List.of(new TargetConfig.HostConfig(HOST_A, KEY_0, CKEY_0, null, null)), imported.config().hosts());
        assertEquals(List.of("key0 /keys/key0", "ckey0 /keys/ckey0"), read, "each key's file read once, unused ones never");
        assertEquals(List.of(
                "nvmf_subsystem_add_host(nqn.x:b, " + HOST_A + "): no key here, but "
                        + "nvmf_subsystem_add_host(nqn.x:a, " + HOST_A + ") gives the host one: keys are per host here,"
                        + " so it authenticates (or uses TLS) on this subsystem too",
                "keyring_file_add_key(spare): not used by any host's DH-HMAC-CHAP or TLS key; not imported (its file"
                        + " is not read)"), imported.notMapped());
        assertEquals(List.of(), imported.securityLost());
    }

    /**
     * A key name no keyring_file_add_key adds, different keys for one host on two subsystems, a secret written where a
     * key's name belongs, a file that cannot be read, and a controller key without the host's are refused; no message
     * repeats a secret.
     */
    @Test
    void hostKeysThatCannotBeCarriedOverAreRefused() {
        String[][] cases = {
            {addHost("nqn.x:a", HOST_A, ", \"dhchap_key\": \"key9\""), "key key9 is not added by any keyring_file_add_key"},
            {addHost("nqn.x:a", HOST_A, ", \"dhchap_key\": \"key0\"") + ","
                    + addHost("nqn.x:b", HOST_A, ", \"dhchap_key\": \"ckey0\""), "one setting per host"},
            {addHost("nqn.x:a", HOST_A, ", \"dhchap_key\": \"" + KEY_0 + "\""), "holds a secret itself"},
            {addHost("nqn.x:a", HOST_A, ", \"dhchap_key\": \"spare\""),
                "keyring_file_add_key(spare) path /keys/spare does not exist"},
            {addHost("nqn.x:a", HOST_A, ", \"dhchap_ctrlr_key\": \"ckey0\""), "dhchapCtrlKey needs dhchapKey"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SpdkFormat.read(keyringDocument(c[0]), files(new ArrayList<>())));
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
            assertFalse(e.getMessage().contains(KEY_0.substring(10, 40))
                    || e.getMessage().contains(CKEY_0.substring(10, 40)), e.getMessage());
        }
    }

    @Test
    void emptyOtherSubsystemsAndNullConfigsAreSkippedSilently() {
        Imported imported = SpdkFormat.read("""
                {"subsystems": [{"subsystem": "keyring", "config": []}, {"subsystem": "vmd", "config": null},
                                {"subsystem": "bdev", "config": []}, {"subsystem": "nvmf", "config": []}]}
                """);
        assertEquals(List.of(), imported.notMapped());
        assertEquals(new TargetConfig(null, null, null, null, List.of(), List.of()), imported.config());
    }

    @Test
    void theDeprecatedQpairCountIncludesTheAdminQueue() {
        Imported imported = SpdkFormat.read("""
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_transport", "params": {"trtype": "tcp", "max_qpairs_per_ctrlr": 64}}]}]}
                """);
        assertEquals(63, imported.config().maxIoQueues());
        assertEquals(List.of(), imported.notMapped());
    }

    @Test
    void otherTransportsAndAddressFamiliesAreListed() {
        Imported imported = SpdkFormat.read("""
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_transport", "params": {"trtype": "VFIOUSER"}},
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a", "serial_number": "S\\u00e9rie"}},
                  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.x:a",
                     "listen_address": {"trtype": "VFIOUSER", "traddr": "/var/run/vfio", "trsvcid": ""}}},
                  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.x:a", "secure_channel": true,
                     "listen_address": {"trtype": "TCP", "adrfam": "IPv4", "traddr": "10.0.0.1", "trsvcid": "4420"}}}
                ]}]}
                """);
        assertEquals(List.of(
                "nvmf_create_transport(VFIOUSER): transport not supported (tcp and rdma only); ignored",
                "nvmf_create_subsystem(nqn.x:a).serial_number=S\u00e9rie: must be 1 to 20 printable ASCII characters "
                        + "here; not imported (the target's default is used)",
                "nvmf_subsystem_add_listener(nqn.x:a, VFIOUSER /var/run/vfio:): transport VFIOUSER is not supported "
                        + "(tcp and rdma only); not imported"), imported.notMapped());
        assertEquals(List.of(), imported.securityLost(), "secure_channel is carried over: the listener requires TLS");
        assertEquals(List.of(new ListenerConfig(1, "tcp", "10.0.0.1", 4420, null, null, List.of("nqn.x:a"), "required")),
                imported.config().listeners(), "no TCP transport was created: no in-capsule data size");
        assertNull(imported.config().subsystems().get(0).serial());
        assertEquals(false, imported.config().subsystems().get(0).allowAnyHost(), "SPDK's default");
    }

    // --- export

    /** Everything save_config can express, in the form an import produces. */
    static TargetConfig canonical() {
        return new TargetConfig(null, 63, 128, 131072,
                List.of(new ListenerConfig(1, "tcp", "192.168.10.5", 8009, 8192, null, List.of(DISCOVERY)),
                        new ListenerConfig(2, "tcp", "192.168.10.5", 4420, 8192, null, List.of(CNODE1, CNODE2)),
                        new ListenerConfig(3, "rdma", "fd00::5", 4420, 4096, null, List.of(CNODE1, DISCOVERY))),
                List.of(new SubsystemConfig(CNODE1, "SPDK00000000000001", "SPDK bdev Controller", 32, false,
                                List.of(HOST_A, HOST_B),
                                List.of(new NamespaceConfig(1L, "ram", "64MiB", 512, null,
                                                "11111111-2222-4333-8444-555555555555",
                                                "0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
                                        new NamespaceConfig(2L, "block", null, null, "/dev/sdb",
                                                "51e8a0b2-c3d4-4e5f-9061-72a3b4c5d6e7",
                                                "51e8a0b2c3d44e5f906172a3b4c5d6e7"),
                                        new NamespaceConfig(7L, "file", null, 4096, "/var/lib/spdk/data.img",
                                                "c0ffee00-1234-4abc-8def-0123456789ab",
                                                "00000000000000000000000000000abc"))),
                        new SubsystemConfig(CNODE2, "SN2", "nvmeof-java", null, true, List.of(),
                                List.of(new NamespaceConfig(1L, "ram", "1GiB", 4096, null,
                                        "2a7e9c41-0d3b-4f58-a6e2-9b1c7d4f8e03", "2a7e9c410d3b4f58a6e29b1c7d4f8e03")))))
                .withReferrals(List.of(new ReferralConfig(null, "tcp", "192.168.20.7", 4420, null, null, null),
                        new ReferralConfig(null, "tcp", "192.168.20.8", 4420, REMOTE, "required", null)));
    }

    private static final String REMOTE = "nqn.2016-06.io.spdk:remote";

    /** SPDK's referrals: to discovery services, or (subnqn) to one subsystem there, secure_channel as tls required. */
    @Test
    void importsReferrals() throws IOException {
        Imported imported = SpdkFormat.read(resource("spdk-save-config.json"));
        assertEquals(List.of(new ReferralConfig(null, "tcp", "192.168.20.7", 4420, null, null, null)),
                imported.config().referrals());
        JsonNode referral = JSON.readTree(SpdkFormat.write(canonical()).document()).at("/subsystems/1/config/16");
        assertEquals("nvmf_discovery_add_referral", referral.get("method").asText());
        assertEquals("{\"address\":{\"trtype\":\"TCP\",\"adrfam\":\"IPv4\",\"traddr\":\"192.168.20.8\","
                + "\"trsvcid\":\"4420\"},\"secure_channel\":true,\"subnqn\":\"" + REMOTE + "\"}",
                referral.get("params").toString());
        Exported partly = SpdkFormat.write(canonical().withReferrals(List.of(new ReferralConfig(2, "tcp", "10.0.0.1",
                null, null, "allowed", 5))));
        assertEquals(List.of("referrals[0].tls=allowed: SPDK's referral says only whether a secure channel is"
                + " required; exported as not required", "referrals[0].portId=5: SPDK's referrals have PORTID 0;"
                + " not exported"), partly.notMapped());
    }

    @Test
    void roundTripKeepsEverythingMappable() {
        TargetConfig ours = canonical();
        Exported exported = SpdkFormat.write(ours);
        assertEquals(List.of(), exported.notMapped());
        Imported back = SpdkFormat.read(exported.document());
        assertEquals(List.of(), back.notMapped());
        assertEquals(ours, back.config());
    }

    @Test
    void exportsWhatLoadConfigReplays() throws IOException {
        JsonNode doc = JSON.readTree(SpdkFormat.write(canonical()).document());

        assertEquals(2, doc.get("subsystems").size());
        assertEquals("bdev", doc.at("/subsystems/0/subsystem").asText());
        assertEquals("nvmf", doc.at("/subsystems/1/subsystem").asText());
        JsonNode bdevs = doc.at("/subsystems/0/config");
        assertEquals(List.of("bdev_malloc_create", "bdev_aio_create", "bdev_aio_create", "bdev_malloc_create"),
                methods(bdevs));
        assertEquals("Malloc0", bdevs.at("/0/params/name").asText());
        assertEquals(131072, bdevs.at("/0/params/num_blocks").longValue());
        assertEquals(512, bdevs.at("/0/params/block_size").intValue());
        assertEquals("11111111-2222-4333-8444-555555555555", bdevs.at("/0/params/uuid").asText());
        assertEquals("AIO0", bdevs.at("/1/params/name").asText());
        assertEquals("/dev/sdb", bdevs.at("/1/params/filename").asText());
        assertTrue(bdevs.at("/1/params/block_size").isMissingNode(), "a block device's block size is detected");
        assertEquals("AIO1", bdevs.at("/2/params/name").asText());
        assertEquals(4096, bdevs.at("/2/params/block_size").intValue());
        assertEquals("Malloc1", bdevs.at("/3/params/name").asText());
        assertEquals(262144, bdevs.at("/3/params/num_blocks").longValue(), "1GiB of 4096-byte blocks");

        JsonNode nvmf = doc.at("/subsystems/1/config");
        assertEquals(List.of("nvmf_create_transport", "nvmf_create_transport",
                "nvmf_create_subsystem", "nvmf_subsystem_add_host", "nvmf_subsystem_add_host",
                "nvmf_subsystem_add_ns", "nvmf_subsystem_add_ns", "nvmf_subsystem_add_ns",
                "nvmf_create_subsystem", "nvmf_subsystem_add_ns",
                "nvmf_subsystem_add_listener", "nvmf_subsystem_add_listener", "nvmf_subsystem_add_listener",
                "nvmf_subsystem_add_listener", "nvmf_subsystem_add_listener",
                "nvmf_discovery_add_referral", "nvmf_discovery_add_referral"), methods(nvmf));
        JsonNode tcp = nvmf.at("/0/params");
        assertEquals("TCP", tcp.get("trtype").asText());
        assertEquals(128, tcp.get("max_queue_depth").intValue());
        assertEquals(63, tcp.get("max_io_qpairs_per_ctrlr").intValue());
        assertEquals(131072, tcp.get("max_io_size").intValue());
        assertEquals(8192, tcp.get("in_capsule_data_size").intValue());
        assertEquals("RDMA", nvmf.at("/1/params/trtype").asText());
        assertEquals(4096, nvmf.at("/1/params/in_capsule_data_size").intValue());

        JsonNode create = nvmf.at("/2/params");
        assertEquals(CNODE1, create.get("nqn").asText());
        assertFalse(create.get("allow_any_host").booleanValue());
        assertEquals("SPDK00000000000001", create.get("serial_number").asText());
        assertEquals("SPDK bdev Controller", create.get("model_number").asText());
        assertEquals(32, create.get("max_namespaces").intValue());
        assertEquals(HOST_A, nvmf.at("/3/params/host").asText());
        JsonNode ns = nvmf.at("/5/params");
        assertEquals(CNODE1, ns.get("nqn").asText());
        assertEquals(1, ns.at("/namespace/nsid").intValue());
        assertEquals("Malloc0", ns.at("/namespace/bdev_name").asText());
        assertEquals("0F1E2D3C4B5A69788796A5B4C3D2E1F0", ns.at("/namespace/nguid").asText(), "as SPDK writes it");
        assertEquals("11111111-2222-4333-8444-555555555555", ns.at("/namespace/uuid").asText());
        assertEquals(7, nvmf.at("/7/params/namespace/nsid").intValue());

        JsonNode discovery = nvmf.at("/10/params");
        assertEquals(DISCOVERY, discovery.get("nqn").asText());
        assertEquals("TCP", discovery.at("/listen_address/trtype").asText());
        assertEquals("IPv4", discovery.at("/listen_address/adrfam").asText());
        assertEquals("192.168.10.5", discovery.at("/listen_address/traddr").asText());
        assertEquals("8009", discovery.at("/listen_address/trsvcid").asText(), "trsvcid is a string");
        assertEquals(List.of(CNODE1, CNODE2, CNODE1, DISCOVERY),
                List.of(nvmf.at("/11/params/nqn").asText(), nvmf.at("/12/params/nqn").asText(),
                        nvmf.at("/13/params/nqn").asText(), nvmf.at("/14/params/nqn").asText()));
        assertEquals("RDMA", nvmf.at("/13/params/listen_address/trtype").asText());
        assertEquals("IPv6", nvmf.at("/13/params/listen_address/adrfam").asText());
    }

    @Test
    void exportWritesTheTargetsDefaultsAndListsTheRest() throws IOException {
        TargetConfig ours = new TargetConfig(8, null, null, null,
                List.of(new ListenerConfig(null, null, null, null, null, 131072, null),
                        new ListenerConfig(9, "tcp", "10.0.0.9", 4421, 16384, null, List.of("n1", "nqn.x:gone")),
                        new ListenerConfig(4, "tcp", "10.0.0.9", 4422, null, null, List.of("nqn.x:gone"))),
                List.of(new SubsystemConfig("n1", null, null, null, null, List.of(HOST_A),
                        List.of(new NamespaceConfig(null, null, null, null, null, null),
                                new NamespaceConfig(null, "file", "1GiB", null, "/data/n1.img", null),
                                new NamespaceConfig(null, "ram", "1000", 512, null, null)))));
        Exported exported = SpdkFormat.write(ours.withBusyPollUs(50));

        assertEquals(List.of(
                "pollGroups=8: SPDK runs a poll group per reactor (choose its cores with spdk_tgt -m); not exported",
                "busyPollUs=50: SPDK's poll groups always poll (its interrupt mode is spdk_tgt --interrupt-mode);"
                        + " not exported",
                "listeners[0].inlineDataSize=(unset): SPDK has one in_capsule_data_size per transport; TCP uses 16384 "
                        + "(from listeners[1])",
                "listeners[2].inlineDataSize=(unset): SPDK has one in_capsule_data_size per transport; TCP uses 16384 "
                        + "(from listeners[1])",
                "subsystems[0].namespaces[1].size=1GiB: SPDK's aio bdev serves the whole file; not exported",
                "subsystems[0].namespaces[2].size=1000: not a multiple of the block size 512; exported as 1 blocks",
                "listeners[0].maxH2CData=131072: SPDK has no setting for it; not exported",
                "listeners[1].subsystems[1]=nqn.x:gone: no such subsystem in this configuration; not exported",
                "listeners[1].id=9: SPDK assigns port IDs itself; not exported",
                "listeners[2].subsystems[0]=nqn.x:gone: no such subsystem in this configuration; not exported",
                "listeners[2]: exposes no subsystem and SPDK has no listener without one; not exported"),
                exported.notMapped());

        JsonNode doc = JSON.readTree(exported.document());
        JsonNode bdevs = doc.at("/subsystems/0/config");
        assertEquals(2097152, bdevs.at("/0/params/num_blocks").longValue(), "a RAM namespace's default: 1GiB");
        assertEquals(512, bdevs.at("/1/params/block_size").intValue(), "SPDK cannot detect a file's block size");
        JsonNode nvmf = doc.at("/subsystems/1/config");
        JsonNode create = nvmf.at("/1/params");
        assertFalse(create.get("allow_any_host").booleanValue(), "unset with hosts listed: only those");
        assertEquals("nvmeof-java", create.get("model_number").asText());
        assertEquals(16, create.get("serial_number").asText().length());
        assertTrue(create.get("max_namespaces") == null);
        JsonNode ns = nvmf.at("/3/params/namespace");
        assertEquals(1, ns.get("nsid").intValue());
        assertTrue(ns.get("uuid") == null && ns.get("nguid") == null, "a RAM namespace has no identifiers to keep: a"
                + " malloc bdev made there is a new, empty volume, and SPDK gives it its own, as the target does");
        assertEquals(2, nvmf.at("/4/params/namespace/nsid").intValue());
        assertEquals(3, nvmf.at("/5/params/namespace/nsid").intValue());
        JsonNode listener = nvmf.at("/6/params");
        assertEquals("n1", listener.get("nqn").asText(), "null subsystems: every subsystem");
        assertEquals("127.0.0.1", listener.at("/listen_address/traddr").asText());
        assertEquals("4420", listener.at("/listen_address/trsvcid").asText());
        assertEquals(List.of("nvmf_create_transport", "nvmf_create_subsystem", "nvmf_subsystem_add_host",
                "nvmf_subsystem_add_ns", "nvmf_subsystem_add_ns", "nvmf_subsystem_add_ns",
                "nvmf_subsystem_add_listener", "nvmf_subsystem_add_listener"), methods(nvmf));
    }

    @Test
    void exportWithoutListenersListsTheTransportLimits() {
        Exported exported = SpdkFormat.write(new TargetConfig(null, 4, 64, 65536, null, null));
        assertEquals(List.of(
                "maxQueueSize=64: SPDK sets it per transport and no listener uses one; not exported",
                "maxIoQueues=4: SPDK sets it per transport and no listener uses one; not exported",
                "maxTransferSize=65536: SPDK sets it per transport and no listener uses one; not exported"),
                exported.notMapped());
    }

    // --- errors

    @Test
    void malformedInputNamesTheLocation() {
        assertError("subsystems is missing", "{}");
        assertError("subsystems[0].subsystem is missing", "{\"subsystems\": [{\"config\": []}]}");
        assertError("subsystems[0].config must be a JSON array, got {}",
                "{\"subsystems\": [{\"subsystem\": \"bdev\", \"config\": {}}]}");
        assertError("subsystems[0].config[0].method is missing",
                "{\"subsystems\": [{\"subsystem\": \"bdev\", \"config\": [{\"params\": {}}]}]}");
        assertError("subsystems[0].config[0].params must be a JSON object, got [1]", """
                {"subsystems": [{"subsystem": "nvmf", "config": [{"method": "nvmf_set_crdt", "params": [1]}]}]}""");
        assertError("subsystems[0].config[0].params.num_blocks is missing", """
                {"subsystems": [{"subsystem": "bdev", "config": [
                  {"method": "bdev_malloc_create", "params": {"name": "M0", "block_size": 512}}]}]}""");
        assertError("subsystems[0].config[0].params.uuid must be a UUID (8-4-4-4-12 hex digits), got \"x\"", """
                {"subsystems": [{"subsystem": "bdev", "config": [
                  {"method": "bdev_aio_create", "params": {"name": "A0", "filename": "/f", "uuid": "x"}}]}]}""");
        assertError("subsystems[0].config[1].params.name: bdev M0 is created twice", """
                {"subsystems": [{"subsystem": "bdev", "config": [
                  {"method": "bdev_malloc_create", "params": {"name": "M0", "num_blocks": 8, "block_size": 512}},
                  {"method": "bdev_malloc_create", "params": {"name": "M0", "num_blocks": 8, "block_size": 512}}
                ]}]}""");
        assertError("subsystems[0].config[1].params.namespace.bdev_name is missing", """
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a"}},
                  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "nqn.x:a", "namespace": {"nsid": 1}}}]}]}""");
        assertError("subsystems[0].config[0].params.nqn: subsystem nqn.x:b is not created by any "
                + "nvmf_create_subsystem", """
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_subsystem_add_host", "params": {"nqn": "nqn.x:b", "host": "nqn.h"}}]}]}""");
        assertError("subsystems[0].config[1].params.listen_address.trsvcid must be an integer, got \"http\"", """
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a"}},
                  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.x:a",
                     "listen_address": {"trtype": "TCP", "traddr": "10.0.0.1", "trsvcid": "http"}}}]}]}""");
        assertError("subsystems[0].config[1].params.nqn: subsystem nqn.x:a is created twice", """
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a"}},
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a"}}]}]}""");
        assertError("subsystems[0].config[0].params.allow_any_host must be true/false or 1/0, got \"maybe\"", """
                {"subsystems": [{"subsystem": "nvmf", "config": [
                  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.x:a", "allow_any_host": "maybe"}}]}]}""");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SpdkFormat.read("not json"))
                .getMessage().startsWith("the document is not valid JSON: "));
    }

    @Test
    void invalidDocumentsOfOursAreRefusedOnExport() {
        TargetConfig badSize = new TargetConfig(null, null, null, null, List.of(), List.of(new SubsystemConfig("n1",
                null, null, null, true, null, List.of(new NamespaceConfig(1L, "ram", "lots", 512, null, null)))));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SpdkFormat.write(badSize));
        assertTrue(e.getMessage().startsWith("subsystems[0].namespaces[0].size: size 'lots' is not a number"),
                e.getMessage());
        TargetConfig badBackend = new TargetConfig(null, null, null, null, List.of(), List.of(new SubsystemConfig(
                "n1", null, null, null, true, null, List.of(new NamespaceConfig(1L, "tape", null, null, "/t", null)))));
        e = assertThrows(IllegalArgumentException.class, () -> SpdkFormat.write(badBackend));
        assertEquals("subsystems[0].namespaces[0].backend 'tape' is not ram, file or block", e.getMessage());
    }

    private static void assertError(String message, String json) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SpdkFormat.read(json));
        assertEquals(message, e.getMessage());
    }

    private static List<String> methods(JsonNode config) {
        List<String> methods = new ArrayList<>();
        config.forEach(call -> methods.add(call.get("method").asText()));
        return methods;
    }
}

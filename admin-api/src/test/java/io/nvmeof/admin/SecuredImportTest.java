package io.nvmeof.admin;

import static io.nvmeof.admin.ApiClient.json;
import static io.nvmeof.admin.ApiClient.problem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Importing an nvmetcli or SPDK configuration whose security this target cannot carry over (SPDK's namespaces visible
 * only to some hosts and read-only bdevs): refused (422), naming each setting and the override, and nothing changes;
 * with {@code dropSecurity=true} it is imported, and each dropped setting is reported in the answer and logged. The
 * hosts' DH-HMAC-CHAP keys (nvmetcli's dhchap attributes, SPDK's keyring files), SPDK's TLS PSKs and the ports' TLS
 * (nvmet's addr_tsas tls1.3, SPDK's secure_channel) are carried over, so those hosts must authenticate and use TLS
 * here too. Keys never appear in answers or logs.
 */
@Timeout(60)
class SecuredImportTest {
    private static final String SUB = "nqn.2026-12.io.example:secured";
    private static final String HOST_1 = "nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000001";
    private static final String HOST_2 = "nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000002";
    /** HOST_1's key in nvmetcli-secured.json. */
    static final String NVMET_KEY_1 = "DHHC-1:00:bnZtZXQtaG9zdC0xLWtleS1ub3QtdG8tYmUtc2hvd27KT0Z8:";
    /** HOST_2's key and controller key there (SHA-384, ffdhe2048). */
    static final String NVMET_KEY_2 = "DHHC-1:01:bnZtZXQtaG9zdC0yLWtleS1ub3QtdG8tYmUtc2hvd24tYW55d2hlcmUtYXQtYWxsG5f/lA==:";
    static final String NVMET_CTRL_KEY_2 = "DHHC-1:01:bnZtZXQtaG9zdC0yLWN0cmwta2V5LW5vdC10by1iZS1zaG93bi1hbnl3aGVyZSEh90Y//A==:";
    /** The files of spdk-secured.json's keyring keys key0 and ckey0, HOST_1's keys there. */
    static final String SPDK_KEY_0 = "DHHC-1:00:c3Bkay1rZXkwLWhvc3Qta2V5LW5vdC10by1iZS1zaG+OUJjk:";
    static final String SPDK_CKEY_0 = "DHHC-1:00:c3Bkay1ja2V5MC1jdHJsLWtleS1ub3QtdG8tYmUtc2hk6Wlq:";
    /** The file of spdk-secured.json's keyring key psk0, HOST_1's TLS PSK there. */
    static final String SPDK_PSK_0 = io.nvmeof.protocol.tls.ConfiguredPsk.format(
            io.nvmeof.protocol.tls.TlsPskHash.SHA256, "spdk-psk0-not-to-be-shown-anywhr".getBytes(StandardCharsets.US_ASCII));
    /** A TLS key given over the API to an nvmetcli host (nvmet keeps them in the kernel's keyring, not the document). */
    static final String NVMET_TLS_KEY_1 = io.nvmeof.protocol.tls.ConfiguredPsk.format(
            io.nvmeof.protocol.tls.TlsPskHash.SHA256, "nvmet-host1-tls-key-not-to-show!".getBytes(StandardCharsets.US_ASCII));

    @TempDir
    Path dir;

    private NvmeTarget target;
    private AdminServer admin;
    private ApiClient api;
    private int port;
    private Path image;
    private Path keys;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        String token = AdminToken.loadOrCreate(dir.resolve("admin-token"));
        Files.createDirectories(dir.resolve("images"));
        admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0, token, List.of(dir.resolve("images"))));
        api = new ApiClient(admin, token);
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        keys = Files.createDirectories(dir.resolve("images/keys"));
        keyFile("key0", SPDK_KEY_0);
        keyFile("ckey0", SPDK_CKEY_0);
        keyFile("psk0", SPDK_PSK_0);
        image = dir.resolve("images/secured.img");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(1 << 20);
        }
    }

    @AfterEach
    void stop() {
        admin.close();
        target.close();
    }

    /** An SPDK keyring file, owner-only as SPDK requires. */
    private Path keyFile(String name, String content) throws Exception {
        Path f = keys.resolve(name);
        Files.writeString(f, content + "\n");
        Files.setPosixFilePermissions(f, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return f;
    }

    private String document(String name) throws Exception {
        try (InputStream in = getClass().getResourceAsStream("/migration/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("@PORT@", Integer.toString(port))
                    .replace("@IMAGE@", image.toString()).replace("@KEYS@", keys.toString());
        }
    }

    /** TLS keys of the hosts whose listener requires TLS: connect() uses them. */
    private final java.util.Map<String, String> tlsKeys = new java.util.HashMap<>();

    private NvmeofController connect(String host, String secret, String ctrlSecret) {
        ConnectOptions.Builder b = ConnectOptions.builder().hostNqn(host).ctrlLossTimeout(java.time.Duration.ZERO)
                .tlsKey(tlsKeys.get(host));
        if (secret != null) {
            b.dhchapSecret(secret);
        }
        if (ctrlSecret != null) {
            b.dhchapCtrlSecret(ctrlSecret);
        }
        return NvmeofController.connect(TransportId.tcp("127.0.0.1", port, SUB), b.build());
    }

    /** The imported host must prove its key: refused without it or with another, served with it (both ways). */
    private void mustAuthenticate(String host, String secret, String ctrlSecret) throws Exception {
        assertThrows(io.nvmeof.initiator.NvmeofException.class, () -> connect(host, null, null).close(),
                host + " without its secret");
        String other = io.nvmeof.protocol.auth.DhchapSecret.of(new byte[32], null).representation();
        assertThrows(io.nvmeof.initiator.NvmeofException.class, () -> connect(host, other, null).close(),
                host + " with another secret");
        try (NvmeofController c = connect(host, secret, ctrlSecret)) {
            assertEquals(2048, c.namespace(1).blockCount(), "imported, and reachable by the host that proves its key");
        }
    }

    private static void noSecretIn(String what, String text) {
        for (String secret : List.of(NVMET_KEY_1, NVMET_KEY_2, NVMET_CTRL_KEY_2, SPDK_KEY_0, SPDK_CKEY_0, SPDK_PSK_0,
                NVMET_TLS_KEY_1)) {
            assertFalse(text.contains(secret.substring(10, 30)), what + " shows a secret: " + text);
        }
        // Messages may name the forms ("DHHC-1:xx:...:"), never a secret in one.
        assertFalse(java.util.regex.Pattern.compile("(DHHC-1|NVMeTLSkey-1):[0-9a-fA-F]{2}:[A-Za-z0-9+/]").matcher(text)
                .find(), what + ": " + text);
    }

    /** Refused without the override (dry run too), naming each setting; imported with it, each one reported and logged. */
    private void refusedThenImportedWithTheOverride(String format, String mode, String doc, List<String> settings,
                                                    List<String> hostsSet) throws Exception {
        String path = "/api/v1/config/import?mode=" + mode + "&format=" + format;
        String before = api.call("GET", "/api/v1/config", null).body();
        for (String query : new String[] {"", "&dryRun=true", "&dropSecurity=false"}) {
            HttpResponse<String> refused = api.call("POST", path + query, doc);
            JsonNode p = problem(refused, 422, "dropSecurity=true");
            for (String setting : settings) {
                assertTrue(p.get("detail").asText().contains(setting), setting + " named: " + p.get("detail").asText());
            }
            assertEquals(settings.size(), p.get("securitySettings").size(), p.toString());
            noSecretIn("the refusal", refused.body());
        }
        assertEquals(before, api.call("GET", "/api/v1/config", null).body(), "the refused imports changed nothing");
        assertEquals("[]", api.call("GET", "/api/v1/hosts", null).body(), "no host's key was set");

        try (LogCapture log = new LogCapture()) {
            HttpResponse<String> dryRun = api.call("POST", path + "&dropSecurity=true&dryRun=true", doc);
            assertEquals(200, dryRun.statusCode(), dryRun.body());
            noSecretIn("the dry run's answer", dryRun.body());
            assertEquals("[]", api.call("GET", "/api/v1/hosts", null).body(), "the dry run set no key");
            HttpResponse<String> imported = api.call("POST", path + "&dropSecurity=true", doc);
            assertEquals(200, imported.statusCode(), imported.body());
            noSecretIn("the import's answer", imported.body());
            for (String host : hostsSet) {
                assertTrue(json(imported).get("changes").toString().contains("set the security settings of host "
                        + host), imported.body());
                JsonNode set = json(api.call("GET", "/api/v1/hosts/" + host, null));
                assertTrue(set.get("dhchapKeySet").asBoolean(), set.toString());
            }
            List<String> dropped = new ArrayList<>();
            json(imported).get("securityDropped").forEach(n -> dropped.add(n.asText()));
            assertEquals(settings.size(), dropped.size(), dropped.toString());
            for (String setting : settings) {
                assertTrue(dropped.stream().anyMatch(d -> d.contains(setting)), setting + " reported: " + dropped);
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (log.lines(AuditLogTest.AUDIT).stream().noneMatch(l -> l.contains(setting))
                        && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertTrue(log.lines(AuditLogTest.AUDIT).stream().anyMatch(l -> l.contains(" WARN ")
                        && l.contains("dropped") && l.contains(setting)), setting + " logged: " + log.lines(AuditLogTest.AUDIT));
            }
            noSecretIn("the log", String.join("\n", log.lines()));
        }
    }

    /**
     * Nothing is lost: the port's TLS (addr_tsas tls1.3, addr_treq required) makes the listener require TLS, and the
     * hosts' DH-HMAC-CHAP keys (flat dhchap_* and the dhchap group, with hash, group and controller key) come along; the
     * hosts' TLS keys, which nvmet keeps in the kernel's keyring, are given over the API. Then a host must both use TLS
     * and authenticate.
     */
    @Test
    void aSecuredNvmetcliConfigurationImportsWithItsTlsPortAndHostKeys() throws Exception {
        HttpResponse<String> imported = api.call("POST", "/api/v1/config/import?mode=merge&format=nvmetcli",
                document("nvmetcli-secured.json"));
        assertEquals(200, imported.statusCode(), imported.body());
        noSecretIn("the import's answer", imported.body());
        assertTrue(json(imported).get("notMapped").toString().contains("ports[0].addr.tsas=tls1.3: the hosts' TLS"
                + " keys are in the kernel's keyring"), imported.body());
        assertTrue(api.call("GET", "/api/v1/listeners", null).body().contains("\"tls\":\"required\""));
        JsonNode host2 = json(api.call("GET", "/api/v1/hosts/" + HOST_2, null));
        assertEquals("sha384", host2.get("dhchapHash").asText(), host2.toString());
        assertEquals("ffdhe2048", host2.get("dhchapDhGroup").asText(), host2.toString());
        assertTrue(host2.get("dhchapCtrlKeySet").asBoolean(), host2.toString());
        assertThrows(io.nvmeof.initiator.NvmeofException.class, () -> connect(HOST_1, NVMET_KEY_1, null).close(),
                "the listener requires TLS, and the host has no TLS key here yet");
        HttpResponse<String> put = api.call("PUT", "/api/v1/hosts/" + HOST_1, "{\"dhchapKey\":\"" + NVMET_KEY_1
                + "\",\"tlsKey\":\"" + NVMET_TLS_KEY_1 + "\"}");
        assertEquals(200, put.statusCode(), put.body());
        noSecretIn("the PUT's answer", put.body());
        assertTrue(json(put).get("tlsKeySet").asBoolean(), put.body());
        tlsKeys.put(HOST_1, NVMET_TLS_KEY_1);
        mustAuthenticate(HOST_1, NVMET_KEY_1, null);
    }

    @Test
    void aSecuredSpdkConfigurationIsRefusedUnlessTheAdminDropsItsSecurity() throws Exception {
        refusedThenImportedWithTheOverride("spdk", "replace", document("spdk-secured.json"), List.of(
                "nvmf_subsystem_add_ns(" + SUB + ", nsid 1).no_auto_visible=true",
                "bdev_aio_create(AIO0).readonly=true"),
                List.of(HOST_1));
        JsonNode host1 = json(api.call("GET", "/api/v1/hosts/" + HOST_1, null));
        assertTrue(host1.get("tlsKeySet").asBoolean(), "the psk came along: " + host1);
        assertEquals("standard", host1.get("tlsKeyDerivation").asText(), "SPDK derives the standard way");
        assertTrue(api.call("GET", "/api/v1/listeners", null).body().contains("\"tls\":\"required\""),
                "secure_channel: the listener requires TLS");
        assertThrows(io.nvmeof.initiator.NvmeofException.class, () -> connect(HOST_1, SPDK_KEY_0, SPDK_CKEY_0).close(),
                "the listener requires TLS");
        tlsKeys.put(HOST_1, SPDK_PSK_0);
        mustAuthenticate(HOST_1, SPDK_KEY_0, SPDK_CKEY_0);
    }

    /**
     * An SPDK key file is read only where the API may read files (--allow-dir), must exist, be the owner's only (as
     * SPDK requires) and hold one valid secret; a host key naming no keyring key is refused. Each refusal is a 400
     * naming the key and the path, never the file's content, and nothing changes.
     */
    @Test
    void spdkKeyFilesAreCheckedAndNeverShown() throws Exception {
        String doc = document("spdk-secured.json");
        String before = api.call("GET", "/api/v1/config", null).body();
        Path outside = Files.createDirectories(dir.resolve("elsewhere")).resolve("key0");
        Files.writeString(outside, SPDK_KEY_0);
        Files.setPosixFilePermissions(outside, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Path readable = keyFile("readable", SPDK_KEY_0);
        Files.setPosixFilePermissions(readable, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        keyFile("garbage", "DHHC-1:00:" + SPDK_KEY_0.substring(10, 40) + "xx:");
        keyFile("two", SPDK_KEY_0 + " " + SPDK_CKEY_0);
        String[][] cases = {
            {keys.resolve("key0").toString(), outside.toString(), "outside the allowed directories"},
            {keys.resolve("key0").toString(), keys.resolve("missing").toString(), "does not exist"},
            {keys.resolve("key0").toString(), readable.toString(), "other users"},
            {keys.resolve("key0").toString(), keys.resolve("garbage").toString(), "key0"},
            {keys.resolve("key0").toString(), keys.resolve("two").toString(), "one DH-HMAC-CHAP secret"},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = api.call("POST", "/api/v1/config/import?mode=merge&format=spdk&dropSecurity=true",
                    doc.replace(c[0], c[1]));
            JsonNode p = problem(r, 400, c[2]);
            assertTrue(p.get("detail").asText().contains("keyring_file_add_key(key0)")
                    && p.get("detail").asText().contains(c[1]), p.toString());
            noSecretIn("the refusal", r.body());
        }
        HttpResponse<String> unknown = api.call("POST", "/api/v1/config/import?mode=merge&format=spdk&dropSecurity=true",
                doc.replace("\"dhchap_key\": \"key0\"", "\"dhchap_key\": \"key9\""));
        problem(unknown, 400, "key key9 is not added by any keyring_file_add_key");
        assertEquals(before, api.call("GET", "/api/v1/config", null).body(), "the refused imports changed nothing");
        assertEquals("[]", api.call("GET", "/api/v1/hosts", null).body(), "no key was set");
    }

    /** A configuration without security settings imports as before: nothing to drop, no override needed. */
    @Test
    void aConfigurationWithoutSecurityNeedsNoOverride() throws Exception {
        String plain = document("nvmetcli-secured.json").replace("\"required\"", "\"not specified\"")
                .replace("\"tls1.3\"", "\"none\"").replaceAll("\"(dhchap_)?(ctrl_)?key\": \"DHHC[^\"]*\"", "\"$1$2key\": \"\"");
        HttpResponse<String> r = api.call("POST", "/api/v1/config/import?mode=merge&format=nvmetcli", plain);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(0, json(r).get("securityDropped").size(), r.body());
    }
}

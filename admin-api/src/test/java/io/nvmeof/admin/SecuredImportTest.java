package io.nvmeof.admin;

import static io.nvmeof.admin.ApiClient.json;
import static io.nvmeof.admin.ApiClient.problem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * Importing an nvmetcli or SPDK configuration whose security this target cannot carry over (a port that requires a
 * secure channel, TLS, DH-HMAC-CHAP and TLS keys of hosts, SPDK's namespaces visible only to some hosts and read-only
 * bdevs): refused (422), naming each setting and the override, and nothing changes; with {@code dropSecurity=true}
 * it is imported, and each dropped setting is reported in the answer and logged. Keys never appear in either.
 */
@Timeout(60)
class SecuredImportTest {
    private static final String SUB = "nqn.2026-12.io.example:secured";
    private static final String HOST_1 = "nqn.2014-08.org.nvmexpress:uuid:5e1ec7ed-0000-4000-8000-000000000001";

    @TempDir
    Path dir;

    private NvmeTarget target;
    private AdminServer admin;
    private ApiClient api;
    private int port;
    private Path image;

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

    private String document(String name) throws Exception {
        try (InputStream in = getClass().getResourceAsStream("/migration/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("@PORT@", Integer.toString(port))
                    .replace("@IMAGE@", image.toString());
        }
    }

    /** Refused without the override (dry run too), naming each setting; imported with it, each one reported and logged. */
    private void refusedThenImportedWithTheOverride(String format, String mode, String doc, List<String> settings) throws Exception {
        String path = "/api/v1/config/import?mode=" + mode + "&format=" + format;
        String before = api.call("GET", "/api/v1/config", null).body();
        for (String query : new String[] {"", "&dryRun=true", "&dropSecurity=false"}) {
            HttpResponse<String> refused = api.call("POST", path + query, doc);
            JsonNode p = problem(refused, 422, "dropSecurity=true");
            for (String setting : settings) {
                assertTrue(p.get("detail").asText().contains(setting), setting + " named: " + p.get("detail").asText());
            }
            assertEquals(settings.size(), p.get("securitySettings").size(), p.toString());
            assertFalse(refused.body().contains("DHHC-1") || refused.body().contains("NVMeTLSkey"), refused.body());
        }
        assertEquals(before, api.call("GET", "/api/v1/config", null).body(), "the refused imports changed nothing");

        try (LogCapture log = new LogCapture()) {
            HttpResponse<String> imported = api.call("POST", path + "&dropSecurity=true", doc);
            assertEquals(200, imported.statusCode(), imported.body());
            assertFalse(imported.body().contains("DHHC-1") || imported.body().contains("NVMeTLSkey"), imported.body());
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
            assertTrue(log.lines().stream().noneMatch(l -> l.contains("DHHC-1") || l.contains("NVMeTLSkey")),
                    "no key is logged");
        }
        try (NvmeofController c = NvmeofController.connect(TransportId.tcp("127.0.0.1", port, SUB),
                ConnectOptions.builder().hostNqn(HOST_1).build())) {
            assertEquals(2048, c.namespace(1).blockCount(), "imported, reachable in clear text as the admin accepted");
        }
    }

    @Test
    void aSecuredNvmetcliConfigurationIsRefusedUnlessTheAdminDropsItsSecurity() throws Exception {
        refusedThenImportedWithTheOverride("nvmetcli", "merge", document("nvmetcli-secured.json"), List.of(
                "ports[0].addr.treq=required", "ports[0].addr.tsas=tls1.3", "hosts[0].dhchap_key",
                "hosts[1].dhchap.key", "hosts[1].dhchap.ctrl_key"));
    }

    @Test
    void aSecuredSpdkConfigurationIsRefusedUnlessTheAdminDropsItsSecurity() throws Exception {
        refusedThenImportedWithTheOverride("spdk", "replace", document("spdk-secured.json"), List.of(
                "nvmf_subsystem_add_host(" + SUB + ", " + HOST_1 + ").dhchap_key",
                "nvmf_subsystem_add_host(" + SUB + ", " + HOST_1 + ").dhchap_ctrlr_key",
                "nvmf_subsystem_add_host(" + SUB + ", " + HOST_1 + ").psk",
                "nvmf_subsystem_add_ns(" + SUB + ", nsid 1).no_auto_visible=true",
                "bdev_aio_create(AIO0).readonly=true",
                "nvmf_subsystem_add_listener(" + SUB + ", TCP 127.0.0.1:" + port + ").secure_channel=true"));
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

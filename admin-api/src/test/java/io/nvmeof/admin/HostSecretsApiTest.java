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
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hosts' DH-HMAC-CHAP secrets over the admin API (issue 34): written with PUT /api/v1/hosts/{hostnqn}, kept in the
 * state file (0600) and enforced at once; never shown by a GET, an export, an import's answer, the audit log or any
 * log line; rotated without disturbing queues that already authenticated; bad input refused with nothing changed.
 * Driven over real HTTP, with our initiator as the host.
 */
@Timeout(120)
class HostSecretsApiTest {
    private static final String SUB = "nqn.2026-12.io.nvmeof:keys";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:6b657973-0000-4000-8000-000000000001";
    private static final String OTHER = "nqn.2014-08.org.nvmexpress:uuid:6b657973-0000-4000-8000-000000000002";
    private static final SecureRandom RANDOM = new SecureRandom();

    @TempDir
    Path dir;

    private StateFile state;
    private String token;
    private NvmeTarget target;
    private AdminServer admin;
    private ApiClient api;
    private LogCapture log;
    /** Every secret a test made: none may show up in an answer or a log line. */
    private final List<String> secrets = new java.util.ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        log = new LogCapture();
        state = new StateFile(dir.resolve("state"));
        token = AdminToken.loadOrCreate(dir.resolve("state/admin-token"));
        startFrom(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        assertEquals(201, api.call("POST", "/api/v1/subsystems", "{\"nqn\":\"" + SUB + "\",\"allowAnyHost\":false,"
                + "\"hosts\":[\"" + HOST + "\",\"" + OTHER + "\"],\"namespaces\":[{\"size\":\"1MiB\"}]}").statusCode());
    }

    private void startFrom(TargetConfig config) throws Exception {
        target = NvmeTarget.start(config);
        target.live().saveChangesWith(state::save);
        admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0, token, List.of()));
        api = new ApiClient(admin, token);
    }

    @AfterEach
    void stop() {
        try {
            admin.close();
            target.close();
            for (String line : log.lines()) {
                assertNoSecret("a log line", line);
            }
        } finally {
            log.close();
        }
    }

    private String newSecret(int bytes, DhchapHash transform) {
        byte[] k = new byte[bytes];
        RANDOM.nextBytes(k);
        String s = DhchapSecret.of(k, transform).representation();
        secrets.add(s);
        return s;
    }

    private HttpResponse<String> putKey(String host, String body) throws Exception {
        return api.call("PUT", "/api/v1/hosts/" + host, body);
    }

    /** A secret as {@code nvme gen-dhchap-key} prints one (messages may name the prefix "DHHC-1:" alone). */
    private static final java.util.regex.Pattern ANY_SECRET =
            java.util.regex.Pattern.compile("DHHC-1:[0-9a-fA-F]{2}:[A-Za-z0-9+/]");

    private void assertNoSecret(String what, String text) {
        assertFalse(ANY_SECRET.matcher(text).find(), what + ": " + text);
        for (String secret : secrets) {
            assertFalse(text.contains(secret.substring(10, 40)), what + " shows a secret: " + text);
        }
    }

    private NvmeofController connect(String host, String secret, String ctrlSecret) {
        ConnectOptions.Builder b = ConnectOptions.builder().hostNqn(host).ioQueues(2)
                .ctrlLossTimeout(Duration.ZERO);
        if (secret != null) {
            b.dhchapSecret(secret);
        }
        if (ctrlSecret != null) {
            b.dhchapCtrlSecret(ctrlSecret);
        }
        return NvmeofController.connect(TransportId.tcp("127.0.0.1", target.tcpPort(0), SUB), b.build());
    }

    private static void refused(Supplier<NvmeofController> connect, String what) {
        NvmeofException e = assertThrows(NvmeofException.class, () -> connect.get().close(), what);
        assertFalse(e.getMessage().contains("DHHC-1"), e.getMessage());
    }

    /** Writes a block and reads it back. */
    private static void moveData(NvmeofController c, int lba) throws Exception {
        ByteBuffer src = ByteBuffer.allocateDirect(512);
        for (int i = 0; i < 512; i++) {
            src.put(i, (byte) (i * 31 + lba));
        }
        c.namespace(1).write(lba, 1, src).get(10, TimeUnit.SECONDS);
        ByteBuffer dst = ByteBuffer.allocateDirect(512);
        c.namespace(1).read(lba, 1, dst).get(10, TimeUnit.SECONDS);
        assertEquals(src, dst);
    }

    /** The audit log's lines once the request's line is there (it is written after the answer). */
    private List<String> auditLinesWith(String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        List<String> lines = log.lines(AuditLogTest.AUDIT);
        while (lines.stream().noneMatch(l -> l.contains(text)) && System.nanoTime() < deadline) {
            Thread.sleep(10);
            lines = log.lines(AuditLogTest.AUDIT);
        }
        assertTrue(lines.stream().anyMatch(l -> l.contains(text)), text + " in " + lines);
        return lines;
    }

    @Test
    void aKeyPutOverTheApiIsEnforcedKeptOwnerOnlyAndNeverShown() throws Exception {
        String key = newSecret(48, DhchapHash.SHA384);
        String ctrlKey = newSecret(32, null);
        HttpResponse<String> put = putKey(HOST, "{\"dhchapKey\":\"" + key + "\",\"dhchapCtrlKey\":\"" + ctrlKey
                + "\",\"dhchapHash\":\"hmac(sha384)\",\"dhchapDhGroup\":\"ffdhe2048\"}");
        assertEquals(200, put.statusCode(), put.body());
        JsonNode set = json(put);
        assertEquals(HOST, set.get("nqn").asText());
        assertTrue(set.get("dhchapKeySet").asBoolean() && set.get("dhchapCtrlKeySet").asBoolean(), set.toString());
        assertEquals("sha384", set.get("dhchapHash").asText());
        assertEquals("ffdhe2048", set.get("dhchapDhGroup").asText());
        assertEquals(set, json(api.call("GET", "/api/v1/hosts/" + HOST, null)), "GET says what PUT answered");
        assertEquals(List.of(set), List.copyOf(iterable(json(api.call("GET", "/api/v1/hosts", null)))));
        for (String path : new String[] {"/api/v1/hosts", "/api/v1/hosts/" + HOST, "/api/v1/config",
                "/api/v1/config?format=nvmetcli", "/api/v1/config?format=spdk", "/api/v1/subsystems"}) {
            assertNoSecret("GET " + path, api.call("GET", path, null).body());
        }
        for (String line : auditLinesWith("set the security settings of host " + HOST)) {
            assertNoSecret("the audit log", line);
        }

        String saved = Files.readString(state.path());
        assertTrue(saved.contains(key) && saved.contains(ctrlKey), "the state file keeps the secrets");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state.path())));

        try (NvmeofController c = connect(HOST, key, ctrlKey)) {
            moveData(c, 3);
        }
        refused(() -> connect(HOST, null, null), "without a secret");
        refused(() -> connect(HOST, newSecret(48, DhchapHash.SHA384), null), "with another secret");
        refused(() -> connect(HOST, key, newSecret(32, null)), "a controller that cannot prove another secret");
        try (NvmeofController c = connect(OTHER, null, null)) {
            moveData(c, 4); // a host without settings connects as before
        }

        // A restart from the state file keeps requiring the key.
        admin.close();
        target.close();
        startFrom(state.load());
        refused(() -> connect(HOST, null, null), "without a secret after a restart");
        try (NvmeofController c = connect(HOST, key, ctrlKey)) {
            moveData(c, 5);
        }
        assertEquals(set, json(api.call("GET", "/api/v1/hosts/" + HOST, null)));
    }

    private String newTlsKey() {
        byte[] k = new byte[32];
        RANDOM.nextBytes(k);
        String s = io.nvmeof.protocol.tls.ConfiguredPsk.format(io.nvmeof.protocol.tls.TlsPskHash.SHA256, k);
        secrets.add(s);
        return s;
    }

    /**
     * Issue 51: a body that names DH-HMAC-CHAP settings without dhchapKey (or a TLS derivation without tlsKey) is
     * refused whether or not the host has the other kind set; before, a host with a TLS key silently lost its
     * DH-HMAC-CHAP secret (200, dhchapKeySet false) while one without was refused.
     */
    @Test
    void aKindNamedWithoutItsKeyIsRefusedAndTheSecretStays() throws Exception {
        String both = newSecret(32, null);
        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + both + "\",\"tlsKey\":\"" + newTlsKey() + "\"}")
                .statusCode());
        String dhOnly = newSecret(32, null);
        assertEquals(200, putKey(OTHER, "{\"dhchapKey\":\"" + dhOnly + "\"}").statusCode());
        byte[] savedBefore = Files.readAllBytes(state.path());
        String listBefore = api.call("GET", "/api/v1/hosts", null).body();
        String[][] cases = {
            {HOST, "{\"dhchapDhGroup\":\"ffdhe2048\"}", "dhchapKey"},
            {HOST, "{\"dhchapHash\":\"sha512\"}", "dhchapKey"},
            {HOST, "{\"dhchapCtrlKey\":\"" + newSecret(32, null) + "\"}", "dhchapKey"},
            {HOST, "{\"tlsKeyDerivation\":\"legacy\"}", "tlsKey"},
            {OTHER, "{\"dhchapDhGroup\":\"ffdhe2048\"}", "dhchapKey"},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = putKey(c[0], c[1]);
            JsonNode p = problem(r, 400, c[2]);
            assertNoSecret("the refusal of " + c[1], r.body());
            assertEquals(listBefore, api.call("GET", "/api/v1/hosts", null).body(), c[1] + ": nothing changed: " + p);
            assertTrue(java.util.Arrays.equals(savedBefore, Files.readAllBytes(state.path())), "state file unchanged");
        }
        assertTrue(json(api.call("GET", "/api/v1/hosts/" + HOST, null)).get("dhchapKeySet").asBoolean());
        assertTrue(json(api.call("GET", "/api/v1/hosts/" + OTHER, null)).get("dhchapKeySet").asBoolean());
        try (NvmeofController c = connect(OTHER, dhOnly, null)) {
            moveData(c, 6); // still the secret in force
        }
        refused(() -> connect(OTHER, null, null), "without its secret");
    }

    /**
     * Issue 51: a rotated or deleted secret is on no file in the state directory afterwards; before, the replaced
     * document stayed as config.json.prev until the next change. A change that drops no secret still keeps the
     * replaced document there.
     */
    @Test
    void aRotatedOrDeletedSecretIsOnNoFile() throws Exception {
        String first = newSecret(32, null);
        String second = newSecret(32, null);
        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + first + "\"}").statusCode());
        String withFirst = Files.readString(state.path());
        assertEquals(201, api.call("POST", "/api/v1/subsystems/" + SUB + "/namespaces", "{\"size\":\"1MiB\"}")
                .statusCode());
        assertEquals(withFirst, Files.readString(state.previous()), "no secret dropped: the replaced document is kept");

        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + second + "\"}").statusCode());
        assertOnNoFile(first, "the rotated secret");
        assertTrue(Files.readString(state.path()).contains(second));

        assertEquals(204, api.call("DELETE", "/api/v1/hosts/" + HOST, null).statusCode());
        assertOnNoFile(second, "the deleted secret");
        String tls = newTlsKey();
        assertEquals(200, putKey(OTHER, "{\"tlsKey\":\"" + tls + "\"}").statusCode());
        assertEquals(204, api.call("DELETE", "/api/v1/hosts/" + OTHER, null).statusCode());
        assertOnNoFile(tls, "the deleted TLS key");
        // What is there still starts the target.
        admin.close();
        target.close();
        startFrom(state.load());
        try (NvmeofController c = connect(HOST, null, null)) {
            moveData(c, 7);
        }
    }

    private void assertOnNoFile(String secret, String what) throws java.io.IOException {
        try (var files = Files.walk(state.path().getParent())) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                assertFalse(Files.readString(f, java.nio.charset.StandardCharsets.ISO_8859_1).contains(secret),
                        what + " is still in " + f);
            }
        }
    }

    private static List<JsonNode> iterable(JsonNode array) {
        List<JsonNode> out = new java.util.ArrayList<>();
        array.forEach(out::add);
        return out;
    }

    /**
     * Rotation as nvmet and SPDK do it: a host connected with the old key keeps doing I/O on its authenticated queues;
     * a new connection needs the new key. Removing the settings lets the host connect without one.
     */
    @Test
    void rotatingAKeyKeepsConnectedHostsAndSwitchesNewConnections() throws Exception {
        String oldKey = newSecret(32, null);
        String newKey = newSecret(32, DhchapHash.SHA256);
        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + oldKey + "\"}").statusCode());
        try (NvmeofController connected = connect(HOST, oldKey, null)) {
            moveData(connected, 1);
            HttpResponse<String> rotated = putKey(HOST, "{\"dhchapKey\":\"" + newKey + "\"}");
            assertEquals(200, rotated.statusCode(), rotated.body());
            assertNoSecret("the rotation's answer", rotated.body());
            moveData(connected, 2);
            refused(() -> connect(HOST, oldKey, null), "a new connection with the old key");
            try (NvmeofController again = connect(HOST, newKey, null)) {
                moveData(again, 6);
            }
            moveData(connected, 7);
            assertTrue(Files.readString(state.path()).contains(newKey)
                    && !Files.readString(state.path()).contains(oldKey), "the state file has the new key only");

            assertEquals(204, api.call("DELETE", "/api/v1/hosts/" + HOST, null).statusCode());
            auditLinesWith("remove the security settings of host " + HOST);
            problem(api.call("GET", "/api/v1/hosts/" + HOST, null), 404, "has no security settings");
            problem(api.call("DELETE", "/api/v1/hosts/" + HOST, null), 404, "has no security settings");
            assertEquals("[]", api.call("GET", "/api/v1/hosts", null).body());
            assertFalse(Files.readString(state.path()).contains("DHHC-1"), "removed from the state file");
            moveData(connected, 8);
            try (NvmeofController open = connect(HOST, null, null)) {
                moveData(open, 9);
            }
        }
    }

    /**
     * Bad input is refused with 400 problem+json naming the field, without repeating the secret, and changes nothing:
     * not the live settings, not the state file.
     */
    @Test
    void badInputIsRefusedNamingTheFieldAndChangesNothing() throws Exception {
        String key = newSecret(32, null);
        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + key + "\"}").statusCode());
        byte[] savedBefore = Files.readAllBytes(state.path());
        String listBefore = api.call("GET", "/api/v1/hosts", null).body();

        String other = newSecret(32, null);
        String base64 = other.substring(10, other.length() - 1);
        // One base64 character changed: the CRC no longer matches.
        String badCrc = "DHHC-1:00:" + (base64.charAt(0) == 'A' ? 'B' : 'A') + base64.substring(1) + ":";
        secrets.add(badCrc);
        String[][] cases = {
            {HOST, "{\"dhchapKey\":\"" + badCrc + "\"}", "dhchapKey", "CRC"},
            {HOST, "{\"dhchapKey\":\"DHHC-2:00:" + base64 + ":\"}", "dhchapKey", "DHHC-1:"},
            {HOST, "{\"dhchapKey\":\"DHHC-1:07:" + base64 + ":\"}", "dhchapKey", "transformation"},
            {HOST, "{\"dhchapKey\":\"DHHC-1:00:" + base64.substring(0, 20) + ":\"}", "dhchapKey", "32, 48 or 64 bytes"},
            {HOST, "{\"dhchapKey\":\"DHHC-1:00:" + base64.substring(0, 20) + "!!:\"}", "dhchapKey", "base64"},
            {HOST, "{\"dhchapKey\":\"" + other + "\",\"dhchapCtrlKey\":\"" + other + "\"}", "dhchapCtrlKey",
                "same secret"},
            {HOST, "{\"dhchapKey\":\"" + other + "\",\"dhchapHash\":\"md5\"}", "dhchapHash", "md5"},
            {HOST, "{\"dhchapKey\":\"" + other + "\",\"dhchapDhGroup\":\"ffdhe1024\"}", "dhchapDhGroup", "ffdhe1024"},
            {HOST, "{\"dhchapKey\":\"" + other + "\",\"dhchapSecret\":\"x\"}", "dhchapSecret", ""},
            {HOST, "{\"dhchapCtrlKey\":\"" + other + "\"}", "dhchapKey", ""},
            {HOST, "{\"dhchapKey\":\"" + other + "x".repeat(300) + "\"}", "dhchapKey", ""},
            {HOST, "{\"dhchapKey\":\"" + other + "\",\"dhchapHash\":\"" + other + "\"}", "dhchapHash", ""},
            {HOST, "{\"dhchapKey\":42}", "dhchapKey", ""},
            {"nqn.2026-12.io.nvmeof:has/a-slash".replace("/", "%2F"), "{\"dhchapKey\":\"" + other + "\"}", "nqn", ""},
            {"not-an-nqn", "{\"dhchapKey\":\"" + other + "\"}", "not-an-nqn", ""},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = putKey(c[0], c[1]);
            JsonNode p = problem(r, 400, c[3]);
            assertTrue(p.toString().contains(c[2]), c[1] + " names " + c[2] + ": " + p);
            assertNoSecret("the refusal of " + c[1].substring(0, Math.min(30, c[1].length())), r.body());
            assertEquals(listBefore, api.call("GET", "/api/v1/hosts", null).body(), "nothing changed: " + p);
            assertTrue(java.util.Arrays.equals(savedBefore, Files.readAllBytes(state.path())), "state file unchanged");
        }
        for (String line : log.lines(AuditLogTest.AUDIT)) {
            assertNoSecret("the audit log", line);
        }
        problem(api.call("GET", "/api/v1/hosts/" + OTHER, null), 404, OTHER);
        problem(api.call("DELETE", "/api/v1/hosts/" + OTHER, null), 404, OTHER);
        try (NvmeofController c = connect(HOST, key, null)) {
            moveData(c, 1); // the key set before is still the one in force
        }
    }

    /**
     * Our own document's {@code hosts} import in both modes: entries given are set or rotated (a dry run changes
     * nothing), hosts the document does not name keep their settings even in replace mode, so importing an export
     * (which carries no secrets) never strips authentication. The answer never carries a secret.
     */
    @Test
    void importsSetKeysAndNeverStripThemAndAnswerWithoutSecrets() throws Exception {
        String key = newSecret(32, null);
        assertEquals(200, putKey(HOST, "{\"dhchapKey\":\"" + key + "\"}").statusCode());
        String exported = api.call("GET", "/api/v1/config", null).body();
        HttpResponse<String> replaced = api.call("POST", "/api/v1/config/import?mode=replace", exported);
        assertEquals(200, replaced.statusCode(), replaced.body());
        assertTrue(json(api.call("GET", "/api/v1/hosts/" + HOST, null)).get("dhchapKeySet").asBoolean());
        refused(() -> connect(HOST, null, null), "still without a secret after a replace with the export");

        String otherKey = newSecret(48, null);
        String rotated = newSecret(32, null);
        String doc = "{\"hosts\":[{\"nqn\":\"" + OTHER + "\",\"dhchapKey\":\"" + otherKey + "\",\"dhchapDhGroup\":"
                + "\"ffdhe3072\"},{\"nqn\":\"" + HOST + "\",\"dhchapKey\":\"" + rotated + "\"}]}";
        byte[] savedBefore = Files.readAllBytes(state.path());
        for (String mode : new String[] {"merge", "replace"}) {
            HttpResponse<String> dry = api.call("POST", "/api/v1/config/import?mode=" + mode + "&dryRun=true",
                    exported.replaceFirst("\\{", doc.substring(0, doc.length() - 1) + ","));
            assertEquals(200, dry.statusCode(), dry.body());
            assertNoSecret("the dry run's answer", dry.body());
            String changes = json(dry).get("changes").toString();
            assertTrue(changes.contains("set the security settings of host " + OTHER + " (DH-HMAC-CHAP sha256, group ffdhe3072)")
                    && changes.contains("rotate the security settings of host " + HOST), changes);
            problem(api.call("GET", "/api/v1/hosts/" + OTHER, null), 404, OTHER);
            assertTrue(java.util.Arrays.equals(savedBefore, Files.readAllBytes(state.path())), "a dry run saves nothing");
        }
        HttpResponse<String> merged = api.call("POST", "/api/v1/config/import?mode=merge", doc);
        assertEquals(200, merged.statusCode(), merged.body());
        assertNoSecret("the import's answer", merged.body());
        for (String line : auditLinesWith("rotate the security settings of host " + HOST)) {
            assertNoSecret("the audit log", line);
        }
        refused(() -> connect(OTHER, null, null), "the imported host without its secret");
        refused(() -> connect(HOST, key, null), "the rotated host with its old secret");
        try (NvmeofController c = connect(OTHER, otherKey, null); NvmeofController d = connect(HOST, rotated, null)) {
            moveData(c, 1);
            moveData(d, 2);
        }
        assertEquals("[]", json(api.call("POST", "/api/v1/config/import?mode=merge", doc)).get("changes").toString(),
                "the same settings again change nothing");

        HttpResponse<String> bad = api.call("POST", "/api/v1/config/import?mode=merge", "{\"hosts\":[{\"nqn\":\"" + OTHER
                + "\",\"dhchapKey\":\"" + otherKey + "\",\"dhchapCtrlKey\":\"" + otherKey + "\"}]}");
        problem(bad, 400, "hosts[0]");
        assertTrue(json(bad).get("detail").asText().contains("dhchapCtrlKey"), bad.body());
        assertNoSecret("the import's refusal", bad.body());
        HttpResponse<String> keyless = api.call("POST", "/api/v1/config/import?mode=merge", "{\"hosts\":[{\"nqn\":\""
                + OTHER + "\"}]}");
        problem(keyless, 400, "dhchapKey and tlsKey are missing");
        try (NvmeofController c = connect(OTHER, otherKey, null)) {
            moveData(c, 3); // the refused imports changed nothing
        }
    }
}

package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin API's audit trail (logger {@value #AUDIT}): one line per change, saying who (the token's fingerprint,
 * never the token), from where (the client's address and port) and what changed (for an import, one line per
 * subsystem, namespace, host or listener it adds or removes); refused changes and requests without the right token
 * are logged too, never with a secret.
 */
@Timeout(60)
class AuditLogTest {
    static final String AUDIT = "io.nvmeof.admin.audit";
    private static final String NQN = "nqn.2026-12.io.nvmeof:audit";

    @TempDir
    Path dir;

    private NvmeTarget target;
    private AdminServer admin;
    private String token;
    private ApiClient api;
    private LogCapture log;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        token = AdminToken.loadOrCreate(dir.resolve("admin-token"));
        admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0, token, List.of()));
        api = new ApiClient(admin, token);
        log = new LogCapture();
    }

    @AfterEach
    void stop() {
        log.close();
        admin.close();
        target.close();
    }

    /** The token's identity in the log: the first 8 hex digits of its SHA-256. */
    private String fingerprint() throws Exception {
        byte[] hash = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        return "token sha256:" + HexFormat.of().formatHex(hash, 0, 4);
    }

    /**
     * The audit lines about {@code request} ("POST /api/v1/...") among those written after the first {@code skip},
     * once they are written (after the answer).
     */
    private List<String> linesAbout(String request, int skip, int atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            List<String> lines = linesAbout(request, skip);
            if (lines.size() >= atLeast || System.nanoTime() > deadline) {
                Thread.sleep(100); // and no more come
                return linesAbout(request, skip);
            }
            Thread.sleep(10);
        }
    }

    private List<String> linesAbout(String request, int skip) {
        List<String> all = log.lines(AUDIT);
        return all.subList(skip, all.size()).stream().filter(l -> l.contains(" " + request + ": ")).toList();
    }

    private String change(String method, String path, String body, int status) throws Exception {
        int before = log.lines(AUDIT).size();
        HttpResponse<String> r = api.call(method, path, body);
        assertEquals(status, r.statusCode(), r.body());
        List<String> lines = linesAbout(method + " " + path, before, 1);
        assertEquals(1, lines.size(), method + " " + path + " is logged once: " + lines);
        String line = lines.get(0);
        assertTrue(line.contains(" INFO "), line);
        assertTrue(line.contains("127.0.0.1:"), "the client's address: " + line);
        assertTrue(line.contains(fingerprint()), "who: " + line);
        return line;
    }

    @Test
    void everyChangeIsLoggedOnceWithWhoFromWhereAndWhat() throws Exception {
        String sub = "/api/v1/subsystems/" + NQN;
        String host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001";
        assertTrue(change("POST", "/api/v1/subsystems", "{\"nqn\":\"" + NQN + "\",\"namespaces\":[{\"size\":\"1MiB\"}]}",
                201).contains("create subsystem " + NQN + " with 1 namespace"));
        assertTrue(change("POST", sub + "/namespaces", "{\"nsid\":2,\"size\":\"1MiB\"}", 201)
                .contains("add namespace 2 of " + NQN + " (ram, 1048576 bytes)"));
        assertTrue(change("PATCH", sub, "{\"allowAnyHost\":false}", 200).contains("allow only the listed hosts on " + NQN));
        assertTrue(change("POST", sub + "/hosts", "{\"nqn\":\"" + host + "\"}", 201)
                .contains("allow host " + host + " on " + NQN));
        assertTrue(change("DELETE", sub + "/hosts/" + host, null, 204).contains("stop allowing host " + host + " on " + NQN));
        assertTrue(change("DELETE", sub + "/namespaces/2", null, 204).contains("remove namespace 2 from " + NQN));
        String added = change("POST", "/api/v1/listeners", "{\"address\":\"127.0.0.1\",\"port\":0}", 201);
        assertTrue(added.contains("add listener 2 (tcp://127.0.0.1:"), added);
        assertTrue(change("DELETE", "/api/v1/listeners/2", null, 204).contains("remove listener 2"));
        assertTrue(change("POST", "/api/v1/referrals", "{\"address\":\"10.0.0.9\",\"port\":4420}", 201)
                .contains("add referral 1 (tcp://10.0.0.9:4420)"));
        assertTrue(change("DELETE", "/api/v1/referrals/1", null, 204).contains("remove referral 1"));
        assertTrue(change("DELETE", sub, null, 204).contains("delete subsystem " + NQN));
        String refused = change("DELETE", sub, null, 404);
        assertTrue(refused.contains("refused (404)") && refused.contains("does not exist"), refused);

        api.call("GET", "/api/v1/config", null);
        api.call("GET", "/api/v1/subsystems", null);
        Thread.sleep(200);
        assertTrue(log.lines(AUDIT).stream().noneMatch(l -> l.contains(" GET ")), "reads change nothing: not logged");
        assertTrue(log.lines().stream().noneMatch(l -> l.contains(token)), "the token is never logged");
    }

    /** A replace import that removes 3 subsystems and 2 listeners: one line for each, all naming the same request. */
    @Test
    void anImportLogsEachSubsystemAndListenerItAddsOrRemoves() throws Exception {
        String keep = api.call("GET", "/api/v1/config", null).body();
        for (int i = 1; i <= 3; i++) {
            assertEquals(201, api.call("POST", "/api/v1/subsystems", "{\"nqn\":\"" + NQN + i + "\"}").statusCode());
        }
        for (int i = 0; i < 2; i++) {
            assertEquals(201, api.call("POST", "/api/v1/listeners", "{\"address\":\"127.0.0.1\",\"port\":0}").statusCode());
        }
        String path = "/api/v1/config/import?mode=replace";
        int before = log.lines(AUDIT).size();
        HttpResponse<String> r = api.call("POST", path, keep);
        assertEquals(200, r.statusCode(), r.body());
        List<String> lines = linesAbout("POST " + path, before, 5);
        assertEquals(5, lines.size(), lines.toString());
        for (int i = 1; i <= 3; i++) {
            String nqn = NQN + i;
            assertEquals(1, lines.stream().filter(l -> l.contains("delete subsystem " + nqn + " ")).count(), nqn);
        }
        for (int id = 2; id <= 3; id++) {
            String what = "remove listener " + id + " ";
            assertEquals(1, lines.stream().filter(l -> l.contains(what)).count(), what + lines);
        }
        for (String line : lines) {
            assertTrue(line.contains("127.0.0.1:") && line.contains(fingerprint()), line);
        }

        HttpResponse<String> dry = api.call("POST", path + "&dryRun=true", keep);
        assertEquals(200, dry.statusCode(), dry.body());
        List<String> dryLines = linesAbout("POST " + path + "&dryRun=true", before, 1);
        assertEquals(1, dryLines.size(), dryLines.toString());
        assertTrue(dryLines.get(0).contains("dry run"), dryLines.get(0));
    }

    /**
     * A request without the right token: a WARN line with the client's address, never the token sent; a client that
     * keeps trying is logged once a minute, with how many it sent since, so the log cannot be flooded.
     */
    @Test
    void requestsWithoutTheRightTokenAreLoggedWithTheClientsAddressAtMostOnceAMinute() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        String guess = "guessed-token-guessed-token";
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin.port()
                    + "/api/v1/subsystems")).header("Authorization", "Bearer " + guess)
                    .POST(HttpRequest.BodyPublishers.ofString("{}")).header("Content-Type", "application/json").build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(401, r.statusCode());
        }
        HttpResponse<String> none = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin.port()
                + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(401, none.statusCode());
        Thread.sleep(200);
        List<String> lines = log.lines(AUDIT);
        assertEquals(1, lines.size(), "one line for the burst from one address: " + lines);
        String line = lines.get(0);
        assertTrue(line.contains(" WARN ") && line.contains("127.0.0.1") && line.contains("401")
                && line.contains("POST /api/v1/subsystems") && line.contains("wrong token"), line);
        assertFalse(log.lines().stream().anyMatch(l -> l.contains(guess)), "the token sent is never logged");
        assertTrue(log.lines().stream().noneMatch(l -> l.contains(token)), "nor the right one");
    }
}

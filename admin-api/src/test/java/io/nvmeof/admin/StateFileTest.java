package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every accepted change is saved atomically; a restart from the state restores the same target. */
class StateFileTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:state";

    @TempDir
    Path dir;

    /**
     * The hosts' DH-HMAC-CHAP secrets live in the state file, readable by its owner only, so that a restart keeps
     * requiring them; the export (what GET shows) never carries them.
     */
    @Test
    void theHostsSecretsAreKeptOwnerOnlyAndNeverExported() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        String host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000009";
        String secret = io.nvmeof.protocol.auth.DhchapSecret.of(new byte[32], null).representation();
        TargetConfig start = TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null)
                .withHosts(List.of(new TargetConfig.HostConfig(host, secret, null, null, null)));
        try (NvmeTarget t = NvmeTarget.start(start)) {
            t.live().saveChangesWith(state::save);
            t.live().createSubsystem(new SubsystemConfig(NQN, null, null, 16, false, List.of(host), null));
            assertTrue(Files.readString(state.path()).contains(secret), "the state file keeps the secret");
            assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"),
                    Files.getPosixFilePermissions(state.path()), "the state file is the owner's only");
            assertFalse(t.live().export().toJson().contains("DHHC-1"), "the export carries no secret");
        }
        TargetConfig restored = state.load();
        try (NvmeTarget t = NvmeTarget.start(restored)) {
            assertTrue(t.core().hostAuth().lookup(host) != null, "after a restart the host must still authenticate");
        }
    }

    @Test
    void aRestartFromTheStateRestoresEverything() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        TargetConfig saved;
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null))) {
            t.live().saveChangesWith(state::save);
            t.live().createSubsystem(new SubsystemConfig(NQN, "SERIAL-1", null, 16, false,
                    List.of("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"), null));
            String first = Files.readString(state.path());
            t.live().addNamespace(NQN, new NamespaceConfig(3L, "file", "1MiB", 4096, dir.resolve("ns3.img").toString(), null));
            assertEquals(first, Files.readString(state.previous()), "the replaced document is kept");
            assertFalse(Files.exists(dir.resolve("state/config.json.tmp")), "no temporary file left");
            saved = t.live().export();
        }
        assertEquals(saved, state.load(), "the state file is the live configuration");
        try (NvmeTarget again = NvmeTarget.start(state.load())) {
            assertEquals(saved.subsystems(), again.live().export().subsystems(), "same NQNs, serials, NSIDs, UUIDs, hosts");
            assertEquals("SERIAL-1", again.core().subsystem(NQN).serial());
            assertEquals(4096, again.core().subsystem(NQN).namespace(3).blockSize());
        }
    }

    @Test
    void aCorruptStateFileIsRefusedNamingTheLastGoodCopy() throws Exception {
        StateFile state = new StateFile(dir);
        state.save(TargetConfig.defaults("127.0.0.1", 4420, "1MiB", 512, null));
        state.save(TargetConfig.defaults("127.0.0.1", 4421, "1MiB", 512, null));
        String whole = Files.readString(state.path());
        Files.writeString(state.path(), whole.substring(0, whole.length() / 2)); // truncated, as by a failing disk
        IOException e = assertThrows(IOException.class, state::load);
        assertTrue(e.getMessage().contains(state.path().toString()), e.getMessage());
        assertTrue(e.getMessage().contains(state.previous().toString()), e.getMessage());
        assertEquals(4420, TargetConfig.load(state.previous()).listeners().get(0).port(), "the last good copy is intact");
        assertEquals(whole.length() / 2, Files.readString(state.path()).length(), "the corrupt file is left for inspection");
    }

    /**
     * {@code config.json.prev} is replaced atomically: it is the replaced document itself (the same file, by another
     * name, renamed into place), never a copy being written that a crash could leave half done.
     */
    @Test
    void thePreviousCopyIsTheReplacedFileRenamedIntoPlace() throws Exception {
        StateFile state = new StateFile(dir);
        state.save(TargetConfig.defaults("127.0.0.1", 4420, "1MiB", 512, null));
        state.save(TargetConfig.defaults("127.0.0.1", 4421, "1MiB", 512, null));
        Object replaced = Files.getAttribute(state.path(), "unix:ino");
        String replacedText = Files.readString(state.path());
        state.save(TargetConfig.defaults("127.0.0.1", 4422, "1MiB", 512, null));
        assertEquals(replaced, Files.getAttribute(state.previous(), "unix:ino"), "the replaced file, not a copy of it");
        assertEquals(replacedText, Files.readString(state.previous()));
        assertEquals(4422, state.load().listeners().get(0).port());
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(StateFile.NAME, StateFile.NAME + ".prev"),
                    files.map(p -> p.getFileName().toString()).sorted().toList(), "no temporary file left");
        }
    }

    /** 8 clients change the configuration at once over HTTP; afterwards the state file is the live configuration. */
    @Test
    void concurrentClientsLeaveAStateFileEqualToTheLiveConfiguration() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        String token = AdminToken.loadOrCreate(dir.resolve("token"));
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null));
             AdminServer admin = AdminServer.start(t.live(), new AdminOptions("127.0.0.1", 0, token, List.of()))) {
            t.live().saveChangesWith(state::save);
            ApiClient api = new ApiClient(admin, token);
            java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger();
            List<Thread> clients = new java.util.ArrayList<>();
            for (int c = 0; c < 8; c++) {
                String nqn = "nqn.2026-12.io.nvmeof:client" + c;
                Thread th = new Thread(() -> {
                    try {
                        send(api, "POST", "/api/v1/subsystems", "{\"nqn\":\"" + nqn + "\"}", 201, failures);
                        for (int n = 1; n <= 3; n++) {
                            send(api, "POST", "/api/v1/subsystems/" + nqn + "/namespaces",
                                    "{\"size\":\"1MiB\"}", 201, failures);
                        }
                        send(api, "POST", "/api/v1/subsystems/" + nqn + "/hosts",
                                "{\"nqn\":\"nqn.2026-12.io.nvmeof:host-" + nqn.substring(nqn.length() - 1) + "\"}", 201, failures);
                        send(api, "DELETE", "/api/v1/subsystems/" + nqn + "/namespaces/2", null, 204, failures);
                    } catch (Exception e) {
                        failures.incrementAndGet();
                    }
                });
                clients.add(th);
                th.start();
            }
            for (Thread th : clients) {
                th.join();
            }
            assertEquals(0, failures.get());
            TargetConfig live = t.live().export();
            assertEquals(9, live.subsystems().size());
            assertEquals(live, state.load(), "the state file equals the live configuration");
            for (SubsystemConfig s : live.subsystems().subList(1, 9)) {
                assertEquals(List.of(1L, 3L), s.namespaces().stream().map(NamespaceConfig::nsid).toList(), s.nqn());
            }
        }
    }

    /**
     * A change whose state cannot be saved is refused (5xx problem+json) and is not made live: the configuration is as
     * before, hosts cannot reach what it would have added, and once the disk recovers the same request succeeds (not
     * 409) and the state file is the live configuration. The state directory is replaced by a plain file, which no
     * process can write under, root included.
     */
    @Test
    void aChangeThatCannotBeSavedIsNotMadeLive() throws Exception {
        Path stateDir = dir.resolve("state");
        Path aside = dir.resolve("state-aside");
        StateFile state = new StateFile(stateDir);
        String token = AdminToken.loadOrCreate(dir.resolve("token"));
        String host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000009";
        String created = "nqn.2026-12.io.nvmeof:unsaved";
        String imported = "nqn.2026-12.io.nvmeof:unsaved-import";
        int importPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            importPort = s.getLocalPort();
        }
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null));
             AdminServer admin = AdminServer.start(t.live(), new AdminOptions("127.0.0.1", 0, token, List.of()))) {
            t.live().saveChangesWith(state::save);
            ApiClient api = new ApiClient(admin, token);
            assertEquals(201, api.call("POST", "/api/v1/subsystems", "{\"nqn\":\"" + NQN + "\",\"namespaces\":"
                    + "[{\"size\":\"1MiB\"}]}").statusCode());
            String sub = "/api/v1/subsystems/" + NQN;
            String[][] changes = {
                {"POST", "/api/v1/subsystems", "{\"nqn\":\"" + created + "\",\"namespaces\":[{\"size\":\"1MiB\"}]}", "201"},
                {"POST", sub + "/namespaces", "{\"nsid\":2,\"size\":\"1MiB\"}", "201"},
                {"DELETE", sub + "/namespaces/2", null, "204"},
                {"PATCH", sub, "{\"allowAnyHost\":false}", "200"},
                {"POST", sub + "/hosts", "{\"nqn\":\"" + host + "\"}", "201"},
                {"DELETE", sub + "/hosts/" + host, null, "204"},
                {"POST", "/api/v1/listeners", "{\"address\":\"127.0.0.1\",\"port\":0}", "201"},
                {"DELETE", "/api/v1/listeners/2", null, "204"},
                {"POST", "/api/v1/config/import?mode=merge", "{\"listeners\":[{\"address\":\"127.0.0.1\",\"port\":"
                        + importPort + "}],\"subsystems\":[{\"nqn\":\"" + imported + "\",\"namespaces\":"
                        + "[{\"size\":\"1MiB\"}]}]}", "200"},
                {"DELETE", "/api/v1/subsystems/" + created, null, "204"},
            };
            for (String[] c : changes) {
                String what = c[0] + " " + c[1];
                String before = api.call("GET", "/api/v1/config", null).body();
                Files.move(stateDir, aside);
                Files.writeString(stateDir, "a file where the state directory was");
                java.net.http.HttpResponse<String> failed = api.call(c[0], c[1], c[2]);
                assertTrue(failed.statusCode() >= 500, what + ": " + failed.statusCode() + " " + failed.body());
                assertEquals("application/problem+json", failed.headers().firstValue("Content-Type").orElse(""), what);
                String detail = new com.fasterxml.jackson.databind.ObjectMapper().readTree(failed.body()).get("detail").asText();
                assertTrue(detail.contains("nothing was changed") && detail.contains(state.path().toString()),
                        what + ": " + detail);
                assertFalse(detail.contains("java.") || detail.contains("Exception"), what + ": " + detail);
                assertEquals(before, api.call("GET", "/api/v1/config", null).body(), what + " left the configuration as it was");
                if (c[1].equals("/api/v1/subsystems")) {
                    assertThrows(Exception.class, () -> io.nvmeof.initiator.NvmeofController.connect(
                            io.nvmeof.initiator.TransportId.tcp("127.0.0.1", t.tcpPort(0), created),
                            io.nvmeof.initiator.ConnectOptions.defaults()).close(), "a host cannot reach the unsaved subsystem");
                }
                if (c[1].startsWith("/api/v1/config/import")) {
                    assertThrows(java.io.IOException.class, () -> new java.net.Socket("127.0.0.1", importPort).close(),
                            "the unsaved import's listener is not bound");
                }
                Files.delete(stateDir);
                Files.move(aside, stateDir);
                java.net.http.HttpResponse<String> again = api.call(c[0], c[1], c[2]);
                assertEquals(Integer.parseInt(c[3]), again.statusCode(), what + " once the disk recovered: " + again.body());
                assertEquals(t.live().export(), state.load(), what + ": the state file is the live configuration");
            }
            try (io.nvmeof.initiator.NvmeofController c = io.nvmeof.initiator.NvmeofController.connect(
                    io.nvmeof.initiator.TransportId.tcp("127.0.0.1", importPort, imported),
                    io.nvmeof.initiator.ConnectOptions.defaults())) {
                assertEquals(2048, c.namespace(1).blockCount(), "the import saved on the second try is live");
            }
        }
    }

    private static void send(ApiClient api, String method, String path, String body, int expect,
                             java.util.concurrent.atomic.AtomicInteger failures) throws Exception {
        java.net.http.HttpResponse<String> r = api.call(method, path, body);
        if (r.statusCode() != expect) {
            failures.incrementAndGet();
            System.err.println(method + " " + path + ": " + r.statusCode() + " " + r.body());
        }
    }
}

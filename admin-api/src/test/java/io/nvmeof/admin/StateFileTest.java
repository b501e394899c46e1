package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.target.NvmeTarget;
import io.nvmeof.target.config.TargetConfig;
import io.nvmeof.target.config.TargetConfig.NamespaceConfig;
import io.nvmeof.target.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
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

    @Test
    void aRestartFromTheStateRestoresEverything() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        TargetConfig saved;
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null))) {
            t.live().onChange(doc -> {
                try {
                    state.save(doc);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
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

    /** 8 clients change the configuration at once over HTTP; afterwards the state file is the live configuration. */
    @Test
    void concurrentClientsLeaveAStateFileEqualToTheLiveConfiguration() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        String token = AdminToken.loadOrCreate(dir.resolve("token"));
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null));
             AdminServer admin = AdminServer.start(t.live(), new AdminOptions("127.0.0.1", 0, token, List.of()))) {
            t.live().onChange(doc -> {
                try {
                    state.save(doc);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger();
            List<Thread> clients = new java.util.ArrayList<>();
            for (int c = 0; c < 8; c++) {
                String nqn = "nqn.2026-12.io.nvmeof:client" + c;
                Thread th = new Thread(() -> {
                    try {
                        send(http, admin, token, "POST", "/api/v1/subsystems", "{\"nqn\":\"" + nqn + "\"}", 201, failures);
                        for (int n = 1; n <= 3; n++) {
                            send(http, admin, token, "POST", "/api/v1/subsystems/" + nqn + "/namespaces",
                                    "{\"size\":\"1MiB\"}", 201, failures);
                        }
                        send(http, admin, token, "POST", "/api/v1/subsystems/" + nqn + "/hosts",
                                "{\"nqn\":\"nqn.2026-12.io.nvmeof:host-" + nqn.substring(nqn.length() - 1) + "\"}", 201, failures);
                        send(http, admin, token, "DELETE", "/api/v1/subsystems/" + nqn + "/namespaces/2", null, 204, failures);
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

    private static void send(java.net.http.HttpClient http, AdminServer admin, String token, String method, String path,
                             String body, int expect, java.util.concurrent.atomic.AtomicInteger failures) throws Exception {
        java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + admin.port() + path))
                .header("Authorization", "Bearer " + token)
                .method(method, body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
                        : java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        java.net.http.HttpResponse<String> r = http.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != expect) {
            failures.incrementAndGet();
            System.err.println(method + " " + path + ": " + r.statusCode() + " " + r.body());
        }
    }
}

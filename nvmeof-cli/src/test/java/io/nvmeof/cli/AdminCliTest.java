package io.nvmeof.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.admin.AdminOptions;
import io.nvmeof.admin.AdminServer;
import io.nvmeof.admin.AdminToken;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code nvmeof admin} against a running target's admin API: tables, --json, and errors a person can act on. */
class AdminCliTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:cli";

    @TempDir
    Path dir;

    /**
     * Host secrets from the command line (before: REST only): read from a file or standard input, never an argument,
     * and listed as set, never shown.
     */
    @Test
    void hostKeysAreSetFromFilesAndListedWithoutTheSecret() throws Exception {
        String key = "DHHC-1:00:bnZtZXQtaG9zdC0xLWtleS1ub3QtdG8tYmUtc2hvd27KT0Z8:";
        String host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000007";
        Path state = dir.resolve("state");
        String token = AdminToken.loadOrCreate(state.resolve("admin-token"));
        Path keyFile = dir.resolve("host.key");
        Files.writeString(keyFile, key + "\n");
        try (NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null));
             AdminServer admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0, token, List.of()))) {
            String[] a = {"admin", "--url", "http://127.0.0.1:" + admin.port(), "--state-dir", state.toString()};
            String out = CliTest.run(0, concat(a, "host-keys-set", host, "--dhchap-key-file", keyFile.toString(),
                    "--dhchap-hash", "sha384"))[0];
            assertTrue(out.contains("host " + host + ": DH-HMAC-CHAP secret set"), out);
            String table = CliTest.run(0, concat(a, "host-keys"))[0];
            assertTrue(table.contains(host) && table.contains("set") && table.contains("sha384"), table);
            assertTrue(!table.contains("bnZtZXQ"), "no secret listed: " + table);
            String[] err = CliTest.run(1, concat(a, "host-keys-set", host, "--dhchap-key-file", dir.resolve("none").toString()));
            assertTrue(err[1].contains("--dhchap-key-file " + dir.resolve("none") + " is not a file"), err[1]);
            err = CliTest.run(1, concat(a, "host-keys-set", host));
            assertTrue(err[1].contains("give --dhchap-key-file and/or --tls-key-file"), err[1]);
            Files.writeString(keyFile, "DHHC-1:00:bm90LWEta2V5:\n");
            err = CliTest.run(1, concat(a, "host-keys-set", host, "--dhchap-key-file", keyFile.toString()));
            assertTrue(err[1].contains("HTTP 400") && !err[1].contains("bm90LWEta2V5"), err[1]);
            assertTrue(CliTest.run(0, concat(a, "--json", "host-keys"))[0].contains("\"dhchapHash\" : \"sha384\""),
                    "the refused rotation changed nothing");
            CliTest.run(0, concat(a, "host-keys-remove", host));
            assertTrue(!CliTest.run(0, concat(a, "host-keys"))[0].contains(host));
        }
    }

    @Test
    void provisionsThroughTheApiAsRpcPyDoes() throws Exception {
        Path state = dir.resolve("state");
        String token = AdminToken.loadOrCreate(state.resolve("admin-token"));
        Files.createDirectories(dir.resolve("img"));
        try (NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null));
             AdminServer admin = AdminServer.start(target.live(),
                     new AdminOptions("127.0.0.1", 0, token, List.of(dir.resolve("img"))))) {
            String url = "http://127.0.0.1:" + admin.port();
            String[] a = {"admin", "--url", url, "--state-dir", state.toString()};
            String out = CliTest.run(0, concat(a, "subsystem-add", NQN, "--serial", "SN-CLI-1"))[0];
            assertTrue(out.contains("created " + NQN + " (serial SN-CLI-1)"), out);
            out = CliTest.run(0, concat(a, "ns-add", NQN, "--size", "2MiB", "--block-size", "4096",
                    "--file", dir.resolve("img/a.img").toString()))[0];
            assertTrue(out.contains("added namespace 1 to " + NQN), out);
            CliTest.run(0, concat(a, "host-add", NQN, "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"));

            String table = CliTest.run(0, concat(a, "subsystems"))[0];
            assertTrue(table.startsWith("NQN"), table);
            assertTrue(table.contains(NQN) && table.contains("SN-CLI-1") && table.contains("1: 2 MiB, 4096 B, file"), table);
            JsonNode list = new ObjectMapper().readTree(CliTest.run(0, concat(a, "--json", "subsystems"))[0]);
            assertEquals(2, list.size());
            assertEquals(1, list.get(1).path("hosts").size());

            String[] err = CliTest.run(1, concat(a, "ns-add", NQN, "--size", "1MiB", "--nsid", "1"));
            assertTrue(err[1].contains("HTTP 409 Conflict: namespace 1 already exists"), err[1]);
            err = CliTest.run(1, concat(a, "ns-add", NQN, "--size", "1MiB", "--file", dir.resolve("outside.img").toString()));
            assertTrue(err[1].contains("outside the allowed directories"), err[1]);
            err = CliTest.run(1, "admin", "--url", url, "--token-file", dir.resolve("missing").toString(), "subsystems");
            assertTrue(err[1].contains("no admin token at"), err[1]);
            err = CliTest.run(1, "admin", "--url", "http://127.0.0.1:1", "--state-dir", state.toString(), "subsystems");
            assertTrue(err[1].contains("no admin API at"), err[1]);

            out = CliTest.run(0, concat(a, "listener-add", "--address", "127.0.0.1", "--port", "0"))[0];
            assertTrue(out.startsWith("listener 2: tcp 127.0.0.1:"), out);
            assertTrue(CliTest.run(0, concat(a, "listeners"))[0].contains("2   tcp"), "listed");
            CliTest.run(0, concat(a, "listener-remove", "2"));

            out = CliTest.run(0, concat(a, "referral-add", "--address", "127.0.0.2", "--port", "4421"))[0];
            assertTrue(out.startsWith("referral 1: tcp 127.0.0.2:4421"), out);
            out = CliTest.run(0, concat(a, "referral-add", "--address", "127.0.0.3", "--subsystem",
                    "nqn.2026-12.io.example:remote", "--tls", "required"))[0];
            assertTrue(out.startsWith("referral 2: tcp 127.0.0.3:8009 (nqn.2026-12.io.example:remote)"), out);
            String referrals = CliTest.run(0, concat(a, "referrals"))[0];
            assertTrue(referrals.startsWith("ID") && referrals.contains("127.0.0.2") && referrals.contains("discovery")
                    && referrals.contains("required"), referrals);
            err = CliTest.run(1, concat(a, "referral-add", "--address", "127.0.0.2", "--port", "4421"));
            assertTrue(err[1].contains("HTTP 409 Conflict: referral 1 already refers to"), err[1]);
            CliTest.run(0, concat(a, "referral-remove", "1"));
            err = CliTest.run(1, concat(a, "referral-remove", "1"));
            assertTrue(err[1].contains("HTTP 404"), err[1]);
            assertEquals(1, target.live().referrals().size());

            String stats = CliTest.run(0, concat(a, "stats"))[0];
            assertTrue(stats.startsWith("SUBSYSTEM") && stats.contains(NQN), stats);

            out = CliTest.run(0, concat(a, "ns-resize", NQN, "1", "4MiB"))[0];
            assertTrue(out.contains("namespace 1 of " + NQN + " is now 4194304 bytes"), out);
            assertEquals(4L << 20, Files.size(dir.resolve("img/a.img")));

            JsonNode exported = new ObjectMapper().readTree(CliTest.run(0, concat(a, "export"))[0]);
            assertEquals(NQN, exported.path("subsystems").get(1).path("nqn").asText());
            // Out to SPDK's format and back in: the same target, nothing to change.
            Path spdk = dir.resolve("spdk.json");
            String[] spdkOut = CliTest.run(0, concat(a, "export", "--format", "spdk", "-o", spdk.toString()));
            assertTrue(Files.readString(spdk).contains("bdev_malloc_create"), "the RAM namespace as a malloc bdev");
            out = CliTest.run(0, concat(a, "import", spdk.toString(), "--mode", "merge", "--dry-run"))[0];
            assertTrue(out.startsWith("would change (spdk, merge): nothing"), out + spdkOut[1]);
            Path nvmet = dir.resolve("nvmet.json");
            String[] nvmetOut = CliTest.run(0, concat(a, "export", "--format", "nvmetcli", "-o", nvmet.toString()));
            assertTrue(nvmetOut[1].contains("not exported: ") && nvmetOut[1].contains("ram"), nvmetOut[1]);
            // A port that requires TLS: refused, saying how to accept dropping it; accepted, each dropped setting said.
            Path secured = dir.resolve("secured.json");
            Files.writeString(secured, "{\"ports\":[{\"portid\":7,\"addr\":{\"adrfam\":\"ipv4\",\"traddr\":"
                    + "\"127.0.0.1\",\"trsvcid\":\"4420\",\"trtype\":\"tcp\",\"treq\":\"required\"},\"subsystems\":[]}],"
                    + "\"hosts\":[],\"subsystems\":[]}");
            err = CliTest.run(1, concat(a, "import", secured.toString(), "--mode", "merge", "--dry-run"));
            assertTrue(err[1].contains("ports[0].addr.treq=required") && err[1].contains("--drop-security"), err[1]);
            out = CliTest.run(0, concat(a, "import", secured.toString(), "--mode", "merge", "--dry-run",
                    "--drop-security"))[0];
            assertTrue(out.contains("would drop security setting ports[0].addr.treq=required")
                    && !out.contains("not mapped: ports[0].addr.treq"), out);
            err = CliTest.run(1, concat(a, "import", dir.resolve("none.json").toString(), "--mode", "merge"));
            assertTrue(err[1].contains("does not exist"), err[1]);
            err = CliTest.run(1, concat(a, "ns-resize", NQN, "1", "1MiB"));
            assertTrue(err[1].contains("HTTP 409 Conflict") && err[1].contains("never shrink"), err[1]);
            CliTest.run(0, concat(a, "ns-remove", NQN, "1"));
            CliTest.run(0, concat(a, "subsystem-remove", NQN));
            assertEquals(1, target.live().subsystems().size());
            assertTrue(CliTest.run(0, concat(a, "controllers"))[0].startsWith("SUBSYSTEM"));
        }
    }

    private static String[] concat(String[] a, String... b) {
        String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}

package io.nvmeof.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code nvmeof admin host-keys | host-keys-set | host-keys-remove}: a host's DH-HMAC-CHAP secrets and TLS PSK (nvmet's
 * {@code hosts/NQN/dhchap_*}, SPDK's {@code nvmf_subsystem_set_keys} and {@code --psk}), over {@code /api/v1/hosts}.
 * A secret is read from a file or from standard input ({@code -}), never from the command line, where {@code ps} and
 * the shell's history would keep it; the answers say which secrets are set, never what they are.
 */
final class AdminHostKeyCommands {
    private static final ObjectMapper JSON = new ObjectMapper();

    private AdminHostKeyCommands() {
    }

    @Command(name = "host-keys", description = "List the hosts with DH-HMAC-CHAP secrets or a TLS key (which are set,"
            + " never the secrets)")
    static final class HostKeys extends AdminCommand.Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/hosts", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"HOST NQN", "DH-HMAC-CHAP", "CONTROLLER KEY", "HASH", "DH GROUP", "TLS KEY"});
            for (JsonNode h : list) {
                rows.add(new String[] {h.path("nqn").asText(), h.path("dhchapKeySet").asBoolean() ? "set" : "-",
                        h.path("dhchapCtrlKeySet").asBoolean() ? "set" : "-", h.path("dhchapHash").asText("-"),
                        h.path("dhchapDhGroup").asText("-"), h.path("tlsKeySet").asBoolean()
                        ? "set" + (h.hasNonNull("tlsKeyDerivation") ? " (" + h.path("tlsKeyDerivation").asText() + ")" : "")
                        : "-"});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "host-keys-set", description = "Set or rotate a host's DH-HMAC-CHAP secret (nvme gen-dhchap-key"
            + " makes one) and/or TLS key (nvme gen-tls-key); each from a FILE, or - for standard input")
    static final class HostKeysSet extends AdminCommand.Sub {
        @Parameters(index = "0", paramLabel = "HOSTNQN") String host;
        @Option(names = "--dhchap-key-file", paramLabel = "FILE", description = "The host's DHHC-1 secret") String key;
        @Option(names = "--dhchap-ctrl-key-file", paramLabel = "FILE",
                description = "The controller's DHHC-1 secret, for bidirectional authentication") String ctrlKey;
        @Option(names = "--dhchap-hash", description = "sha256, sha384 or sha512 (default sha256)") String hash;
        @Option(names = "--dhchap-dhgroup", description = "null, ffdhe2048 ... ffdhe8192 (default null)") String group;
        @Option(names = "--tls-key-file", paramLabel = "FILE", description = "The host's NVMeTLSkey-1 PSK") String tlsKey;
        @Option(names = "--tls-key-derivation", description = "How the TLS PSK is derived (see docs/admin-api.md)")
        String derivation;

        @Override
        public Integer call() throws Exception {
            if (key == null && tlsKey == null) {
                throw new IllegalArgumentException("give --dhchap-key-file and/or --tls-key-file (FILE, or - for standard"
                        + " input)");
            }
            if ("-".equals(key) && "-".equals(tlsKey) || "-".equals(ctrlKey) && ("-".equals(key) || "-".equals(tlsKey))) {
                throw new IllegalArgumentException("standard input holds one secret: give the others as files");
            }
            ObjectNode b = JSON.createObjectNode();
            if (key != null) {
                b.put("dhchapKey", secret(key, "--dhchap-key-file"));
            }
            if (ctrlKey != null) {
                b.put("dhchapCtrlKey", secret(ctrlKey, "--dhchap-ctrl-key-file"));
            }
            if (hash != null) {
                b.put("dhchapHash", hash);
            }
            if (group != null) {
                b.put("dhchapDhGroup", group);
            }
            if (tlsKey != null) {
                b.put("tlsKey", secret(tlsKey, "--tls-key-file"));
            }
            if (derivation != null) {
                b.put("tlsKeyDerivation", derivation);
            }
            JsonNode set = admin.call("PUT", "/api/v1/hosts/" + AdminCommand.enc(host), b);
            admin.done("host " + host + ": " + (set.path("dhchapKeySet").asBoolean() ? "DH-HMAC-CHAP secret set"
                    + (set.path("dhchapCtrlKeySet").asBoolean() ? " with a controller key" : "") : "no DH-HMAC-CHAP secret")
                    + (set.path("tlsKeySet").asBoolean() ? ", TLS key set" : ""));
            return 0;
        }

        /** The first line of {@code from} (a file, or - for standard input), trimmed. */
        private static String secret(String from, String option) throws Exception {
            String line;
            if ("-".equals(from)) {
                line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
            } else {
                Path p = Path.of(from);
                if (!Files.isRegularFile(p)) {
                    throw new IllegalArgumentException(option + " " + from + " is not a file");
                }
                List<String> lines = Files.readAllLines(p, StandardCharsets.US_ASCII);
                line = lines.isEmpty() ? null : lines.get(0);
            }
            if (line == null || line.isBlank()) {
                throw new IllegalArgumentException(option + " " + from + " holds no secret");
            }
            return line.strip();
        }
    }

    @Command(name = "host-keys-remove", description = "Remove a host's DH-HMAC-CHAP secrets and TLS key: its next"
            + " Connect needs none")
    static final class HostKeysRemove extends AdminCommand.Sub {
        @Parameters(index = "0", paramLabel = "HOSTNQN") String host;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/hosts/" + AdminCommand.enc(host), "removed the keys of " + host);
        }
    }
}

package io.nvmeof.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.AdminToken;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code nvmeof admin}: the admin REST API from the command line, as SPDK's {@code rpc.py} calls its JSON-RPC. Tables
 * for people, {@code --json} for scripts; the token is found where the target wrote it.
 */
@Command(name = "admin", mixinStandardHelpOptions = true,
        description = "Provision a running target through its admin API (subsystems, namespaces, hosts, controllers).",
        subcommands = {AdminCommand.Subsystems.class, AdminCommand.SubsystemAdd.class, AdminCommand.SubsystemRemove.class,
                AdminCommand.NamespaceAdd.class, AdminCommand.NamespaceRemove.class, AdminCommand.HostAdd.class,
                AdminCommand.HostRemove.class, AdminCommand.Listeners.class, AdminCommand.ListenerAdd.class,
                AdminCommand.ListenerRemove.class, AdminCommand.Stats.class, AdminCommand.Controllers.class, AdminCommand.Disconnect.class,
                AdminCommand.Export.class})
final class AdminCommand {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--url", defaultValue = "http://127.0.0.1:8080", description = "The admin API. Default: ${DEFAULT-VALUE}")
    String url;

    @Option(names = "--token-file", description = "The bearer token's file (default: the target's, STATE_DIR/admin-token)")
    Path tokenFile;

    @Option(names = "--state-dir", description = "The target's state directory, to find its token (default as the target's)")
    Path stateDir;

    @Option(names = "--cacert", paramLabel = "PEM", description = "Trust this PEM certificate (the target's own, or"
            + " its CA's) for an https --url, as curl --cacert does (default: the JVM's trusted CAs)")
    Path caCert;

    @Option(names = "--json", description = "Print the API's JSON instead of a table")
    boolean json;

    @Spec
    CommandSpec spec;

    /** Calls the API; returns the parsed body (null for 204), or throws with the problem's detail. */
    JsonNode call(String method, String path, JsonNode body) throws Exception {
        Path tf = tokenFile != null ? tokenFile : TargetCommand.stateDirectory(stateDir).resolve("admin-token");
        if (!Files.exists(tf)) {
            throw new IllegalArgumentException("no admin token at " + tf + "; pass --token-file (the target prints"
                    + " its path at start) or --state-dir");
        }
        String token = AdminToken.read(tf);
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + token)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        HttpResponse<String> r;
        try {
            HttpClient.Builder client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
            if (caCert != null) {
                client.sslContext(trusting(caCert));
            }
            r = client.build().send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException e) {
            throw new IllegalArgumentException("no admin API at " + url + "; is the target running (without"
                    + " --no-admin)? Pass --url if it listens elsewhere");
        } catch (javax.net.ssl.SSLException e) {
            throw new IllegalArgumentException("TLS with " + url + " failed (" + e.getMessage() + "); pass the target's"
                    + " certificate with --cacert PEM, and use the address its certificate names");
        } catch (java.io.IOException e) {
            if (url.startsWith("http://") && "HTTP/1.1 header parser received no bytes".equals(e.getMessage())) {
                throw new IllegalArgumentException("the admin API at " + url + " did not answer plain HTTP; it may"
                        + " serve HTTPS: use --url https://...");
            }
            throw e;
        }
        if (r.statusCode() >= 400) {
            String detail = r.body();
            try {
                JsonNode p = JSON.readTree(r.body());
                detail = p.path("title").asText() + ": " + p.path("detail").asText();
            } catch (Exception ignored) {
                // not problem+json: show it as it came
            }
            throw new IllegalArgumentException("HTTP " + r.statusCode() + " " + detail);
        }
        return r.statusCode() == 204 || r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    /** An SSL context trusting only the certificates in {@code pem}. */
    private static javax.net.ssl.SSLContext trusting(Path pem) throws Exception {
        java.security.KeyStore ks = java.security.KeyStore.getInstance(java.security.KeyStore.getDefaultType());
        ks.load(null, null);
        int i = 0;
        try (java.io.InputStream in = Files.newInputStream(pem)) {
            for (java.security.cert.Certificate c
                    : java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("ca" + i++, c);
            }
        } catch (java.nio.file.NoSuchFileException e) {
            throw new IllegalArgumentException("--cacert " + pem + " does not exist");
        }
        if (i == 0) {
            throw new IllegalArgumentException("--cacert " + pem + " holds no PEM certificate");
        }
        javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
                javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    /** Prints {@code rows} as aligned columns, or the JSON when --json was given. */
    void print(JsonNode node, List<String[]> rows) throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(node == null ? "{}" : JSON.writerWithDefaultPrettyPrinter().writeValueAsString(node));
            out.flush();
            return;
        }
        int[] width = new int[rows.get(0).length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < r.length; i++) {
                line.append(i + 1 < r.length ? String.format("%-" + (width[i] + 2) + "s", r[i]) : r[i]);
            }
            out.println(line.toString().stripTrailing());
        }
        out.flush();
    }

    /** DELETE {@code path}; on success prints {@code what} and returns exit code 0. */
    int delete(String path, String what) throws Exception {
        call("DELETE", path, null);
        done(what);
        return 0;
    }

    void done(String what) {
        spec.commandLine().getOut().println(what);
        spec.commandLine().getOut().flush();
    }

    abstract static class Sub implements java.util.concurrent.Callable<Integer> {
        @ParentCommand
        AdminCommand admin;
    }

    @Command(name = "subsystems", description = "List subsystems with their namespaces and hosts")
    static final class Subsystems extends Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/subsystems", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"NQN", "SERIAL", "ANY HOST", "HOSTS", "NAMESPACES (nsid: size, block size, backend)"});
            for (JsonNode s : list) {
                List<String> ns = new ArrayList<>();
                for (JsonNode n : s.path("namespaces")) {
                    ns.add(n.path("nsid").asText() + ": " + (n.path("size").asLong() >> 20) + " MiB, "
                            + n.path("blockSize").asText() + " B, " + n.path("backend").asText()
                            + (n.has("path") ? " " + n.path("path").asText() : ""));
                }
                rows.add(new String[] {s.path("nqn").asText(), s.path("serial").asText(),
                        s.path("allowAnyHost").asBoolean() ? "yes" : "no", String.valueOf(s.path("hosts").size()),
                        String.join("; ", ns)});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "subsystem-add", description = "Create a subsystem (as rpc.py nvmf_create_subsystem)")
    static final class SubsystemAdd extends Sub {
        @Parameters(index = "0", description = "Subsystem NQN, e.g. nqn.2026-12.com.example:disk1")
        String nqn;
        @Option(names = "--serial") String serial;
        @Option(names = "--model") String model;
        @Option(names = "--max-namespaces") Integer maxNamespaces;
        @Option(names = "--no-any-host", description = "Only hosts added with host-add may connect")
        boolean restricted;

        @Override
        public Integer call() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("nqn", nqn);
            if (serial != null) {
                b.put("serial", serial);
            }
            if (model != null) {
                b.put("model", model);
            }
            if (maxNamespaces != null) {
                b.put("maxNamespaces", maxNamespaces);
            }
            if (restricted) {
                b.put("allowAnyHost", false);
            }
            JsonNode s = admin.call("POST", "/api/v1/subsystems", b);
            if (admin.json) {
                admin.print(s, null);
            } else {
                admin.done("created " + s.path("nqn").asText() + " (serial " + s.path("serial").asText() + ")");
            }
            return 0;
        }
    }

    @Command(name = "subsystem-remove", description = "Delete a subsystem; its hosts are disconnected")
    static final class SubsystemRemove extends Sub {
        @Parameters(index = "0") String nqn;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/subsystems/" + enc(nqn), "deleted " + nqn);
        }
    }

    @Command(name = "ns-add", description = "Add a namespace live (as rpc.py nvmf_subsystem_add_ns)")
    static final class NamespaceAdd extends Sub {
        @Parameters(index = "0") String nqn;
        @Option(names = "--size", required = true, description = "e.g. 64MiB, 1GiB") String size;
        @Option(names = "--block-size", description = "512 or 4096") Integer blockSize;
        @Option(names = "--file", description = "Back it with this file (under a directory the target allows with --allow-dir)") String file;
        @Option(names = "--nsid") Long nsid;
        @Option(names = "--uuid") String uuid;

        @Override
        public Integer call() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("size", size).put("backend", file != null ? "file" : "ram");
            if (file != null) {
                b.put("path", Path.of(file).toAbsolutePath().toString());
            }
            if (blockSize != null) {
                b.put("blockSize", blockSize);
            }
            if (nsid != null) {
                b.put("nsid", nsid);
            }
            if (uuid != null) {
                b.put("uuid", uuid);
            }
            JsonNode n = admin.call("POST", "/api/v1/subsystems/" + enc(nqn) + "/namespaces", b);
            if (admin.json) {
                admin.print(n, null);
            } else {
                admin.done("added namespace " + n.path("nsid").asText() + " to " + nqn + " (uuid " + n.path("uuid").asText() + ")");
            }
            return 0;
        }
    }

    @Command(name = "ns-remove", description = "Remove a namespace live")
    static final class NamespaceRemove extends Sub {
        @Parameters(index = "0") String nqn;
        @Parameters(index = "1") long nsid;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/subsystems/" + enc(nqn) + "/namespaces/" + nsid, "removed namespace " + nsid + " from " + nqn);
        }
    }

    @Command(name = "host-add", description = "Allow a host NQN (as rpc.py nvmf_subsystem_add_host)")
    static final class HostAdd extends Sub {
        @Parameters(index = "0") String nqn;
        @Parameters(index = "1") String host;

        @Override
        public Integer call() throws Exception {
            admin.call("POST", "/api/v1/subsystems/" + enc(nqn) + "/hosts", JSON.createObjectNode().put("nqn", host));
            admin.done("allowed " + host + " on " + nqn);
            return 0;
        }
    }

    @Command(name = "host-remove", description = "Stop allowing a host (its open connections stay)")
    static final class HostRemove extends Sub {
        @Parameters(index = "0") String nqn;
        @Parameters(index = "1") String host;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/subsystems/" + enc(nqn) + "/hosts/" + enc(host), "removed " + host + " from " + nqn);
        }
    }

    @Command(name = "listeners", description = "List where the target listens")
    static final class Listeners extends Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/listeners", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"ID", "TRANSPORT", "ADDRESS", "PORT", "SUBSYSTEMS"});
            for (JsonNode l : list) {
                List<String> subs = new ArrayList<>();
                l.path("subsystems").forEach(n -> subs.add(n.asText()));
                rows.add(new String[] {l.path("id").asText(), l.path("transport").asText(), l.path("address").asText(),
                        l.path("port").asText(), subs.isEmpty() ? "all" : String.join(",", subs)});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "listener-add", description = "Listen on another address or port (as rpc.py nvmf_subsystem_add_listener)")
    static final class ListenerAdd extends Sub {
        @Option(names = "--address", required = true) String address;
        @Option(names = "--port", defaultValue = "4420") int port;
        @Option(names = "--transport", defaultValue = "tcp", description = "tcp or rdma") String transport;
        @Option(names = "--id", description = "Discovery PORTID (default: the lowest free)") Integer id;

        @Override
        public Integer call() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("address", address).put("port", port).put("transport", transport);
            if (id != null) {
                b.put("id", id);
            }
            JsonNode l = admin.call("POST", "/api/v1/listeners", b);
            admin.done("listener " + l.path("id").asText() + ": " + transport + " " + address + ":" + l.path("port").asText());
            return 0;
        }
    }

    @Command(name = "listener-remove", description = "Stop a listener; connections made through it end")
    static final class ListenerRemove extends Sub {
        @Parameters(index = "0") int id;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/listeners/" + id, "removed listener " + id);
        }
    }

    @Command(name = "stats", description = "I/O statistics per namespace (reads, writes, bytes, errors, latency)")
    static final class Stats extends Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/statistics", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"SUBSYSTEM", "NSID", "READS", "WRITES", "OTHER", "READ MiB", "WRITTEN MiB", "ERRORS",
                    "MEAN us", "P50 us", "P99 us", "P99.9 us"});
            for (JsonNode s : list) {
                for (JsonNode n : s.path("namespaces")) {
                    rows.add(new String[] {s.path("nqn").asText(), n.path("nsid").asText(), n.path("reads").asText(),
                            n.path("writes").asText(), n.path("otherCommands").asText(),
                            String.valueOf(n.path("readBytes").asLong() >> 20), String.valueOf(n.path("writtenBytes").asLong() >> 20),
                            n.path("errors").asText(), us(n, "meanLatencyNs"), us(n, "p50LatencyNs"), us(n, "p99LatencyNs"),
                            us(n, "p999LatencyNs")});
                }
            }
            admin.print(list, rows);
            return 0;
        }

        private static String us(JsonNode n, String field) {
            return String.valueOf(n.path(field).asLong() / 1000);
        }
    }

    @Command(name = "controllers", description = "List connected hosts (controllers)")
    static final class Controllers extends Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/controllers", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"SUBSYSTEM", "CNTLID", "HOST NQN", "TRANSPORT", "PEER", "QUEUES", "DEPTH", "KATO ms", "SINCE"});
            for (JsonNode c : list) {
                rows.add(new String[] {c.path("subsystem").asText(), c.path("cntlid").asText(), c.path("hostNqn").asText(),
                        c.path("transport").asText(), c.path("peer").asText(), c.path("ioQueues").asText(),
                        c.path("queueDepth").asText(), c.path("keepAliveTimeoutMs").asText(), c.path("connectedAt").asText()});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "disconnect", description = "End one host's association")
    static final class Disconnect extends Sub {
        @Parameters(index = "0") String nqn;
        @Parameters(index = "1") int cntlid;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/subsystems/" + enc(nqn) + "/controllers/" + cntlid, "disconnected controller " + cntlid + " of " + nqn);
        }
    }

    @Command(name = "export", description = "Print the whole configuration (a file ./nvmeof target --config accepts)")
    static final class Export extends Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode c = admin.call("GET", "/api/v1/config", null);
            admin.spec.commandLine().getOut().println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(c));
            admin.spec.commandLine().getOut().flush();
            return 0;
        }
    }
}

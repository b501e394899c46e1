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
                AdminCommand.ListenerRemove.class, AdminReferralCommands.Referrals.class,
                AdminReferralCommands.ReferralAdd.class, AdminReferralCommands.ReferralRemove.class,
                AdminCommand.Ana.class, AdminCommand.AnaSet.class, AdminCommand.Stats.class, AdminCommand.Controllers.class, AdminCommand.Disconnect.class,
                AdminCommand.Export.class, AdminCommand.Import.class, AdminCommand.NamespaceResize.class,
                AdminHostKeyCommands.HostKeys.class, AdminHostKeyCommands.HostKeysSet.class,
                AdminHostKeyCommands.HostKeysRemove.class})
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
        HttpResponse<String> r = send(method, path, body == null ? null : JSON.writeValueAsString(body));
        return r.statusCode() == 204 || r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    /** Calls the API with a JSON body text (or none); returns the response, or throws with the problem's detail. */
    HttpResponse<String> send(String method, String path, String body) throws Exception {
        Path tf = tokenFile != null ? tokenFile : TargetCommand.stateDirectory(stateDir).resolve("admin-token");
        if (!Files.exists(tf)) {
            throw new IllegalArgumentException("no admin token at " + tf + "; pass --token-file (the target prints"
                    + " its path at start) or --state-dir");
        }
        String token = AdminToken.readAsClient(tf);
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + token)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        HttpResponse<String> r;
        HttpClient client = null;
        try {
            HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
            if (caCert != null) {
                builder.sslContext(trusting(caCert));
            } else if (url.startsWith("http://")) {
                // Plain HTTP needs no trust store: the client would otherwise load the JDK's (a tenth of a second).
                builder.sslContext(noTrust());
            }
            client = builder.build();
            r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
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
        } finally {
            release(client);
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
        return r;
    }

    /** A TLS context that trusts nobody, for a client that speaks plain HTTP only. */
    private static javax.net.ssl.SSLContext noTrust() throws Exception {
        javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
        ctx.init(null, new javax.net.ssl.TrustManager[0], null);
        return ctx;
    }

    /**
     * Ends the client's selector thread. Left waiting in native code, it holds the JVM's exit for 300 ms (HotSpot's
     * VM_Exit waits that long for threads in native), a third of the command's time. JDK 21 and later close the
     * client; JDK 17's cannot be closed, so its selector thread, which stops when interrupted, is interrupted.
     */
    static void release(HttpClient client) {
        if (client == null) {
            return;
        }
        if (client instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception ignored) {
                // closing is only to end its threads sooner
            }
            return;
        }
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("HttpClient-") && t.getName().endsWith("-SelectorManager")) {
                t.interrupt();
            }
        }
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
        @Option(names = "--size", description = "e.g. 64MiB, 1GiB (required for ram; for a file or device, default"
                + " its own size)") String size;
        @Option(names = "--block-size", description = "512 or 4096") Integer blockSize;
        @Option(names = "--file", description = "Back it with this file (under a directory the target allows with --allow-dir)") String file;
        @Option(names = "--block", paramLabel = "DEVICE", description = "Back it with this block device (under an --allow-dir, e.g. /dev)") String device;
        @Option(names = {"-N", "--namespace-id", "--nsid"}, description = "The NSID (default: the lowest free)") Long nsid;
        @Option(names = "--uuid") String uuid;
        @Option(names = "--nguid", description = "32 hex digits (default: the UUID's bytes)") String nguid;
        @Option(names = "--sparse", description = "ram: commit memory as it is first written (default: all of it now)")
        boolean sparse;
        @Option(names = "--buffered-io", description = "file or block: through the page cache (default: direct I/O,"
                + " as nvmet without buffered_io)")
        boolean bufferedIo;
        @Option(names = "--queue-depth", description = "file or block: requests at the device at once per poll group"
                + " (default: as many as the poll group's io_uring takes, 128)")
        Integer queueDepth;

        @Override
        public Integer call() throws Exception {
            if (file != null && device != null) {
                throw new IllegalArgumentException("--file and --block are two backends: give one");
            }
            if (size == null && file == null && device == null) {
                throw new IllegalArgumentException("a ram namespace needs --size");
            }
            ObjectNode b = JSON.createObjectNode().put("backend", file != null ? "file" : device != null ? "block" : "ram");
            if (size != null) {
                b.put("size", size);
            }
            if (file != null || device != null) {
                b.put("path", Path.of(file != null ? file : device).toAbsolutePath().toString());
            }
            if (nguid != null) {
                b.put("nguid", nguid);
            }
            if (sparse) {
                b.put("sparse", true);
            }
            if (bufferedIo) {
                b.put("bufferedIo", true);
            }
            if (queueDepth != null) {
                b.put("queueDepth", queueDepth);
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

    @Command(name = "host-remove", description = "Stop allowing a host (its associations end unless the subsystem allows any host)")
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
        @Option(names = "--subsystem", paramLabel = "NQN", description = "Expose only this subsystem here (repeatable;"
                + " default: all), as an nvmet port links subsystems") List<String> subsystems;

        @Override
        public Integer call() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("address", address).put("port", port).put("transport", transport);
            if (id != null) {
                b.put("id", id);
            }
            if (subsystems != null) {
                subsystems.forEach(b.putArray("subsystems")::add);
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

    @Command(name = "ana", description = "ANA group states on a listener (nvme list-subsys shows what hosts see)")
    static final class Ana extends Sub {
        @Parameters(index = "0", paramLabel = "LISTENER") int id;

        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/listeners/" + id + "/ana", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"GROUP", "STATE", "CHANGE COUNT"});
            for (JsonNode g : list) {
                rows.add(new String[] {g.path("group").asText(), g.path("state").asText(), g.path("changeCount").asText()});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "ana-set", description = "Set an ANA group's state on a listener: optimized, non-optimized,"
            + " inaccessible, persistent-loss or change (hosts are told at once)")
    static final class AnaSet extends Sub {
        @Parameters(index = "0", paramLabel = "LISTENER") int id;
        @Parameters(index = "1", paramLabel = "GROUP") int group;
        @Parameters(index = "2", paramLabel = "STATE") String state;

        @Override
        public Integer call() throws Exception {
            JsonNode g = admin.call("PUT", "/api/v1/listeners/" + id + "/ana/" + group,
                    JSON.createObjectNode().put("state", state));
            admin.done("listener " + id + ": ANA group " + g.path("group").asText() + " " + g.path("state").asText());
            return 0;
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

    @Command(name = "export", description = "Print the whole configuration: ours (a file ./nvmeof target --config"
            + " accepts), nvmetcli's config.json (nvmetcli restore) or SPDK's (rpc.py load_config)")
    static final class Export extends Sub {
        @Option(names = "--format", defaultValue = "native", description = "native, nvmetcli or spdk. Default: ${DEFAULT-VALUE}")
        String format;

        @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Write to FILE instead of standard output")
        Path output;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> r = admin.send("GET", "/api/v1/config?format=" + enc(format), null);
            String doc = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(JSON.readTree(r.body()));
            if (output != null) {
                Files.writeString(output, doc + System.lineSeparator());
            } else {
                admin.spec.commandLine().getOut().println(doc);
                admin.spec.commandLine().getOut().flush();
            }
            List<String> notMapped = r.headers().allValues("Nvmeof-Not-Mapped");
            for (String line : notMapped) {
                admin.spec.commandLine().getErr().println("not exported: " + line);
            }
            admin.spec.commandLine().getErr().flush();
            return 0;
        }
    }

    @Command(name = "import", description = "Import a whole configuration live, atomically: ours, nvmetcli's"
            + " config.json or SPDK's save_config output (as rpc.py load_config, nvmetcli restore)")
    static final class Import extends Sub {
        @Parameters(index = "0", paramLabel = "FILE") Path file;

        @Option(names = "--mode", required = true, description = "replace (the target becomes the file; what it does"
                + " not name is removed) or merge (add what the target lacks; clashes are refused)")
        String mode;

        @Option(names = "--format", defaultValue = "auto", description = "native, nvmetcli, spdk or auto (recognised"
                + " from the document's top-level keys). Default: ${DEFAULT-VALUE}")
        String format;

        @Option(names = "--dry-run", description = "Show what would change, change nothing")
        boolean dryRun;

        @Option(names = "--drop-security", description = "Import an nvmetcli or SPDK file even when it has security"
                + " settings this target does not have (TLS and its keys, per-host namespace visibility, read-only"
                + " namespaces): hosts then connect without them; each dropped setting is listed")
        boolean dropSecurity;

        @Override
        public Integer call() throws Exception {
            String text;
            try {
                text = Files.readString(file);
            } catch (java.nio.file.NoSuchFileException e) {
                throw new IllegalArgumentException(file + " does not exist");
            }
            String f = "auto".equals(format) ? detectFormat(file, text) : format;
            HttpResponse<String> r = admin.send("POST", "/api/v1/config/import?mode=" + enc(mode) + "&format=" + enc(f)
                    + "&dryRun=" + dryRun + "&dropSecurity=" + dropSecurity, text);
            JsonNode result = JSON.readTree(r.body());
            if (admin.json) {
                admin.print(result, null);
                return 0;
            }
            java.io.PrintWriter out = admin.spec.commandLine().getOut();
            JsonNode changes = result.path("changes");
            out.println((dryRun ? "would change" : "changed") + " (" + f + ", " + mode + "): "
                    + (changes.isEmpty() ? "nothing" : changes.size() + " change" + (changes.size() == 1 ? "" : "s")));
            for (JsonNode c : changes) {
                out.println("  " + c.asText());
            }
            java.util.Set<String> dropped = new java.util.HashSet<>();
            for (JsonNode n : result.path("securityDropped")) {
                dropped.add(n.asText());
                out.println((dryRun ? "would drop security setting " : "dropped security setting ") + n.asText());
            }
            for (JsonNode n : result.path("notMapped")) {
                if (!dropped.contains(n.asText())) {
                    out.println("not mapped: " + n.asText());
                }
            }
            for (JsonNode n : result.path("notApplied")) {
                out.println("not applied: " + n.asText());
            }
            out.flush();
            return 0;
        }
    }

    /** Our document has listeners or pollGroups; nvmetcli's has ports and hosts; SPDK's a subsystems list of {subsystem, config}. */
    static String detectFormat(Path file, String text) throws Exception {
        JsonNode doc;
        try {
            doc = JSON.readTree(text);
        } catch (com.fasterxml.jackson.core.JacksonException e) {
            throw new IllegalArgumentException(file + " is not JSON: " + e.getOriginalMessage());
        }
        if (doc.has("ports") || doc.has("hosts")) {
            return "nvmetcli";
        }
        JsonNode subs = doc.path("subsystems");
        if (subs.isArray() && subs.size() > 0 && subs.get(0).has("subsystem")) {
            return "spdk";
        }
        if (doc.has("listeners") || subs.isArray() || doc.has("pollGroups")) {
            return "native";
        }
        throw new IllegalArgumentException("cannot tell the format of " + file + "; pass --format native, nvmetcli or spdk");
    }

    @Command(name = "ns-resize", description = "Grow a file or block namespace live (hosts see the new size)")
    static final class NamespaceResize extends Sub {
        @Parameters(index = "0") String nqn;
        @Parameters(index = "1") long nsid;
        @Parameters(index = "2", paramLabel = "SIZE", description = "The new size: bytes or with a unit (2GiB)") String size;

        @Override
        public Integer call() throws Exception {
            JsonNode ns = admin.call("PATCH", "/api/v1/subsystems/" + enc(nqn) + "/namespaces/" + nsid,
                    JSON.createObjectNode().put("size", size));
            admin.done("namespace " + nsid + " of " + nqn + " is now " + ns.path("size").asText() + " bytes");
            return 0;
        }
    }
}

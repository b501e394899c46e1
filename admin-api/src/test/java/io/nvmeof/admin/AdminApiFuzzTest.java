package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the admin API's inputs (issue 15): each input is a short sequence (1 to 4) of HTTP
 * requests sent with the JDK's HTTP client to a running target's admin server on 127.0.0.1, as a client on the network
 * could send them: an operation of the OpenAPI contract (or a path of the input's own), its path parameters from
 * known names or the input's text (percent-encoded strictly or loosely, empty, dot segments, numbers out of range,
 * very long, unicode), query parameters, a Content-Type (usually JSON), the bearer token (sometimes missing or wrong)
 * and a body. Bodies are structure-aware, since raw bytes would almost never get past the OpenAPI validation to the
 * handlers: JSON built from the contract's field names with values from a small dictionary of valid, borderline and
 * wrong ones (wrong types, nulls, huge and negative numbers, nested junk), the live configuration exported (native,
 * nvmetcli or SPDK) and mutated in a few places, such JSON damaged as text (truncated, re-encoded, padded past the
 * body limit), or the input's own bytes.
 *
 * <p>Invariants, after every request: no 5xx, and only 2xx or 4xx; every 4xx is {@code application/problem+json}
 * whose {@code status} is the answer's and whose {@code detail} says what to change; a refused request (4xx), a read
 * (GET, HEAD, OPTIONS), a dry-run import and a request without the right token change nothing (the configuration
 * document and the files under the sandbox are the same before and after); without the token, every {@code /api}
 * path and GET {@code /metrics} answer 401 (another method on {@code /metrics} 405; the HTTP decoder's 414 and 431
 * come before any route); 2xx JSON answers are JSON. After every input: {@code /health} answers, nothing threw inside
 * the target ({@code TargetCore.internalErrors}), nothing was written to the working directory; when the input changed
 * the target, the document exported over the API is the live one and imports again as no change (dry run); importing
 * the starting document over the API restores the target (through a blank target when the input set a field the
 * starting document leaves out, which an import keeps), checked, so inputs are independent.
 * {@code -Dfuzz.trace=true} prints every request and its answer.
 *
 * <p>Sandbox: the admin server may create files only under a temporary directory (its directory policy,
 * {@code --allow-dir}); the harness does not send a request whose body, read as any document the API takes, would
 * listen elsewhere than 127.0.0.1 (or on a fixed port not ours, or on more than 4 listeners), or open a RAM namespace
 * over 16 MiB, a file larger than that, or more than 64 MiB of memory in all; and after every request it checks that
 * the live target stayed inside.
 */
class AdminApiFuzzTest {
    static final String TOKEN = "admin-fuzz-token-0123456789abcdef";
    static final String NQN_A = "nqn.2026-12.io.nvmeof:admin-fuzz-a";
    static final String NQN_B = "nqn.2026-12.io.nvmeof:admin-fuzz-b";
    static final String NQN_NEW = "nqn.2026-12.io.nvmeof:admin-fuzz-new";
    static final String NQN_UUID = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6";
    static final String HOST_1 = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001";
    static final String HOST_2 = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000002";
    /** In literal bodies, paths and queries: replaced by the sandbox directory and by listener 1's port. */
    static final String SANDBOX_MARK = "@SANDBOX@";
    static final String PORT_MARK = "@PORT@";
    private static final long MAX_NAMESPACE = 16 << 20;
    private static final long MAX_MEMORY = 64 << 20;
    /** RAM is committed in chunks of 2 MiB ({@code RamBackend}): a 4 KiB namespace takes one. */
    private static final long RAM_CHUNK = 2 << 20;
    private static final int MAX_LISTENERS = 4;
    /** -Dfuzz.trace=true: each request and its answer on standard output (to see what inputs do). */
    private static final boolean TRACE = Boolean.getBoolean("fuzz.trace");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Reads bodies as the API's handlers do ({@code ConfigurationRoutes}): unknown fields refused. */
    private static final ObjectMapper STRICT = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .setSerializationInclusion(JsonInclude.Include.NON_NULL);
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** Java's words in an answer: class names, exception names, the JDK's number parsing message. */
    static final java.util.regex.Pattern JAVA_INTERNALS = java.util.regex.Pattern.compile(
            "\\b(java|javax|sun|io\\.vertx|io\\.netty|com\\.fasterxml|io\\.nvmeof)\\.[a-z]+\\.|Exception\\b|For input string"
                    + "|`[a-z]+\\.[a-zA-Z.]+`");

    private static NvmeTarget target;
    private static AdminServer admin;
    private static Path sandbox;
    private static TargetConfig base;
    private static byte[] baseDocument;
    private static HttpClient http;
    private static Map<K, List<JsonNode>> dictionary;
    /** The working directory's entries: nothing is written there (a body handler's uploads once were). */
    private static List<String> workingDirectory;
    private static long executions;
    private static long sent;
    private static long notSent;
    private static long blankRestores;
    private static final Map<Integer, Long> STATUSES = new TreeMap<>();

    @BeforeAll
    static void start() throws IOException {
        sandbox = Files.createTempDirectory("admin-fuzz").toRealPath();
        target = NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null)),
                List.of(new SubsystemConfig(NQN_A, null, null, null, true, null,
                                List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null))),
                        new SubsystemConfig(NQN_B, null, null, 4, false, List.of(HOST_1),
                                List.of(new NamespaceConfig(1L, "ram", "64KiB", 4096, null, null))))));
        admin = AdminServer.start(target.live(), new AdminOptions("127.0.0.1", 0, TOKEN, List.of(sandbox)));
        base = target.live().export();
        baseDocument = STRICT.writeValueAsBytes(base);
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
        dictionary = dictionary(base.listeners().get(0).port());
        workingDirectory = workingDirectory();
    }

    private static List<String> workingDirectory() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("").toAbsolutePath())) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @AfterAll
    static void stop() throws IOException {
        System.out.println(summary());
        if (admin != null) {
            admin.close();
        }
        if (target != null) {
            target.close();
        }
        if (sandbox != null) {
            try (Stream<Path> all = Files.walk(sandbox)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void requests(byte[] input) throws Exception {
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
        }
    }

    static void run(byte[] input) throws Exception {
        if (++executions % 5000 == 0) {
            System.out.println(summary());
        }
        if (!canonical(target.live().export()).equals(canonical(base)) || !files().isEmpty()) {
            restore(); // a previous input failed before its own restore (replay goes on with the next input)
        }
        Bytes in = new Bytes(input);
        int count = 1 + in.u8() % 4;
        for (int i = 0; i < count; i++) {
            Request r = decode(in);
            if (outsideSandbox(r)) {
                notSent++;
                if (TRACE) {
                    System.out.println("not sent (outside the sandbox): " + r.describe());
                }
                continue;
            }
            sent++;
            exchange(r);
        }
        HttpResponse<byte[]> health = send(new Request("GET", "/health", "", null, null, null));
        assertEquals(200, health.statusCode(), "the server still answers /health");
        assertEquals(0, target.core().internalErrors(), "nothing threw inside the target (see the log)");
        assertEquals(workingDirectory, workingDirectory(), "nothing was written to the working directory");
        TargetConfig now = target.live().export();
        if (!canonical(now).equals(canonical(base))) { // (unchanged, the seeds' exports and the restore check that)
            HttpResponse<byte[]> exported = send(new Request("GET", "/api/v1/config", "", bearer(), null, null));
            assertEquals(200, exported.statusCode(), () -> text(exported.body()));
            assertEquals(now, STRICT.readValue(exported.body(), TargetConfig.class), "the API exports the live document");
            HttpResponse<byte[]> again = send(new Request("POST", "/api/v1/config/import", "mode=replace&dryRun=true",
                    bearer(), "application/json", exported.body()));
            assertEquals(200, again.statusCode(), () -> "the export imports again: " + text(again.body()));
            assertEquals(List.of(), STRICT.readValue(again.body(), ConfigurationRoutes.ImportAnswer.class).changes(),
                    () -> "importing the export changes nothing: " + text(again.body()));
            restore();
        }
        cleanSandbox();
    }

    /** Sends one request and checks what it did. */
    private static void exchange(Request r) throws Exception {
        TargetConfig before = target.live().export();
        Map<String, Long> filesBefore = files();
        long t0 = System.nanoTime();
        HttpResponse<byte[]> resp;
        try {
            resp = send(r);
        } catch (AssertionError e) {
            if (!r.pastDecoderLimits() || r.body() == null || e.getCause() instanceof java.net.http.HttpTimeoutException) {
                throw e;
            }
            // Refused by the HTTP decoder (414, 431), the connection is closed (it cannot be reused after a framing
            // error) while the client may still be sending the body: the answer can be lost. Still nothing changed.
            assertEquals(before, target.live().export(), () -> "a request past the limits changed the configuration: "
                    + r.describe());
            assertEquals(filesBefore, files(), () -> "a request past the limits changed files: " + r.describe());
            return;
        }
        long micros = (System.nanoTime() - t0) / 1000;
        int status = resp.statusCode();
        STATUSES.merge(status, 1L, Long::sum);
        String what = r.describe() + "\n -> " + status + " " + resp.headers().map() + " " + text(resp.body());
        if (TRACE) {
            System.out.println(what + " (" + micros + " us)");
        }
        assertTrue(status < 500, () -> "a 5xx answer: " + what);
        assertTrue(status >= 200 && status < 300 || status >= 400, () -> "neither success nor a client error: " + what);
        String type = resp.headers().firstValue("Content-Type").orElse("");
        boolean head = r.method().equals("HEAD");
        boolean unchanged = status >= 400 || !r.authorized()
                || Set.of("GET", "HEAD", "OPTIONS").contains(r.method());
        if (status >= 400 && !head) {
            assertTrue(type.startsWith(Problems.PROBLEM_JSON), () -> "a client error is problem+json: " + what);
            JsonNode problem = JSON.readTree(resp.body());
            assertTrue(problem != null && problem.isObject(), () -> "a problem is a JSON object: " + what);
            assertEquals(status, problem.path("status").asInt(), () -> "the problem's status: " + what);
            assertTrue(!problem.path("detail").asText("").isBlank(), () -> "a problem's detail says what to change: " + what);
            assertFalse(JAVA_INTERNALS.matcher(resp.body().length > 0 ? text(resp.body()) : "").find(),
                    () -> "a problem speaks to the administrator, not in Java's terms: " + what);
        }
        if (status < 300 && !head && status != 204 && type.startsWith("application/json")) {
            JSON.readTree(resp.body()); // throws when the answer is not JSON
        }
        int refused = r.authorized() ? 0 : withoutToken(r.method(), r.path());
        if (refused != 0) { // (414, 431: the HTTP decoder's limits, before any route and the token)
            assertTrue(status == refused || status == 414 || status == 431,
                    () -> "a request without the token is refused with " + refused + ": " + what);
        }
        if (status == 200 && r.path().startsWith("/api/v1/config/import") && r.authorized()) {
            unchanged |= JSON.readTree(resp.body()).path("dryRun").asBoolean(false);
        }
        if (unchanged) {
            assertEquals(before, target.live().export(), () -> "the request changed the configuration: " + what);
            assertEquals(filesBefore, files(), () -> "the request changed files: " + what);
        }
        checkSandbox(what);
    }

    /**
     * The live target is still inside the sandbox (a failure here is the harness's own bug, not the server's), and
     * every listener bound is one of the document's.
     */
    private static void checkSandbox(String after) {
        TargetConfig now = target.live().export();
        assertEquals(now.listeners().size(), target.core().listeners().size(),
                () -> "listeners bound that the document does not have, after " + after);
        for (ListenerConfig l : now.listeners()) {
            assertEquals("127.0.0.1", l.address(), () -> "sandbox left (listener) after " + after);
        }
        long memory = 0;
        for (SubsystemConfig s : now.subsystems()) {
            for (NamespaceConfig n : s.namespaces()) {
                long size = n.size() == null ? 0 : TargetConfig.parseSize(n.size());
                assertTrue(size <= MAX_NAMESPACE, () -> "sandbox left (namespace size) after " + after);
                if ("ram".equals(n.backend())) {
                    memory += roundUp(size);
                } else {
                    assertTrue(Path.of(n.path()).toAbsolutePath().normalize().startsWith(sandbox),
                            () -> "sandbox left (path) after " + after);
                }
            }
        }
        long total = memory;
        assertTrue(total <= 4 * MAX_MEMORY + roundUp(1 << 20) + roundUp(64 << 10),
                () -> "sandbox left (memory " + total + ") after " + after);
    }

    /** Back to the starting document, over the API, and checked. */
    private static void restore() throws Exception {
        importOver(baseDocument);
        if (!canonical(base).equals(canonical(target.live().export()))) {
            // A field an imported document leaves out keeps its live value, and the starting document leaves out
            // those at their defaults (a listener's maxH2CData, a namespace's nguid or sparse): what an input set
            // there stays. A blank target in between makes the import recreate them.
            blankRestores++;
            importOver("{\"listeners\":[{\"address\":\"127.0.0.1\",\"port\":0}],\"subsystems\":[]}"
                    .getBytes(StandardCharsets.UTF_8));
            importOver(baseDocument);
        }
        assertEquals(canonical(base), canonical(target.live().export()), "the starting document restored");
        cleanSandbox();
    }

    private static void importOver(byte[] document) throws Exception {
        HttpResponse<byte[]> r = send(new Request("POST", "/api/v1/config/import", "mode=replace", bearer(),
                "application/json", document));
        assertEquals(200, r.statusCode(), () -> "the document imports: " + text(r.body()));
    }

    /** Subsystems by NQN, namespaces by NSID, hosts sorted: an import recreates what an input removed at the end. */
    private static TargetConfig canonical(TargetConfig c) {
        List<SubsystemConfig> subs = c.subsystems().stream()
                .map(s -> new SubsystemConfig(s.nqn(), s.serial(), s.model(), s.maxNamespaces(), s.allowAnyHost(),
                        s.hosts() == null ? null : s.hosts().stream().sorted().toList(),
                        s.namespaces() == null ? null : s.namespaces().stream()
                                .sorted(Comparator.comparing(NamespaceConfig::nsid)).toList()))
                .sorted(Comparator.comparing(SubsystemConfig::nqn)).toList();
        return c.withContents(c.listeners(), subs);
    }

    private static void cleanSandbox() throws IOException {
        try (Stream<Path> all = Files.walk(sandbox)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                if (!p.equals(sandbox)) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /** The files under the sandbox with their sizes. */
    private static Map<String, Long> files() throws IOException {
        Map<String, Long> out = new TreeMap<>();
        try (Stream<Path> all = Files.walk(sandbox)) {
            for (Path p : all.toList()) {
                if (!p.equals(sandbox)) {
                    out.put(sandbox.relativize(p).toString(), Files.isRegularFile(p) ? Files.size(p) : -1);
                }
            }
        }
        return out;
    }

    static String summary() {
        return "AdminApiFuzzTest: " + executions + " inputs, " + sent + " requests sent, " + notSent
                + " not sent (outside the sandbox), " + blankRestores + " restores through a blank target, answers by"
                + " status " + STATUSES;
    }

    // ---------------------------------------------------------------------------------------------------- sending

    /** One request as sent; {@code path} is the raw path (with its percent-encoding), {@code query} without '?'. */
    record Request(String method, String path, String query, String authorization, String contentType, byte[] body) {
        boolean authorized() {
            return bearer().equals(authorization);
        }

        String uri() {
            return "http://127.0.0.1:" + admin.port() + path + (query.isEmpty() ? "" : "?" + query);
        }

        /** Whether the request line or the headers are near the HTTP decoder's limits (4096 and 8192 bytes). */
        boolean pastDecoderLimits() {
            int line = method.length() + path.length() + query.length() + 12;
            int headers = (authorization != null ? authorization.length() : 0)
                    + (contentType != null ? contentType.length() : 0) + 256;
            return line > 4000 || headers > 8000;
        }

        String describe() {
            return method + " " + path + (query.isEmpty() ? "" : "?" + query) + (authorized() ? ""
                    : " [Authorization: " + authorization + "]") + (contentType != null ? " [" + contentType + "]" : "")
                    + (body != null ? " " + text(body) : "");
        }
    }

    static String bearer() {
        return "Bearer " + TOKEN;
    }

    private static HttpResponse<byte[]> send(Request r) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(r.uri())).timeout(Duration.ofSeconds(10))
                .method(r.method(), r.body() == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(r.body()));
        if (r.authorization() != null) {
            b.header("Authorization", r.authorization());
        }
        if (r.contentType() != null) {
            b.header("Content-Type", r.contentType());
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new AssertionError("no answer (a hang or a dropped connection): " + r.describe(), e);
        }
    }

    private static String text(byte[] body) {
        String s = new String(body, StandardCharsets.UTF_8);
        return s.length() > 2000 ? s.substring(0, 2000) + "... (" + body.length + " bytes)" : s;
    }

    /**
     * The answer to a request without the right token, for the path as the server routes it (unreserved characters'
     * percent-encoding decoded, repeated slashes and dot segments removed): 401 under /api and for GET /metrics, 405
     * for another method on /metrics (whoever asks), 0 where no token is needed.
     */
    static int withoutToken(String method, String rawPath) {
        StringBuilder d = new StringBuilder();
        for (int i = 0; i < rawPath.length(); i++) {
            char c = rawPath.charAt(i);
            if (c == '%' && i + 2 < rawPath.length() && hex((byte) rawPath.charAt(i + 1)) && hex((byte) rawPath.charAt(i + 2))) {
                int v = Integer.parseInt(rawPath.substring(i + 1, i + 3), 16);
                if (Character.isLetterOrDigit(v) && v < 0x80 || "-._~".indexOf(v) >= 0) { // unreserved: decoded
                    d.append((char) v);
                    i += 2;
                    continue;
                }
            }
            d.append(c);
        }
        String decoded = d.toString();
        List<String> out = new ArrayList<>();
        for (String seg : decoded.split("/+")) {
            if (seg.isEmpty() || seg.equals(".")) {
                continue;
            }
            if (seg.equals("..")) {
                if (!out.isEmpty()) {
                    out.remove(out.size() - 1);
                }
                continue;
            }
            out.add(seg);
        }
        String p = "/" + String.join("/", out);
        return p.startsWith("/api/") ? 401 : p.equals("/metrics") ? method.equals("GET") ? 401 : 405 : 0;
    }

    // ---------------------------------------------------------------------------------------------------- sandbox

    /**
     * Whether the server could act on this request outside the sandbox. The body is read as every document the API
     * takes (whatever the path: a fuzzed path may route elsewhere than the harness meant), with every text decoding
     * the server might use; a reading that fails is one the server refuses as well.
     */
    static boolean outsideSandbox(Request r) {
        if (r.body() == null) {
            return false;
        }
        Set<Integer> ours = new HashSet<>();
        for (ListenerConfig l : target.live().listeners()) {
            ours.add(l.port());
        }
        List<String> texts = new ArrayList<>();
        try {
            texts.add(new JsonObject(Buffer.buffer(r.body())).encode());
        } catch (RuntimeException e) {
            // not a JSON object as bytes
        }
        for (java.nio.charset.Charset cs : List.of(StandardCharsets.UTF_8, StandardCharsets.ISO_8859_1)) {
            try {
                texts.add(new JsonObject(new String(r.body(), cs)).encode());
            } catch (RuntimeException e) {
                // not a JSON object in this decoding
            }
        }
        for (String text : texts) {
            List<TargetConfig> docs = new ArrayList<>();
            List<NamespaceConfig> namespaces = new ArrayList<>();
            List<ListenerConfig> listeners = new ArrayList<>();
            read(() -> docs.add(STRICT.readValue(text, TargetConfig.class)));
            for (Migration.Format f : Migration.Format.values()) {
                read(() -> docs.add(Migration.importFrom(f, text).config()));
            }
            read(() -> docs.add(new TargetConfig(null, null, null, null, null,
                    List.of(STRICT.readValue(text, SubsystemConfig.class)))));
            read(() -> namespaces.add(STRICT.readValue(text, NamespaceConfig.class)));
            read(() -> listeners.add(STRICT.readValue(text, ListenerConfig.class)));
            read(() -> {
                Object size = new JsonObject(text).getValue("size");
                if (size instanceof String s) { // a resize
                    namespaces.add(new NamespaceConfig(null, "file", s, null, "/", null));
                }
            });
            for (TargetConfig d : docs) {
                if (d.listeners() != null) {
                    listeners.addAll(d.listeners());
                }
                if (d.subsystems() != null) {
                    for (SubsystemConfig s : d.subsystems()) {
                        if (s != null && s.namespaces() != null) {
                            namespaces.addAll(s.namespaces());
                        }
                    }
                }
            }
            if (listeners.size() > MAX_LISTENERS) {
                return true;
            }
            for (ListenerConfig l : listeners) {
                if (l == null || l.address() == null) {
                    continue; // refused: "address is required"
                }
                Integer port = l.port();
                boolean refusedPort = port != null && (port < 0 || port > 65535);
                if (!"127.0.0.1".equals(l.address()) || !refusedPort && (port == null || port != 0 && !ours.contains(port))) {
                    return true;
                }
            }
            long memory = 0;
            for (NamespaceConfig n : namespaces) {
                if (n == null) {
                    continue;
                }
                String kind = n.backend() != null ? n.backend() : n.path() != null ? "file" : "ram";
                if (n.size() == null) {
                    if ("ram".equals(kind)) {
                        return true; // 1 GiB by default
                    }
                    continue; // the file's own size: files here are made by the API, within the limit
                }
                long size;
                try {
                    size = TargetConfig.parseSize(n.size());
                } catch (IllegalArgumentException e) {
                    continue; // refused with the size's message
                }
                if (size > MAX_NAMESPACE) {
                    return true;
                }
                memory += "ram".equals(kind) ? roundUp(size) : 0;
            }
            if (memory > MAX_MEMORY) {
                return true;
            }
        }
        return false;
    }

    interface Reading {
        void run() throws Exception;
    }

    private static void read(Reading r) {
        try {
            r.run();
        } catch (Exception e) {
            // not this kind of document: the server refuses it as this kind too
        }
    }

    private static long roundUp(long size) {
        return (size + RAM_CHUNK - 1) / RAM_CHUNK * RAM_CHUNK;
    }

    // ---------------------------------------------------------------------------------------------------- decoding

    /** The input, read from the front; past its end every byte reads as 0 (the most ordinary choice). */
    static final class Bytes {
        private final byte[] in;
        private int at;

        Bytes(byte[] in) {
            this.in = in;
        }

        int u8() {
            return at < in.length ? in[at++] & 0xFF : 0;
        }

        int u16() {
            return u8() << 8 | u8();
        }

        long u64() {
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = v << 8 | u8();
            }
            return v;
        }

        /** A length: one byte under 128, else two (15 bits). */
        int length() {
            int b = u8();
            return b < 128 ? b : (b & 0x7F) << 8 | u8();
        }

        byte[] bytes() {
            int n = Math.min(length(), in.length - at);
            byte[] out = java.util.Arrays.copyOfRange(in, at, at + Math.max(0, n));
            at += Math.max(0, n);
            return out;
        }

        String text() {
            return new String(bytes(), StandardCharsets.UTF_8);
        }
    }

    /** What a JSON value or a path segment stands for: picks its dictionary and, for containers, its shape. */
    enum K {
        NQN, HOST_NQN, SERIAL, MODEL, MAX_NAMESPACES, BOOL, NSID, BACKEND, SIZE, BLOCK_SIZE, PATH, UUID, NGUID,
        LISTENER_ID, TRANSPORT, ADDRESS, PORT, INLINE, H2C, COUNT, MEMORY,
        SUBSYSTEM, NAMESPACE, LISTENER, CONFIG, ALLOW, HOST_BODY, RESIZE,
        HOSTS, NQNS, NAMESPACES, SUBSYSTEMS, LISTENERS
    }

    /** A field of a body: present unless its byte says otherwise ({@code usual}), or absent unless it says so. */
    record Field(String name, K kind, boolean usual) {
    }

    static final Map<K, List<Field>> OBJECTS = Map.of(
            K.SUBSYSTEM, List.of(new Field("nqn", K.NQN, true), new Field("serial", K.SERIAL, false),
                    new Field("model", K.MODEL, false), new Field("maxNamespaces", K.MAX_NAMESPACES, false),
                    new Field("allowAnyHost", K.BOOL, false), new Field("hosts", K.HOSTS, false),
                    new Field("namespaces", K.NAMESPACES, false)),
            K.NAMESPACE, List.of(new Field("nsid", K.NSID, false), new Field("backend", K.BACKEND, false),
                    new Field("size", K.SIZE, true), new Field("blockSize", K.BLOCK_SIZE, false),
                    new Field("path", K.PATH, false), new Field("uuid", K.UUID, false),
                    new Field("nguid", K.NGUID, false), new Field("sparse", K.BOOL, false)),
            K.LISTENER, List.of(new Field("id", K.LISTENER_ID, false), new Field("transport", K.TRANSPORT, false),
                    new Field("address", K.ADDRESS, true), new Field("port", K.PORT, true),
                    new Field("inlineDataSize", K.INLINE, false), new Field("maxH2CData", K.H2C, false),
                    new Field("subsystems", K.NQNS, false)),
            K.CONFIG, List.of(new Field("pollGroups", K.COUNT, false), new Field("busyPollUs", K.COUNT, false),
                    new Field("maxIoQueues", K.COUNT, false), new Field("maxQueueSize", K.COUNT, false),
                    new Field("maxTransferSize", K.COUNT, false), new Field("maxConnectionMemory", K.MEMORY, false),
                    new Field("maxMemory", K.MEMORY, false), new Field("maxSparseMemory", K.MEMORY, false),
                    new Field("listeners", K.LISTENERS, false),
                    new Field("subsystems", K.SUBSYSTEMS, true)),
            K.ALLOW, List.of(new Field("allowAnyHost", K.BOOL, true)),
            K.HOST_BODY, List.of(new Field("nqn", K.HOST_NQN, true)),
            K.RESIZE, List.of(new Field("size", K.SIZE, true)));

    static final Map<K, K> ELEMENTS = Map.of(K.HOSTS, K.HOST_NQN, K.NQNS, K.NQN, K.NAMESPACES, K.NAMESPACE,
            K.SUBSYSTEMS, K.SUBSYSTEM, K.LISTENERS, K.LISTENER);

    /** Valid, borderline and invalid values of each kind; the first is the most ordinary. */
    static Map<K, List<JsonNode>> dictionary(int boundPort) {
        String sb = sandbox.toString();
        String longNqn = "nqn.2026-12.io.nvmeof:" + "x".repeat(201); // 223 bytes, the longest
        Map<K, List<JsonNode>> d = new LinkedHashMap<>();
        d.put(K.NQN, texts(NQN_NEW, NQN_A, NQN_B, NQN_UUID, Migration.DISCOVERY_NQN, longNqn, longNqn + "x",
                "not an nqn", "", "NQN.2026-12.io.nvmeof:upper", "nqn.2026-12.io.nvmeof:\u00fcnicode\u2603",
                "nqn.2026-12.io.nvmeof:a b", "nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"));
        d.put(K.HOST_NQN, texts(HOST_2, HOST_1, NQN_A, "nqn.2014-08.org.nvmexpress:uuid:not-a-uuid", "bad host", "",
                Migration.DISCOVERY_NQN, longNqn + "x"));
        d.put(K.SERIAL, texts("SN-1", "x".repeat(20), "x".repeat(21), "", "s\u00e9r\u00edal", "\u0001\u0002", "  "));
        d.put(K.MODEL, texts("fuzz model", "m".repeat(40), "m".repeat(41), "", "m\u00f6del \u2603"));
        d.put(K.MAX_NAMESPACES, numbers(4, 1, 1024, 0, 1025, -1));
        d.put(K.BOOL, List.of(NODES.booleanNode(true), NODES.booleanNode(false), NODES.booleanNode(true),
                NODES.booleanNode(false), NODES.textNode("false"), NODES.numberNode(1)));
        d.put(K.NSID, numbers(2, 1, 3, 4, 1024, 0, 4294967294L, 4294967295L, -1, 9007199254740993L));
        d.put(K.BACKEND, texts("ram", "ram", "file", "file", "block", "tape", "RAM", ""));
        d.put(K.SIZE, texts("1MiB", "4k", "64KiB", "16MiB", "2m", "1048576", "512", "4096", "0", "3", "1 M", "17MiB",
                "1GiB", "99999999999999999999", "9223372036854775807", "8p", "-1", "1.5MiB", "1MiBB", ""));
        d.put(K.BLOCK_SIZE, numbers(512, 4096, 1024, 0, -512, 4097));
        d.put(K.PATH, texts(sb + "/a.img", sb + "/b.img", sb + "/../escape.img", "/etc/hostname", "relative.img", sb,
                sb + "/missing/c.img", sb + "/", "", sb + "/\u00e9t\u00e9.img", sb + "/./a.img", "/dev/null"));
        d.put(K.UUID, texts("11111111-2222-3333-4444-555555555555", "00000000-0000-0000-0000-000000000000",
                "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE", "not-a-uuid", "11111111-2222-3333-4444-55555555555",
                "ffffffff-ffff-ffff-ffff-ffffffffffff"));
        d.put(K.NGUID, texts("00112233445566778899aabbccddeeff", "00000000000000000000000000000000",
                "00112233445566778899AABBCCDDEEFF", "0011", "zz112233445566778899aabbccddeeff"));
        d.put(K.LISTENER_ID, numbers(2, 1, 3, 65535, 0, 65536, -1));
        d.put(K.TRANSPORT, texts("tcp", "tcp", "rdma", "fc", "TCP", ""));
        d.put(K.ADDRESS, texts("127.0.0.1", "127.0.0.1", "127.0.0.1", "0.0.0.0", "localhost", "::1", ""));
        d.put(K.PORT, numbers(0, 0, boundPort, 4420, 65535, -1, 65536));
        d.put(K.INLINE, numbers(4096, 0, 8192, 131072, 131073, -1));
        d.put(K.H2C, numbers(65536, 4096, 4095, 16777216, 16777217));
        d.put(K.COUNT, numbers(1, 2, 4, 128, 0, -1, Integer.MAX_VALUE));
        d.put(K.MEMORY, texts("64MiB", "2GiB", "1k", "lots", ""));
        return d;
    }

    private static List<JsonNode> texts(String... values) {
        return Stream.of(values).map(v -> (JsonNode) NODES.textNode(v)).toList();
    }

    private static List<JsonNode> numbers(long... values) {
        return java.util.Arrays.stream(values).mapToObj(v -> (JsonNode) NODES.numberNode(v)).toList();
    }

    /** An operation of the contract: its method, path template and body. */
    record Op(String method, String template, K body, Query query) {
    }

    enum Query { NONE, IMPORT, EXPORT }

    static final Op[] OPS = {
        new Op("POST", "/api/v1/subsystems", K.SUBSYSTEM, Query.NONE),
        new Op("POST", "/api/v1/subsystems/{nqn}/namespaces", K.NAMESPACE, Query.NONE),
        new Op("POST", "/api/v1/subsystems/{nqn}/hosts", K.HOST_BODY, Query.NONE),
        new Op("PATCH", "/api/v1/subsystems/{nqn}", K.ALLOW, Query.NONE),
        new Op("PATCH", "/api/v1/subsystems/{nqn}/namespaces/{nsid}", K.RESIZE, Query.NONE),
        new Op("DELETE", "/api/v1/subsystems/{nqn}", null, Query.NONE),
        new Op("DELETE", "/api/v1/subsystems/{nqn}/namespaces/{nsid}", null, Query.NONE),
        new Op("DELETE", "/api/v1/subsystems/{nqn}/hosts/{host}", null, Query.NONE),
        new Op("POST", "/api/v1/config/import", K.CONFIG, Query.IMPORT),
        new Op("POST", "/api/v1/listeners", K.LISTENER, Query.NONE),
        new Op("DELETE", "/api/v1/listeners/{id}", null, Query.NONE),
        new Op("DELETE", "/api/v1/subsystems/{nqn}/controllers/{cntlid}", null, Query.NONE),
        new Op("GET", "/api/v1/config", null, Query.EXPORT),
        new Op("GET", "/api/v1/subsystems", null, Query.NONE),
        new Op("GET", "/api/v1/subsystems/{nqn}", null, Query.NONE),
        new Op("GET", "/api/v1/subsystems/{nqn}/namespaces", null, Query.NONE),
        new Op("GET", "/api/v1/subsystems/{nqn}/namespaces/{nsid}", null, Query.NONE),
        new Op("GET", "/api/v1/subsystems/{nqn}/hosts", null, Query.NONE),
        new Op("GET", "/api/v1/statistics", null, Query.NONE),
        new Op("GET", "/api/v1/subsystems/{nqn}/statistics", null, Query.NONE),
        new Op("GET", "/api/v1/listeners", null, Query.NONE),
        new Op("GET", "/api/v1/controllers", null, Query.NONE),
        new Op("GET", "/health", null, Query.NONE),
        new Op("GET", "/openapi.yaml", null, Query.NONE),
        new Op("GET", "/metrics", null, Query.NONE),
        new Op("GET", null, null, Query.NONE), // a path of the input's own
    };

    static final String[] METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"};
    /** Path parameters' known values: the first of each is there from the start. */
    static final Map<String, List<String>> KNOWN = Map.of(
            "nqn", List.of(NQN_A, NQN_B, NQN_NEW, Migration.DISCOVERY_NQN, NQN_UUID),
            "nsid", List.of("1", "2", "3"),
            "host", List.of(HOST_1, HOST_2),
            "id", List.of("1", "2"),
            "cntlid", List.of("1"));
    static final String[] CONTENT_TYPES = {null, "application/json; charset=utf-8", "text/plain",
        "application/problem+json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=fuzz",
        "APPLICATION/JSON", "application/json;charset=iso-8859-1"};
    static final String[] MODES = {"replace", "merge", "replace", "merge", "REPLACE", "", null, "sideways"};
    static final String[] FORMATS = {null, null, "native", "nvmetcli", "spdk", "NVMETCLI", "xml", ""};
    static final String[] DRY_RUNS = {null, "true", "false", null, "1", "yes", "", "TRUE"};
    static final K[] BODIES = {K.SUBSYSTEM, K.NAMESPACE, K.LISTENER, K.CONFIG, K.ALLOW, K.HOST_BODY, K.RESIZE};

    /**
     * One request: operation, token, method, path parameters, query, Content-Type, body (the layout the seed
     * writer, {@link Seed}, follows).
     */
    static Request decode(Bytes in) throws IOException {
        Op op = OPS[in.u8() % OPS.length];
        int auth = in.u8() % 32;
        String authorization = auth < 28 ? bearer() : switch (auth) {
            case 28 -> null;
            case 29 -> "Bearer wrong-token-wrong-token-wrong";
            case 30 -> bearer() + "x";
            default -> "Basic YWRtaW46YWRtaW4=";
        };
        int m = in.u8();
        String method = m < 224 ? op.method() : METHODS[m % METHODS.length];
        String path;
        if (op.template() == null) {
            path = marks(loose(in.text()));
            path = path.startsWith("/") ? path : "/" + path;
        } else {
            StringBuilder p = new StringBuilder();
            for (String part : op.template().split("/")) {
                if (part.isEmpty()) {
                    continue;
                }
                p.append('/').append(part.startsWith("{") ? segment(in, part.substring(1, part.length() - 1)) : part);
            }
            path = p.toString();
        }
        List<String> query = new ArrayList<>();
        String format = null;
        if (op.query() == Query.IMPORT) {
            param(query, "mode", pick(in, MODES));
            format = pick(in, FORMATS);
            param(query, "format", format);
            param(query, "dryRun", pick(in, DRY_RUNS));
        } else if (op.query() == Query.EXPORT) {
            param(query, "format", pick(in, FORMATS));
        }
        if (in.u8() >= 224) {
            query.add(marks(loose(in.text()).replace("#", "%23")));
        }
        int c = in.u8();
        int b = in.u8() % 8;
        byte[] body = body(in, op, b, format);
        String contentType = c < 192 ? (body != null ? "application/json" : null)
                : (c - 192) % 9 < 8 ? CONTENT_TYPES[(c - 192) % 9] : printable(in.text());
        return new Request(method, path, String.join("&", query), authorization, contentType, body);
    }

    private static String pick(Bytes in, String[] values) {
        int i = in.u8();
        return i < 248 ? values[i % values.length] : in.text(); // the input's own value, now and then
    }

    private static void param(List<String> query, String name, String value) {
        if (value != null) {
            query.add(name + "=" + strict(value));
        }
    }

    /** A path parameter: usually a known value, else the input's text, a number, nothing, dots or a long name. */
    private static String segment(Bytes in, String name) {
        List<String> known = KNOWN.get(name);
        int m = in.u8();
        if (m < 160) {
            return loose(known.get(m % known.size()));
        }
        return switch ((m - 160) % 8) {
            case 0 -> strict(in.text());
            case 1 -> loose(in.text());
            case 2 -> Long.toString(in.u64());
            case 3 -> new BigInteger(1, java.util.Arrays.copyOf(java.nio.ByteBuffer.allocate(8).putLong(in.u64()).array(),
                    8 + in.u8() % 8)).toString();
            case 4 -> "";
            case 5 -> new String[] {"..", ".", "%2e%2e", "%2E."}[in.u8() % 4];
            case 6 -> loose(known.get(in.u8() % known.size()) + "x".repeat(in.u16() % 8192));
            default -> strict(known.get(in.u8() % known.size()) + in.text());
        };
    }

    private static String marks(String s) {
        return s.replace(SANDBOX_MARK, sandbox.toString()).replace(PORT_MARK, Integer.toString(base.listeners().get(0).port()));
    }

    /** Everything but unreserved characters percent-encoded. */
    static String strict(String s) {
        StringBuilder out = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xFF);
            if (c < 0x80 && (Character.isLetterOrDigit(c) || "-._~".indexOf(c) >= 0)) {
                out.append(c);
            } else {
                out.append(String.format("%%%02X", b & 0xFF));
            }
        }
        return out.toString();
    }

    /**
     * Only what a URI cannot hold percent-encoded: slashes, dots, sub-delimiters and existing escapes pass as they
     * are, so the server sees them.
     */
    static String loose(String s) {
        StringBuilder out = new StringBuilder();
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            char c = (char) (bytes[i] & 0xFF);
            boolean escape = c == '%' && i + 2 < bytes.length && hex(bytes[i + 1]) && hex(bytes[i + 2]);
            if (escape || c < 0x80 && (Character.isLetterOrDigit(c) || "-._~!$&'()*+,;=:@/".indexOf(c) >= 0)) {
                out.append(c);
            } else {
                out.append(String.format("%%%02X", bytes[i] & 0xFF));
            }
        }
        return out.toString();
    }

    private static boolean hex(byte b) {
        return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F';
    }

    private static String printable(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) {
            out.append(c >= 0x20 && c < 0x7F ? c : '?');
        }
        return out.toString().strip();
    }

    // ---------------------------------------------------------------------------------------------------- bodies

    /**
     * The body: 0, 1 built from the operation's schema (none for an operation without one), 2 the live configuration
     * (or a part of it) mutated, 3 the input's bytes, 4 none, 5 built from another operation's schema, 6 built and
     * then damaged as text, 7 built with every field present.
     */
    private static byte[] body(Bytes in, Op op, int mode, String format) throws IOException {
        switch (mode) {
            case 0, 1, 7:
                return op.body() == null ? null : JSON.writeValueAsBytes(new Builder(in, mode == 7).value(op.body(), 0));
            case 2: {
                K kind = op.body() != null ? op.body() : BODIES[in.u8() % BODIES.length];
                JsonNode doc = template(kind, format, in);
                int mutations = in.u8() % 4;
                Builder g = new Builder(in, false);
                for (int i = 0; i < mutations; i++) {
                    doc = g.mutate(doc);
                }
                return JSON.writeValueAsBytes(doc);
            }
            case 3:
                return marks(new String(in.bytes(), StandardCharsets.ISO_8859_1)).getBytes(StandardCharsets.ISO_8859_1);
            case 4:
                return null;
            case 5:
                return JSON.writeValueAsBytes(new Builder(in, false).value(BODIES[in.u8() % BODIES.length], 0));
            default:
                return damage(in, JSON.writeValueAsBytes(new Builder(in, false)
                        .value(op.body() != null ? op.body() : BODIES[in.u8() % BODIES.length], 0)));
        }
    }

    /** The live configuration, or the part of it a body of {@code kind} describes. */
    private static JsonNode template(K kind, String format, Bytes in) throws IOException {
        TargetConfig live = target.live().export();
        switch (kind) {
            case CONFIG:
                if ("nvmetcli".equals(format) || "spdk".equals(format)) {
                    Migration.Format f = Migration.Format.valueOf(format.toUpperCase(java.util.Locale.ROOT));
                    return JSON.readTree(Migration.exportTo(f, live).document());
                }
                return STRICT.valueToTree(live);
            case SUBSYSTEM:
                if (!live.subsystems().isEmpty()) {
                    return STRICT.valueToTree(live.subsystems().get(in.u8() % live.subsystems().size()));
                }
                break;
            case NAMESPACE: {
                if (live.subsystems().isEmpty()) {
                    break;
                }
                SubsystemConfig s = live.subsystems().get(in.u8() % live.subsystems().size());
                return s.namespaces().isEmpty() ? NODES.objectNode()
                        : STRICT.valueToTree(s.namespaces().get(in.u8() % s.namespaces().size()));
            }
            case LISTENER:
                return STRICT.valueToTree(live.listeners().get(in.u8() % live.listeners().size()));
            default:
                break;
        }
        return new Builder(new Bytes(new byte[0]), false).value(kind, 0);
    }

    /** JSON damaged as text, for the parsers in front of the validation. */
    private static byte[] damage(Bytes in, byte[] json) {
        int d = in.u8() % 8;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        switch (d) {
            case 0 -> out.write(json, 0, json.length == 0 ? 0 : in.u16() % json.length);
            case 1 -> {
                out.writeBytes(json);
                out.writeBytes(in.bytes());
            }
            case 2 -> {
                out.writeBytes(new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF});
                out.writeBytes(json);
            }
            case 3 -> out.writeBytes(new String(json, StandardCharsets.UTF_8)
                    .getBytes(in.u8() % 2 == 0 ? StandardCharsets.UTF_16LE : StandardCharsets.UTF_16BE));
            case 4 -> {
                int depth = 1 + in.u8() * 8; // past the parser's nesting limit (1000) at the top
                String open = in.u8() % 2 == 0 ? "[" : "{\"a\":";
                String close = open.equals("[") ? "]" : "}";
                out.writeBytes(open.repeat(depth).getBytes(StandardCharsets.US_ASCII));
                out.writeBytes(json);
                out.writeBytes(close.repeat(depth).getBytes(StandardCharsets.US_ASCII));
            }
            case 5 -> { // a key twice
                String s = new String(json, StandardCharsets.UTF_8);
                int brace = s.indexOf('{');
                String key = "\"" + new String[] {"nqn", "size", "address", "port", "subsystems"}[in.u8() % 5] + "\":";
                out.writeBytes((brace < 0 ? s : s.substring(0, brace + 1) + key + "0," + s.substring(brace + 1))
                        .getBytes(StandardCharsets.UTF_8));
            }
            case 6 -> { // past the body limit
                out.writeBytes(json);
                out.writeBytes(" ".repeat(AdminServer.BODY_LIMIT + 1 - Math.min(json.length, AdminServer.BODY_LIMIT))
                        .getBytes(StandardCharsets.US_ASCII));
            }
            default -> {
                out.writeBytes(json);
                byte[] b = out.toByteArray();
                if (b.length > 0) {
                    b[in.u16() % b.length] = (byte) in.u8();
                }
                return b;
            }
        }
        return out.toByteArray();
    }

    /** Builds JSON values from the input: mostly from the dictionary, sometimes of the wrong type. */
    static final class Builder {
        private final Bytes in;
        private final boolean allFields;

        Builder(Bytes in, boolean allFields) {
            this.in = in;
            this.allFields = allFields;
        }

        JsonNode value(K kind, int depth) {
            int v = in.u8();
            if (v >= 216) {
                return junk(depth);
            }
            if (OBJECTS.containsKey(kind)) {
                ObjectNode o = NODES.objectNode();
                if (depth > 4) {
                    return o;
                }
                for (Field f : OBJECTS.get(kind)) {
                    int p = in.u8();
                    if (allFields || (f.usual() ? p % 8 != 7 : p % 4 != 0)) {
                        o.set(f.name(), value(f.kind(), depth + 1));
                    }
                }
                if (in.u8() >= 240) {
                    o.set(in.u8() % 2 == 0 ? "bogus" : in.text(), junk(depth + 1));
                }
                return o;
            }
            if (ELEMENTS.containsKey(kind)) {
                ArrayNode a = NODES.arrayNode();
                int n = depth > 4 ? 0 : v % 4;
                for (int i = 0; i < n; i++) {
                    a.add(value(ELEMENTS.get(kind), depth + 1));
                }
                return a;
            }
            List<JsonNode> d = dictionary.get(kind);
            return d.get(v % d.size()).deepCopy();
        }

        /** A value of any type: null, booleans, numbers out of every range, strings, containers. */
        JsonNode junk(int depth) {
            switch (in.u8() % 14) {
                case 0: return NODES.nullNode();
                case 1: return NODES.booleanNode(true);
                case 2: return NODES.numberNode(0);
                case 3: return NODES.numberNode(-1);
                case 4: return NODES.numberNode(1.5);
                case 5: return NODES.numberNode(1e300);
                case 6: return NODES.numberNode(new BigInteger("18446744073709551616").shiftLeft(in.u8()));
                case 7: return NODES.numberNode(Long.MIN_VALUE);
                case 8: return NODES.numberNode(2147483648L);
                case 9: return NODES.textNode("");
                case 10: return NODES.textNode(marks(in.text()));
                case 11: return NODES.objectNode();
                case 12: {
                    ArrayNode a = NODES.arrayNode();
                    if (depth < 8) {
                        a.add(junk(depth + 1));
                    }
                    return a;
                }
                default: {
                    K any = K.values()[in.u8() % K.values().length];
                    return depth < 8 ? value(any, depth + 1) : NODES.nullNode();
                }
            }
        }

        /** One change somewhere in {@code root}: a value replaced, removed, nulled, duplicated, added to. */
        JsonNode mutate(JsonNode root) {
            List<Slot> slots = new ArrayList<>();
            collect(root, null, null, -1, slots);
            if (slots.isEmpty()) {
                return root;
            }
            Slot s = slots.get(in.u16() % slots.size());
            K kind = kindOf(s.key(), s.parent());
            switch (in.u8() % 8) {
                case 0 -> s.set(kind != null ? value(kind, 2) : junk(2));
                case 1 -> s.set(junk(2));
                case 2 -> s.remove();
                case 3 -> s.set(NODES.nullNode());
                case 4 -> {
                    if (s.parent() instanceof ArrayNode a) {
                        a.insert(s.index(), s.node().deepCopy());
                    }
                }
                case 5 -> {
                    if (s.node() instanceof ArrayNode a) {
                        K element = kind != null ? ELEMENTS.get(kind) : null;
                        a.add(element != null ? value(element, 2) : a.isEmpty() ? junk(2) : a.get(0).deepCopy());
                    }
                }
                case 6 -> s.set(NODES.textNode(marks(in.text())));
                default -> {
                    if (s.node() instanceof ObjectNode o) {
                        o.set(in.u8() % 2 == 0 ? "bogus" : in.text(), junk(2));
                    }
                }
            }
            return root;
        }

        private static void collect(JsonNode n, JsonNode parent, String key, int index, List<Slot> out) {
            if (parent != null) {
                out.add(new Slot(parent, key, index, n));
            }
            if (n instanceof ObjectNode o) {
                List<String> names = new ArrayList<>();
                o.fieldNames().forEachRemaining(names::add);
                for (String name : names) {
                    collect(o.get(name), o, name, -1, out);
                }
            } else if (n instanceof ArrayNode a) {
                for (int i = 0; i < a.size(); i++) {
                    collect(a.get(i), a, key, i, out);
                }
            }
        }

        /** What a field holds, by its name (native names; the other formats' fall back to junk). */
        private static K kindOf(String key, JsonNode parent) {
            if (key == null) {
                return null;
            }
            if (parent instanceof ArrayNode) { // an element of the array named key
                K list = kindOf(key, null);
                return list != null ? ELEMENTS.get(list) : null;
            }
            return switch (key) {
                case "nqn" -> K.NQN;
                case "hosts" -> K.HOSTS;
                case "serial" -> K.SERIAL;
                case "model" -> K.MODEL;
                case "maxNamespaces" -> K.MAX_NAMESPACES;
                case "allowAnyHost", "sparse" -> K.BOOL;
                case "namespaces" -> K.NAMESPACES;
                case "nsid" -> K.NSID;
                case "backend" -> K.BACKEND;
                case "size" -> K.SIZE;
                case "blockSize" -> K.BLOCK_SIZE;
                case "path" -> K.PATH;
                case "uuid" -> K.UUID;
                case "nguid" -> K.NGUID;
                case "id" -> K.LISTENER_ID;
                case "transport" -> K.TRANSPORT;
                case "address", "traddr" -> K.ADDRESS;
                case "port" -> K.PORT;
                case "inlineDataSize" -> K.INLINE;
                case "maxH2CData" -> K.H2C;
                case "listeners" -> K.LISTENERS;
                case "subsystems" -> parent != null && parent.has("address") ? K.NQNS : K.SUBSYSTEMS;
                case "pollGroups", "busyPollUs", "maxIoQueues", "maxQueueSize", "maxTransferSize" -> K.COUNT;
                case "maxConnectionMemory", "maxMemory", "maxSparseMemory" -> K.MEMORY;
                default -> null;
            };
        }
    }

    /** A place in a JSON tree: a field of an object or an element of an array. */
    record Slot(JsonNode parent, String key, int index, JsonNode node) {
        void set(JsonNode v) {
            if (parent instanceof ObjectNode o) {
                o.set(key, v);
            } else {
                ((ArrayNode) parent).set(index, v);
            }
        }

        void remove() {
            if (parent instanceof ObjectNode o) {
                o.remove(key);
            } else {
                ((ArrayNode) parent).remove(index);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------- seeds

    /** Writes inputs in the layout {@link #decode} reads; used by {@link #writeSeeds}. */
    static final class Seed {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private int requests;

        /**
         * A request of operation {@code op} (index in OPS) with the token and the operation's method.
         *
         * @param segments per path parameter: an Integer, the index of a known value, a String, sent
         *                 percent-encoded, or an int[], the bytes {@link #segment} reads
         */
        Seed request(int op, Object... segments) {
            return requestAs(0, op, segments);
        }

        /** The same with {@code auth} 0: the token, 28: none, 29: a wrong one, 31: Basic. */
        Seed requestAs(int auth, int op, Object... segments) {
            return requestWith(auth, 0, op, segments);
        }

        /** The same with {@code method}: under 224 the operation's, else METHODS[method % 8]. */
        Seed requestWith(int auth, int method, int op, Object... segments) {
            requests++;
            out.write(op);
            out.write(auth);
            out.write(method);
            for (Object s : segments) {
                if (s instanceof Integer i) {
                    out.write(i);
                } else if (s instanceof int[] raw) {
                    for (int b : raw) {
                        out.write(b);
                    }
                } else {
                    out.write(160);
                    text((String) s);
                }
            }
            return this;
        }

        /** A path of the input's own (the last operation), sent as loosely encoded. */
        Seed ownPath(int auth, String path) {
            requests++;
            out.write(OPS.length - 1);
            out.write(auth);
            out.write(0);
            text(path);
            return this;
        }

        /** The operation's query choices: indexes in MODES, FORMATS, DRY_RUNS (import) or FORMATS (export). */
        Seed query(int... choices) {
            for (int c : choices) {
                out.write(c);
            }
            return this;
        }

        /** No extra query, the usual Content-Type, and {@code json} as the body. */
        Seed literal(String json) {
            return literal(0, json);
        }

        /** No extra query, Content-Type choice {@code contentType} (0: JSON), and {@code text} as the body. */
        Seed literal(int contentType, String text) {
            out.write(0);
            out.write(contentType);
            out.write(3);
            text(text);
            return this;
        }

        /** No extra query, Content-Type choice {@code contentType} (under 192: the usual), body mode {@code mode}, {@code bytes}. */
        Seed body(int contentType, int mode, int... bytes) {
            out.write(0);
            out.write(contentType);
            out.write(mode);
            for (int b : bytes) {
                out.write(b);
            }
            return this;
        }

        /** No extra query, no Content-Type, no body. */
        Seed none() {
            return body(0, 4);
        }

        private void text(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            if (b.length < 128) {
                out.write(b.length);
            } else {
                out.write(0x80 | b.length >> 8);
                out.write(b.length & 0xFF);
            }
            out.writeBytes(b);
        }

        byte[] bytes() {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            all.write(requests - 1);
            all.writeBytes(out.toByteArray());
            return all.toByteArray();
        }
    }

    /** Writes the seeds: {@code -Dtest=AdminApiFuzzSeeds -Dfuzz.writeSeeds=true}. */
    static void writeSeeds(Path dir) throws IOException {
        Files.createDirectories(dir);
        String sb = SANDBOX_MARK;
        seed(dir, "create-subsystem", new Seed()
                .request(0).literal("{\"nqn\":\"" + NQN_NEW + "\",\"model\":\"fuzz\",\"maxNamespaces\":4,"
                        + "\"allowAnyHost\":false,\"hosts\":[\"" + HOST_2 + "\"],\"namespaces\":[{\"size\":\"1MiB\"},"
                        + "{\"nsid\":3,\"backend\":\"file\",\"path\":\"" + sb + "/a.img\",\"size\":\"2MiB\"}]}")
                .request(14, 2).none());
        seed(dir, "add-namespace", new Seed()
                .request(1, 0).literal("{\"nsid\":2,\"backend\":\"ram\",\"size\":\"4MiB\",\"blockSize\":4096,"
                        + "\"uuid\":\"11111111-2222-3333-4444-555555555555\",\"nguid\":\"00112233445566778899AABBCCDDEEFF\","
                        + "\"sparse\":true}")
                .request(16, 0, 1).none()
                .request(6, 0, 1).none());
        seed(dir, "hosts-and-patch", new Seed()
                .request(2, 1).literal("{\"nqn\":\"" + HOST_2 + "\"}")
                .request(3, 1).literal("{\"allowAnyHost\":true}")
                .request(7, 1, 0).none());
        seed(dir, "file-namespace-grows", new Seed()
                .request(1, 0).literal("{\"backend\":\"file\",\"path\":\"" + sb + "/grow.img\",\"size\":\"1MiB\"}")
                .request(4, 0, 1).literal("{\"size\":\"2MiB\"}")
                .request(4, 0, 0).literal("{\"size\":\"4MiB\"}"));
        seed(dir, "delete-subsystem", new Seed()
                .request(5, 1).none()
                .request(13).none());
        seed(dir, "import-merge", new Seed()
                .request(8).query(1, 0, 0).literal("{\"subsystems\":[{\"nqn\":\"" + NQN_NEW + "\",\"hosts\":[\""
                        + HOST_1 + "\"],\"namespaces\":[{\"nsid\":1,\"backend\":\"ram\",\"size\":\"2m\",\"blockSize\":512}]}],"
                        + "\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\",\"port\":0,\"subsystems\":[\""
                        + NQN_NEW + "\"]}]}"));
        seed(dir, "import-replace-export", new Seed()
                .request(8).query(0, 0, 1).body(0, 2, 0)
                .request(8).query(0, 0, 0).body(0, 2, 1, 0, 0, 2));
        // The foreign formats name listener 1's port (so the endpoint is the live one) and, for nvmetcli, a file
        // namespace (nvmet has no RAM backend) whose file the first request creates.
        int marked = 65432;
        seed(dir, "import-nvmetcli", new Seed()
                .request(1, 0).literal("{\"backend\":\"file\",\"path\":\"" + sb + "/nvmet.img\",\"size\":\"1MiB\"}")
                .request(6, 0, 1).none()
                .request(8).query(0, 3, 0).literal(Migration.exportTo(Migration.Format.NVMETCLI, new TargetConfig(null,
                        null, null, null, List.of(new ListenerConfig(1, "tcp", "127.0.0.1", marked, null, null, null)),
                        List.of(new SubsystemConfig(NQN_NEW, "SN-NVMET", null, null, false, List.of(HOST_2),
                                List.of(new NamespaceConfig(1L, "file", null, null, sb + "/nvmet.img",
                                        "11111111-2222-3333-4444-555555555555")))))).document()
                        .replace("\"" + marked + "\"", "\"" + PORT_MARK + "\"")));
        seed(dir, "import-spdk", new Seed()
                .request(8).query(0, 4, 1).literal(Migration.exportTo(Migration.Format.SPDK, new TargetConfig(null,
                        null, null, null, List.of(new ListenerConfig(1, "tcp", "127.0.0.1", marked, null, null, null)),
                        List.of(new SubsystemConfig(NQN_NEW, "SN-SPDK", "spdk model", 8, true, null,
                                List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null)))))).document()
                        .replace("\"" + marked + "\"", "\"" + PORT_MARK + "\"")));
        seed(dir, "listeners", new Seed()
                .request(9).literal("{\"address\":\"127.0.0.1\",\"port\":0,\"subsystems\":[\"" + NQN_A + "\"]}")
                .request(10, 1).none()
                .request(10, 0).none()
                .request(20).none());
        seed(dir, "bad-values", new Seed()
                .request(0).literal("{\"nqn\":\"not an nqn\",\"serial\":\"" + "x".repeat(21) + "\"}")
                .request(1, 0).literal("{\"nsid\":0,\"size\":\"-1\",\"blockSize\":3,\"backend\":\"tape\"}")
                .request(4, 0, 0).literal("{\"size\":\"lots\"}")
                .request(10, "0").none());
        seed(dir, "without-the-token", new Seed()
                .requestAs(28, 0).literal("{\"nqn\":\"" + NQN_NEW + "\"}")
                .requestAs(29, 5, 0).none()
                .requestAs(28, 24).none());
        // Built from the schema: a subsystem with one namespace of the usual values (the bytes the builder reads,
        // in its order), then a namespace with every field.
        seed(dir, "generated", new Seed()
                .request(0).body(0, 0, /* an object; nqn present: NQN_NEW */ 0, 0, 0,
                        /* serial, model, maxNamespaces, allowAnyHost, hosts absent */ 0, 0, 0, 0, 0,
                        /* namespaces present, one */ 1, 1, /* an object; nsid, backend absent */ 0, 0, 0,
                        /* size present: 1MiB */ 0, 0, /* blockSize, path, uuid, nguid, sparse absent; no extra */ 0, 0, 0,
                        0, 0, 0, /* no extra field */ 0)
                .request(1, 2).body(0, 7));
        seed(dir, "own-paths", new Seed()
                .ownPath(28, "/api/v1/../../health").none()
                .ownPath(28, "//api/v1/subsystems").none()
                .ownPath(0, "/api/v1/subsystems/").none()
                .ownPath(0, "/api/v2/nothing").none());
        seed(dir, "exports", new Seed()
                .request(12).query(3).none()
                .request(12).query(4).none()
                .request(12).query(6).none()
                .requestAs(28, 23).none());
        // text/plain; past the body limit (the usual subsystem body padded); JSON in UTF-16.
        seed(dir, "content-types-and-limits", new Seed()
                .request(0).literal(194, "{\"nqn\":\"" + NQN_NEW + "\"}")
                .request(0).body(0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6)
                .request(0).body(0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1));
    }

    /** The findings, minimized by hand to the request that shows each, in the same layout. */
    static void writeFindings(Path dir) throws IOException {
        seed(dir, "finding-1-refused-file-namespace-leaves-its-file", new Seed()
                .request(1, 0).literal("{\"backend\":\"file\",\"path\":\"" + SANDBOX_MARK + "/new.img\",\"size\":\"0MiB\"}"));
        seed(dir, "finding-2-form-content-type-on-a-get", new Seed()
                .requestAs(28, 22).body(192 + 4, 4)); // GET /health, application/x-www-form-urlencoded, no body
        seed(dir, "finding-3-request-line-too-long", new Seed()
                .request(5, new int[] {160 + 6, 0, 5000 >> 8, 5000 & 0xFF}).none()); // NQN_A and 5000 x
        seed(dir, "finding-4-trace-on-metrics", new Seed()
                .requestWith(31, 224 + 7, 24).none()); // TRACE /metrics, with Basic credentials
        seed(dir, "finding-5-import-with-a-null-subsystem", new Seed()
                .request(8).query(0, 0, 0).literal("{\"subsystems\":[null]}"));
        seed(dir, "finding-6-import-gives-a-named-id-to-another-listener", new Seed()
                .request(8).query(0, 0, 0).literal("{\"listeners\":[{\"address\":\"127.0.0.1\",\"port\":0},"
                        + "{\"id\":1,\"address\":\"127.0.0.1\",\"port\":0}]}"));
        seed(dir, "finding-7-path-with-a-nul-character", new Seed()
                .request(1, 0).literal("{\"path\":\"" + SANDBOX_MARK + "/a\\u0000b.img\",\"size\":\"1MiB\"}"));
        seed(dir, "finding-8-delete-a-subsystem-a-listener-names", new Seed()
                .request(9).literal("{\"address\":\"127.0.0.1\",\"port\":0,\"subsystems\":[\"" + NQN_B + "\"]}")
                .request(5, 1).none());
    }

    private static void seed(Path dir, String name, Seed s) throws IOException {
        Files.write(dir.resolve(name), s.bytes());
    }
}

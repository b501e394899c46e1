package io.nvmeof.admin;

import io.nvmeof.tgt.live.LiveConfiguration;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.openapi.router.OpenAPIRoute;
import io.vertx.ext.web.openapi.router.RequestExtractor;
import io.vertx.ext.web.openapi.router.RouterBuilder;
import io.vertx.openapi.contract.OpenAPIContract;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API of a running target: the OpenAPI document ({@value #CONTRACT}) is the source of truth, and every
 * request is validated against it before a handler runs. {@code /health} and {@code /openapi.yaml} need no token;
 * everything under {@code /api}, and {@code /metrics} (Prometheus text), needs the bearer token (Prometheus sends it
 * with {@code authorization: credentials_file}). Errors are problem+json ({@link Problems}).
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);
    static final String CONTRACT = "nvmeof-admin-openapi.yaml";
    /** Largest request body accepted: an imported SPDK save_config with hundreds of namespaces fits. */
    static final int BODY_LIMIT = 1024 * 1024;

    private final Vertx vertx;
    private final HttpServer server;

    private AdminServer(Vertx vertx, HttpServer server) {
        this.vertx = vertx;
        this.server = server;
    }

    /** Starts serving {@code live}; blocks until listening. */
    public static AdminServer start(LiveConfiguration live, AdminOptions options) throws IOException {
        if (options.tls() == null && !InetAddress.getByName(options.host()).isLoopbackAddress()) {
            // The token and every configuration travel in the clear without TLS: only the local machine may see them.
            throw new IllegalArgumentException("the admin API listens on " + options.host() + ", which is not a"
                    + " loopback address, only with TLS: give a PEM certificate and key (--admin-tls-cert,"
                    + " --admin-tls-key), or listen on 127.0.0.1 and reach it through an SSH tunnel");
        }
        // HTTP/1.1 (no h2c upgrade): a request asking for the upgrade whose headers were past the limit went
        // unanswered, and the API gains nothing from HTTP/2 over loopback.
        HttpServerOptions serverOptions = new HttpServerOptions().setHttp2ClearTextEnabled(false);
        if (options.tls() != null) {
            serverOptions.setSsl(true).setKeyCertOptions(pem(options.tls()));
        }
        PathPolicy paths = new PathPolicy(options.allowedDirs());
        String contractText = resource(CONTRACT);
        Vertx vertx = Vertx.vertx();
        try {
            OpenAPIContract contract = OpenAPIContract.from(vertx, new io.vertx.core.json.JsonObject(
                    new org.yaml.snakeyaml.Yaml().<java.util.Map<String, Object>>load(contractText))).await();
            Router router = router(vertx, contract, live, paths, options.token(), contractText);
            HttpServer server = vertx.createHttpServer(serverOptions).requestHandler(router)
                    .invalidRequestHandler(r -> invalidRequest(r, serverOptions))
                    .listen(options.port(), options.host()).await();
            LOG.info("admin API on {}://{}:{}/api/v1 (OpenAPI at /openapi.yaml)", options.tls() != null ? "https" : "http",
                    options.host(), server.actualPort());
            return new AdminServer(vertx, server);
        } catch (RuntimeException e) {
            vertx.close();
            throw new IOException("the admin API could not start on " + options.host() + ":" + options.port() + ": "
                    + e.getMessage(), e);
        }
    }

    /** Reads the PEM files up front, so a missing or unreadable one is named before anything listens. */
    private static PemKeyCertOptions pem(AdminOptions.Tls tls) throws IOException {
        for (java.nio.file.Path p : new java.nio.file.Path[] {tls.certificate(), tls.key()}) {
            if (!java.nio.file.Files.isReadable(p)) {
                throw new IOException("the admin API's TLS file " + p + " does not exist or cannot be read");
            }
        }
        String cert = java.nio.file.Files.readString(tls.certificate(), StandardCharsets.US_ASCII);
        String key = java.nio.file.Files.readString(tls.key(), StandardCharsets.US_ASCII);
        if (!cert.contains("-----BEGIN CERTIFICATE-----")) {
            throw new IOException(tls.certificate() + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        if (!key.matches("(?s).*-----BEGIN (RSA |EC )?PRIVATE KEY-----.*")) {
            throw new IOException(tls.key() + " holds no unencrypted PEM private key (PKCS#8, RSA or EC)");
        }
        return new PemKeyCertOptions().setCertValue(Buffer.buffer(cert)).setKeyValue(Buffer.buffer(key));
    }

    private static Router router(Vertx vertx, OpenAPIContract contract, LiveConfiguration live, PathPolicy paths,
                                 String token, String contractText) {
        RouterBuilder rb = RouterBuilder.create(vertx, contract, RequestExtractor.withBodyHandler());
        rb.getRoute("getHealth").addHandler(rc -> Health.answer(rc, live));
        new ConfigurationRoutes(vertx, live, paths).mount(rb);
        // The bearer scheme is declared in the contract for clients; a static token is checked below, before routing
        // (Vert.x's security handlers are for Basic, JWT, OAuth2 and the like).
        for (OpenAPIRoute r : rb.getRoutes()) {
            r.setDoSecurity(false);
        }
        Router api = rb.createRouter();
        Router root = Router.router(vertx);
        byte[] expected = token.getBytes(StandardCharsets.UTF_8);
        // The server's own resources take GET only; the API's router, which gets the rest, knows no such path (404).
        for (String own : new String[] {"/metrics", "/openapi.yaml"}) {
            root.route(own).handler(rc -> {
                if (rc.request().method() == io.vertx.core.http.HttpMethod.GET) {
                    rc.next();
                } else {
                    notAllowed(rc, "GET");
                }
            });
        }
        // The token first: a client without it gets 401 before any body of its is read or parsed.
        AuditLog audit = new AuditLog(token);
        root.route("/api/*").handler(rc -> checkToken(rc, expected, audit));
        root.get("/metrics").handler(rc -> checkToken(rc, expected, audit));
        root.route("/api/*").handler(rc -> {
            audit.watch(rc);
            rc.next();
        });
        root.route().handler(AdminServer::refuseOtherMediaTypes);
        // No file uploads: the API takes JSON only (the default handler would write multipart files to file-uploads/).
        root.route().handler(BodyHandler.create(false).setBodyLimit(BODY_LIMIT));
        Metrics metrics = new Metrics(live);
        root.get("/metrics").blockingHandler(rc -> {
            try {
                rc.response().putHeader("Content-Type", metrics.contentType()).end(metrics.scrape());
            } catch (IOException e) {
                rc.fail(e);
            }
        });
        root.get("/openapi.yaml").handler(rc -> rc.response().putHeader("Content-Type", "application/yaml").end(contractText));
        root.route("/*").subRouter(api);
        UnknownFields fields = new UnknownFields(contract);
        root.route().failureHandler(rc -> Problems.handle(rc, fields));
        root.errorHandler(404, rc -> Problems.send(rc, 404, Problems.body(404, "Not Found",
                "no resource at " + rc.request().path() + " (see /openapi.yaml)")));
        // An API path the contract has with another method: Allow names those it has (RFC 9110 requires it on a 405).
        root.errorHandler(405, rc -> {
            String allow = null;
            try {
                io.vertx.openapi.contract.Path p = contract.findPath(rc.request().path());
                allow = p == null ? null : String.join(", ", p.getOperations().stream()
                        .map(o -> o.getHttpMethod().name()).sorted().toList());
            } catch (RuntimeException e) {
                // the client's path, matched against the contract's templates: without Allow rather than a 500
            }
            notAllowed(rc, allow);
        });
        return root;
    }

    /** 405, with the methods the path takes when known ({@code allow}: the Allow header's value). */
    private static void notAllowed(RoutingContext rc, String allow) {
        if (allow != null) {
            rc.response().putHeader("Allow", allow);
        }
        Problems.send(rc, 405, Problems.body(405, "Method Not Allowed", rc.request().method() + " is not allowed on "
                + rc.request().path() + (allow != null ? "; use " + allow : "")));
    }

    /**
     * A body in another format than JSON is refused (415) before the body handler reads it: the API takes JSON only,
     * the handler would decode a form (and throws for a GET or TRACE carrying a form's Content-Type, which is therefore
     * refused even without a body), and curl -d sends a form unless told otherwise: the answer says which header to
     * send, where the contract's validation only said the body's format is not supported. JSON's media type is passed
     * on in lower case.
     */
    private static void refuseOtherMediaTypes(RoutingContext rc) {
        String type = rc.request().getHeader("Content-Type");
        String media = type == null ? "" : type.split(";", 2)[0].strip().toLowerCase(java.util.Locale.ROOT);
        boolean form = media.equals("application/x-www-form-urlencoded") || media.startsWith("multipart/");
        String length = rc.request().getHeader("Content-Length");
        boolean body = length != null ? !length.strip().equals("0") : rc.request().getHeader("Transfer-Encoding") != null;
        if (form || body && !media.equals("application/json")) {
            Problems.send(rc, 415, Problems.body(415, "Unsupported Media Type", "the admin API takes JSON bodies, not "
                    + (media.isEmpty() ? "a body without a Content-Type" : media) + ": send them with Content-Type:"
                    + " application/json (with curl: -H 'Content-Type: application/json', since -d alone sends a form)"));
            return;
        }
        if (media.equals("application/json") && !type.strip().startsWith(media)) {
            // Media types are case-insensitive (RFC 9110), the contract's validation compares them as written.
            int semi = type.indexOf(';');
            rc.request().headers().set("Content-Type", media + (semi < 0 ? "" : type.substring(semi)));
        }
        rc.next();
    }

    /**
     * What the HTTP decoder refuses before any route sees it: a request line or headers past the server's limits, or
     * bytes that are no HTTP request. Answered as a problem like every other error (Vert.x's own handler answers with
     * an empty body, or only closes), then the connection is closed: after such a request its framing is lost.
     */
    private static void invalidRequest(io.vertx.core.http.HttpServerRequest request, HttpServerOptions limits) {
        Throwable cause = request.decoderResult().cause();
        int status;
        String title;
        String detail;
        if (cause instanceof io.netty.handler.codec.http.TooLongHttpLineException) {
            status = 414;
            title = "URI Too Long";
            detail = "the request line is longer than the API accepts (" + limits.getMaxInitialLineLength()
                    + " bytes): shorten the path or query (an NQN has at most 223 bytes)";
        } else if (cause instanceof io.netty.handler.codec.http.TooLongHttpHeaderException) {
            status = 431;
            title = "Request Header Fields Too Large";
            detail = "the request's headers are larger than the API accepts (" + limits.getMaxHeaderSize()
                    + " bytes in all): send fewer or shorter headers";
        } else {
            status = 400;
            title = "Bad Request";
            detail = "not a valid HTTP/1.1 request" + (cause != null && cause.getMessage() != null
                    ? ": " + cause.getMessage() : "");
        }
        request.response().setStatusCode(status).putHeader("Content-Type", Problems.PROBLEM_JSON)
                .putHeader("Connection", "close").end(Problems.body(status, title, detail).encode());
    }

    /**
     * The Authorization header's bearer credentials compared with the token in constant time. The scheme's name is
     * case-insensitive and may be followed by several spaces (RFC 9110, 11.1 and 11.4).
     */
    private static void checkToken(RoutingContext rc, byte[] expected, AuditLog audit) {
        String h = rc.request().getHeader("Authorization");
        int space = h == null ? -1 : h.indexOf(' ');
        if (space > 0 && h.substring(0, space).equalsIgnoreCase("Bearer")
                && MessageDigest.isEqual(h.substring(space).strip().getBytes(StandardCharsets.UTF_8), expected)) {
            rc.next();
            return;
        }
        boolean bearer = space > 0 && h.substring(0, space).equalsIgnoreCase("Bearer");
        audit.unauthorized(rc, h == null ? "no token" : bearer ? "wrong token" : "not a bearer token");
        rc.response().putHeader("WWW-Authenticate", "Bearer");
        String send = "send the admin token as 'Authorization: Bearer TOKEN' (its file is printed when the target starts)";
        String detail;
        if (h == null) {
            detail = send;
        } else if (!bearer) {
            // Nothing of the header is repeated: it may be the token itself, and refusals are logged.
            detail = "the Authorization header does not start with the Bearer scheme: " + send;
        } else {
            detail = "the bearer token is wrong (its file is printed when the target starts)";
        }
        Problems.send(rc, 401, Problems.body(401, "Unauthorized", detail));
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = AdminServer.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException(name + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    public int port() {
        return server.actualPort();
    }

    @Override
    public void close() {
        server.close().await();
        vertx.close().await();
    }
}

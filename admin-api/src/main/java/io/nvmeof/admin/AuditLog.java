package io.nvmeof.admin;

import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API's audit trail, on its own logger ({@value #LOGGER}) so it can be routed and kept apart. Each request
 * that asks for a change is logged once it has been answered, saying who (the token's fingerprint, never the token),
 * from where (the client's address and port), the method and path, and what changed: one INFO line per change (an
 * import has one per subsystem, namespace, host or listener it adds or removes), a WARN line per security setting an
 * import dropped, or one INFO line saying why the request was refused. Reads are not logged. A request without the
 * right token is a WARN line with the client's address, at most one a minute per address (the next says how many
 * came in between), so that a client guessing tokens cannot flood the log.
 */
final class AuditLog {
    static final String LOGGER = "io.nvmeof.admin.audit";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
    private static final String CHANGES = AuditLog.class.getName() + ".changes";
    private static final String DROPPED = AuditLog.class.getName() + ".dropped";
    private static final String REFUSAL = AuditLog.class.getName() + ".refusal";
    private static final long UNAUTHORIZED_WINDOW_NANOS = TimeUnit.MINUTES.toNanos(1);
    /** Addresses remembered for the rate limit; past this many the memory starts over (a burst of addresses). */
    private static final int UNAUTHORIZED_ADDRESSES = 10_000;
    /** Longest path logged for a request without the token: the rest is the client's to fill. */
    private static final int UNAUTHORIZED_PATH_CHARS = 200;

    private final String identity;
    /** By client address: when its current window started, and how many refusals it has had since. */
    private final Map<String, long[]> unauthorized = new ConcurrentHashMap<>();

    AuditLog(String token) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
            identity = "token sha256:" + HexFormat.of().formatHex(hash, 0, 4);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java has SHA-256", e);
        }
    }

    /** What a request changed, one line per change (set by its handler before it answers). */
    static void changed(RoutingContext rc, List<String> changes) {
        rc.put(CHANGES, changes);
    }

    /** The security settings an import dropped because the administrator said to. */
    static void droppedSecurity(RoutingContext rc, List<String> settings) {
        rc.put(DROPPED, settings);
    }

    /** Why a request was refused (the problem's detail). */
    static void refused(RoutingContext rc, String detail) {
        rc.put(REFUSAL, detail);
    }

    /** Logs {@code rc} once it has been answered, when it asks for a change (any method but GET, HEAD, OPTIONS). */
    void watch(RoutingContext rc) {
        HttpMethod m = rc.request().method();
        if (m != HttpMethod.GET && m != HttpMethod.HEAD && m != HttpMethod.OPTIONS) {
            rc.addEndHandler(done -> log(rc));
        }
    }

    private void log(RoutingContext rc) {
        String request = client(rc) + " " + identity + " " + rc.request().method() + " " + printable(rc.request().uri());
        int status = rc.response().getStatusCode();
        List<String> changes = rc.get(CHANGES);
        if (status >= 300 || changes == null) {
            String why = rc.get(REFUSAL);
            LOG.info("{}: refused ({}): {}", request, status, printable(why != null ? why : "no reason given"));
            return;
        }
        if (changes.isEmpty()) {
            LOG.info("{}: {} nothing to change", request, status);
        }
        for (String change : changes) {
            LOG.info("{}: {} {}", request, status, printable(change));
        }
        List<String> dropped = rc.get(DROPPED);
        for (String setting : dropped != null ? dropped : List.<String>of()) {
            LOG.warn("{}: {} dropped security setting {}", request, status, printable(setting));
        }
    }

    /** A request refused for want of the right token ({@code why}: none, or a wrong one), rate-limited by address. */
    void unauthorized(RoutingContext rc, String why) {
        String address = rc.request().remoteAddress() != null ? rc.request().remoteAddress().hostAddress() : "unknown";
        long now = System.nanoTime();
        long[] refusedBefore = {-1};
        unauthorized.compute(address, (a, window) -> {
            if (window == null || now - window[0] >= UNAUTHORIZED_WINDOW_NANOS) {
                refusedBefore[0] = window == null ? 0 : window[1];
                return new long[] {now, 0};
            }
            window[1]++;
            return window;
        });
        if (refusedBefore[0] >= 0) {
            String path = rc.request().path();
            LOG.warn("{} {} {}: 401 {}{}", client(rc), rc.request().method(), printable(path.length()
                    > UNAUTHORIZED_PATH_CHARS ? path.substring(0, UNAUTHORIZED_PATH_CHARS) + "..." : path), why,
                    refusedBefore[0] > 0 ? " (and " + refusedBefore[0] + " more from " + address
                            + " in the minute before, not logged one by one)" : "");
        }
        if (unauthorized.size() > UNAUTHORIZED_ADDRESSES) {
            unauthorized.clear();
        }
    }

    private static String client(RoutingContext rc) {
        return rc.request().remoteAddress() != null ? rc.request().remoteAddress().hostAddress() + ":"
                + rc.request().remoteAddress().port() : "unknown";
    }

    /** Control characters escaped: what a client sent never starts a line of its own in the log. */
    private static String printable(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c == 0x7F) {
                b.append(String.format("\\x%02x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}

package io.nvmeof.admin;

import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.HttpException;
import io.vertx.json.schema.OutputUnit;
import io.vertx.openapi.validation.SchemaValidationException;
import io.vertx.openapi.validation.ValidatorException;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** RFC 9457 problem details: every error the API answers, with a detail that says what to change. */
final class Problems {
    private static final Logger LOG = LoggerFactory.getLogger(Problems.class);
    static final String PROBLEM_JSON = "application/problem+json";
    /** The schema validator's words for a field the schema does not list (additionalProperties: false). */
    private static final Pattern UNKNOWN_FIELD = Pattern.compile("Property \"(.*)\" does not match additional properties schema");

    private Problems() {
    }

    /**
     * The router's failure handler: validation failures, refused changes, and anything unexpected; {@code fields}
     * words the refusal of an unknown field.
     */
    static void handle(RoutingContext rc, UnknownFields fields) {
        Throwable f = rc.failure();
        int status = rc.statusCode() > 0 ? rc.statusCode() : 500;
        if (f instanceof HttpException he) {
            status = he.getStatusCode();
            f = he.getCause() != null ? he.getCause() : f;
        }
        if (f instanceof ValidatorException ve) {
            send(rc, 400, validation(rc, ve, fields));
        } else if (f instanceof ConfigurationRoutes.SecurityNotCarried s) {
            JsonObject p = body(422, "Security Settings Not Carried Over", s.getMessage());
            send(rc, 422, p.put("securitySettings", new JsonArray(s.settings())));
        } else if (f instanceof PathPolicy.ApiRefusal r) {
            send(rc, 400, body(400, "Invalid Request", r.getMessage()));
        } else if (f instanceof ConfigurationException ce) {
            send(rc, statusOf(ce), body(statusOf(ce), titleOf(ce), ce.getMessage()));
        } else if (status == 413) {
            send(rc, 413, body(413, "Content Too Large", "the request body is larger than the API accepts ("
                    + (AdminServer.BODY_LIMIT >> 10) + " KiB)"));
        } else if (status >= 500 || f != null && !(f instanceof HttpException)) {
            // The client gets a reference to the log entry, not Java's account of the failure.
            String incident = java.util.HexFormat.of().toHexDigits(java.util.concurrent.ThreadLocalRandom.current().nextInt());
            LOG.error("admin API: {} {} failed (incident {})", rc.request().method(), rc.request().path(), incident, f);
            send(rc, 500, body(500, "Internal Server Error", "the request failed inside the target (incident "
                    + incident + " in the target's log says why); GET /api/v1/config shows what is live"));
        } else {
            send(rc, status, body(status, "Error", f != null ? f.getMessage() : null));
        }
    }

    static int statusOf(ConfigurationException e) {
        switch (e.kind()) {
            case NOT_FOUND: return 404;
            case CONFLICT: return 409;
            case NOT_SAVED: return 507; // the change could not be stored (RFC 4918), so it was not made
            default: return 400;
        }
    }

    private static String titleOf(ConfigurationException e) {
        switch (e.kind()) {
            case NOT_FOUND: return "Not Found";
            case CONFLICT: return "Conflict";
            case NOT_SAVED: return "Insufficient Storage";
            default: return "Invalid Request";
        }
    }

    /**
     * A schema violation: the most specific error (the deepest keyword location) as the detail, naming the field;
     * all of them in "errors".
     */
    private static JsonObject validation(RoutingContext rc, ValidatorException ve, UnknownFields fields) {
        JsonObject p = body(400, "Request validation failed", ve.getMessage()).put("errorType", ve.type().name());
        if (ve instanceof SchemaValidationException se) {
            OutputUnit root = se.getOutputUnit();
            List<OutputUnit> list = root.getErrors() == null || root.getErrors().isEmpty() ? List.of(root) : root.getErrors();
            OutputUnit best = list.stream()
                    .max(Comparator.comparingInt((OutputUnit e) -> e.getKeywordLocation().split("/").length))
                    .orElse(root);
            String at = best.getInstanceLocation();
            String where = ve.getMessage() != null && ve.getMessage().contains("parameter") ? ve.getMessage() + ": "
                    : at != null && at.length() > 1 ? "field '" + at.substring(2) + "': " : "request body: ";
            p.put("detail", where + best.getError());
            // An unknown field is the likeliest mistake (a typo, or a field this operation cannot change): say which,
            // before any "required" error the same body also has.
            for (OutputUnit e : list) {
                Matcher m = e.getError() == null ? null : UNKNOWN_FIELD.matcher(e.getError());
                if (m != null && m.find()) {
                    String name = m.group(1);
                    String pointer = e.getInstanceLocation() == null ? "" : e.getInstanceLocation().replaceFirst("^#", "");
                    if (pointer.endsWith("/" + name)) {
                        pointer = pointer.substring(0, pointer.length() - name.length() - 1);
                    }
                    String detail = fields == null ? null
                            : fields.detail(rc.request().method(), rc.request().path(), pointer, name);
                    if (detail != null) {
                        p.put("detail", detail);
                        break;
                    }
                }
            }
            JsonArray errors = new JsonArray();
            for (OutputUnit e : list) {
                errors.add(new JsonObject().put("pointer", e.getInstanceLocation()).put("keyword", e.getKeywordLocation())
                        .put("detail", e.getError()));
            }
            p.put("errors", errors);
        }
        return p;
    }

    static JsonObject body(int status, String title, String detail) {
        JsonObject p = new JsonObject().put("type", "about:blank").put("title", title).put("status", status);
        if (detail != null) {
            p.put("detail", detail);
        }
        return p;
    }

    static void send(RoutingContext rc, int status, JsonObject problem) {
        if (rc.response().ended()) {
            return;
        }
        AuditLog.refused(rc, problem.getString("detail"));
        rc.response().setStatusCode(status).putHeader("Content-Type", PROBLEM_JSON).end(problem.encode());
    }
}

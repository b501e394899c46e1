package io.nvmeof.admin;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.admin.migration.Migration;
import io.nvmeof.target.LiveConfiguration;
import io.nvmeof.target.config.TargetConfig;
import io.nvmeof.target.config.TargetConfig.ListenerConfig;
import io.nvmeof.target.config.TargetConfig.NamespaceConfig;
import io.nvmeof.target.config.TargetConfig.SubsystemConfig;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.openapi.router.RouterBuilder;
import io.vertx.openapi.validation.ValidatedRequest;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The handlers of the configuration resources: each maps one OpenAPI operation onto {@link LiveConfiguration}.
 * Requests arrive validated against the contract; changes run on a worker thread (opening a file backend blocks),
 * never on the event loop.
 */
final class ConfigurationRoutes {
    /** One response header per item an exported nvmetcli or SPDK document cannot express. */
    static final String NOT_MAPPED_HEADER = "Nvmeof-Not-Mapped";
    private final Vertx vertx;
    private final LiveConfiguration live;
    private final PathPolicy paths;
    private final ObjectMapper json = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .setSerializationInclusion(JsonInclude.Include.NON_NULL);

    ConfigurationRoutes(Vertx vertx, LiveConfiguration live, PathPolicy paths) {
        this.vertx = vertx;
        this.live = live;
        this.paths = paths;
    }

    void mount(RouterBuilder rb) {
        on(rb, "exportConfig", rc -> {
            Migration.Format format = format(rc);
            if (format == null) {
                reply(rc, 200, live::export);
                return;
            }
            vertx.executeBlocking(() -> Migration.exportTo(format, live.export()), false).onComplete(ar -> {
                if (ar.failed()) {
                    rc.fail(ar.cause());
                    return;
                }
                for (String line : ar.result().notMapped()) {
                    rc.response().headers().add(NOT_MAPPED_HEADER, line);
                }
                rc.response().putHeader("Content-Type", "application/json").end(ar.result().document());
            });
        });
        on(rb, "importConfig", rc -> {
            ValidatedRequest v = validated(rc);
            LiveConfiguration.ImportMode mode = LiveConfiguration.ImportMode.valueOf(
                    v.getQuery().get("mode").getString().toUpperCase(java.util.Locale.ROOT));
            io.vertx.openapi.validation.RequestParameter dry = v.getQuery().get("dryRun");
            boolean dryRun = dry != null && !dry.isNull() && dry.getBoolean();
            Migration.Format format = format(rc);
            String text = v.getBody().getJsonObject().encode();
            reply(rc, 200, () -> {
                Migration.Imported doc;
                if (format == null) {
                    doc = new Migration.Imported(parseNative(text), List.of());
                } else {
                    try {
                        doc = Migration.importFrom(format, text);
                    } catch (IllegalArgumentException e) {
                        throw new PathPolicy.ApiRefusal("the " + format.name().toLowerCase(java.util.Locale.ROOT)
                                + " document is not valid: " + e.getMessage());
                    }
                }
                LiveConfiguration.ImportResult r = live.importConfiguration(doc.config(), mode, dryRun, this::checkPath);
                return new ImportAnswer(r.mode(), r.dryRun(), r.changes(), r.notApplied(), doc.notMapped(), r.config());
            });
        });
        on(rb, "listSubsystems", rc -> reply(rc, 200, live::subsystems));
        on(rb, "createSubsystem", rc -> {
            SubsystemConfig s = body(rc, SubsystemConfig.class);
            if (s.namespaces() != null) {
                s.namespaces().forEach(this::checkPath);
            }
            reply(rc, 201, () -> live.createSubsystem(s));
        });
        on(rb, "getSubsystem", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc))));
        on(rb, "updateSubsystem", rc -> {
            boolean allow = validated(rc).getBody().getJsonObject().getBoolean("allowAnyHost");
            reply(rc, 200, () -> live.setAllowAnyHost(nqn(rc), allow));
        });
        on(rb, "deleteSubsystem", rc -> reply(rc, 204, () -> {
            live.deleteSubsystem(nqn(rc));
            return null;
        }));
        on(rb, "listNamespaces", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc)).namespaces()));
        on(rb, "addNamespace", rc -> {
            NamespaceConfig n = body(rc, NamespaceConfig.class);
            checkPath(n);
            reply(rc, 201, () -> live.addNamespace(nqn(rc), n));
        });
        on(rb, "getNamespace", rc -> reply(rc, 200, () -> live.namespaceOf(nqn(rc), nsid(rc))));
        on(rb, "resizeNamespace", rc -> {
            String size = validated(rc).getBody().getJsonObject().getString("size");
            reply(rc, 200, () -> live.resizeNamespace(nqn(rc), nsid(rc), size));
        });
        on(rb, "removeNamespace", rc -> reply(rc, 204, () -> {
            live.removeNamespace(nqn(rc), nsid(rc));
            return null;
        }));
        on(rb, "listHosts", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc)).hosts()));
        on(rb, "addHost", rc -> {
            String host = validated(rc).getBody().getJsonObject().getString("nqn");
            reply(rc, 201, () -> live.addHost(nqn(rc), host));
        });
        on(rb, "removeHost", rc -> reply(rc, 204, () -> {
            live.removeHost(nqn(rc), validated(rc).getPathParameters().get("host").getString());
            return null;
        }));
        on(rb, "listStatistics", rc -> reply(rc, 200, live::statistics));
        on(rb, "getSubsystemStatistics", rc -> reply(rc, 200, () -> live.statistics(nqn(rc))));
        on(rb, "listListeners", rc -> reply(rc, 200, live::listeners));
        on(rb, "addListener", rc -> {
            ListenerConfig l = body(rc, ListenerConfig.class);
            reply(rc, 201, () -> live.addListener(l));
        });
        on(rb, "removeListener", rc -> reply(rc, 204, () -> {
            live.removeListener(validated(rc).getPathParameters().get("id").getInteger());
            return null;
        }));
        on(rb, "listControllers", rc -> reply(rc, 200, live::controllers));
        on(rb, "disconnectController", rc -> reply(rc, 204, () -> {
            live.disconnect(nqn(rc), validated(rc).getPathParameters().get("cntlid").getInteger());
            return null;
        }));
    }

    /** The import's answer: the target's result and what the foreign document had that could not be mapped. */
    record ImportAnswer(String mode, boolean dryRun, List<String> changes, List<String> notApplied,
                        List<String> notMapped, TargetConfig config) {
    }

    /** The format query parameter; null for our own document. */
    private static Migration.Format format(RoutingContext rc) {
        io.vertx.openapi.validation.RequestParameter p = validated(rc).getQuery().get("format");
        String f = p == null || p.isNull() ? "native" : p.getString();
        return "native".equals(f) ? null : Migration.Format.valueOf(f.toUpperCase(java.util.Locale.ROOT));
    }

    private TargetConfig parseNative(String text) {
        try {
            return json.readValue(text, TargetConfig.class);
        } catch (JsonProcessingException e) {
            throw new PathPolicy.ApiRefusal("the configuration document is not valid: " + JsonErrors.describe(e));
        }
    }

    private static void on(RouterBuilder rb, String operationId, io.vertx.core.Handler<RoutingContext> h) {
        rb.getRoute(operationId).addHandler(h);
    }

    /** A file or block backend's path must pass the directory policy before anything is opened. */
    private void checkPath(NamespaceConfig n) {
        boolean onPath = "file".equals(n.backend()) || "block".equals(n.backend()) || n.backend() == null && n.path() != null;
        if (onPath) {
            if (n.path() == null) {
                throw new PathPolicy.ApiRefusal("a " + (n.backend() != null ? n.backend() : "file") + " backend needs a path");
            }
            paths.check(n.path());
        } else if (n.path() != null) {
            throw new PathPolicy.ApiRefusal("path is only for file and block backends (backend is '" + n.backend() + "')");
        }
    }

    /** Runs {@code change} on a worker and answers with its result as JSON (204: no body). */
    private void reply(RoutingContext rc, int status, Callable<Object> change) {
        vertx.executeBlocking(change, false).onComplete(ar -> {
            if (ar.failed()) {
                rc.fail(ar.cause());
                return;
            }
            if (status == 204) {
                rc.response().setStatusCode(204).end();
                return;
            }
            try {
                rc.response().setStatusCode(status).putHeader("Content-Type", "application/json")
                        .end(json.writeValueAsString(ar.result()));
            } catch (JsonProcessingException e) {
                rc.fail(e);
            }
        });
    }

    private <T> T body(RoutingContext rc, Class<T> type) {
        try {
            return json.readValue(validated(rc).getBody().getJsonObject().encode(), type);
        } catch (JsonProcessingException e) {
            throw new PathPolicy.ApiRefusal("the body does not match the schema: " + JsonErrors.describe(e));
        }
    }

    private static ValidatedRequest validated(RoutingContext rc) {
        return rc.get(RouterBuilder.KEY_META_DATA_VALIDATED_REQUEST);
    }

    private static String nqn(RoutingContext rc) {
        return validated(rc).getPathParameters().get("nqn").getString();
    }

    private static long nsid(RoutingContext rc) {
        return validated(rc).getPathParameters().get("nsid").getLong();
    }
}

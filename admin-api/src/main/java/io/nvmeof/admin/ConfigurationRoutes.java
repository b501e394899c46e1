package io.nvmeof.admin;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.admin.migration.KeyFiles;
import io.nvmeof.admin.migration.Migration;
import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.config.JsonErrors;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
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
        on(rb, "importConfig", this::importConfig);
        on(rb, "listSubsystems", rc -> reply(rc, 200, live::subsystems));
        on(rb, "createSubsystem", rc -> {
            SubsystemConfig s = body(rc, SubsystemConfig.class);
            if (s.namespaces() != null) {
                s.namespaces().forEach(this::checkPath);
            }
            change(rc, 201, () -> live.createSubsystem(s), d -> "create subsystem " + d.nqn() + " with "
                    + d.namespaces().size() + " namespace" + (d.namespaces().size() == 1 ? "" : "s")
                    + (d.hosts().isEmpty() ? "" : ", allowing hosts " + d.hosts()));
        });
        on(rb, "getSubsystem", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc))));
        on(rb, "updateSubsystem", rc -> {
            boolean allow = validated(rc).getBody().getJsonObject().getBoolean("allowAnyHost");
            change(rc, 200, () -> live.setAllowAnyHost(nqn(rc), allow),
                    d -> (allow ? "allow any host on " : "allow only the listed hosts on ") + d.nqn());
        });
        on(rb, "deleteSubsystem", rc -> change(rc, 204, () -> {
            live.deleteSubsystem(nqn(rc));
            return null;
        }, none -> "delete subsystem " + nqn(rc)));
        on(rb, "listNamespaces", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc)).namespaces()));
        on(rb, "addNamespace", rc -> {
            NamespaceConfig n = body(rc, NamespaceConfig.class);
            checkPath(n);
            change(rc, 201, () -> live.addNamespace(nqn(rc), n), d -> "add namespace " + d.nsid() + " of " + nqn(rc)
                    + " (" + d.backend() + (d.path() != null ? " " + d.path() : "") + ", " + d.size() + " bytes)");
        });
        on(rb, "getNamespace", rc -> reply(rc, 200, () -> live.namespaceOf(nqn(rc), nsid(rc))));
        on(rb, "resizeNamespace", rc -> {
            String size = String.valueOf(validated(rc).getBody().getJsonObject().getValue("size")); // a number or a string
            change(rc, 200, () -> live.resizeNamespace(nqn(rc), nsid(rc), size),
                    d -> "grow namespace " + d.nsid() + " of " + nqn(rc) + " to " + d.size() + " bytes");
        });
        on(rb, "removeNamespace", rc -> change(rc, 204, () -> {
            live.removeNamespace(nqn(rc), nsid(rc));
            return null;
        }, none -> "remove namespace " + nsid(rc) + " from " + nqn(rc)));
        on(rb, "listHosts", rc -> reply(rc, 200, () -> live.subsystem(nqn(rc)).hosts()));
        on(rb, "addHost", rc -> {
            String host = validated(rc).getBody().getJsonObject().getString("nqn");
            change(rc, 201, () -> live.addHost(nqn(rc), host), d -> "allow host " + host + " on " + d.nqn());
        });
        on(rb, "removeHost", rc -> {
            String host = validated(rc).getPathParameters().get("host").getString();
            change(rc, 204, () -> live.removeHost(nqn(rc), host), d -> "stop allowing host " + host + " on " + d.nqn());
        });
        on(rb, "listHostAuthentications", rc -> reply(rc, 200, live.hostSecrets()::hostAuthentications));
        on(rb, "getHostAuthentication", rc -> reply(rc, 200, () -> live.hostSecrets().hostAuthentication(hostNqn(rc))));
        on(rb, "setHostAuthentication", rc -> {
            HostKeys k = body(rc, HostKeys.class);
            HostConfig given = new HostConfig(hostNqn(rc), k.dhchapKey(), k.dhchapCtrlKey(), k.dhchapHash(),
                    k.dhchapDhGroup(), k.tlsKey(), k.tlsKeyDerivation());
            // The audit line and the answer say what is set, never a secret.
            change(rc, 200, () -> live.hostSecrets().setHostAuthentication(given), d -> "set the security settings of host "
                    + d.nqn() + " (" + (d.dhchapKeySet() ? "DH-HMAC-CHAP " + d.dhchapHash() + ", group "
                    + d.dhchapDhGroup() + (d.dhchapCtrlKeySet() ? ", both ways" : "") : "no DH-HMAC-CHAP")
                    + (d.tlsKeySet() ? "; TLS key, " + d.tlsKeyDerivation() + " derivation" : "") + ")");
        });
        on(rb, "removeHostAuthentication", rc -> change(rc, 204, () -> {
            live.hostSecrets().removeHostAuthentication(hostNqn(rc));
            return null;
        }, none -> "remove the security settings of host " + hostNqn(rc)));
        on(rb, "listStatistics", rc -> reply(rc, 200, live.monitoring()::statistics));
        on(rb, "getSubsystemStatistics", rc -> reply(rc, 200, () -> live.monitoring().statistics(nqn(rc))));
        on(rb, "listListeners", rc -> reply(rc, 200, live::listeners));
        on(rb, "addListener", rc -> {
            ListenerConfig l = body(rc, ListenerConfig.class);
            change(rc, 201, () -> live.addListener(l), d -> "add listener " + d.id() + " (" + d.transport() + "://"
                    + d.address() + ":" + d.port() + (d.subsystems() != null && !d.subsystems().isEmpty()
                    ? ", exposing " + d.subsystems() : "") + ")");
        });
        onRemoveById(rb, "removeListener", "listener", live::removeListener);
        on(rb, "listReferrals", rc -> reply(rc, 200, live::referrals));
        on(rb, "addReferral", rc -> {
            ReferralConfig r = body(rc, ReferralConfig.class);
            change(rc, 201, () -> live.addReferral(r), d -> "add referral " + d.id() + " (" + d.transport() + "://"
                    + d.address() + ":" + d.port() + (d.subsystem() != null ? ", subsystem " + d.subsystem() : "")
                    + ")");
        });
        onRemoveById(rb, "removeReferral", "referral", live::removeReferral);
        on(rb, "listAnaStates", rc -> reply(rc, 200,
                () -> live.anaStates(validated(rc).getPathParameters().get("id").getInteger())));
        on(rb, "setAnaState", rc -> {
            var v = validated(rc);
            int id = v.getPathParameters().get("id").getInteger();
            int group = v.getPathParameters().get("group").getInteger();
            String state = v.getBody().getJsonObject().getString("state");
            change(rc, 200, () -> live.setAnaState(id, group, state),
                    d -> "set ANA group " + d.group() + " " + d.state() + " on listener " + id);
        });
        on(rb, "listControllers", rc -> reply(rc, 200, live.monitoring()::controllers));
        on(rb, "disconnectController", rc -> {
            int cntlid = validated(rc).getPathParameters().get("cntlid").getInteger();
            change(rc, 204, () -> {
                live.disconnect(nqn(rc), cntlid);
                return null;
            }, none -> "disconnect controller " + cntlid + " of " + nqn(rc));
        });
    }

    /** A PUT /hosts/{hostnqn} body: the host's whole DH-HMAC-CHAP setting (what it leaves out takes its default). */
    record HostKeys(String dhchapKey, String dhchapCtrlKey, String dhchapHash, String dhchapDhGroup, String tlsKey,
                    String tlsKeyDerivation) {
        @Override
        public String toString() {
            return "HostKeys[secrets not shown]"; // a record's own toString would print them into a log line
        }
    }

    /**
     * The import's answer: the target's result, what the foreign document had that could not be mapped, and the
     * security settings among those that were dropped because the administrator said to ({@code dropSecurity}).
     */
    record ImportAnswer(String mode, boolean dryRun, List<String> changes, List<String> notApplied,
                        List<String> notMapped, List<String> securityDropped, TargetConfig config) {
    }

    /**
     * A foreign document with security settings this target does not have (TLS, per-host namespace visibility,
     * read-only namespaces; DH-HMAC-CHAP keys are carried over): imported, hosts would silently get less protection,
     * so it is refused unless the administrator accepts that with {@code dropSecurity=true}.
     */
    static final class SecurityNotCarried extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final List<String> settings;

        SecurityNotCarried(Migration.Format format, List<String> settings) {
            super("nothing was imported: the " + format.name().toLowerCase(java.util.Locale.ROOT) + " document has "
                    + settings.size() + " security setting" + (settings.size() == 1 ? "" : "s") + " this target cannot"
                    + " carry over, and hosts would get less protection without them: " + String.join("; ", settings)
                    + ". Protect those hosts another way (a private network, a firewall, allowed hosts), then import"
                    + " again with dropSecurity=true (./nvmeof admin import --drop-security) to import without them");
            this.settings = List.copyOf(settings);
        }

        List<String> settings() {
            return settings;
        }
    }

    /**
     * Imports a whole document. A foreign one whose security would be lost is refused unless {@code dropSecurity};
     * with it, what was dropped is in the answer and the audit log.
     */
    private void importConfig(RoutingContext rc) {
        ValidatedRequest v = validated(rc);
        LiveConfiguration.ImportMode mode = LiveConfiguration.ImportMode.valueOf(
                v.getQuery().get("mode").getString().toUpperCase(java.util.Locale.ROOT));
        boolean dryRun = flag(v, "dryRun");
        boolean dropSecurity = flag(v, "dropSecurity");
        Migration.Format format = format(rc);
        String text = v.getBody().getJsonObject().encode();
        changes(rc, 200, () -> {
            Migration.Imported doc;
            if (format == null) {
                doc = new Migration.Imported(parseNative(text), List.of());
            } else {
                try {
                    doc = Migration.importFrom(format, text, this::readKeyFile);
                } catch (IllegalArgumentException e) {
                    throw new PathPolicy.ApiRefusal("the " + format.name().toLowerCase(java.util.Locale.ROOT)
                            + " document is not valid: " + e.getMessage());
                }
                if (!doc.securityLost().isEmpty() && !dropSecurity) {
                    throw new SecurityNotCarried(format, doc.securityLost());
                }
            }
            LiveConfiguration.ImportResult r = live.importConfiguration(doc.config(), mode, dryRun, this::checkPath);
            if (!dryRun) {
                AuditLog.droppedSecurity(rc, doc.securityLost());
            }
            return new ImportAnswer(r.mode(), r.dryRun(), r.changes(), r.notApplied(), doc.notMapped(),
                    doc.securityLost(), r.config());
        }, answer -> answer.dryRun() ? List.of("dry run, nothing changed (" + answer.changes().size()
                + " changes would be made)") : answer.changes());
    }

    /**
     * An SPDK keyring key's file, read only where the directory policy lets the API read files (as a namespace's);
     * a refusal names the key and the path, never the file's content.
     */
    private String readKeyFile(String name, String path) {
        try {
            paths.check(path);
        } catch (PathPolicy.ApiRefusal e) {
            throw new IllegalArgumentException("keyring_file_add_key(" + name + "): " + e.getMessage(), e);
        }
        return KeyFiles.read(name, path);
    }

    private static boolean flag(ValidatedRequest v, String name) {
        io.vertx.openapi.validation.RequestParameter p = v.getQuery().get(name);
        return p != null && !p.isNull() && p.getBoolean();
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

    /** A DELETE of the {@code what} whose id the path names: 204, audited as "remove WHAT ID". */
    private void onRemoveById(RouterBuilder rb, String operationId, String what,
                              java.util.function.IntConsumer remove) {
        on(rb, operationId, rc -> {
            int id = validated(rc).getPathParameters().get("id").getInteger();
            change(rc, 204, () -> {
                remove.accept(id);
                return null;
            }, none -> "remove " + what + " " + id);
        });
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

    /** As {@link #changes}, for a change said in one line. */
    private <T> void change(RoutingContext rc, int status, Callable<T> change,
                            java.util.function.Function<T, String> what) {
        changes(rc, status, change, r -> List.of(what.apply(r)));
    }

    /** Runs {@code change} as {@link #reply} does; {@code what} says what it changed, for the audit log. */
    private <T> void changes(RoutingContext rc, int status, Callable<T> change,
                             java.util.function.Function<T, List<String>> what) {
        reply(rc, status, () -> {
            T result = change.call();
            AuditLog.changed(rc, what.apply(result));
            return result;
        });
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

    private static String hostNqn(RoutingContext rc) {
        return validated(rc).getPathParameters().get("hostnqn").getString();
    }

    private static long nsid(RoutingContext rc) {
        return validated(rc).getPathParameters().get("nsid").getLong();
    }
}

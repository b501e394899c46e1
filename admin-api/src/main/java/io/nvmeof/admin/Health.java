package io.nvmeof.admin;

import io.nvmeof.tgt.live.LiveConfiguration;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.List;

/**
 * {@code GET /health}, for load balancers and orchestrators (no token): UP (200) while the target's whole data path
 * serves; DOWN (503) while a poll group or a listener's accept loop has stopped, each named in {@code problems}: its
 * hosts get no answers although the process runs.
 */
final class Health {
    private Health() {
    }

    static void answer(RoutingContext rc, LiveConfiguration live) {
        List<String> problems = live.monitoring().dataPathFailures();
        JsonObject body = new JsonObject().put("status", problems.isEmpty() ? "UP" : "DOWN");
        if (!problems.isEmpty()) {
            body.put("problems", new JsonArray(problems));
        }
        rc.response().setStatusCode(problems.isEmpty() ? 200 : 503).putHeader("Content-Type", "application/json")
                .end(body.encode());
    }
}

package io.nvmeof.admin.migration;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.nvmeof.admin.migration.Migration.JsonAt;

/**
 * One RPC call of an SPDK save_config document: its method and its params (an empty object when absent). The import
 * classes of each RPC family read these.
 */
record SpdkCall(String method, JsonAt params) {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    static SpdkCall of(JsonAt at) {
        at.requireObject();
        String method = at.field("method").nonEmptyText();
        JsonAt params = at.field("params");
        params = params.present() ? params.requireObject() : new JsonAt(JSON.objectNode(), params.path());
        return new SpdkCall(method, params);
    }

    String text(String name) {
        return params.field(name).nonEmptyText();
    }
}

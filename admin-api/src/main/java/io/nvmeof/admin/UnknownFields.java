package io.nvmeof.admin;

import io.nvmeof.tgt.config.JsonErrors;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import java.util.ArrayList;
import java.util.List;

/**
 * The detail of a refused unknown field, in the administrator's terms: the field the request likely meant
 * ({@code blocksize}: did you mean {@code blockSize}?), the fields the object takes, and, for a change of a field the
 * resource has but the operation cannot change (PATCH of a namespace's {@code blockSize}), what to do instead. The
 * schema validator says only that the property "does not match additional properties schema".
 */
final class UnknownFields {
    private final OpenAPIContract contract;

    UnknownFields(OpenAPIContract contract) {
        this.contract = contract;
    }

    /**
     * What to say of field {@code name} of the object at {@code pointer} (a JSON pointer into the body) in a request
     * for {@code path}; null when the operation or the object's schema cannot be found (the validator's words stay).
     */
    String detail(HttpMethod method, String path, String pointer, String name) {
        Operation op = contract.findOperation(path, method);
        if (op == null || op.getRequestBody() == null) {
            return null;
        }
        JsonObject schema = op.getRequestBody().getOpenAPIModel();
        schema = schema == null ? null : at(schema.getJsonObject("content"), "application/json", "schema");
        JsonObject object = walk(schema, pointer);
        JsonObject properties = object == null ? null : object.getJsonObject("properties");
        if (properties == null) {
            return null;
        }
        List<String> known = new ArrayList<>(properties.fieldNames());
        String where = pointer == null || pointer.isEmpty() ? "" : " in '" + pointer.substring(1).replace('/', '.') + "'";
        StringBuilder d = new StringBuilder("field '").append(name).append("'").append(where);
        String likely = JsonErrors.closest(name, known);
        if (likely != null) {
            d.append(" is not known; did you mean '").append(likely).append("'?");
        } else if ((method == HttpMethod.PATCH || method == HttpMethod.PUT) && resourceHas(path, name)) {
            d.append(" cannot be changed by ").append(method.name()).append(", which changes only ")
                    .append(String.join(", ", known)).append(": remove the resource and create it again with the new ")
                    .append(name).append(" (GET it first to keep the rest)");
            return d.toString();
        } else {
            d.append(" is not known");
        }
        d.append(" (the fields here: ").append(String.join(", ", known)).append(')');
        return d.toString();
    }

    /** Whether a GET of {@code path} answers objects with field {@code name}. */
    private boolean resourceHas(String path, String name) {
        Operation get = contract.findOperation(path, HttpMethod.GET);
        if (get == null || get.getResponse(200) == null) {
            return false;
        }
        JsonObject schema = at(get.getResponse(200).getOpenAPIModel().getJsonObject("content"), "application/json",
                "schema");
        JsonObject resolved = resolve(schema);
        JsonObject properties = resolved == null ? null : resolved.getJsonObject("properties");
        return properties != null && properties.containsKey(name);
    }

    /** The schema of the object at {@code pointer} inside {@code schema}: properties by name, items by index. */
    private JsonObject walk(JsonObject schema, String pointer) {
        JsonObject s = resolve(schema);
        if (pointer == null || pointer.isEmpty() || pointer.equals("/")) {
            return s;
        }
        for (String step : pointer.substring(1).split("/")) {
            if (s == null) {
                return null;
            }
            String key = step.replace("~1", "/").replace("~0", "~");
            JsonObject props = s.getJsonObject("properties");
            if (props != null && props.containsKey(key)) {
                s = resolve(props.getJsonObject(key));
            } else if (s.getValue("items") instanceof JsonObject items && key.chars().allMatch(Character::isDigit)) {
                s = resolve(items);
            } else {
                return null;
            }
        }
        return s;
    }

    /** {@code schema}, or what its local {@code $ref} points at. */
    private JsonObject resolve(JsonObject schema) {
        for (int hops = 0; schema != null && schema.getValue("$ref") instanceof String ref && hops < 8; hops++) {
            if (!ref.startsWith("#/")) {
                return null;
            }
            JsonObject at = contract.getRawContract();
            for (String step : ref.substring(2).split("/")) {
                at = at == null ? null : at.getJsonObject(step);
            }
            schema = at;
        }
        return schema;
    }

    private static JsonObject at(JsonObject o, String... keys) {
        for (String k : keys) {
            if (o == null) {
                return null;
            }
            o = o.getValue(k) instanceof JsonObject j ? j : null;
        }
        return o;
    }
}

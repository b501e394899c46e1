package io.nvmeof.admin;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import java.util.Collection;
import java.util.Map;
import java.util.TreeSet;

/**
 * A JSON document that does not fit what the API reads, said in the administrator's terms: where in the document
 * ({@code subsystems[0].maxNamespaces}) and what belongs there. Jackson's own messages name Java types and classes.
 */
final class JsonErrors {
    private JsonErrors() {
    }

    static String describe(JsonProcessingException e) {
        String where = e instanceof JsonMappingException m ? location(m) : "";
        String what;
        if (e instanceof UnrecognizedPropertyException u) {
            TreeSet<String> known = new TreeSet<>();
            u.getKnownPropertyIds().forEach(id -> known.add(String.valueOf(id)));
            where = where.endsWith("." + u.getPropertyName()) || where.equals(u.getPropertyName())
                    ? where.substring(0, Math.max(0, where.length() - u.getPropertyName().length() - 1)) : where;
            what = "unknown field '" + u.getPropertyName() + "'; the fields here are " + String.join(", ", known);
        } else if (e instanceof InvalidFormatException f) {
            what = "must be " + kind(f.getTargetType()) + ", got " + f.getValue();
        } else if (e instanceof MismatchedInputException mi && mi.getTargetType() != null) {
            what = "must be " + kind(mi.getTargetType());
        } else if (e instanceof InputCoercionException || e.getCause() instanceof InputCoercionException) {
            what = "the number is out of range";
        } else if (e.getLocation() != null && !(e instanceof JsonMappingException)) {
            what = "not valid JSON at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
        } else {
            what = "is not valid here";
        }
        return (where.isEmpty() ? "the document" : where) + ": " + what;
    }

    /** subsystems[0].namespaces[1].size */
    private static String location(JsonMappingException m) {
        StringBuilder b = new StringBuilder();
        for (JsonMappingException.Reference r : m.getPath()) {
            if (r.getFieldName() != null) {
                b.append(b.length() == 0 ? "" : ".").append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                b.append('[').append(r.getIndex()).append(']');
            }
        }
        return b.toString();
    }

    private static String kind(Class<?> type) {
        if (type == Integer.class || type == int.class || type == Long.class || type == long.class
                || type == Short.class || type == short.class) {
            return "an integer";
        }
        if (type == Boolean.class || type == boolean.class) {
            return "true or false";
        }
        if (type == String.class) {
            return "a string";
        }
        if (type.isArray() || Collection.class.isAssignableFrom(type)) {
            return "a list";
        }
        if (Map.class.isAssignableFrom(type) || type.isRecord()) {
            return "an object";
        }
        return "a value of another kind";
    }
}

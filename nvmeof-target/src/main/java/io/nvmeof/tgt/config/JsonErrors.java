package io.nvmeof.tgt.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * A JSON document that does not fit what the API or a configuration file is read into, said in the administrator's
 * terms: where in the document ({@code subsystems[0].maxNamespaces}) and what belongs there, with the field likely
 * meant for an unknown one. Jackson's own messages name Java types and classes.
 */
public final class JsonErrors {
    private JsonErrors() {
    }

    public static String describe(JsonProcessingException e) {
        String where = e instanceof JsonMappingException m ? location(m) : "";
        String what;
        if (e instanceof UnrecognizedPropertyException u) {
            TreeSet<String> known = new TreeSet<>();
            u.getKnownPropertyIds().forEach(id -> known.add(String.valueOf(id)));
            where = where.endsWith("." + u.getPropertyName()) || where.equals(u.getPropertyName())
                    ? where.substring(0, Math.max(0, where.length() - u.getPropertyName().length() - 1)) : where;
            String likely = closest(u.getPropertyName(), known);
            what = "unknown field '" + u.getPropertyName() + "'" + (likely != null ? "; did you mean '" + likely + "'?" : "")
                    + " (the fields here: " + String.join(", ", known) + ")";
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

    /** The known field {@code name} most likely meant: the same letters in another case, or one or two typos away. */
    public static String closest(String name, Collection<String> known) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : known) {
            if (k.equalsIgnoreCase(name)) {
                return k;
            }
            int d = distance(name.toLowerCase(Locale.ROOT), k.toLowerCase(Locale.ROOT));
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        return bestDistance <= Math.min(2, name.length() / 3) ? best : null;
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
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

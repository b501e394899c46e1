package io.nvmeof.admin.migration;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;

/**
 * Moving a configuration between this target's document ({@link TargetConfig}) and the two formats storage admins
 * migrate from: the Linux kernel target's {@code nvmetcli save} file ({@link NvmetcliFormat}) and SPDK's
 * {@code rpc.py save_config} document ({@link SpdkFormat}).
 *
 * <p>Neither direction is lossless: whatever has no equivalent on the other side is never dropped silently but
 * reported, one human-readable line per item, in {@link Imported#notMapped()} / {@link Exported#notMapped()}. Lines
 * start with where the item is (a JSON location such as {@code ports[0].referrals}, or for SPDK the RPC call such as
 * {@code nvmf_create_transport(TCP).num_shared_buffers=511}) and end with what became of it ({@code ignored},
 * {@code not imported}, {@code not exported}).
 *
 * <p>Malformed input (not JSON, the wrong shape, a required field missing, an invalid value) is an
 * {@link IllegalArgumentException} whose message starts with the JSON location, e.g.
 * {@code subsystems[1].namespaces[0].device.path is missing}.
 */
public final class Migration {

    /** The formats we convert from and to. */
    public enum Format {
        /** The Linux kernel target (nvmet): what {@code nvmetcli save} writes and {@code nvmetcli restore} reads. */
        NVMETCLI,
        /** SPDK's nvmf_tgt: what {@code rpc.py save_config} writes and {@code load_config} / {@code -c} reads. */
        SPDK
    }

    /**
     * The result of an import.
     *
     * @param config       our document
     * @param notMapped    one line per item of the input that has no equivalent here
     * @param securityLost the lines of {@code notMapped} that are security settings this target does not have (a
     *                     port that requires TLS, hosts' TLS keys, namespaces visible to some hosts
     *                     only, read-only namespaces): the document imports without them only when the
     *                     administrator accepts that. No line holds a key's value.
     */
    public record Imported(TargetConfig config, List<String> notMapped, List<String> securityLost) {
        public Imported {
            Objects.requireNonNull(config, "config");
            notMapped = List.copyOf(notMapped);
            securityLost = List.copyOf(securityLost);
        }

        public Imported(TargetConfig config, List<String> notMapped) {
            this(config, notMapped, List.of());
        }
    }

    /**
     * The result of an export.
     *
     * @param document  the other format's document, pretty-printed JSON
     * @param notMapped one line per item of our document that the other format cannot express
     */
    public record Exported(String document, List<String> notMapped) {
        public Exported {
            Objects.requireNonNull(document, "document");
            notMapped = List.copyOf(notMapped);
        }
    }

    /** The well-known discovery subsystem NQN (NVMe over Fabrics 1.1, 7.1). */
    public static final String DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";

    private Migration() {
    }

    /**
     * Reads {@code json} written in {@code format} into our document; an SPDK document's key files are read wherever
     * they are (for the command line, whose administrator names the document).
     */
    public static Imported importFrom(Format format, String json) {
        return importFrom(format, json, KeyFiles::read);
    }

    /** As {@link #importFrom(Format, String)}; {@code keyFiles} reads SPDK's key files under the caller's policy. */
    public static Imported importFrom(Format format, String json, KeyFiles.Reader keyFiles) {
        Objects.requireNonNull(format, "format");
        return switch (format) {
            case NVMETCLI -> NvmetcliFormat.read(json);
            case SPDK -> SpdkFormat.read(json, keyFiles);
        };
    }

    /** Writes our document {@code config} in {@code format}. */
    public static Exported exportTo(Format format, TargetConfig config) {
        Objects.requireNonNull(format, "format");
        return switch (format) {
            case NVMETCLI -> NvmetcliFormat.write(config);
            case SPDK -> SpdkFormat.write(config);
        };
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Shared by the two formats.

    /** Strict reading: no duplicate keys, nothing after the document. */
    static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** Parses a whole document, which must be a JSON object. */
    static JsonAt parse(String json) {
        if (json == null || json.isBlank()) {
            throw new IllegalArgumentException("the document is empty");
        }
        JsonNode root;
        try {
            root = MAPPER.readTree(json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("the document is not valid JSON: " + e.getOriginalMessage()
                    + (e.getLocation() != null ? " (line " + e.getLocation().getLineNr() + ", column "
                            + e.getLocation().getColumnNr() + ")" : ""), e);
        }
        return new JsonAt(root, "").requireObject();
    }

    /**
     * Indented like the tools' own output (two spaces, one element per line, {@code "key": value}, {@code []}) so
     * that a diff against theirs stays small.
     */
    static String pretty(JsonNode document) {
        DefaultPrettyPrinter printer = new DefaultPrettyPrinter(Separators.createDefaultInstance()
                .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                .withObjectEmptySeparator("")
                .withArrayEmptySeparator(""));
        DefaultIndenter indenter = new DefaultIndenter("  ", "\n");
        printer.indentObjectsWith(indenter);
        printer.indentArraysWith(indenter);
        try {
            return MAPPER.writer(printer).writeValueAsString(document) + "\n";
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A size for our document: the largest binary unit that divides it exactly (1GiB, 64MiB, 4KiB), else bytes. */
    static String formatSize(long bytes) {
        String[] units = {"TiB", "GiB", "MiB", "KiB"};
        int[] shifts = {40, 30, 20, 10};
        for (int i = 0; i < units.length; i++) {
            long unit = 1L << shifts[i];
            if (bytes >= unit && bytes % unit == 0) {
                return (bytes / unit) + units[i];
            }
        }
        return Long.toString(bytes);
    }

    /** Our backend for a path both other targets take for a file or a block device alike. */
    static String backendFor(String path) {
        return path.startsWith("/dev/") ? "block" : "file";
    }

    /** Serial numbers (20) and model numbers (40) are printable ASCII in Identify Controller. */
    static boolean fitsIdentifyField(String value, int max) {
        if (value.isEmpty() || value.length() > max) {
            return false;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                return false;
            }
        }
        return true;
    }

    private static final String UUID_PATTERN =
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

    /** A UUID in canonical lower-case form; null for the all-zero UUID (which both targets write for "unset"). */
    static String uuid(JsonAt at) {
        String text = at.optText();
        if (text == null || text.isEmpty()) {
            return null;
        }
        if (!text.matches(UUID_PATTERN)) {
            throw at.invalid("must be a UUID (8-4-4-4-12 hex digits)");
        }
        UUID parsed = UUID.fromString(text);
        return parsed.getMostSignificantBits() == 0 && parsed.getLeastSignificantBits() == 0 ? null
                : parsed.toString();
    }

    /**
     * An NGUID as our document keeps it: 32 lower-case hex digits. nvmet prints it like a UUID (with dashes), SPDK
     * as 32 upper-case digits; both write zeros for "unset", which is null here.
     */
    static String nguid(JsonAt at) {
        String text = at.optText();
        if (text == null || text.isEmpty()) {
            return null;
        }
        String hex = text.replace("-", "").replace(":", "").toLowerCase(Locale.ROOT);
        if (!hex.matches("[0-9a-f]{32}")) {
            throw at.invalid("must be an NGUID (32 hex digits, dashes allowed)");
        }
        return hex.matches("0{32}") ? null : hex;
    }

    /**
     * The UUID hosts see for a namespace of ours: as configured, else the one the target derives for a file or block
     * device from the subsystem NQN, the NSID and the path ({@code NvmeTarget.namespaceUuid}). Exports write it so a
     * namespace keeps its identity on the other target. (A RAM namespace without one gets new identifiers each time
     * it is made: exports leave them out.)
     */
    static String effectiveUuid(String nqn, long nsid, NamespaceConfig n, String where) {
        if (n.uuid() == null) {
            String kind = n.backend() != null ? n.backend() : n.path() != null ? "file" : "ram";
            String key = "ram".equals(kind) || n.path() == null ? nqn + "/" + nsid
                    : nqn + "/" + nsid + "/" + java.nio.file.Path.of(n.path()).toAbsolutePath().normalize();
            return UUID.nameUUIDFromBytes(key.getBytes(StandardCharsets.UTF_8)).toString();
        }
        if (!n.uuid().matches(UUID_PATTERN)) {
            throw new IllegalArgumentException(where + ".uuid must be a UUID (8-4-4-4-12 hex digits), got '"
                    + n.uuid() + "'");
        }
        return n.uuid().toLowerCase(Locale.ROOT);
    }

    /** The NGUID hosts see for a namespace of ours: as configured, else the UUID's 16 bytes (see NamespaceConfig). */
    static String effectiveNguid(String uuid, NamespaceConfig n, String where) {
        if (n.nguid() == null) {
            return uuid.replace("-", "");
        }
        if (!n.nguid().matches("[0-9a-fA-F]{32}")) {
            throw new IllegalArgumentException(where + ".nguid must be 32 hex digits, got '" + n.nguid() + "'");
        }
        return n.nguid().toLowerCase(Locale.ROOT);
    }

    /**
     * The serial number hosts see for a subsystem of ours: as configured, else the one the target derives from the
     * NQN (the same rule as {@code NvmeTarget.defaultSerial}). Hosts use it, with the model, to recognise a controller.
     */
    static String effectiveSerial(SubsystemConfig s) {
        return s.serial() != null ? s.serial()
                : String.format("%016x", UUID.nameUUIDFromBytes(s.nqn().getBytes(StandardCharsets.UTF_8))
                        .getMostSignificantBits());
    }

    /** The model number hosts see for a subsystem of ours (the target's default: {@value #DEFAULT_MODEL}). */
    static String effectiveModel(SubsystemConfig s) {
        return s.model() != null ? s.model() : DEFAULT_MODEL;
    }

    static final String DEFAULT_MODEL = "nvmeof-java";

    /** The target's rule: unset means allow any host, unless hosts are listed. */
    static boolean effectiveAllowAnyHost(SubsystemConfig s) {
        return s.allowAnyHost() != null ? s.allowAnyHost() : orEmpty(s.hosts()).isEmpty();
    }

    /** Our backend of a namespace as the target resolves it: as given, else file when it has a path, else ram. */
    static String effectiveBackend(NamespaceConfig n) {
        return n.backend() != null ? n.backend() : (n.path() != null ? "file" : "ram");
    }

    static <T> List<T> orEmpty(List<T> list) {
        return list != null ? list : List.of();
    }

    /**
     * A JSON value and where it is in its document ({@code subsystems[1].namespaces[0].device.path}), so that every
     * error and every not-mapped line can name the place. Absent members are {@link JsonNode#isMissingNode() missing}
     * nodes, not nulls, so chains like {@code at.field("addr").field("trtype")} never throw before the check.
     */
    static final class JsonAt {
        private final JsonNode node;
        private final String path;

        JsonAt(JsonNode node, String path) {
            this.node = node;
            this.path = path;
        }

        JsonNode node() {
            return node;
        }

        String path() {
            return path.isEmpty() ? "the document" : path;
        }

        JsonAt field(String name) {
            return new JsonAt(node.path(name), path.isEmpty() ? name : path + "." + name);
        }

        /** Present and not JSON null. */
        boolean present() {
            return !node.isMissingNode() && !node.isNull();
        }

        List<String> fieldNames() {
            List<String> names = new ArrayList<>();
            for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
                names.add(it.next());
            }
            return names;
        }

        JsonAt requireObject() {
            requirePresent();
            if (!node.isObject()) {
                throw invalid("must be a JSON object");
            }
            return this;
        }

        /** An object, or null when absent. */
        JsonAt optObject() {
            return present() ? requireObject() : null;
        }

        /** The elements of an array; an absent array is empty (both tools treat a missing list as none). */
        List<JsonAt> elements() {
            if (!present()) {
                return List.of();
            }
            if (!node.isArray()) {
                throw invalid("must be a JSON array");
            }
            List<JsonAt> elements = new ArrayList<>(node.size());
            for (int i = 0; i < node.size(); i++) {
                elements.add(new JsonAt(node.get(i), path + "[" + i + "]"));
            }
            return elements;
        }

        String text() {
            requirePresent();
            if (!node.isTextual()) {
                throw invalid("must be a string");
            }
            return node.textValue();
        }

        String nonEmptyText() {
            String text = text();
            if (text.isBlank()) {
                throw new IllegalArgumentException(path() + " must not be empty");
            }
            return text;
        }

        String optText() {
            return present() ? text() : null;
        }

        /** An integer, written as a JSON number or (as nvmetcli writes configfs values) a decimal string. */
        long integer(long min, long max) {
            requirePresent();
            long value;
            if (node.isIntegralNumber() && node.canConvertToLong()) {
                value = node.longValue();
            } else if (node.isTextual() && node.textValue().trim().matches("-?\\d{1,18}")) {
                value = Long.parseLong(node.textValue().trim());
            } else {
                throw invalid("must be an integer");
            }
            if (value < min || value > max) {
                throw invalid("must be an integer from " + min + " to " + max);
            }
            return value;
        }

        Long optInteger(long min, long max) {
            return present() ? integer(min, max) : null;
        }

        /** A flag: JSON true/false, or 1/0 as a number or string (nvmet's configfs booleans). */
        boolean flag() {
            requirePresent();
            if (node.isBoolean()) {
                return node.booleanValue();
            }
            String text = node.isTextual() ? node.textValue().trim().toLowerCase(Locale.ROOT)
                    : node.isIntegralNumber() ? node.asText() : "";
            switch (text) {
                case "1", "true": return true;
                case "0", "false": return false;
                default: throw invalid("must be true/false or 1/0");
            }
        }

        Boolean optFlag() {
            return present() ? flag() : null;
        }

        /** The value as a not-mapped line shows it: strings as they are, anything else as compact JSON. */
        String display() {
            return node.isTextual() ? node.textValue() : node.toString();
        }

        IllegalArgumentException invalid(String what) {
            return new IllegalArgumentException(path() + " " + what + ", got "
                    + (node.isTextual() ? "\"" + node.textValue() + "\"" : node.toString()));
        }

        private void requirePresent() {
            if (!present()) {
                throw new IllegalArgumentException(path() + " is missing");
            }
        }
    }
}

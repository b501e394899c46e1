package io.nvmeof.protocol.fabrics;

import java.nio.charset.StandardCharsets;
import java.util.UUID;

/** NVMe Qualified Names (NVMe Base, "NVMe Qualified Names"). */
public final class Nqn {
    private Nqn() {
    }

    public static final String DISCOVERY = "nqn.2014-08.org.nvmexpress.discovery";
    public static final int MAX_LENGTH = 223;

    /**
     * Returns null when {@code nqn} is acceptable, else why not. Like the Linux target, names that do not follow the
     * {@code nqn.yyyy-mm.domain} pattern (such as {@code testnqn}) are accepted; only emptiness, length, control
     * characters and non-ASCII bytes are refused.
     */
    public static String validate(String nqn) {
        if (nqn == null || nqn.isEmpty()) {
            return "NQN is empty";
        }
        byte[] bytes = nqn.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > MAX_LENGTH) {
            return "NQN is " + bytes.length + " bytes long; the limit is " + MAX_LENGTH;
        }
        for (byte b : bytes) {
            if (b < 0x21 || b > 0x7E) {
                return "NQN contains a byte that is not printable ASCII (0x" + Integer.toHexString(b & 0xFF) + ")";
            }
        }
        return null;
    }

    private static final java.util.regex.Pattern FORMAT = java.util.regex.Pattern.compile(
            "nqn\\.[0-9]{4}-(0[1-9]|1[0-2])\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:.+)?");
    private static final java.util.regex.Pattern UUID_FORMAT = java.util.regex.Pattern.compile(
            "nqn\\.2014-08\\.org\\.nvmexpress:uuid:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");

    /**
     * The spec's NQN formats (NVMe Base, "NVM Qualified Names"), for names an administrator creates: either
     * {@code nqn.yyyy-mm.reverse.domain[:anything]} or {@code nqn.2014-08.org.nvmexpress:uuid:<UUID>}, on top of
     * {@link #validate}. Connect stays as liberal as {@link #validate} (peers send what they send); what we create is
     * as strict as SPDK's {@code nvmf_create_subsystem}, and without '/', which the Linux target cannot hold: it keeps
     * every subsystem and host NQN as a configfs directory name, so nvmetcli could not restore one. Returns why not,
     * or null.
     */
    public static String validateFormat(String nqn) {
        String why = validate(nqn);
        if (why != null) {
            return why;
        }
        if (nqn.indexOf('/') >= 0) {
            return "an NQN cannot contain '/': the Linux target keeps each NQN as a directory name (configfs), so"
                    + " nvmetcli could not restore it";
        }
        if (nqn.startsWith("nqn.2014-08.org.nvmexpress:uuid:")) {
            return UUID_FORMAT.matcher(nqn).matches() ? null
                    : "a UUID-based NQN is nqn.2014-08.org.nvmexpress:uuid: followed by a UUID (8-4-4-4-12 hex digits)";
        }
        return FORMAT.matcher(nqn).matches() ? null
                : "an NQN is nqn.YYYY-MM.reverse.domain[:name], e.g. nqn.2026-12.com.example:disk1";
    }

    /**
     * A host NQN as an admin should read it in a log line: quoted, {@code ""} marked as the empty host NQN (SPDK's
     * host sends one by default), bytes outside printable ASCII escaped.
     */
    public static String display(String nqn) {
        if (nqn == null || nqn.isEmpty()) {
            return "\"\" (empty host NQN)";
        }
        StringBuilder b = new StringBuilder(nqn.length() + 2).append('"');
        for (int i = 0; i < nqn.length(); i++) {
            char ch = nqn.charAt(i);
            if (ch < 0x20 || ch > 0x7E || ch == '"' || ch == '\\') {
                b.append(String.format("\\x%02x", (int) ch & 0xFF));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }

    /** True when the name follows the spec's {@code nqn.yyyy-mm.reverse-domain[:...]} or UUID form. */
    public static boolean isConforming(String nqn) {
        return nqn.matches("nqn\\.\\d{4}-\\d{2}\\.[A-Za-z0-9.-]+(:.*)?")
                || nqn.matches("nqn\\.2014-08\\.org\\.nvmexpress:uuid:[0-9a-fA-F-]{36}");
    }

    /** The UUID-based host NQN form nvme-cli generates. */
    public static String fromUuid(UUID uuid) {
        return "nqn.2014-08.org.nvmexpress:uuid:" + uuid;
    }
}

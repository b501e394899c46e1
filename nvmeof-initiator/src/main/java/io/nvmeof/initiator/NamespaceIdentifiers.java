package io.nvmeof.initiator;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * What tells one namespace from another behind the same NSID: NGUID and EUI-64 (Identify Namespace bytes 104-119 and
 * 120-127, or the Namespace Identification Descriptor list) and the UUID (descriptor list only). An all-zero
 * identifier is one the controller does not report. Immutable.
 */
final class NamespaceIdentifiers {
    static final int NGUID_LENGTH = 16;
    static final int EUI64_LENGTH = 8;
    static final NamespaceIdentifiers NONE = new NamespaceIdentifiers(null, null, null);

    private static final HexFormat HEX = HexFormat.of();

    /** 16 bytes, or null when not reported. */
    private final byte[] nguid;
    /** 8 bytes, or null when not reported. */
    private final byte[] eui64;
    private final UUID uuid;

    /** All-zero arrays and the nil UUID count as not reported. */
    NamespaceIdentifiers(byte[] nguid, byte[] eui64, UUID uuid) {
        this.nguid = reported(nguid) ? nguid.clone() : null;
        this.eui64 = reported(eui64) ? eui64.clone() : null;
        this.uuid = uuid == null || uuid.getMostSignificantBits() == 0 && uuid.getLeastSignificantBits() == 0 ? null
                : uuid;
    }

    private static boolean reported(byte[] id) {
        if (id == null) {
            return false;
        }
        for (byte b : id) {
            if (b != 0) {
                return true;
            }
        }
        return false;
    }

    /** A copy of the NGUID, or null. */
    byte[] nguid() {
        return nguid == null ? null : nguid.clone();
    }

    /** A copy of the EUI-64, or null. */
    byte[] eui64() {
        return eui64 == null ? null : eui64.clone();
    }

    UUID uuid() {
        return uuid;
    }

    /** True when the controller reports at least one identifier. */
    boolean any() {
        return nguid != null || eui64 != null || uuid != null;
    }

    /**
     * The same namespace as far as identifiers tell, compared as Linux's {@code nvme_ns_ids_equal} does: every
     * identifier equal, one not reported equal only to one not reported.
     */
    boolean sameAs(NamespaceIdentifiers o) {
        return Arrays.equals(nguid, o.nguid) && Arrays.equals(eui64, o.eui64) && Objects.equals(uuid, o.uuid);
    }

    /** The identifiers that differ, old -> new, for messages: "NGUID 00..01 -> 00..02, UUID none -> 1234...". */
    String changesTo(NamespaceIdentifiers now) {
        List<String> out = new ArrayList<>();
        if (!Arrays.equals(nguid, now.nguid)) {
            out.add("NGUID " + hex(nguid) + " -> " + hex(now.nguid));
        }
        if (!Arrays.equals(eui64, now.eui64)) {
            out.add("EUI-64 " + hex(eui64) + " -> " + hex(now.eui64));
        }
        if (!Objects.equals(uuid, now.uuid)) {
            out.add("UUID " + (uuid == null ? "none" : uuid) + " -> " + (now.uuid == null ? "none" : now.uuid));
        }
        return String.join(", ", out);
    }

    private static String hex(byte[] id) {
        return id == null ? "none" : HEX.formatHex(id);
    }

    @Override
    public String toString() {
        if (!any()) {
            return "no identifiers";
        }
        List<String> out = new ArrayList<>();
        if (nguid != null) {
            out.add("NGUID " + hex(nguid));
        }
        if (eui64 != null) {
            out.add("EUI-64 " + hex(eui64));
        }
        if (uuid != null) {
            out.add("UUID " + uuid);
        }
        return String.join(", ", out);
    }
}

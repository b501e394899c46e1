package io.nvmeof.protocol.auth;

import java.math.BigInteger;
import java.util.Locale;
import org.bouncycastle.crypto.agreement.DHStandardGroups;
import org.bouncycastle.crypto.params.DHParameters;

/**
 * The Diffie-Hellman groups of DH-HMAC-CHAP (NVMe Base 2.0, 8.13.5.1): none, or the RFC 7919 finite-field groups,
 * with their identifiers on the wire. The primes come from BouncyCastle's table of the RFC's groups.
 */
public enum DhGroup {
    NULL(0, "null", 0, null),
    FFDHE2048(1, "ffdhe2048", 256, DHStandardGroups.rfc7919_ffdhe2048),
    FFDHE3072(2, "ffdhe3072", 384, DHStandardGroups.rfc7919_ffdhe3072),
    FFDHE4096(3, "ffdhe4096", 512, DHStandardGroups.rfc7919_ffdhe4096),
    FFDHE6144(4, "ffdhe6144", 768, DHStandardGroups.rfc7919_ffdhe6144),
    FFDHE8192(5, "ffdhe8192", 1024, DHStandardGroups.rfc7919_ffdhe8192);

    private final int id;
    private final String name;
    private final int length;
    private final DHParameters params;

    DhGroup(int id, String name, int length, DHParameters params) {
        this.id = id;
        this.name = name;
        this.length = length;
        this.params = params;
    }

    /** The identifier on the wire (DHGID). */
    public int id() { return id; }

    /** {@code null}, {@code ffdhe2048} ... as nvmetcli and nvme-cli write them. */
    public String groupName() { return name; }

    /** Bytes of a public value or shared secret in this group (the prime's length); 0 for {@link #NULL}. */
    public int length() { return length; }

    public BigInteger prime() { return params == null ? null : params.getP(); }

    public BigInteger generator() { return params == null ? null : params.getG(); }

    /** The group with this wire identifier, or null. */
    public static DhGroup byId(int id) {
        for (DhGroup g : values()) {
            if (g.id == id) {
                return g;
            }
        }
        return null;
    }

    /**
     * The group a name means: {@code null} (also {@code none}), {@code ffdhe2048} ... {@code ffdhe8192},
     * case-insensitive; nvmet's configfs also writes the bare number of bits, taken too.
     *
     * @throws IllegalArgumentException naming what is accepted
     */
    public static DhGroup parse(String text) {
        String n = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        if (n.equals("none")) {
            n = "null";
        }
        for (DhGroup g : values()) {
            if (g.name.equals(n) || (g.params != null && g.name.equals("ffdhe" + n))) {
                return g;
            }
        }
        throw new IllegalArgumentException("unknown DH group '" + text
                + "'; use null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144 or ffdhe8192");
    }
}

package io.nvmeof.protocol.auth;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Locale;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The hash functions of DH-HMAC-CHAP (NVMe Base 2.0, 8.13.5): their identifiers in the Negotiate and Challenge
 * messages and in a DHHC-1 secret's transformation field, and their HMAC and digest from the JDK.
 */
public enum DhchapHash {
    SHA256(1, "sha256", "SHA-256", "HmacSHA256", 32),
    SHA384(2, "sha384", "SHA-384", "HmacSHA384", 48),
    SHA512(3, "sha512", "SHA-512", "HmacSHA512", 64);

    private final int id;
    private final String shortName;
    private final String digestName;
    private final String macName;
    private final int length;

    DhchapHash(int id, String shortName, String digestName, String macName, int length) {
        this.id = id;
        this.shortName = shortName;
        this.digestName = digestName;
        this.macName = macName;
        this.length = length;
    }

    /** The identifier on the wire (HASHID, and the {@code xx} of {@code DHHC-1:xx:}). */
    public int id() { return id; }

    /** Output length in bytes: the length of challenges and responses with this hash. */
    public int length() { return length; }

    /** As nvmet's configfs writes it: {@code hmac(sha256)}. */
    public String kernelName() { return "hmac(" + shortName + ")"; }

    /** {@code sha256}, {@code sha384}, {@code sha512}. */
    public String shortName() { return shortName; }

    /** The hash with this wire identifier, or null. */
    public static DhchapHash byId(int id) {
        for (DhchapHash h : values()) {
            if (h.id == id) {
                return h;
            }
        }
        return null;
    }

    /**
     * The hash a name means: {@code sha256}, {@code SHA-256}, {@code hmac(sha256)} (nvmetcli's and configfs's form)
     * and the like, case-insensitive.
     *
     * @throws IllegalArgumentException naming what is accepted
     */
    public static DhchapHash parse(String name) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        if (n.startsWith("hmac(") && n.endsWith(")")) {
            n = n.substring(5, n.length() - 1);
        }
        n = n.replace("-", "");
        for (DhchapHash h : values()) {
            if (h.shortName.equals(n)) {
                return h;
            }
        }
        throw new IllegalArgumentException("unknown DH-HMAC-CHAP hash '" + name
                + "'; use sha256, sha384 or sha512 (or hmac(sha256) ...)");
    }

    /** HMAC over the concatenation of {@code parts} under {@code key}. */
    public byte[] hmac(byte[] key, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance(macName);
            mac.init(new SecretKeySpec(key, macName));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(macName + " is not available in this JDK", e);
        }
    }

    /** The plain digest of {@code data}. */
    public byte[] digest(byte[] data) {
        try {
            return MessageDigest.getInstance(digestName).digest(data);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(digestName + " is not available in this JDK", e);
        }
    }
}

package io.nvmeof.protocol.auth;

import io.nvmeof.protocol.KeyInterchange;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * A DH-HMAC-CHAP secret in the representation {@code nvme gen-dhchap-key} prints and nvmet's configfs takes:
 * {@code DHHC-1:xx:<base64 of the key and its CRC-32>:}, where {@code xx} says how the key is transformed before use
 * ({@code 00} not at all, {@code 01}/{@code 02}/{@code 03} by HMAC-SHA-256/384/512 with the NQN). The key is 32, 48
 * or 64 bytes; the CRC-32 (the usual one, of zlib) follows it little-endian.
 *
 * <p>The key never leaves this object but through {@link #transform}; {@link #toString} does not show it.
 */
public final class DhchapSecret {
    public static final String PREFIX = "DHHC-1:";
    private static final byte[] TRANSFORM_SUFFIX = "NVMe-over-Fabrics".getBytes(StandardCharsets.US_ASCII);

    private final DhchapHash transformHash; // null: used as it is
    private final byte[] key;
    private final String text;

    private DhchapSecret(DhchapHash transformHash, byte[] key, String text) {
        this.transformHash = transformHash;
        this.key = key;
        this.text = text;
    }

    /**
     * Parses the representation, checking its CRC.
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the secret
     */
    public static DhchapSecret parse(String text) {
        KeyInterchange.Decoded d = KeyInterchange.decode(text, PREFIX, "DH-HMAC-CHAP secret", "nvme gen-dhchap-key",
                (field, length) -> field > 3
                        ? "DH-HMAC-CHAP secret transformation " + String.format("%02x", field)
                                + " is unknown; 00 (none), 01 (SHA-256), 02 (SHA-384) or 03 (SHA-512)"
                        // The key's length need not be its transformation hash's: Linux takes a 48-byte key with 01.
                        : length != 32 && length != 48 && length != 64
                                ? "a DH-HMAC-CHAP key is 32, 48 or 64 bytes (with its 4-byte CRC), not " + length
                                : null);
        DhchapHash hash = d.field() == 0 ? null : DhchapHash.byId(d.field());
        return new DhchapSecret(hash, d.key(), KeyInterchange.encode(PREFIX, d.field(), d.key()));
    }

    /** A secret from raw key bytes (as {@code nvme gen-dhchap-key --secret}); {@code transformHash} may be null. */
    public static DhchapSecret of(byte[] key, DhchapHash transformHash) {
        if (key.length != 32 && key.length != 48 && key.length != 64) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP key is 32, 48 or 64 bytes, not " + key.length);
        }
        return new DhchapSecret(transformHash, key.clone(),
                KeyInterchange.encode(PREFIX, transformHash == null ? 0 : transformHash.id(), key));
    }

    /** The hash the key is transformed with before use, or null when it is used as it is. */
    public DhchapHash transformHash() { return transformHash; }

    public int keyLength() { return key.length; }

    /**
     * The key as DH-HMAC-CHAP uses it for {@code nqn} (the host's NQN for a host secret, the subsystem's for a
     * controller secret): HMAC(key, NQN || "NVMe-over-Fabrics") with the secret's hash, or the key itself.
     */
    public byte[] transform(String nqn) {
        if (transformHash == null) {
            return key.clone();
        }
        return transformHash.hmac(key, nqn.getBytes(StandardCharsets.UTF_8), TRANSFORM_SUFFIX);
    }

    /** The representation, for storing it where secrets are kept; never for logs or API answers. */
    public String representation() { return text; }

    /** Whether both are the same secret (constant time). */
    public boolean sameAs(DhchapSecret other) {
        return other != null && transformHash == other.transformHash && MessageDigest.isEqual(key, other.key);
    }

    @Override
    public String toString() {
        return PREFIX + String.format("%02x", transformHash == null ? 0 : transformHash.id()) + ":(" + key.length
                + "-byte key, not shown):";
    }
}

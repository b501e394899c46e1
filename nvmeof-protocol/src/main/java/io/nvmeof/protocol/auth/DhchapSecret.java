package io.nvmeof.protocol.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

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
        if (text == null) {
            throw new IllegalArgumentException("no DH-HMAC-CHAP secret given");
        }
        String t = text.trim();
        if (!t.startsWith(PREFIX)) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP secret starts with '" + PREFIX
                    + "' (as 'nvme gen-dhchap-key' prints it)");
        }
        String rest = t.substring(PREFIX.length());
        if (rest.length() < 4 || rest.charAt(2) != ':') {
            throw new IllegalArgumentException("a DH-HMAC-CHAP secret has the form DHHC-1:xx:<base64>: with xx 00 to 03");
        }
        int hashId;
        try {
            if (Character.digit(rest.charAt(0), 16) < 0 || Character.digit(rest.charAt(1), 16) < 0) {
                throw new NumberFormatException(); // "+1" parses as a number; it is no transformation field
            }
            hashId = Integer.parseInt(rest.substring(0, 2), 16);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the transformation field of a DH-HMAC-CHAP secret is two hex digits, 00 to 03");
        }
        DhchapHash hash = null;
        if (hashId != 0) {
            hash = DhchapHash.byId(hashId);
            if (hash == null) {
                throw new IllegalArgumentException("DH-HMAC-CHAP secret transformation " + rest.substring(0, 2)
                        + " is unknown; 00 (none), 01 (SHA-256), 02 (SHA-384) or 03 (SHA-512)");
            }
        }
        String b64 = rest.substring(3);
        if (b64.endsWith(":")) {
            b64 = b64.substring(0, b64.length() - 1);
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the key of a DH-HMAC-CHAP secret is not valid base64");
        }
        int keyLength = raw.length - 4;
        if (keyLength != 32 && keyLength != 48 && keyLength != 64) {
            Arrays.fill(raw, (byte) 0);
            throw new IllegalArgumentException("a DH-HMAC-CHAP key is 32, 48 or 64 bytes (with its 4-byte CRC), not "
                    + Math.max(0, keyLength));
        }
        // The key's length need not be its transformation hash's: Linux takes a 48-byte key with 01, so does this.
        byte[] key = Arrays.copyOf(raw, keyLength);
        long crc = crc32(key);
        long given = (raw[keyLength] & 0xFFL) | (raw[keyLength + 1] & 0xFFL) << 8 | (raw[keyLength + 2] & 0xFFL) << 16
                | (raw[keyLength + 3] & 0xFFL) << 24;
        Arrays.fill(raw, (byte) 0);
        if (crc != given) {
            Arrays.fill(key, (byte) 0);
            throw new IllegalArgumentException("the DH-HMAC-CHAP secret's CRC does not match its key: it was mistyped"
                    + " or cut; copy it again from 'nvme gen-dhchap-key'");
        }
        return new DhchapSecret(hash, key, PREFIX + rest.substring(0, 3) + b64 + ":");
    }

    /** A secret from raw key bytes (as {@code nvme gen-dhchap-key --secret}); {@code transformHash} may be null. */
    public static DhchapSecret of(byte[] key, DhchapHash transformHash) {
        if (key.length != 32 && key.length != 48 && key.length != 64) {
            throw new IllegalArgumentException("a DH-HMAC-CHAP key is 32, 48 or 64 bytes, not " + key.length);
        }
        byte[] raw = Arrays.copyOf(key, key.length + 4);
        long crc = crc32(key);
        for (int i = 0; i < 4; i++) {
            raw[key.length + i] = (byte) (crc >>> (8 * i));
        }
        String text = PREFIX + String.format("%02x", transformHash == null ? 0 : transformHash.id()) + ":"
                + Base64.getEncoder().encodeToString(raw) + ":";
        Arrays.fill(raw, (byte) 0);
        return new DhchapSecret(transformHash, key.clone(), text);
    }

    private static long crc32(byte[] key) {
        CRC32 c = new CRC32();
        c.update(key);
        return c.getValue();
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

package io.nvmeof.protocol.tls;

import io.nvmeof.protocol.KeyInterchange;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A configured NVMe/TCP TLS PSK in the PSK interchange format that {@code nvme gen-tls-key} prints:
 * {@code NVMeTLSkey-1:xx:<base64 of the key and its CRC-32>:}, where {@code xx} is {@code 00} (the key is used as the
 * retained PSK as it is), {@code 01} (SHA-256, a 32-byte key) or {@code 02} (SHA-384, 48 bytes). The CRC-32 (zlib's)
 * follows the key little-endian.
 *
 * <p>From it, for one host and one subsystem, the TLS PSK that both ends give TLS 1.3 as an external PSK is derived as
 * the NVMe TCP transport specification (TP 8011) says and libnvme and Linux do:
 * <ol>
 * <li>retained PSK = HKDF-Expand-Label(HKDF-Extract(0, configured PSK), "HostNQN", host NQN, key length), or the key
 *     itself for {@code 00};</li>
 * <li>for a version 1 identity, its digest = base64(HMAC(retained PSK, host NQN " " subsystem NQN " NVMe-over-Fabrics"));
 *     </li>
 * <li>TLS PSK = HKDF-Expand-Label(HKDF-Extract(0, retained PSK), "nvme-tls-psk", context, key length), the context
 *     being the version 0 identity itself, or {@code "<hh> <digest>"} for version 1.</li>
 * </ol>
 * HKDF-Expand-Label is TLS 1.3's (RFC 8446 7.1: the label prefixed "tls13 "), with the PSK's hash; older nvme-cli
 * write its info differently ({@link TlsPskDerivation#LEGACY}).
 *
 * <p>The key never leaves this object but through the derivations; {@link #toString} does not show it.
 */
public final class ConfiguredPsk {
    public static final String PREFIX = "NVMeTLSkey-1:";
    private static final byte[] DIGEST_SUFFIX = " NVMe-over-Fabrics".getBytes(StandardCharsets.US_ASCII);

    /** The transformation to the retained PSK; null: none ({@code 00}). */
    private final TlsPskHash transform;
    private final byte[] key;
    private final TlsPskDerivation derivation;

    private ConfiguredPsk(TlsPskHash transform, byte[] key, TlsPskDerivation derivation) {
        this.transform = transform;
        this.key = key;
        this.derivation = derivation;
    }

    /** This key, derived from the {@link TlsPskDerivation} way. */
    public ConfiguredPsk derivedAs(TlsPskDerivation d) {
        return new ConfiguredPsk(transform, key, d);
    }

    public TlsPskDerivation derivation() {
        return derivation;
    }

    /**
     * Parses the interchange format, checking the key's length against its hash field and its CRC. Its PSKs are
     * derived the {@link TlsPskDerivation#STANDARD} way ({@link #derivedAs} changes that).
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the key
     */
    public static ConfiguredPsk parse(String text) {
        KeyInterchange.Decoded d = KeyInterchange.decode(text, PREFIX, "TLS PSK", "nvme gen-tls-key",
                (field, length) -> field > 2
                        ? "TLS PSK hash " + String.format("%02x", field) + " is unknown; 00 (none), 01 (SHA-256) or 02"
                                + " (SHA-384)"
                        : field == 0 ? length != 32 && length != 48 ? "a TLS PSK with hash 00 is 32 or 48 bytes (with"
                                + " its 4-byte CRC), not " + length : null
                        : length != TlsPskHash.byId(field).length() ? "a TLS PSK with hash "
                                + String.format("%02x", field) + " is " + TlsPskHash.byId(field).length()
                                + " bytes (with its 4-byte CRC), not " + length : null);
        return new ConfiguredPsk(d.field() == 0 ? null : TlsPskHash.byId(d.field()), d.key(), TlsPskDerivation.STANDARD);
    }

    /** The interchange format of {@code key} with hash field {@code transform} (null: 00), as nvme gen-tls-key. */
    public static String format(TlsPskHash transform, byte[] key) {
        if (transform != null ? key.length != transform.length() : key.length != 32 && key.length != 48) {
            throw new IllegalArgumentException("a TLS PSK of " + key.length + " bytes does not go with that hash");
        }
        return KeyInterchange.encode(PREFIX, transform == null ? 0 : transform.id(), key);
    }

    /** The hash of the TLS PSKs derived from this key, which picks the cipher suite. */
    public TlsPskHash hash() {
        return transform != null ? transform : TlsPskHash.forKeyLength(key.length);
    }

    /** The retained PSK for {@code hostNqn}. */
    public byte[] retained(String hostNqn) {
        if (transform == null) {
            return key.clone();
        }
        return derivation.expand(transform, key, "HostNQN", hostNqn.getBytes(StandardCharsets.UTF_8), key.length);
    }

    /** The identity a host offers for this key, in identity {@code version} 0 or 1. */
    public PskIdentity identity(String hostNqn, String subsystemNqn, int version) {
        TlsPskHash hash = hash();
        String digest = version == 1 ? digest(hash, retained(hostNqn), hostNqn, subsystemNqn) : null;
        return new PskIdentity(version, hash, hostNqn, subsystemNqn, digest);
    }

    /**
     * The TLS PSK for {@code identity}, or null when the identity is not one of this key's (another hash, or a version
     * 1 digest of another key or other NQNs).
     */
    public byte[] tlsPsk(PskIdentity identity) {
        TlsPskHash hash = hash();
        if (identity.hash() != hash) {
            return null;
        }
        byte[] retained = retained(identity.hostNqn());
        try {
            String context;
            if (identity.version() == 1) {
                String expected = digest(hash, retained, identity.hostNqn(), identity.subsystemNqn());
                if (!MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII),
                        identity.digest().getBytes(StandardCharsets.US_ASCII))) {
                    return null;
                }
                context = String.format("%02d %s", hash.id(), identity.digest());
            } else {
                context = identity.toString();
            }
            return derivation.expand(hash, retained, "nvme-tls-psk", context.getBytes(StandardCharsets.UTF_8), key.length);
        } finally {
            Arrays.fill(retained, (byte) 0);
        }
    }

    /** Whether two keys are the same (constant time). */
    public boolean sameAs(ConfiguredPsk other) {
        return other != null && transform == other.transform && derivation == other.derivation
                && MessageDigest.isEqual(key, other.key);
    }

    private static String digest(TlsPskHash hash, byte[] retained, String hostNqn, String subsystemNqn) {
        try {
            Mac mac = Mac.getInstance(hash.hmac());
            mac.init(new SecretKeySpec(retained, hash.hmac()));
            mac.update(hostNqn.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) ' ');
            mac.update(subsystemNqn.getBytes(StandardCharsets.UTF_8));
            mac.update(DIGEST_SUFFIX);
            return Base64.getEncoder().encodeToString(mac.doFinal());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no " + hash.hmac(), e);
        }
    }

    @Override
    public String toString() {
        return "ConfiguredPsk[" + (transform == null ? "00" : String.format("%02d", transform.id())) + ", "
                + key.length + " bytes, " + derivation.label() + ", redacted]";
    }
}

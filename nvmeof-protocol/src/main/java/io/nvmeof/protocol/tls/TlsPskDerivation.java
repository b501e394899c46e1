package io.nvmeof.protocol.tls;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.bouncycastle.crypto.Digest;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.digests.SHA384Digest;
import org.bouncycastle.crypto.generators.HKDFBytesGenerator;
import org.bouncycastle.crypto.params.HKDFParameters;

/**
 * How the retained and TLS PSKs are derived from a configured one. Both ends must agree, and two are in use:
 * <ul>
 * <li>{@link #STANDARD}: as the NVMe TCP transport specification says, with TLS 1.3's HKDF-Expand-Label (RFC 8446
 *     7.1: the output length big-endian, then the label and the context each prefixed with its length); libnvme 1.16
 *     and nvme-cli 2.16 onwards by default.</li>
 * <li>{@link #LEGACY}: as libnvme up to 1.15 (nvme-cli up to 2.15, e.g. Debian 13's 2.13) derive it, and later
 *     nvme-cli with {@code --compat}: the output length in the machine's (little-endian) order, then the label and the
 *     context with no lengths. Linux hosts that took their keys from such an nvme-cli need this.</li>
 * </ul>
 * Each is HKDF-Extract with a zero salt, then HKDF-Expand, with the PSK's hash.
 */
public enum TlsPskDerivation {
    STANDARD("standard"),
    LEGACY("legacy");

    private final String label;

    TlsPskDerivation(String label) {
        this.label = label;
    }

    /** The name used in configuration documents. */
    public String label() {
        return label;
    }

    /** The derivation named {@code name} ({@code standard} or {@code legacy}); null: the default, standard. */
    public static TlsPskDerivation parse(String name) {
        if (name == null) {
            return STANDARD;
        }
        for (TlsPskDerivation d : values()) {
            if (d.label.equals(name)) {
                return d;
            }
        }
        throw new IllegalArgumentException("TLS PSK derivation '" + name + "' is unknown: 'standard' (the NVMe/TCP"
                + " specification, nvme-cli 2.16 and later) or 'legacy' (nvme-cli 2.15 and earlier, or --compat)");
    }

    /** HKDF-Extract(0, {@code secret}), then HKDF-Expand with this derivation's info for {@code label} and {@code context}. */
    byte[] expand(TlsPskHash hash, byte[] secret, String label, byte[] context, int length) {
        byte[] fullLabel = ("tls13 " + label).getBytes(StandardCharsets.US_ASCII);
        ByteBuffer info;
        if (this == STANDARD) {
            if (context.length > 255) {
                throw new IllegalArgumentException("an HKDF label's context is at most 255 bytes, not " + context.length
                        + " (NQNs this long cannot have a standard TLS PSK)");
            }
            info = ByteBuffer.allocate(2 + 1 + fullLabel.length + 1 + context.length);
            info.putShort((short) length).put((byte) fullLabel.length).put(fullLabel).put((byte) context.length);
        } else {
            info = ByteBuffer.allocate(2 + fullLabel.length + context.length).order(ByteOrder.LITTLE_ENDIAN);
            info.putShort((short) length).put(fullLabel);
        }
        info.put(context);
        Digest digest = hash == TlsPskHash.SHA384 ? new SHA384Digest() : new SHA256Digest();
        HKDFBytesGenerator hkdf = new HKDFBytesGenerator(digest);
        hkdf.init(new HKDFParameters(secret, null, info.array()));
        byte[] out = new byte[length];
        hkdf.generateBytes(out, 0, length);
        return out;
    }
}

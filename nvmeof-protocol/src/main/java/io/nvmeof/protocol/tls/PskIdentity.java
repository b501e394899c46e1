package io.nvmeof.protocol.tls;

import java.nio.charset.StandardCharsets;

/**
 * An NVMe/TCP TLS PSK identity (TP 8011, as Linux and nvme-cli write it): {@code NVMe0R<hh> <hostnqn> <subnqn>}
 * (version 0) or {@code NVMe1R<hh> <hostnqn> <subnqn> <digest>} (version 1, the digest binding the PSK to the two
 * NQNs), where {@code hh} is the PSK's hash ({@link TlsPskHash}).
 *
 * @param digest base64 PSK digest of a version 1 identity; null for version 0
 */
public record PskIdentity(int version, TlsPskHash hash, String hostNqn, String subsystemNqn, String digest) {
    /** NQNs are at most 223 bytes; two of them, the digest and the fields fit well within this. */
    public static final int MAX_LENGTH = 600;

    public PskIdentity {
        if (version != 0 && version != 1) {
            throw new IllegalArgumentException("PSK identity version " + version + " is unknown (0 or 1)");
        }
        if ((version == 1) != (digest != null)) {
            throw new IllegalArgumentException("a version 1 PSK identity has a digest, a version 0 one none");
        }
    }

    /** The identity as sent in the ClientHello. */
    @Override
    public String toString() {
        String s = "NVMe" + version + "R" + String.format("%02d", hash.id()) + " " + hostNqn + " " + subsystemNqn;
        return digest == null ? s : s + " " + digest;
    }

    public byte[] bytes() {
        return toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Parses an identity offered by a peer; null when it is not an NVMe/TCP identity (another application's PSK, an
     * unknown version or hash, a malformed one): such an offer matches no key.
     */
    public static PskIdentity parse(byte[] identity) {
        if (identity == null || identity.length < 10 || identity.length > MAX_LENGTH) {
            return null;
        }
        for (byte b : identity) {
            if (b < 0x20 || b > 0x7e) {
                return null; // NQNs are printable ASCII here, and the fields below are counted in bytes
            }
        }
        String s = new String(identity, StandardCharsets.US_ASCII);
        if (!s.startsWith("NVMe") || s.charAt(5) != 'R' || s.charAt(8) != ' ') {
            return null;
        }
        int version = Character.digit(s.charAt(4), 10);
        int hashId = Character.digit(s.charAt(6), 10) * 10 + Character.digit(s.charAt(7), 10);
        TlsPskHash hash = Character.digit(s.charAt(6), 10) < 0 || Character.digit(s.charAt(7), 10) < 0 ? null
                : TlsPskHash.byId(hashId);
        if ((version != 0 && version != 1) || hash == null) {
            return null;
        }
        String[] fields = s.substring(9).split(" ", -1);
        if (fields.length != (version == 0 ? 2 : 3)) {
            return null;
        }
        for (String f : fields) {
            if (f.isEmpty()) {
                return null;
            }
        }
        return new PskIdentity(version, hash, fields[0], fields[1], version == 1 ? fields[2] : null);
    }
}

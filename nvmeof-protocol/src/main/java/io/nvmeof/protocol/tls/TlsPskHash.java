package io.nvmeof.protocol.tls;

/**
 * The hash of an NVMe/TCP TLS PSK (NVMe TCP Transport, TP 8011): the two-digit field of the PSK interchange format
 * and of the PSK identity, and with it the TLS 1.3 cipher suite the PSK goes with.
 */
public enum TlsPskHash {
    SHA256(1, "SHA-256", "HmacSHA256", 32),
    SHA384(2, "SHA-384", "HmacSHA384", 48);

    private final int id;
    private final String digest;
    private final String hmac;
    private final int length;

    TlsPskHash(int id, String digest, String hmac, int length) {
        this.id = id;
        this.digest = digest;
        this.hmac = hmac;
        this.length = length;
    }

    /** The field's value: 1 (SHA-256, TLS_AES_128_GCM_SHA256) or 2 (SHA-384, TLS_AES_256_GCM_SHA384). */
    public int id() { return id; }

    /** The JCA digest name. */
    public String digest() { return digest; }

    /** The JCA HMAC name. */
    public String hmac() { return hmac; }

    /** Output length in bytes, which is also the length of a key of this hash. */
    public int length() { return length; }

    /** The hash with field value {@code id}, or null. */
    public static TlsPskHash byId(int id) {
        for (TlsPskHash h : values()) {
            if (h.id == id) {
                return h;
            }
        }
        return null;
    }

    /** The hash a key of {@code length} bytes goes with when its format says none (as libnvme's default). */
    public static TlsPskHash forKeyLength(int length) {
        return length == 48 ? SHA384 : SHA256;
    }
}

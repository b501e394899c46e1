package io.nvmeof.netty.tls;

import java.util.Arrays;

/**
 * A TLS 1.3 external pre-shared key: its identity as sent in the ClientHello, the key, and its hash (SHA-256 goes with
 * TLS_AES_128_GCM_SHA256, SHA-384 with TLS_AES_256_GCM_SHA384). {@link #toString} never shows the key.
 */
public record ExternalPsk(byte[] identity, byte[] key, boolean sha384) {
    public ExternalPsk {
        identity = identity.clone();
        key = key.clone();
    }

    @Override
    public byte[] identity() {
        return identity.clone();
    }

    @Override
    public byte[] key() {
        return key.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExternalPsk p && Arrays.equals(identity, p.identity) && sha384 == p.sha384
                && java.security.MessageDigest.isEqual(key, p.key);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(identity);
    }

    @Override
    public String toString() {
        return "ExternalPsk[" + new String(identity, java.nio.charset.StandardCharsets.UTF_8) + ", "
                + (sha384 ? "SHA-384" : "SHA-256") + ", key redacted]";
    }
}

package io.nvmeof.admin;

import java.nio.file.Path;
import java.util.List;

/**
 * How the admin API is served.
 *
 * @param host        address to listen on; a non-loopback one needs {@code tls}
 * @param port        TCP port (0: any free one)
 * @param token       the bearer token every /api request must carry
 * @param allowedDirs directories under which file-backed namespaces may be created over the API (none: refused)
 * @param tls         the server's PEM certificate (chain) and private key, or null to serve plain HTTP (loopback only)
 */
public record AdminOptions(String host, int port, String token, List<Path> allowedDirs, Tls tls) {
    /** PEM files: the certificate (chain, leaf first) and its private key (PKCS#8, PKCS#1 RSA or SEC1 EC). */
    public record Tls(Path certificate, Path key) {
    }

    public AdminOptions {
        if (token == null || token.length() < 16) {
            throw new IllegalArgumentException("the admin token must have at least 16 characters");
        }
        allowedDirs = List.copyOf(allowedDirs);
    }

    /** Plain HTTP, for a loopback address. */
    public AdminOptions(String host, int port, String token, List<Path> allowedDirs) {
        this(host, port, token, allowedDirs, null);
    }
}

package io.nvmeof.admin;

import java.nio.file.Path;
import java.util.List;

/**
 * How the admin API is served.
 *
 * @param host        address to listen on; only a loopback address until TLS is configured
 * @param port        TCP port (0: any free one)
 * @param token       the bearer token every /api request must carry
 * @param allowedDirs directories under which file-backed namespaces may be created over the API (none: refused)
 */
public record AdminOptions(String host, int port, String token, List<Path> allowedDirs) {
    public AdminOptions {
        if (token == null || token.length() < 16) {
            throw new IllegalArgumentException("the admin token must have at least 16 characters");
        }
        allowedDirs = List.copyOf(allowedDirs);
    }
}

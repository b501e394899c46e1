package io.nvmeof.admin.migration;

import io.nvmeof.protocol.auth.DhchapSecret;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;

/**
 * Reads the secret an SPDK keyring key holds: {@code keyring_file_add_key} names a file, and SPDK's file keyring
 * reads the key from it when a host needs it. An import reads the files of the keys its hosts use; who may read
 * which path is the caller's policy ({@link Reader}: the admin API allows only its {@code --allow-dir} directories,
 * the command line reads what its administrator names).
 */
public final class KeyFiles {
    /** A DHHC-1 secret is about 100 characters; a larger file is not a key file. */
    static final int MAX_BYTES = 4096;

    /** Reads key {@code name}'s file at {@code path}; throws naming the key and the path, never the content. */
    @FunctionalInterface
    public interface Reader {
        String read(String name, String path);
    }

    private KeyFiles() {
    }

    /**
     * The file's one DH-HMAC-CHAP secret or TLS PSK (interchange format), checked (form, length, CRC). As SPDK's file keyring, the file must be a
     * regular file that only its owner may read or write: a key other users could read is known to them.
     *
     * @throws IllegalArgumentException naming the key and the path and what is wrong, never the file's content
     */
    public static String read(String name, String path) {
        String which = "keyring_file_add_key(" + name + ") path " + path;
        Path p;
        try {
            p = Path.of(path);
        } catch (java.nio.file.InvalidPathException e) {
            throw new IllegalArgumentException(which + " is not a valid path: " + e.getReason());
        }
        if (!p.isAbsolute()) {
            throw new IllegalArgumentException(which + " must be absolute, as SPDK requires");
        }
        String text;
        try {
            if (!Files.isRegularFile(p)) {
                throw new IllegalArgumentException(which + (Files.exists(p, LinkOption.NOFOLLOW_LINKS)
                        ? " is not a regular file" : " does not exist") + ": the key cannot be read");
            }
            Set<PosixFilePermission> mode = Files.getPosixFilePermissions(p);
            if (mode.stream().anyMatch(m -> m.name().startsWith("GROUP") || m.name().startsWith("OTHERS"))) {
                throw new IllegalArgumentException(which + " may be read or written by other users (mode "
                        + java.nio.file.attribute.PosixFilePermissions.toString(mode) + "); SPDK refuses such a key"
                        + " file too: chmod 600 it");
            }
            if (Files.size(p) > MAX_BYTES) {
                throw new IllegalArgumentException(which + " is larger than a key file (" + MAX_BYTES + " bytes at"
                        + " most): it holds no single DH-HMAC-CHAP secret");
            }
            text = Files.readString(p, StandardCharsets.US_ASCII).strip();
        } catch (IOException | java.io.UncheckedIOException e) {
            throw new IllegalArgumentException(which + " cannot be read: " + e.getClass().getSimpleName()
                    + (e.getMessage() != null ? " " + e.getMessage() : ""));
        }
        if (text.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException(which + " holds more than one word; a key file holds one DH-HMAC-CHAP"
                    + " secret (DHHC-1:xx:...:) or one TLS PSK (NVMeTLSkey-1:xx:...:)");
        }
        try {
            if (text.startsWith(io.nvmeof.protocol.tls.ConfiguredPsk.PREFIX)) {
                io.nvmeof.protocol.tls.ConfiguredPsk.parse(text); // checked: form, length, CRC
                return text;
            }
            return DhchapSecret.parse(text).representation();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(which + ": " + e.getMessage()); // says what is wrong, not the secret
        }
    }
}

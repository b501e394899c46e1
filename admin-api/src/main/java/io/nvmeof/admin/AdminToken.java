package io.nvmeof.admin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * The admin API's bearer token: read from a file, or generated on first start into one only its owner can read
 * (mode 0600, created with that mode so it is never readable by others, even for a moment).
 */
public final class AdminToken {
    private AdminToken() {
    }

    /** The token in {@code file}, creating the file with a new random token when it does not exist. */
    public static String loadOrCreate(Path file) throws IOException {
        if (!Files.exists(file)) {
            Files.createDirectories(file.toAbsolutePath().getParent());
            byte[] random = new byte[32];
            new SecureRandom().nextBytes(random);
            String token = HexFormat.of().formatHex(random);
            try {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                Files.writeString(file, token + "\n", StandardCharsets.US_ASCII);
                return token;
            } catch (FileAlreadyExistsException e) {
                // another process created it meanwhile: read theirs
            }
        }
        return read(file);
    }

    /** The token in an existing file; refuses a file other users can read. */
    public static String read(Path file) throws IOException {
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
        if (perms.contains(PosixFilePermission.GROUP_READ) || perms.contains(PosixFilePermission.OTHERS_READ)) {
            throw new IOException("admin token file " + file + " is readable by other users; chmod 600 it");
        }
        String token = Files.readString(file, StandardCharsets.US_ASCII).trim();
        if (token.length() < 16) {
            throw new IOException("admin token file " + file + " holds no token of at least 16 characters");
        }
        return token;
    }
}

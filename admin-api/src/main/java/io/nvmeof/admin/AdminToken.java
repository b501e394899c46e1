package io.nvmeof.admin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
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

    /**
     * The token in an existing file, for the target that accepts it. Refused: a file other users can read (they
     * would know the token) or write (they could put in one they know), and one owned by another user than the one
     * the target runs as or root (its owner can make it so), as ssh's StrictModes judges authorized_keys.
     */
    public static String read(Path file) throws IOException {
        checkOwner(file);
        return readAsClient(file);
    }

    /**
     * The token in an existing file, for a client that sends it: the file must not be readable or writable by other
     * users, but its owner may be another (the target's service user, read by root).
     */
    public static String readAsClient(Path file) throws IOException {
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
        Set<PosixFilePermission> shared = EnumSet.of(PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
                PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE);
        shared.retainAll(perms);
        if (!shared.isEmpty()) {
            boolean readable = shared.contains(PosixFilePermission.GROUP_READ)
                    || shared.contains(PosixFilePermission.OTHERS_READ);
            boolean writable = shared.contains(PosixFilePermission.GROUP_WRITE)
                    || shared.contains(PosixFilePermission.OTHERS_WRITE);
            throw new IOException("admin token file " + file + " is " + (readable && writable ? "readable and writable"
                    : readable ? "readable" : "writable") + " by other users (" + PosixFilePermissions.toString(perms)
                    + "); chmod 600 it");
        }
        String token = Files.readString(file, StandardCharsets.US_ASCII).trim();
        if (token.length() < 16) {
            throw new IOException("admin token file " + file + " holds no token of at least 16 characters");
        }
        return token;
    }

    private static void checkOwner(Path file) throws IOException {
        int owner = (Integer) Files.getAttribute(file, "unix:uid");
        // /proc/self belongs to this process's user (Java has no call for the process's user ID).
        int self = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        if (owner != self && owner != 0) {
            throw new IOException("admin token file " + file + " belongs to " + Files.getOwner(file).getName()
                    + ", not to the user the target runs as (" + System.getProperty("user.name") + ") or root: its"
                    + " owner could replace the token; chown it to " + System.getProperty("user.name"));
        }
    }
}

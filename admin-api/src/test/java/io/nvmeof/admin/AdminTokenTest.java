package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A token file is trusted only when no one but its owner can read or change it, and its owner is the user the
 * target runs as (or root), as ssh's StrictModes judges an authorized_keys file: whoever can write the token can
 * replace it with one they know.
 */
class AdminTokenTest {
    private static final String TOKEN = "0123456789abcdef0123456789abcdef";

    @TempDir
    Path dir;

    private Path tokenFile(String mode) throws IOException {
        Path f = dir.resolve("token-" + mode);
        Files.writeString(f, TOKEN + "\n");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
        return f;
    }

    @Test
    void anOwnerOnlyFileIsRead() throws Exception {
        assertEquals(TOKEN, AdminToken.read(tokenFile("rw-------")));
        assertEquals(TOKEN, AdminToken.read(tokenFile("r--------")));
    }

    @Test
    void aFileOthersCanReadOrWriteIsRefused() throws Exception {
        for (String mode : new String[] {"rw-r-----", "rw----r--", "rw--w----", "rw-----w-", "rw--w--w-"}) {
            Path f = tokenFile(mode);
            IOException e = assertThrows(IOException.class, () -> AdminToken.read(f), mode);
            assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("chmod 600"), e.getMessage());
        }
    }

    @Test
    void aFileOwnedByAnotherUserIsRefused() throws Exception {
        Path f = tokenFile("rw-------");
        UserPrincipal nobody;
        try {
            nobody = f.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
            Files.setOwner(f, nobody);
        } catch (IOException e) {
            Assumptions.abort("cannot give a file to another user here (needs root): " + e.getMessage());
            return;
        }
        IOException e = assertThrows(IOException.class, () -> AdminToken.read(f));
        assertTrue(e.getMessage().contains("nobody") && e.getMessage().contains(f.toString()), e.getMessage());
    }
}

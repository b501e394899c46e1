package io.nvmeof.tgt.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 51, finding 3: who owns a Host ID, kept through a restart of the target. */
class HostIdentitiesTest {
    static final String A = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-0000000000a1";
    static final String B = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-0000000000b2";

    @TempDir
    Path dir;

    @Test
    void theFirstHostToProveItselfWithAnIdOwnsItThroughARestart() throws Exception {
        Path file = dir.resolve("host-ids.json");
        UUID id = UUID.randomUUID();
        HostIdentities ids = new HostIdentities();
        ids.persistIn(file);
        assertTrue(ids.proven(id, A));
        assertTrue(!ids.proven(id, B), "a second host does not take it over");
        assertEquals(A, ids.owner(id));
        assertTrue(ids.proven(new UUID(0, 0), B) && ids.owner(new UUID(0, 0)) == null, "the nil ID is nobody's");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));

        HostIdentities restarted = new HostIdentities();
        restarted.persistIn(file);
        assertEquals(A, restarted.owner(id), "a restart does not free it for whoever connects first");
        restarted.forget(A);
        assertNull(restarted.owner(id), "free once the administrator removes the host");
        HostIdentities again = new HostIdentities();
        again.persistIn(file);
        assertNull(again.owner(id));
    }

    @Test
    void aFileThatIsNotWhatItWroteStopsTheTarget() throws Exception {
        Path file = dir.resolve("host-ids.json");
        Files.writeString(file, "{\"not-a-uuid\": \"" + A + "\"}");
        Exception e = assertThrows(java.io.IOException.class, () -> new HostIdentities().persistIn(file));
        assertTrue(e.getMessage().contains("not a Host ID") && e.getMessage().contains(file.toString()), e.getMessage());
        Files.writeString(file, "{ torn");
        e = assertThrows(java.io.IOException.class, () -> new HostIdentities().persistIn(file));
        assertTrue(e.getMessage().contains("repair or remove"), e.getMessage());
    }
}

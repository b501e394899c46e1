package io.nvmeof.tgt.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BackendTest {
    @TempDir
    Path dir;

    static ByteBuffer random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return ByteBuffer.wrap(b);
    }

    static byte[] read(BlockBackend b, long offset, int n) throws Exception {
        ByteBuffer dst = ByteBuffer.allocateDirect(n);
        b.read(offset, dst);
        assertEquals(n, dst.position(), "read fills the buffer");
        byte[] out = new byte[n];
        dst.flip().get(out);
        return out;
    }

    void exercise(BlockBackend b) throws Exception {
        assertArrayEquals(new byte[8192], read(b, 0, 8192), "never-written space reads as zeroes");
        // A write that straddles the RAM backend's 2 MiB chunk boundary.
        long at = (2L << 20) - 3000;
        ByteBuffer data = random(10_000, 1);
        b.write(at, data.duplicate());
        assertArrayEquals(data.array(), read(b, at, 10_000));
        b.writeZeroes(at + 1000, 2000);
        byte[] expected = data.array().clone();
        java.util.Arrays.fill(expected, 1000, 3000, (byte) 0);
        assertArrayEquals(expected, read(b, at, 10_000));
        b.deallocate(at, 10_000);
        assertArrayEquals(new byte[10_000], read(b, at, 10_000));
        b.flush();
    }

    @Test
    void fileBackendCreatesSparseAndPersists() throws Exception {
        Path f = dir.resolve("ns.img");
        try (FileBackend fb = new FileBackend(f, 16L << 20)) {
            assertEquals(16L << 20, Files.size(f), "the file is grown to the namespace size");
            exercise(fb);
            fb.write(4096, random(4096, 3));
            fb.flush();
        }
        try (FileBackend again = new FileBackend(f, 0)) {
            assertEquals(16L << 20, again.sizeBytes(), "size 0 means: use the existing file's size");
            assertArrayEquals(random(4096, 3).array(), read(again, 4096, 4096), "data survives reopening");
        }
        assertThrows(java.io.IOException.class, () -> new FileBackend(dir.resolve("empty.img"), 0));
    }

    /**
     * Issue 30, finding 19: a missing file was created through a symbolic link whose target did not exist (the first
     * open refused to, the second followed the link), so a link inside an allowed directory put the namespace's file
     * wherever it pointed, and a refused namespace left it there. A file is only ever created at its own name; a link
     * to an existing file still opens that file (as /dev/disk/by-id names a device).
     */
    @Test
    void aFileIsNeverCreatedThroughASymbolicLink() throws Exception {
        Path elsewhere = dir.resolve("elsewhere.img");
        Path link = dir.resolve("link.img");
        Files.createSymbolicLink(link, elsewhere);
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> new FileBackend(link, 1 << 20));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertFalse(Files.exists(elsewhere), "nothing was created through the link");
        Files.write(elsewhere, new byte[8192]);
        try (FileBackend b = new FileBackend(link, 0)) {
            assertEquals(8192, b.sizeBytes(), "a link to an existing file opens that file");
        }
    }

    /** Issue 30, finding 24: a new disk image holds the hosts' data and is created owner-only (0600). */
    @Test
    void aNewFileIsOwnerOnly() throws Exception {
        Path f = dir.resolve("private.img");
        new FileBackend(f, 1 << 20).close();
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(f)));
    }
}

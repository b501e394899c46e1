package io.nvmeof.target.backend;

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
}

package io.nvmeof.tgt.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nvmeof.uring.UringLibrary;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file served direct is read and written around the page cache also where its I/O does not go through a poll group's
 * io_uring (a poll group without a ring; zeroes written where the file system cannot zero a range). Before, those paths
 * used the buffered channel beside the ring's O_DIRECT writes: the kernel then fails to drop the pages a direct write
 * covers, records EIO on the file, and the next Flush or FUA write fails with Write Fault.
 */
class DirectFallbackTest {
    @TempDir
    Path dir;

    /** Pages of {@code file} in the page cache, as util-linux's fincore counts them. */
    private static long residentPages(Path file) throws Exception {
        Process p = new ProcessBuilder("fincore", "--noheadings", "--output", "PAGES", file.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && out.matches("\\d+"),
                () -> "fincore (util-linux) is needed to see the page cache: " + out);
        return Long.parseLong(out);
    }

    @Test
    void readsAndWritesOffTheRingGoAroundThePageCacheOfADirectFile() throws Exception {
        assumeTrue(UringLibrary.isAvailable(), () -> "io_uring unavailable here: " + UringLibrary.unavailableReason());
        Path file = dir.resolve("direct.img");
        FileBackend backend = FileBackend.openFile(file, 4L << 20, false);
        try {
            assumeTrue(backend.ringFile().direct(), "the temporary directory's file system refuses O_DIRECT");
            long before = residentPages(file);
            byte[] data = new byte[64 << 10];
            new Random(32).nextBytes(data);
            // A buffer as a transport may hand it: direct, but not aligned.
            ByteBuffer src = ByteBuffer.allocateDirect(data.length + 1).position(1).slice().put(data).flip();
            backend.write(1 << 20, src);
            assertFalse(src.hasRemaining(), "all of it written");
            ByteBuffer dst = ByteBuffer.allocate(data.length);
            backend.read(1 << 20, dst);
            assertArrayEquals(data, dst.array(), "read back");
            backend.writeZeroes(2 << 20, 8192);
            assertEquals(before, residentPages(file), "no page of the file came into the page cache");
        } finally {
            backend.close();
        }
        ByteBuffer independent = ByteBuffer.allocate(64 << 10);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (independent.hasRemaining() && ch.read(independent, (1 << 20) + independent.position()) > 0) { }
        }
        byte[] expected = new byte[64 << 10];
        new Random(32).nextBytes(expected);
        assertArrayEquals(expected, independent.array(), "in the file");
    }
}

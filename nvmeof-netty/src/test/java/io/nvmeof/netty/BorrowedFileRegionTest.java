package io.nvmeof.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A reusable range of a file for sendfile: sends exactly its range, is recycled once released, zeroes past a cut. */
class BorrowedFileRegionTest {
    @TempDir
    Path dir;

    @Test
    void sendsItsRangeAndIsRecycledForTheNextOne() throws IOException {
        byte[] bytes = new byte[64 << 10];
        new Random(3).nextBytes(bytes);
        Path file = Files.write(dir.resolve("f"), bytes);
        List<BorrowedFileRegion> recycled = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            BorrowedFileRegion r = new BorrowedFileRegion(recycled::add).borrow("ns 3", ch, 1000, 20_000);
            assertEquals(1, r.refCnt());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            WritableByteChannel target = Channels.newChannel(out);
            while (r.transferred() < r.count()) {
                r.transferTo(target, r.transferred());
            }
            assertArrayEquals(Arrays.copyOfRange(bytes, 1000, 21_000), out.toByteArray());
            assertEquals("ns 3", r.holder());
            r.release();
            assertSame(r, recycled.get(0));
            assertNull(r.holder(), "a free region holds nothing");
            r.borrow("ns 3", ch, 0, 10);
            assertEquals(0, r.transferred(), "a reused region starts from its new range's beginning");
            assertThrows(IllegalStateException.class, () -> r.borrow("ns 3", ch, 0, 10), "borrowed twice");
        }
    }

    /**
     * A file cut short behind the namespace (issue 29, finding 10): the range past the new end is sent as zeroes, as a
     * read through a copy reads it, neither failing the send (which ended the host's connection) nor spinning.
     */
    @Test
    void aFileCutShorterThanTheRangeSendsZeroesPastItsEnd() throws IOException {
        byte[] bytes = new byte[6000];
        Arrays.fill(bytes, (byte) 0x42);
        Path file = Files.write(dir.resolve("short"), bytes);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            for (long at : new long[] {8192, 4096}) { // wholly past the end; across it
                BorrowedFileRegion r = new BorrowedFileRegion(x -> { }).borrow(null, ch, at, 200_000);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                WritableByteChannel target = Channels.newChannel(out);
                for (int calls = 0; r.transferred() < r.count(); calls++) {
                    assertTrue(calls < 100, "the send makes progress");
                    r.transferTo(target, r.transferred());
                }
                byte[] expected = new byte[200_000];
                if (at < bytes.length) {
                    Arrays.fill(expected, 0, (int) (bytes.length - at), (byte) 0x42);
                }
                assertArrayEquals(expected, out.toByteArray(), "from " + at);
                r.release();
            }
        }
    }
}

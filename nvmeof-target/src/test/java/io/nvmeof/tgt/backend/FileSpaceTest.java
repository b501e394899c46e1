package io.nvmeof.tgt.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Issue 29, finding 7: the descriptor FileSpace passes to fallocate must not be closed while a call uses it. Closed
 * under a call, its number could go to a file opened meanwhile (another namespace's), and the call would punch a
 * hole in that file. A stand-in for the kernel holds one fallocate in progress while the backend closes.
 */
class FileSpaceTest {
    /** Records the calls; fallocate waits at a gate; close(fd) marks the number free, open reuses the lowest one. */
    static final class FakeKernel implements FileSpace.Syscalls {
        final List<String> calls = new CopyOnWriteArrayList<>();
        final CountDownLatch inFallocate = new CountDownLatch(1);
        final CountDownLatch gate = new CountDownLatch(1);
        volatile boolean open3 = false;

        @Override
        public int open(String path, int flags) {
            calls.add("open " + path);
            open3 = true;
            return 3;
        }

        @Override
        public int close(int fd) {
            calls.add("close " + fd);
            open3 = false;
            return 0;
        }

        @Override
        public int fallocate(int fd, int mode, long offset, long length) {
            calls.add("fallocate " + fd + (open3 ? "" : " (closed!)"));
            inFallocate.countDown();
            try {
                gate.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            calls.add("fallocate returned");
            return 0;
        }
    }

    @Test
    void theDescriptorIsClosedOnlyAfterTheCallUsingItReturns() throws Exception {
        FakeKernel k = new FakeKernel();
        FileSpace space = new FileSpace(Path.of("/ns.img"), k);
        ExecutorService t = Executors.newSingleThreadExecutor();
        try {
            Future<Boolean> punched = t.submit(() -> space.punchHole(0, 4096));
            assertTrue(k.inFallocate.await(10, TimeUnit.SECONDS));
            space.close(); // the namespace is removed while the call runs
            assertFalse(k.calls.contains("close 3"), "closed under the fallocate using it: " + k.calls);
            k.gate.countDown();
            assertTrue(punched.get(10, TimeUnit.SECONDS));
            assertEquals(List.of("open /ns.img", "fallocate 3", "fallocate returned", "close 3"), k.calls,
                    "closed as the call returned, once");
            assertFalse(space.punchHole(0, 4096), "a closed space refuses (the caller writes zeroes)");
            space.close();
            assertEquals(1, k.calls.stream().filter("close 3"::equals).count(), "closed once");
        } finally {
            k.gate.countDown();
            t.shutdownNow();
        }
    }

    @Test
    void closingAnIdleSpaceClosesAtOnce() throws Exception {
        FakeKernel k = new FakeKernel();
        k.gate.countDown();
        FileSpace space = new FileSpace(Path.of("/ns.img"), k);
        assertTrue(space.zeroRange(0, 512));
        space.close();
        assertEquals("close 3", k.calls.get(k.calls.size() - 1));
    }
}

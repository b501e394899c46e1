package io.nvmeof.tgt.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Library;
import com.sun.jna.Native;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nvmeof.tgt.transport.TransportQueue;
import io.nvmeof.uring.UringLibrary;
import java.io.FileOutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The ring's ownership rules, with a "device" that answers when the test says so (a FIFO: a read stays in the kernel
 * until bytes are written to it). A request the kernel has is not released when its queue closes (its buffer could
 * still be written: it would land in whatever reused it), and is released, without completing, once the kernel is done;
 * a request that only waited for room never reaches the kernel after its queue closed.
 */
class StorageRingTest {
    interface LibC extends Library {
        int open(String path, int flags);
        int close(int fd);
    }

    private static final int O_RDWR = 2;
    private static LibC libc;

    @TempDir
    Path dir;

    @BeforeAll
    static void needsIoUring() {
        assumeTrue(UringLibrary.isAvailable(), () -> "io_uring unavailable here: " + UringLibrary.unavailableReason());
        libc = Native.load("c", LibC.class);
    }

    /** What the core asks of a transport, and nothing more: tasks run at once, on the caller's thread. */
    static final class FakeTransport implements TransportQueue {
        @Override public int mapData(Request request) { return 0; }
        @Override public void fetchData(Request request) { }
        @Override public boolean allocateReadData(Request request) { return true; }
        @Override public void queueResponse(Request request) { request.sq().release(request); }
        @Override public void close(String reason) { }
        @Override public void execute(Runnable task) { task.run(); }
        @Override public ByteBufAllocator allocator() { return UnpooledByteBufAllocator.DEFAULT; }
        @Override public int inlineDataSize() { return 0; }
        @Override public boolean keyedSgls() { return false; }
        @Override public int trtype() { return 3; }
        @Override public String peer() { return "test"; }
    }

    private int fifo(String name) throws Exception {
        Path p = dir.resolve(name);
        Process mk = new ProcessBuilder("mkfifo", p.toString()).redirectErrorStream(true).start();
        assumeTrue(mk.waitFor(10, TimeUnit.SECONDS) && mk.exitValue() == 0, "mkfifo is needed");
        int fd = libc.open(p.toString(), O_RDWR); // read and write ends: the open does not wait for a writer
        assertTrue(fd >= 0, "open " + p);
        return fd;
    }

    private static Request withBuffer(SubmissionQueue sq) {
        Request r = sq.acquire();
        r.data = UnpooledByteBufAllocator.DEFAULT.directBuffer(4096, 4096).writerIndex(4096);
        return r;
    }

    @Test
    void aRequestTheKernelHasOutlivesItsQueueAndIsReleasedWhenTheKernelIsDone() throws Exception {
        int fd = fifo("device");
        SubmissionQueue sq = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), new FakeTransport(), 4);
        List<Integer> completed = new ArrayList<>();
        try (StorageRing ring = new StorageRing(1, null)) {
            Request inKernel = withBuffer(sq);
            ByteBuf buffer = inKernel.data;
            ring.read(inKernel, fd, buffer.memoryAddress(), 4096, 0, (r, res) -> completed.add(res));
            Request waiting = withBuffer(sq);
            ByteBuf waitingBuffer = waiting.data;
            ring.read(waiting, fd, waitingBuffer.memoryAddress(), 4096, 0, (r, res) -> completed.add(res));
            ring.poll();
            assertEquals(1, ring.inFlight(), "a ring of one takes one");
            assertEquals(1, ring.waiting());
            Thread.sleep(50);
            ring.poll();
            assertTrue(ring.busy(), "the FIFO has no bytes: the read stays in the kernel");

            sq.releaseAll(); // the connection is gone
            assertTrue(inKernel.inUse, "not released while the kernel has it");
            assertEquals(1, buffer.refCnt(), "its buffer is not given back for reuse");
            assertFalse(waiting.inUse, "the waiting one is released at once");
            assertEquals(0, waitingBuffer.refCnt());
            assertEquals(0, ring.waiting(), "and withdrawn: it never reaches the kernel");

            try (FileOutputStream out = new FileOutputStream(dir.resolve("device").toFile())) {
                out.write(new byte[4096]);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ring.busy() && System.nanoTime() < deadline) {
                ring.poll();
                Thread.onSpinWait();
            }
            assertFalse(ring.busy());
            assertEquals(List.of(), completed, "an orphan's completion goes nowhere: its queue let it go");
            assertFalse(inKernel.inUse, "released once the kernel is done");
            assertEquals(0, buffer.refCnt());
            assertEquals(1, ring.completedRequests(), "the waiting one never went in");
        } finally {
            libc.close(fd);
        }
    }

    @Test
    void aFullRingKeepsRequestsInOrderAndTakesThemAsRoomComes() throws Exception {
        int fd = fifo("ordered");
        SubmissionQueue sq = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), new FakeTransport(), 8);
        List<Integer> order = new ArrayList<>();
        // One in the kernel at a time, so the order seen is the order the ring let them in, not the kernel's.
        try (StorageRing ring = new StorageRing(1, null);
             FileOutputStream out = new FileOutputStream(dir.resolve("ordered").toFile())) {
            for (int i = 0; i < 6; i++) {
                Request r = withBuffer(sq);
                r.transportState = i;
                ring.read(r, fd, r.data.memoryAddress(), 1, 0, (req, res) -> {
                    order.add(req.transportState);
                    assertEquals(1, res);
                    req.sq().release(req);
                });
            }
            ring.poll();
            assertEquals(1, ring.inFlight());
            assertEquals(5, ring.waiting());
            // One byte per read: each write to the FIFO completes the read in the kernel, and the next goes in.
            for (int i = 0; i < 6; i++) {
                out.write(i);
                out.flush();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (order.size() <= i && System.nanoTime() < deadline) {
                    ring.poll();
                }
            }
            assertEquals(List.of(0, 1, 2, 3, 4, 5), order, "taken in the order they came");
            assertFalse(ring.busy());
            assertEquals(0, sq.inUse());
        } finally {
            libc.close(fd);
        }
    }
}

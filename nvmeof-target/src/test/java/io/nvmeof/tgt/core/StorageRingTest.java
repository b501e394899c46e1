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

    /**
     * A namespace with a queue depth of its own (one here) has at most that many requests in the ring; the rest wait in its
     * order, and another namespace's requests go in past them (no head-of-line blocking). A held-back request whose
     * queue closes is withdrawn and never reaches the kernel.
     */
    @Test
    void aNamespaceQueueDepthHoldsBackOnlyThatNamespace() throws Exception {
        int slowFd = fifo("slow");
        int otherFd = fifo("other");
        SubmissionQueue sq = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), new FakeTransport(), 16);
        SubmissionQueue closing = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), new FakeTransport(), 4);
        Namespace shallow = new Namespace(1, new io.nvmeof.tgt.backend.RamBackend(1 << 20), 512,
                java.util.UUID.randomUUID()).limitDeviceQueue(1);
        Namespace deep = new Namespace(2, new io.nvmeof.tgt.backend.RamBackend(1 << 20), 512, java.util.UUID.randomUUID());
        List<Integer> order = new ArrayList<>();
        try (FileOutputStream slow = new FileOutputStream(dir.resolve("slow").toFile());
             FileOutputStream other = new FileOutputStream(dir.resolve("other").toFile());
             StorageRing ring = new StorageRing(8, null)) {
          try {
            StorageRing.Done done = (req, res) -> {
                order.add(req.transportState);
                assertEquals(1, res);
                req.sq().release(req);
            };
            for (int i = 0; i < 5; i++) {
                Request r = withBuffer(sq);
                r.ns = shallow;
                r.transportState = i;
                ring.read(r, slowFd, r.data.memoryAddress(), 1, 0, done);
            }
            Request withdrawn = withBuffer(closing);
            withdrawn.ns = shallow;
            withdrawn.transportState = 99;
            ring.read(withdrawn, slowFd, withdrawn.data.memoryAddress(), 1, 0, done);
            for (int i = 10; i < 13; i++) {
                Request r = withBuffer(sq);
                r.ns = deep;
                r.transportState = i;
                ring.read(r, otherFd, r.data.memoryAddress(), 1, 0, done);
            }
            ring.poll();
            assertEquals(1 + 3, ring.inFlight(), "one of the shallow namespace's, all three of the other's");
            assertEquals(5, ring.waiting(), "the shallow namespace's others wait");

            closing.releaseAll(); // its connection is gone while its request is held back
            assertFalse(withdrawn.inUse, "released at once");
            assertEquals(4, ring.waiting(), "and withdrawn");

            other.write(new byte[] {1, 2, 3});
            other.flush();
            awaitCompletions(ring, order, 3);
            // (Reads the kernel has together on one FIFO may take its bytes in any order.)
            assertEquals(List.of(10, 11, 12), order.stream().sorted().toList(), "the other namespace's went in and came"
                    + " back past them");
            for (int i = 0; i < 5; i++) {
                slow.write(i);
                slow.flush();
                awaitCompletions(ring, order, 4 + i);
                assertTrue(ring.inFlight() <= 1, "never more than one of the shallow namespace's: " + ring.inFlight());
            }
            assertEquals(List.of(0, 1, 2, 3, 4), order.subList(3, 8), "in the order they came");
            assertFalse(ring.busy());
            assertEquals(0, sq.inUse());
            assertEquals(8, ring.completedRequests(), "the withdrawn one never went in");
          } finally {
            slow.write(new byte[16]); // whatever failed, nothing stays in the kernel: the ring's close waits for it
            other.write(new byte[16]);
          }
        } finally {
            libc.close(slowFd);
            libc.close(otherFd);
        }
    }

    /**
     * Issue 50: a namespace whose device answers nothing (the ring full of its reads, more waiting) no longer holds up
     * another namespace of the poll group: its requests wait in a line of their own, it leaves the ring's last eighth
     * free, and the other's reads go in past its line and come back while it is still stuck. Before, they waited behind
     * its whole line in one order (2 s behind a 50-IOPS device in the issue). Two stuck namespaces share the ring.
     */
    @Test
    void aStuckNamespaceLeavesRoomInTheRingForTheOthers() throws Exception {
        int stuckFd = fifo("stuck");
        int quickFd = fifo("quick");
        int otherStuckFd = fifo("stuck2");
        SubmissionQueue sq = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), new FakeTransport(), 128);
        Namespace stuck = new Namespace(1, new io.nvmeof.tgt.backend.RamBackend(1 << 20), 512, java.util.UUID.randomUUID());
        Namespace quick = new Namespace(2, new io.nvmeof.tgt.backend.RamBackend(1 << 20), 512, java.util.UUID.randomUUID());
        Namespace stuck2 = new Namespace(3, new io.nvmeof.tgt.backend.RamBackend(1 << 20), 512, java.util.UUID.randomUUID());
        List<Integer> order = new ArrayList<>();
        StorageRing.Done done = (req, res) -> {
            order.add(req.transportState);
            req.sq().release(req);
        };
        try (FileOutputStream stuckOut = new FileOutputStream(dir.resolve("stuck").toFile());
             FileOutputStream quickOut = new FileOutputStream(dir.resolve("quick").toFile());
             FileOutputStream stuck2Out = new FileOutputStream(dir.resolve("stuck2").toFile());
             StorageRing ring = new StorageRing(16, null)) {
          try {
            readOneByteEach(ring, sq, stuck, stuckFd, 100, 30, done);
            ring.poll();
            assertEquals(14, ring.inFlight(), "the stuck namespace takes all but the ring's last eighth");
            assertEquals(16, ring.waiting(), "its others wait in its line");
            for (int i = 0; i < 8; i++) { // one at a time, as a QD 1 reader does
                quickOut.write(i);
                quickOut.flush();
                readOneByteEach(ring, sq, quick, quickFd, i, 1, done);
                awaitCompletions(ring, order, i + 1);
            }
            assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), order, "the other namespace's reads came back past the line");
            // A second stuck namespace takes its guaranteed few; the two then share the ring as room comes.
            readOneByteEach(ring, sq, stuck2, otherStuckFd, 200, 30, done);
            ring.poll();
            assertEquals(16, ring.inFlight(), "the second takes the reserved slots: it had fewer than 4 in the ring");
            stuckOut.write(new byte[14]); // the first namespace's reads in the ring complete
            stuckOut.flush();
            awaitCompletions(ring, order, 8 + 14);
            ring.poll();
            // Each now takes its fair share, half of the ring but its reserve (7): the first refills to 7, not to 14.
            assertEquals(14, ring.inFlight(), "7 of each in the ring, the reserve free");
            assertEquals(60 - 14 - 14, ring.waiting());
          } finally {
            stuckOut.write(new byte[64]); // whatever failed, nothing stays in the kernel: the ring's close waits for it
            stuck2Out.write(new byte[64]);
            quickOut.write(new byte[64]);
          }
        } finally {
            libc.close(stuckFd);
            libc.close(quickFd);
            libc.close(otherStuckFd);
        }
    }

    /** {@code n} reads of one byte of {@code fd} for {@code ns}, numbered from {@code first} (transportState). */
    private static void readOneByteEach(StorageRing ring, SubmissionQueue sq, Namespace ns, int fd, int first, int n,
            StorageRing.Done done) {
        for (int i = 0; i < n; i++) {
            Request r = withBuffer(sq);
            r.ns = ns;
            r.transportState = first + i;
            ring.read(r, fd, r.data.memoryAddress(), 1, 0, done);
        }
    }

    private static void awaitCompletions(StorageRing ring, List<Integer> order, int count) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (order.size() < count && System.nanoTime() < deadline) {
            ring.poll();
        }
        assertEquals(count, order.size(), "completions by now: " + order);
    }
}

package io.nvmeof.tgt.cmd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.tgt.backend.DirectBuffers;
import io.nvmeof.tgt.backend.FileBackend;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.StorageRing;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import io.nvmeof.tgt.transport.TransportQueue;
import io.nvmeof.uring.UringLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write of a namespace served direct whose data arrived in its NVMe/TCP command capsule: that data may be a view of
 * the connection's receive buffer, which takes the next PDUs as soon as the command has been submitted, while the
 * kernel reads the write's buffer only when the ring is next submitted. The write must carry what the capsule held,
 * even when the view happens to be aligned as direct I/O needs.
 */
class DirectWriteTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void needsIoUring() {
        assumeTrue(UringLibrary.isAvailable(), () -> "io_uring unavailable here: " + UringLibrary.unavailableReason());
    }

    /** A TCP-like transport (no keyed SGLs) with a ring of its own; responses release the request. */
    static final class RingTransport implements TransportQueue {
        final StorageRing ring;
        final List<Integer> statuses = new ArrayList<>();

        RingTransport() throws Exception {
            ring = new StorageRing(8, null);
        }

        @Override public int mapData(Request request) { return 0; }
        @Override public void fetchData(Request request) { }
        @Override public boolean allocateReadData(Request request) { return true; }
        @Override public void queueResponse(Request r) { statuses.add(r.status); r.sq().release(r); }
        @Override public void close(String reason) { }
        @Override public void execute(Runnable task) { task.run(); }
        @Override public ByteBufAllocator allocator() { return UnpooledByteBufAllocator.DEFAULT; }
        @Override public int inlineDataSize() { return 8192; }
        @Override public boolean keyedSgls() { return false; }
        @Override public int trtype() { return 3; }
        @Override public String peer() { return "test"; }
        @Override public StorageRing storageRing() { return ring; }
    }

    @Test
    void inCapsuleDataIsTheWritesOwnCopyBeforeTheRingIsSubmitted() throws Exception {
        Path file = dir.resolve("ns.img");
        FileBackend backend = FileBackend.openFile(file, 1 << 20, false);
        assertNotNull(backend.ringFile());
        Namespace ns = new Namespace(1, backend, 4096, UUID.randomUUID(), null);
        RingTransport t = new RingTransport();
        SubmissionQueue sq = new SubmissionQueue(new TargetCore(TargetLimits.defaults()), t, 4);
        try {
            Request req = sq.acquire();
            req.cmd.opcode(Opcodes.IO_WRITE).nsid(1).slba(2).blockCount(1);
            req.ns = ns;
            req.transferLength = 4096;
            req.direction = Request.DIR_HOST_TO_CONTROLLER;
            req.dataInCapsule = true;
            // The receive buffer's view: aligned for direct I/O, as one may be by chance.
            ByteBuf receiveBuffer = DirectBuffers.allocate(4096);
            receiveBuffer.setBytes(0, fill((byte) 0xAA));
            req.data = receiveBuffer.retainedSlice(0, 4096);

            IoCommands.executeWrite(req);
            receiveBuffer.setBytes(0, fill((byte) 0x55)); // the next PDUs arrive
            receiveBuffer.release();
            while (t.ring.busy()) {
                t.ring.poll();
            }
            assertEquals(List.of(Status.SUCCESS), t.statuses);
            byte[] onDisk = Arrays.copyOfRange(Files.readAllBytes(file), 2 * 4096, 3 * 4096);
            assertArrayEquals(fill((byte) 0xAA), onDisk, "what the capsule held, not what replaced it");
            assertTrue(t.ring.completedRequests() == 1, "written through the ring");
        } finally {
            t.ring.close();
            backend.close();
        }
    }

    private static byte[] fill(byte b) {
        byte[] a = new byte[4096];
        Arrays.fill(a, b);
        return a;
    }
}

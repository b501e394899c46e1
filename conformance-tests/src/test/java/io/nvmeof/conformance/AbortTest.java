package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Abort admin command, as SPDK's {@code abort} test drives it: commands that have not started (work queued for the
 * backend behind slow work, parked Asynchronous Event Requests) are aborted and complete with Command Abort Requested;
 * running ones finish by themselves and the Abort says so; nothing completes twice and the queue goes on.
 */
class AbortTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:abort";
    private static final long SLOW_NSID = 2;
    private static final int MDTS = 512 << 10;

    /** Deallocations wait at a gate (a file system busy for long); flushes are counted. */
    static final class StuckBackend implements BlockBackend {
        final RamBackend ram = new RamBackend(4 << 20);
        final AtomicInteger deallocating = new AtomicInteger();
        final AtomicInteger flushes = new AtomicInteger();
        final CountDownLatch gate = new CountDownLatch(1);

        @Override public long sizeBytes() { return ram.sizeBytes(); }
        @Override public void read(long offset, ByteBuffer dst) throws IOException { ram.read(offset, dst); }
        @Override public void write(long offset, ByteBuffer src) throws IOException { ram.write(offset, src); }
        @Override public void flush() { flushes.incrementAndGet(); }
        @Override public void writeZeroes(long offset, long length) { ram.writeZeroes(offset, length); }
        @Override public boolean mayBlock(long bytes) { return true; }
        @Override public String describe() { return "stuck"; }
        @Override public void close() { ram.close(); }

        @Override
        public void deallocate(long offset, long length) throws IOException {
            deallocating.incrementAndGet();
            try {
                if (!gate.await(30, TimeUnit.SECONDS)) {
                    throw new IOException("gate never opened");
                }
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            ram.deallocate(offset, length);
        }
    }

    private NvmeTarget target;
    private StuckBackend backend;
    private RawTcpHost admin;
    private RawTcpHost io;
    private int cntlid;

    @BeforeEach
    void start() throws Exception {
        // A 1 MiB per-connection limit: a 32-entry queue's reservation (208.25 KiB) and one 512 KiB transfer fit, a
        // second transfer waits for the first's memory.
        target = NvmeTarget.start(new TargetConfig(1, 2, 128, MDTS,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 16, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null)))))
                .withMemoryLimits("1MiB", null));
        backend = new StuckBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(SLOW_NSID, backend, 512, UUID.randomUUID()));
        admin = new RawTcpHost(target.tcpPort(0));
        admin.initialize(0);
        Completion c = admin.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0);
        assertEquals(Status.SUCCESS, c.status());
        assertEquals(Status.SUCCESS, admin.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        io = new RawTcpHost(target.tcpPort(0));
        io.initialize(0);
        cntlid = c.dw0() & 0xFFFF;
        assertEquals(Status.SUCCESS, io.connect(1, 31, cntlid, NQN, RawTcpHost.HOSTNQN, 0).status());
    }

    @AfterEach
    void stop() throws IOException {
        backend.gate.countDown();
        admin.close();
        io.close();
        target.close();
    }

    private static byte[] abortSqe(int sqid, int cid) {
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_ABORT).cdw10(sqid | cid << 16);
        return sqe;
    }

    private static void send(RawTcpHost h, byte[] sqe, int cid, byte[] data) throws IOException {
        RawTcpHost.cmd(sqe).cid(cid);
        h.send(h.capsule(sqe, data));
    }

    private static Map<Integer, Completion> responses(RawTcpHost h, int n) throws IOException {
        return h.responses(n);
    }

    private static byte[] deallocate(long nsid) {
        return RawTcpHost.deallocateSqe(nsid, 1);
    }

    private static byte[] range(long slba, long blocks) {
        return RawTcpHost.ranges(slba, blocks);
    }

    private int abort(int sqid, int cid, int abortCid) throws IOException {
        send(admin, abortSqe(sqid, cid), abortCid, null);
        Completion c = responses(admin, 1).get(abortCid);
        assertEquals(Status.SUCCESS, c.status());
        return c.dw0() & 1;
    }

    @Test
    void workQueuedBehindSlowWorkIsAbortedAndRunningWorkIsNot() throws Exception {
        // Two deallocations hold the namespace's space lane (two backend threads); a third queues behind them. A Flush
        // has a lane of its own (it covers completed writes, not queued space changes): it is not held up.
        send(io, deallocate(SLOW_NSID), 11, range(0, 8));
        send(io, deallocate(SLOW_NSID), 12, range(8, 8));
        assertTrue(TestTargets.eventually(() -> backend.deallocating.get() == 2, 10_000), "both lane threads busy");
        send(io, deallocate(SLOW_NSID), 13, range(16, 8));
        byte[] flush = RawTcpHost.sqe();
        RawTcpHost.cmd(flush).opcode(Opcodes.IO_FLUSH).nsid(SLOW_NSID);
        send(io, flush, 14, null);
        assertEquals(Status.SUCCESS, responses(io, 1).get(14).status(), "the Flush is not held up by the deallocations");
        assertEquals(1, backend.flushes.get());

        assertEquals(0, abort(1, 13, 90), "the queued deallocation is aborted");
        assertEquals(Status.ABORT_REQUESTED, responses(io, 1).get(13).status(), "it completes as aborted");
        assertEquals(1, abort(1, 11, 91), "a running deallocation is not aborted");
        assertEquals(1, abort(1, 999, 92), "no command with that CID");
        assertEquals(1, abort(5, 11, 93), "no such queue");

        backend.gate.countDown();
        Map<Integer, Completion> rest = responses(io, 2);
        assertEquals(Status.SUCCESS, rest.get(11).status());
        assertEquals(Status.SUCCESS, rest.get(12).status());
        send(io, deallocate(SLOW_NSID), 15, range(24, 8));
        assertEquals(Status.SUCCESS, responses(io, 1).get(15).status(), "the next response is the next command's");
        assertEquals(3, backend.deallocating.get(), "the aborted deallocation never ran; the later one did");
    }

    /** The R2T's CCCID and TTAG (spec: bytes 8-9 and 10-11 of the PDU). */
    private static int[] r2t(byte[] pdu) {
        assertEquals(PduHeader.TYPE_R2T, pdu[0], "an R2T");
        UnsafeBuffer u = new UnsafeBuffer(pdu);
        return new int[] {u.getShort(8, ByteOrder.LITTLE_ENDIAN) & 0xFFFF, u.getShort(10, ByteOrder.LITTLE_ENDIAN) & 0xFFFF};
    }

    @Test
    void commandsWaitingForMemoryAreAbortedAndAWriteAwaitingItsDataIsNot() throws Exception {
        // Data digests: write data is received into a buffer of its own, charged against the connection's limit.
        try (RawTcpHost dio = new RawTcpHost(target.tcpPort(0))) {
            dio.initialize(2);
            assertEquals(Status.SUCCESS, dio.connect(2, 31, cntlid, NQN, RawTcpHost.HOSTNQN, 0).status());
            int blocks = MDTS / 512;
            // A takes the connection's room for one transfer and gets its R2T; B waits for that memory, and the read
            // C (of a namespace read through a buffer) waits behind B, as commands waiting for memory keep their order.
            send(dio, RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 0, blocks, MDTS, false), 21, null);
            int[] first = r2t(dio.readPdu());
            assertEquals(21, first[0]);
            send(dio, RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, blocks, blocks, MDTS, false), 22, null);
            send(dio, RawTcpHost.rwSqe(Opcodes.IO_READ, SLOW_NSID, 0, 8, 4096, false), 23, null);
            assertEquals(0, dio.countR2Ts(300), "B waits for memory: no R2T");

            assertEquals(0, abort(2, 23, 90), "the read waiting for memory is aborted");
            assertEquals(Status.ABORT_REQUESTED, responses(dio, 1).get(23).status());
            assertEquals(0, abort(2, 22, 91), "the write waiting for memory is aborted");
            assertEquals(Status.ABORT_REQUESTED, responses(dio, 1).get(22).status());
            assertEquals(1, abort(2, 21, 92), "a write whose R2T went out is not: its data may be on the way");

            byte[] data = new byte[MDTS];
            new java.util.Random(21).nextBytes(data);
            int chunk = 128 * 1024;
            for (int off = 0; off < MDTS; off += chunk) {
                dio.send(dio.h2cData(21, first[1], off, Arrays.copyOfRange(data, off, off + chunk), off + chunk == MDTS));
            }
            assertEquals(Status.SUCCESS, responses(dio, 1).get(21).status(), "A completes with its data");
            // The memory A gave back goes to the next write, not to the aborted B.
            send(dio, RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, blocks, blocks, MDTS, false), 24, null);
            assertEquals(24, r2t(dio.readPdu())[0], "the next write's R2T, none for B");
        }
        // The other I/O queue goes on.
        send(io, RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), 25, null);
        assertEquals(Status.SUCCESS, responses(io, 1).get(25).status());
    }

    @Test
    void aParkedAsynchronousEventRequestIsAborted() throws Exception {
        byte[] aer = RawTcpHost.sqe();
        RawTcpHost.cmd(aer).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST);
        send(admin, aer, 50, null);
        send(admin, abortSqe(0, 50), 51, null);
        Map<Integer, Completion> r = responses(admin, 2);
        assertEquals(Status.ABORT_REQUESTED, r.get(50).status(), "the AER completes as aborted");
        assertEquals(0, r.get(51).dw0() & 1, "and the Abort says it was");
        assertEquals(1, abort(0, 50, 52), "once gone it cannot be aborted again");
        assertEquals(1, abort(0, 53, 53), "an Abort never aborts itself");
    }
}

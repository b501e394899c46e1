package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import org.junit.jupiter.api.Test;

/** What one connection can make the target hold: bounded, whatever the host does (or fails to do). */
class TargetResourceBoundsTest extends SharedTargetTest {
    private static long usedDirectMemory() {
        return ((ByteBufAllocatorMetricProvider) ByteBufAllocator.DEFAULT).metric().usedDirectMemory();
    }

    /**
     * A host that sends commands whose responses carry 1 MiB each and never reads: the target stops taking its
     * commands once its socket backs up, instead of allocating every response (it grew by 1011 MiB for 1000 such
     * commands on a 256-slot queue). The discovery subsystem is used because no allowed-hosts list applies to it.
     */
    @Test
    void aHostThatNeverReadsCannotMakeTheTargetBufferWithoutBound() throws Exception {
        int commands = 300;
        int length = 1 << 20;
        try (RawTcpHost h = new RawTcpHost(port, 16 << 10)) {
            h.bringUpAdmin(Nqn.DISCOVERY);
            long before = usedDirectMemory();
            byte[] sqe = RawTcpHost.sqe();
            int numd = length / 4 - 1; // 0-based dwords: NUMDL in CDW10 31:16, NUMDU in CDW11 15:0
            RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_GET_LOG_PAGE).cdw10(Opcodes.LOG_DISCOVERY | (numd & 0xFFFF) << 16)
                    .cdw11(numd >>> 16);
            RawTcpHost.sgl(sqe).transportBlock(length);
            for (int i = 0; i < commands; i++) {
                RawTcpHost.cmd(sqe).cid(1000 + i);
                h.send(h.capsule(sqe, null));
            }
            Thread.sleep(1500);
            long grown = usedDirectMemory() - before;
            assertTrue(grown < 48L << 20, "the target's direct memory grew by " + (grown >> 20) + " MiB for "
                    + commands + " unread 1 MiB responses");
            // Once the host reads, every command is answered, in order.
            for (int i = 0; i < commands; i++) {
                RawTcpHost.Reply r = h.readReply(length);
                assertEquals(Status.SUCCESS, r.cqe().status());
                assertEquals(1000 + i, r.cqe().cid());
            }
        }
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == 0, 5000));
    }

    /**
     * 128 KiB reads kept at QD 32 (4 MiB of read data in flight, twice the write watermark) by a host that reads as
     * fast as it can: the queue pauses above the watermark and resumes below it. The first resume ran from inside a
     * flush made while decoding, and the queue stalled for good (0 IOPS in `./nvmeof bench --bs 128k --qd 32`;
     * fio through the kernel host crawled along on later traffic).
     */
    @Test
    void queuesPausedForWritesResumeUnderSteadyLargeReads() throws Exception {
        int total = 1024;
        ConnectOptions o = ConnectOptions.builder().queueDepth(64).commandTimeout(java.time.Duration.ofSeconds(20)).build();
        try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, TestTargets.NQN), o)) {
            NamespaceHandle ns = c.namespace(1);
            java.util.concurrent.atomic.AtomicInteger issued = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(total);
            java.util.function.Consumer<java.nio.ByteBuffer>[] next = new java.util.function.Consumer[1];
            next[0] = buf -> {
                int i = issued.getAndIncrement();
                if (i >= total) {
                    return;
                }
                ns.read((long) (i % 256) * 256, 256, buf.clear()).whenComplete((v, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                    }
                    done.countDown();
                    next[0].accept(buf);
                });
            };
            for (int q = 0; q < 32; q++) {
                next[0].accept(java.nio.ByteBuffer.allocateDirect(128 << 10));
            }
            assertTrue(done.await(60, java.util.concurrent.TimeUnit.SECONDS),
                    (total - done.getCount()) + " of " + total + " reads completed: the queue stalled");
            assertEquals(0, failed.get());
        }
    }

    /**
     * Connections that have not connected cost a few requests, not a full queue's: the pool grows at Connect, to twice
     * the queue's size (as nvmet-tcp). It used to allocate 256 requests (512 direct buffers) per accepted socket.
     */
    @Test
    void requestsAreAllocatedAtConnectSizedToTheQueue() throws Exception {
        // Queues the class's earlier tests closed may still be going away on their poll groups: count from none.
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() == 0, 10_000),
                "earlier tests' queues gone: " + target.core().liveQueues());
        long before = target.core().requestsAllocated();
        RawTcpHost[] idle = new RawTcpHost[50];
        try {
            for (int i = 0; i < idle.length; i++) {
                idle[i] = new RawTcpHost(port);
            }
            assertTrue(TestTargets.eventually(() -> target.core().liveQueues() >= idle.length, 5000));
            long perConnection = (target.core().requestsAllocated() - before) / idle.length;
            assertEquals(4, perConnection, "requests per connection before ICReq");
        } finally {
            for (RawTcpHost h : idle) {
                if (h != null) {
                    h.close();
                }
            }
        }
        long start = target.core().requestsAllocated();
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 15, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
            assertEquals(32, target.core().requestsAllocated() - start, "an admin queue of 16 entries: 32 requests in all");
        }
    }

    /**
     * A connection that sends no ICReq, or no Connect, is dropped after the listener's deadline (1 s here: the good
     * host must connect within it, which a loaded machine might not do in the 300 ms this used).
     */
    @Test
    void connectionsThatNeverConnectAreDropped() throws Exception {
        io.netty.channel.EventLoopGroup loop = new io.netty.channel.MultiThreadIoEventLoopGroup(1,
                io.netty.channel.nio.NioIoHandler.newFactory());
        io.nvmeof.tgt.core.TargetCore core = new io.nvmeof.tgt.core.TargetCore(
                io.nvmeof.tgt.core.TargetLimits.defaults());
        core.addSubsystem(new io.nvmeof.tgt.core.Subsystem(TestTargets.NQN, io.nvmeof.tgt.core.Subsystem.Type.NVM,
                "SN", "deadline", 1, true));
        io.nvmeof.tgt.tcp.TcpTransport t = new io.nvmeof.tgt.tcp.TcpTransport(core, loop);
        try {
            t.listen(1, "127.0.0.1", 0, new io.nvmeof.tgt.tcp.TcpOptions(8192, 128 << 10, 1000), java.util.Set.of());
            try (RawTcpHost silent = new RawTcpHost(t.port()); RawTcpHost noConnect = new RawTcpHost(t.port());
                    RawTcpHost good = new RawTcpHost(t.port())) {
                noConnect.initialize(0);
                good.initialize(0);
                assertEquals(Status.SUCCESS, good.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                assertTrue(silent.closedByTarget(), "no ICReq within 1 s: closed");
                assertTrue(noConnect.closedByTarget(), "ICReq but no Connect within 1 s: closed");
                assertEquals(Status.SUCCESS, good.propertyGet(io.nvmeof.protocol.regs.ControllerRegisters.VS, 4).status(),
                        "a connected queue stays");
            }
        } finally {
            t.close();
            loop.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}

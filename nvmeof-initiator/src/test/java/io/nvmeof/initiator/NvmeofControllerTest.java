package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class NvmeofControllerTest extends FakeTargetCase {
    private static ConnectOptions.Builder opts() {
        return ConnectOptions.builder().connectTimeout(Duration.ofSeconds(5)).commandTimeout(Duration.ofSeconds(5));
    }

    private static ByteBuffer pattern(int len, long seed, boolean direct) {
        byte[] b = new byte[len];
        new Random(seed).nextBytes(b);
        ByteBuffer buf = direct ? ByteBuffer.allocateDirect(len) : ByteBuffer.allocate(len);
        buf.put(b).clear();
        return buf;
    }

    private static byte[] bytes(ByteBuffer b, int from, int len) {
        byte[] out = new byte[len];
        b.duplicate().clear().get(from, out);
        return out;
    }

    /**
     * MDTS 0 ("no limit") over NVMe/TCP: commands of at most the controller's MAXH2CDATA, as Linux's nvmet-tcp
     * (MDTS 0, MAXH2CDATA 4 MiB) refuses larger ones with SGL Data Block Invalid (found by the guest job
     * our-initiator-kernel-ana; before, 32 MiB commands were sent and every one above 4 MiB failed).
     */
    @Test
    void withoutMdtsCommandsStayWithinMaxh2cdata() throws Exception {
        target.edit = (what, d) -> {
            if (what.equals("identify-controller")) {
                d[io.nvmeof.protocol.identify.IdentifyController.MDTS] = 0;
            }
        };
        target.maxh2cdata = 64 * 1024;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            assertEquals(0, c.info().mdts());
            assertEquals(64 * 1024, c.maxTransferBytes());
            assertEquals(64 * 1024 / 512, c.namespace(1).maxBlocksPerIo());
        }
    }

    @Test
    void connectSequenceFollowsTheSpec() throws Exception {
        UUID hostId = UUID.fromString("11111111-2222-3333-4444-555555555555");
        ConnectOptions o = opts().hostId(hostId).ioQueues(2).queueDepth(64).build();
        assertEquals("nqn.2014-08.org.nvmexpress:uuid:" + hostId, o.hostNqn());
        try (NvmeofController c = NvmeofController.connect(tid(), o)) {
            assertTrue(c.isConnected());
            assertEquals(1, c.cntlid());
            assertEquals("Fake NVMe", c.info().model());
            assertEquals("FAKE123", c.info().serial());
            assertEquals(128 * 1024, c.info().mdts());
            assertEquals(4096, c.info().raw().length);
            assertEquals(2, c.ioQueueCount());
            assertEquals(64, c.queueDepth());
            assertEquals(1, c.namespaces().size());
            NamespaceHandle ns = c.namespace(1);
            assertEquals(FakeTarget.BLOCKS, ns.blockCount());
            assertEquals(512, ns.blockSize());
            assertEquals(FakeTarget.BLOCKS * 512L, ns.sizeBytes());
            assertThrows(IllegalArgumentException.class, () -> c.namespace(7));

            List<FakeTarget.Sqe> admin = target.commands(0);
            FakeTarget.Sqe connect = admin.get(0);
            assertEquals(0x7F, connect.opcode());
            assertEquals(0x01, connect.fctype());
            assertEquals(31, connect.cdw11() & 0xFFFF, "admin SQSIZE");
            assertEquals(5000, connect.cdw12(), "KATO");
            assertEquals(0x01, connect.sglId(), "Connect data goes in-capsule");
            assertEquals(1024, connect.sglLen());
            assertEquals(0xFFFF, FakeTarget.le(connect.data()).getShort(16) & 0xFFFF, "dynamic CNTLID");
            assertEquals(o.hostNqn(), FakeTarget.cstr(connect.data(), 512));
            assertEquals(FakeTarget.NQN, FakeTarget.cstr(connect.data(), 256));
            assertEquals(0x11111111_22223333L, java.nio.ByteBuffer.wrap(connect.data()).getLong(0), "host id, big endian");

            // Property Get CAP (8 bytes), VS, then Property Set CC with EN=1 IOSQES=6 IOCQES=4.
            assertEquals(0x04, admin.get(1).fctype());
            assertEquals(ControllerRegisters.CAP, admin.get(1).cdw11());
            assertEquals(1, admin.get(1).cdw10() & 0x7, "CAP is read as 8 bytes");
            assertEquals(ControllerRegisters.VS, admin.get(2).cdw11());
            assertEquals(0x00, admin.get(3).fctype());
            assertEquals(ControllerRegisters.CC, admin.get(3).cdw11());
            assertEquals(0x00460001L, admin.get(3).value());
            List<Integer> opcodes = admin.stream().filter(s -> s.opcode() != 0x7F).map(FakeTarget.Sqe::opcode).toList();
            assertEquals(List.of(0x06, 0x09, 0x06, 0x06), opcodes.subList(0, 4), "Identify, Set Features, Identify x2");
            FakeTarget.Sqe setFeatures = admin.stream().filter(s -> s.opcode() == 0x09).findFirst().orElseThrow();
            assertEquals(0x07, setFeatures.cdw10() & 0xFF);
            assertEquals(0x00010001, setFeatures.cdw11(), "two queues asked, 0-based");

            for (int qid = 1; qid <= 2; qid++) {
                FakeTarget.Sqe io = target.commands(qid).get(0);
                assertEquals(0x01, io.fctype());
                assertEquals(qid, (io.cdw10() >>> 16) & 0xFFFF);
                assertEquals(63, io.cdw11() & 0xFFFF, "I/O SQSIZE = depth - 1");
                assertEquals(0, io.cdw12(), "KATO only on the admin queue");
                assertEquals(1, FakeTarget.le(io.data()).getShort(16) & 0xFFFF, "CNTLID from the admin Connect");
            }
        }
        assertTrue(ControllerRegisters.ccShn(target.cc) == ControllerRegisters.SHN_NORMAL, "CC.SHN=01b at close");
    }

    @Test
    void inCapsuleWriteAndReadIntoBufferPosition() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            ByteBuffer src = pattern(4096, 1, true);
            ns.write(10, 8, src).get(5, TimeUnit.SECONDS);
            FakeTarget.Sqe w = target.commands(1).stream().filter(s -> s.opcode() == 0x01).findFirst().orElseThrow();
            assertTrue(w.inCapsule());
            assertEquals(0x01, w.sglId());
            assertEquals(4096, w.sglLen());
            assertEquals(10, w.cdw10());
            assertEquals(7, w.cdw12() & 0xFFFF);
            assertTrue(target.h2c.isEmpty(), "no R2T for in-capsule data");
            assertArrayEquals(bytes(src, 0, 4096), java.util.Arrays.copyOfRange(target.disk, 10 * 512, 10 * 512 + 4096));

            ByteBuffer dst = ByteBuffer.allocate(5000);
            dst.position(100).limit(4196);
            ns.read(10, 8, dst).get(5, TimeUnit.SECONDS);
            assertEquals(100, dst.position(), "position untouched");
            assertEquals(4196, dst.limit(), "limit untouched");
            assertArrayEquals(bytes(src, 0, 4096), bytes(dst, 100, 4096));
            // ByteBuffer conventions: the data lies between position and limit, not up to the capacity.
            dst.limit(4195);
            IllegalArgumentException short1 = assertThrows(IllegalArgumentException.class, () -> ns.read(10, 8, dst));
            assertTrue(short1.getMessage().contains("between its position 100 and limit 4195"), short1.getMessage());
        }
    }

    @Test
    void largeWriteUsesR2TAndH2CDataSplitAtMaxH2CData() throws Exception {
        target.maxh2cdata = 8192;
        target.readSuccessFlag = true; // reads complete by C2HData SUCCESS, without a CapsuleResp
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            ByteBuffer src = pattern(64 * 512, 2, false);
            ns.write(100, 64, src).get(5, TimeUnit.SECONDS);
            FakeTarget.Sqe w = target.commands(1).stream().filter(s -> s.opcode() == 0x01).findFirst().orElseThrow();
            assertFalse(w.inCapsule());
            assertEquals(0x5A, w.sglId(), "transport SGL for R2T data");
            assertEquals(32768, w.sglLen());
            List<FakeTarget.H2C> pdus = new ArrayList<>(target.h2c);
            assertEquals(4, pdus.size());
            for (int i = 0; i < 4; i++) {
                assertEquals(i * 8192L, pdus.get(i).datao());
                assertEquals(8192L, pdus.get(i).datal());
                assertEquals(0x77, pdus.get(i).ttag());
                assertEquals(i == 3, (pdus.get(i).flags() & 0x04) != 0, "LAST only on the last PDU of the R2T");
            }
            assertArrayEquals(bytes(src, 0, 32768), java.util.Arrays.copyOfRange(target.disk, 100 * 512, 100 * 512 + 32768));

            ByteBuffer dst = ByteBuffer.allocateDirect(32768);
            ns.read(100, 64, dst).get(5, TimeUnit.SECONDS);
            assertArrayEquals(bytes(src, 0, 32768), bytes(dst, 0, 32768));
            // Admin data works with the SUCCESS flag too.
            assertEquals(4096, c.identify(1, 0).length);
        }
    }

    @Test
    void errorStatusBecomesNvmeStatusException() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            assertEquals(0x1234, c.getFeature(0x07));
            NvmeStatusException e = assertThrows(NvmeStatusException.class, () -> c.getFeature(0x42));
            assertEquals(Status.INVALID_FIELD, e.statusCode());
            assertTrue(e.doNotRetry());
            assertEquals("Get Features (FID 0x42) failed: " + Status.name(Status.INVALID_FIELD | Status.DNR), e.getMessage());

            ExecutionException ee = assertThrows(ExecutionException.class,
                    () -> c.namespace(1).read(FakeTarget.BLOCKS - 1, 2, ByteBuffer.allocate(1024)).get(5, TimeUnit.SECONDS));
            NvmeStatusException io = assertInstanceOf(NvmeStatusException.class, ee.getCause());
            assertEquals(Status.LBA_RANGE, io.statusCode());
            assertTrue(io.getMessage().startsWith("Read (nsid 1, lba 2047, 2 blocks) failed: LBA_RANGE"), io.getMessage());
            assertTrue(c.isConnected(), "an error status does not hurt the connection");
        }
    }

    @Test
    void zeroAllocationCallbacksAndOverflowBeyondQueueDepth() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().queueDepth(4).build())) {
            NamespaceHandle ns = c.namespace(1);
            int n = 40;
            ByteBuffer src = pattern(n * 512, 4, true);
            CountDownLatch done = new CountDownLatch(n);
            AtomicLong failures = new AtomicLong();
            AtomicLong contexts = new AtomicLong();
            IoCallback cb = (ctx, st) -> {
                if (st != 0) {
                    failures.incrementAndGet();
                }
                contexts.addAndGet(ctx);
                done.countDown();
            };
            for (int i = 0; i < n; i++) {
                // 3 slots (depth 4): most of these wait in the overflow queue.
                ns.write(i, 1, src.duplicate().position(i * 512), cb, i);
            }
            assertTrue(done.await(10, TimeUnit.SECONDS));
            assertEquals(0, failures.get());
            assertEquals((long) n * (n - 1) / 2, contexts.get());

            ByteBuffer dst = ByteBuffer.allocateDirect(n * 512);
            CountDownLatch read = new CountDownLatch(1);
            AtomicInteger st = new AtomicInteger(-99);
            ns.read(0, n, dst, (ctx, s) -> {
                st.set(s);
                read.countDown();
            }, 42);
            assertTrue(read.await(5, TimeUnit.SECONDS));
            assertEquals(0, st.get());
            assertArrayEquals(bytes(src, 0, n * 512), bytes(dst, 0, n * 512));

            ns.flush().get(5, TimeUnit.SECONDS);
            ns.deallocate(0, 8).get(5, TimeUnit.SECONDS);
            FakeTarget.Sqe dsm = target.commands(1).stream().filter(s -> s.opcode() == 0x09).findFirst().orElseThrow();
            assertEquals(0, dsm.cdw10() & 0xFF, "one range");
            assertEquals(4, dsm.cdw11(), "AD=1");
            assertEquals(8, FakeTarget.le(dsm.data()).getInt(4));
        }
    }

    /** eventLoopPlacement: each event-loop thread starts through it, and the queues' completions run on them. */
    @Test
    void everyEventLoopThreadRunsThroughThePlacementGiven() throws Exception {
        java.util.Set<Integer> indices = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.Set<String> placedThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
        io.nvmeof.netty.EventLoops.LoopPlacement recording = (index, loop) -> () -> {
            indices.add(index);
            placedThreads.add(Thread.currentThread().getName());
            loop.run();
        };
        ConnectOptions o = opts().ioQueues(2).eventLoopThreads(2).eventLoopPlacement(recording).build();
        assertEquals(recording, o.toBuilder().build().eventLoopPlacement(), "a copy keeps the placement");
        try (NvmeofController c = NvmeofController.connect(tid(), o)) {
            NamespaceHandle ns = c.namespace(1);
            java.util.Set<String> completedOn = java.util.concurrent.ConcurrentHashMap.newKeySet();
            for (int i = 0; i < 8; i++) {
                CountDownLatch done = new CountDownLatch(1);
                ns.read(i, 1, ByteBuffer.allocateDirect(512), (ctx, st) -> {
                    completedOn.add(Thread.currentThread().getName());
                    done.countDown();
                }, i);
                assertTrue(done.await(5, TimeUnit.SECONDS));
            }
            assertEquals(java.util.Set.of(0, 1), indices, "both loops, numbered from 0");
            assertTrue(placedThreads.containsAll(completedOn), completedOn + " not among " + placedThreads);
        }
        assertThrows(NullPointerException.class, () -> ConnectOptions.builder().eventLoopPlacement(null));
    }

    @Test
    void digestsAreNegotiatedAndCarried() throws Exception {
        target.maxh2cdata = 4096;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().headerDigest(true).dataDigest(true).build())) {
            assertEquals(3, target.negotiatedDigest);
            NamespaceHandle ns = c.namespace(1);
            ByteBuffer small = pattern(1024, 5, true);
            ns.write(0, 2, small).get(5, TimeUnit.SECONDS);
            ByteBuffer big = pattern(16384, 6, false);
            ns.write(8, 32, big).get(5, TimeUnit.SECONDS);
            ByteBuffer dst = ByteBuffer.allocateDirect(16384);
            ns.read(8, 32, dst).get(5, TimeUnit.SECONDS);
            assertArrayEquals(bytes(big, 0, 16384), bytes(dst, 0, 16384));
            assertEquals(4, target.h2c.size());
        }
    }

    @Test
    void discoveryControllerReadsTheLogWithoutIoQueues() throws Exception {
        target.discovery = true;
        TransportId d = TransportId.tcp("127.0.0.1", target.port(), Nqn.DISCOVERY);
        try (NvmeofController c = NvmeofController.connect(d, opts().build())) {
            assertEquals(0, c.ioQueueCount());
            assertEquals(0, c.keepAliveTimeoutMs());
            assertEquals(0, target.commands(0).get(0).cdw12(), "discovery Connect sends KATO 0");
            assertEquals(1, target.connections.get(), "no I/O queue connections");
            List<DiscoveryEntry> log = c.discoveryLog();
            assertEquals(2, log.size());
            DiscoveryEntry nvm = log.get(1);
            assertEquals(DiscoveryLogEntry.TRTYPE_TCP, nvm.trtype());
            assertEquals(DiscoveryLogEntry.SUBTYPE_NVM, nvm.subtype());
            assertEquals("4420", nvm.trsvcid());
            assertEquals("127.0.0.1", nvm.traddr());
            assertEquals(FakeTarget.NQN, nvm.subnqn());
            assertEquals(4420, nvm.toTransportId().trsvcid());
            assertThrows(IllegalStateException.class, () -> c.pickQueue());
        }
    }

    @Test
    void keepAliveIsSentEveryHalfKato() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().keepAliveTimeoutMs(200).build())) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (target.keepAlives.get() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(10); // one every 100 ms: 3 within 5 s even on a loaded machine
            }
            assertTrue(target.keepAlives.get() >= 3, "keep alives: " + target.keepAlives.get());
            assertEquals(200, target.commands(0).get(0).cdw12());
        }
    }

    @Test
    void closeFailsOutstandingIoAndIsIdempotent() throws Exception {
        NvmeofController c = NvmeofController.connect(tid(), opts().build());
        CompletableFuture<Void> stuck = c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512));
        c.close();
        c.close();
        assertFalse(c.isConnected());
        ExecutionException ee = assertThrows(ExecutionException.class, () -> stuck.get(5, TimeUnit.SECONDS));
        assertTrue(ee.getCause().getMessage().contains("closed"), ee.getCause().getMessage());
        // Submitting after close fails at once instead of hanging.
        ExecutionException after = assertThrows(ExecutionException.class,
                () -> c.namespace(1).read(0, 1, ByteBuffer.allocate(512)).get(1, TimeUnit.SECONDS));
        assertInstanceOf(NvmeofException.class, after.getCause());
    }

    @Test
    void connectionRefusedGivesAClearError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> NvmeofController.connect(TransportId.tcp("127.0.0.1", port, FakeTarget.NQN), opts().build()));
        assertTrue(e.getMessage().contains("TCP connect"), e.getMessage());
    }

    @Test
    void rejectedConnectIsAStatusException() {
        NvmeStatusException e = assertThrows(NvmeStatusException.class, () -> NvmeofController.connect(
                TransportId.tcp("127.0.0.1", target.port(), "nqn.2024-01.io.nvmeof:other"), opts().build()));
        assertEquals(Status.CONNECT_INVALID_PARAMETERS, e.statusCode());
        assertTrue(e.getMessage().startsWith("Fabrics Connect (qid 0, sqsize 31)"), e.getMessage());
    }

    /**
     * Linux nvmet-tcp never sends R2T for a write of at most its in-capsule size (16 KiB by default): it waits for the
     * data in the capsule. So, as the Linux host does, every write up to the in-capsule size the controller advertises
     * carries its data in the capsule, whatever the transport's own default (this once hung at 12 and 16 KiB).
     */
    @Test
    void writesUpToTheAdvertisedInCapsuleSizeCarryTheirData() throws Exception {
        target.inline = 16384;
        target.noR2tWithinInline = true;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().commandTimeout(Duration.ofSeconds(3)).build())) {
            NamespaceHandle ns = c.namespace(1);
            for (int bytes : new int[] {4096, 8192, 12288, 16384, 20480}) {
                ByteBuffer b = ByteBuffer.allocateDirect(bytes);
                for (int i = 0; i < bytes; i++) {
                    b.put(i, (byte) (i * 7 + bytes));
                }
                ns.write(16, bytes / FakeTarget.BLOCK, b).get(10, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocateDirect(bytes);
                ns.read(16, bytes / FakeTarget.BLOCK, back).get(10, TimeUnit.SECONDS);
                assertEquals(b, back, bytes + " bytes read back");
            }
            assertEquals(List.of(), target.errors);
        }
    }

    /**
     * A PDU that breaks the protocol: H2CTermReq, the command it answered fails, and (as the Linux host does) the
     * association is reset: the controller reconnects and sends the other interrupted command again.
     */
    @Test
    void badPduSendsH2CTermReqAndResetsTheAssociation() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().reconnectDelay(Duration.ofMillis(50)).build())) {
            NamespaceHandle ns = c.namespace(1);
            CompletableFuture<Void> outstanding = ns.read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512));
            ExecutionException ee = assertThrows(ExecutionException.class,
                    () -> ns.read(FakeTarget.CORRUPT_LBA, 1, ByteBuffer.allocate(512)).get(5, TimeUnit.SECONDS));
            assertTrue(ee.getCause().getMessage().contains("protocol error"), ee.getCause().getMessage());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (target.termReqs.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(List.of(io.nvmeof.protocol.tcp.TermReqPdu.FES_DATA_OUT_OF_RANGE), target.termReqs);
            while (!c.isConnected() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertTrue(c.isConnected(), "reconnected");
            assertEquals(0x1234, c.getFeature(0x07));
            assertFalse(outstanding.isDone(), "the interrupted read was sent again (and the target still ignores it)");
            // The resend reaches the target shortly after isConnected() turns true: wait for it to arrive.
            java.util.function.LongSupplier resent = () -> target.commands(1).stream()
                    .filter(x -> x.opcode() == 0x02 && x.cdw10() == FakeTarget.BLACKHOLE_LBA).count();
            while (resent.getAsLong() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(2, resent.getAsLong());
            assertEquals(1, target.commands(1).stream().filter(x -> x.opcode() == 0x02 && x.cdw10() == FakeTarget.CORRUPT_LBA).count(),
                    "the command the protocol error answered is not sent again");
        }
    }

    /**
     * A controller that reports a read successful with data missing (SUCCESS after 1 of 8 blocks, or a success
     * response with no data at all) must not be taken at its word: the buffer would keep whatever it held before.
     */
    @Test
    void readsMissingDataFailInsteadOfSucceeding() throws Exception {
        for (long lba : new long[] {FakeTarget.SHORT_LBA, FakeTarget.NO_DATA_LBA}) {
            try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
                ByteBuffer buf = ByteBuffer.allocate(8 * FakeTarget.BLOCK);
                ExecutionException ee = assertThrows(ExecutionException.class,
                        () -> c.namespace(1).read(lba, 8, buf).get(5, TimeUnit.SECONDS), "LBA " + lba);
                assertTrue(ee.getCause().getMessage().contains("of its 4096 bytes of data"), ee.getCause().getMessage());
            }
        }
    }
}

package io.nvmeof.tgt.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NVMe/RDMA queue's protocol logic over an in-memory NIC: capsules in receives, host writes fetched by RDMA READ
 * within the initiator depth, host reads answered by RDMA WRITE before the response SEND, key invalidation, in-capsule
 * data, and a remote access error that ends one queue pair and nothing else.
 */
class RdmaQueueTest {
    static final String NQN = "nqn.2026-11.io.nvmeof:rdma-test";
    static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";

    TargetCore core;
    RdmaPollGroup group;
    RegisteredBufferPool pool;
    int cid;

    @BeforeEach
    void setUp() {
        core = new TargetCore(TargetLimits.defaults());
        Subsystem s = new Subsystem(NQN, Subsystem.Type.NVM, "SN1", "rdma test", 16, true);
        // Sparse: reads of blocks never written have no namespace memory to send from and go through the pool's
        // registered buffers, which these tests are about (up front, every read is sent from the namespace).
        s.addNamespace(new Namespace(1, new RamBackend(16 << 20, true), 512, UUID.randomUUID()));
        core.addSubsystem(s);
        group = new RdmaPollGroup();
        pool = new RegisteredBufferPool(ByteBuffer.allocateDirect(64 * 4096 + 8 * 131072 + 2 * (1 << 20)),
                new int[] {4096, 131072, 1 << 20}, new int[] {64, 8, 2});
        pool.lkey(9);
    }

    final class Host {
        final InMemoryNic nic = new InMemoryNic();
        final RdmaQueue queue;

        Host(int receiveDepth, int inline, int maxReads) {
            queue = new RdmaQueue(core, nic, pool, nic, group, "host", receiveDepth, 8192, inline, maxReads);
            queue.start();
            nic.run(group);
        }

        /**
         * Delivers what the host sent so far and lets the queue post its work, but delivers none of that work's
         * completions: the requests keep their buffers, as while a real NIC is still moving their data.
         */
        void postWithoutCompleting() {
            InMemoryNic.Completion c;
            while ((c = nic.completions.poll()) != null) {
                group.dispatch(c.wrId(), c.success(), c.status(), c.byteLength());
            }
            group.afterBatch();
        }

        /** Sends a capsule and returns the response CQE. */
        Completion execute(byte[] sqe, byte[] inCapsule) {
            new Command().<Command>wrap(new UnsafeBuffer(sqe), 0).cid(++cid);
            byte[] capsule = sqe;
            if (inCapsule != null) {
                capsule = new byte[64 + inCapsule.length];
                System.arraycopy(sqe, 0, capsule, 0, 64);
                System.arraycopy(inCapsule, 0, capsule, 64, inCapsule.length);
            }
            int before = nic.responses.size();
            nic.hostSend(capsule);
            nic.run(group);
            assertEquals(before + 1, nic.responses.size(), "one response capsule");
            Completion c = new Completion().wrap(new UnsafeBuffer(nic.responses.get(before)), 0);
            assertEquals(cid, c.cid());
            return c;
        }
    }

    /** The JDK's direct buffers: how many there are and how much memory they hold. */
    static java.lang.management.BufferPoolMXBean directPool() {
        return java.lang.management.ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)
                .stream().filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
    }

    static byte[] sqe(int opcode) {
        byte[] b = new byte[64];
        new Command().<Command>wrap(new UnsafeBuffer(b), 0).opcode(opcode).psdt(Command.PSDT_SGL);
        return b;
    }

    static void keyed(byte[] sqe, ByteBuffer buf, int length, long key, boolean invalidate) {
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(sqe), Command.DPTR)
                .keyed(InMemoryNic.address(buf), length, key, invalidate);
    }

    byte[] connect(Host h, int qid, int sqsize, int cntlid) {
        ByteBuffer data = ByteBuffer.allocateDirect(1024);
        new ConnectData().<ConnectData>wrap(new UnsafeBuffer(data), 0).cntlid(cntlid).subnqn(NQN).hostnqn(HOST);
        byte[] s = sqe(Opcodes.FABRICS);
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(s), 0).fctype(Opcodes.FCTYPE_CONNECT).qid(qid).sqsize(sqsize);
        keyed(s, data, 1024, h.nic.hostRegister(data), false);
        return s;
    }

    int bringUp(Host admin) {
        Completion c = admin.execute(connect(admin, 0, 31, 0xFFFF), null);
        assertEquals(Status.SUCCESS, c.status(), "Connect data fetched by RDMA READ");
        byte[] cc = sqe(Opcodes.FABRICS);
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(cc), 0).fctype(Opcodes.FCTYPE_PROPERTY_SET).propertySize(4)
                .propertyOffset(ControllerRegisters.CC).propertyValue(ControllerRegisters.CC_ENABLE_DEFAULT);
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(cc), Command.DPTR).keyed(0, 0, 0, false);
        assertEquals(Status.SUCCESS, admin.execute(cc, null).status());
        return c.dw0() & 0xFFFF;
    }

    /** An enabled controller with I/O queue 1 (depth 128) connected on a fresh queue pair. */
    Host ioQueue(int inline, int maxReads) {
        Host admin = new Host(32, 0, 4);
        int cntlid = bringUp(admin);
        Host io = new Host(128, inline, maxReads);
        assertEquals(Status.SUCCESS, io.execute(connect(io, 1, 127, cntlid), null).status());
        return io;
    }

    @Test
    void identifyIsWrittenIntoTheHostBufferAndTheKeyInvalidated() {
        Host admin = new Host(32, 0, 4);
        bringUp(admin);
        ByteBuffer id = ByteBuffer.allocateDirect(4096);
        long key = admin.nic.hostRegister(id);
        byte[] s = sqe(Opcodes.ADMIN_IDENTIFY);
        new Command().<Command>wrap(new UnsafeBuffer(s), 0).cdw10(Opcodes.CNS_CONTROLLER);
        keyed(s, id, 4096, key, true);
        assertEquals(Status.SUCCESS, admin.execute(s, null).status());
        IdentifyController ic = new IdentifyController().wrap(new UnsafeBuffer(id), 0);
        assertEquals(NQN, ic.subnqn(), "the data landed in the host's own buffer");
        assertTrue((ic.sgls() & IdentifyController.SGLS_KEYED) != 0, "keyed SGLs advertised over RDMA");
        assertTrue(admin.nic.invalidated.contains(key), "SEND with invalidate for subtype Fh");
        assertEquals(0, admin.queue.submissionQueue().inUse(), "requests released after their SEND completed");
    }

    @Test
    void writesByRdmaReadAndInCapsuleReadsByRdmaWrite() {
        Host io = ioQueue(8192, 2);

        Random r = new Random(1);
        byte[] big = new byte[65536];
        r.nextBytes(big);
        ByteBuffer src = ByteBuffer.allocateDirect(big.length).put(big).flip();
        byte[] w = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(w), 0).nsid(1).slba(100).blockCount(128);
        keyed(w, src, big.length, io.nic.hostRegister(src), false);
        assertEquals(Status.SUCCESS, io.execute(w, null).status());

        byte[] small = new byte[4096];
        r.nextBytes(small);
        byte[] inl = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(inl), 0).nsid(1).slba(400).blockCount(8);
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(inl), Command.DPTR).inCapsule(0, 4096);
        assertEquals(Status.SUCCESS, io.execute(inl, small).status(), "in-capsule write");

        for (long[] rd : new long[][] {{100, 128}, {400, 8}}) {
            ByteBuffer dst = ByteBuffer.allocateDirect((int) rd[1] * 512);
            byte[] rq = sqe(Opcodes.IO_READ);
            new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(rd[0]).blockCount((int) rd[1]);
            keyed(rq, dst, dst.capacity(), io.nic.hostRegister(dst), false);
            assertEquals(Status.SUCCESS, io.execute(rq, null).status());
            byte[] back = new byte[dst.capacity()];
            dst.get(back);
            assertArrayEquals(rd[0] == 100 ? big : small, back, "RDMA WRITE placed the blocks at LBA " + rd[0]);
        }
    }

    @Test
    void ramNamespaceReadsAreOneRdmaWriteFromTheNamespaceMemory() {
        Host io = ioQueue(8192, 2);
        byte[] data = new byte[65536];
        new Random(3).nextBytes(data);
        ByteBuffer src = ByteBuffer.allocateDirect(data.length).put(data).flip();
        byte[] w = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(w), 0).nsid(1).slba(8192).blockCount(128);
        keyed(w, src, data.length, io.nic.hostRegister(src), false);
        assertEquals(Status.SUCCESS, io.execute(w, null).status());
        io.nic.history.clear();

        ByteBuffer dst = ByteBuffer.allocateDirect(data.length);
        byte[] rq = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(8192).blockCount(128);
        keyed(rq, dst, data.length, io.nic.hostRegister(dst), false);
        assertEquals(Status.SUCCESS, io.execute(rq, null).status());
        byte[] back = new byte[data.length];
        dst.get(back);
        assertArrayEquals(data, back);

        ByteBuffer region = core.subsystem(NQN).namespace(1).backend().pinnedRegion(8192L * 512, data.length);
        long expected = InMemoryNic.address(region) + (8192L * 512) % (2 << 20);
        InMemoryNic.Wr write = io.nic.history.stream().filter(x -> x.op() == 'W').findFirst().orElseThrow();
        assertEquals(expected, write.local(), "the RDMA WRITE is sent from the namespace's own memory");
        assertEquals(data.length, write.length(), "one RDMA WRITE for the whole read");
        long fromPool = io.nic.history.stream().filter(x -> x.op() == 'W')
                .filter(x -> x.local() >= pool.regionAddress() && x.local() < pool.regionAddress() + pool.region().capacity())
                .count();
        assertEquals(0, fromPool, "no RDMA WRITE from a pool buffer");

        // Never-written blocks have no memory to send from: they go through a zeroed pool buffer.
        ByteBuffer zeroes = ByteBuffer.allocateDirect(4096);
        while (zeroes.hasRemaining()) {
            zeroes.put((byte) 0x5A);
        }
        zeroes.clear();
        byte[] rz = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(rz), 0).nsid(1).slba(20000).blockCount(8);
        keyed(rz, zeroes, 4096, io.nic.hostRegister(zeroes), false);
        assertEquals(Status.SUCCESS, io.execute(rz, null).status());
        while (zeroes.hasRemaining()) {
            assertEquals(0, zeroes.get());
        }
    }

    @Test
    void namespaceMemoryThatCannotBeRegisteredIsReadThroughACopy() {
        Host io = ioQueue(8192, 2);
        byte[] data = new byte[4096];
        new Random(4).nextBytes(data);
        byte[] w = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(w), 0).nsid(1).slba(4096).blockCount(8);
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(w), Command.DPTR).inCapsule(0, 4096);
        assertEquals(Status.SUCCESS, io.execute(w, data).status());
        io.nic.refuseRegistrations = true;
        for (int i = 0; i < 2; i++) { // the refusal is remembered: the second read does not try again
            ByteBuffer dst = ByteBuffer.allocateDirect(4096);
            byte[] rq = sqe(Opcodes.IO_READ);
            new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(4096).blockCount(8);
            keyed(rq, dst, 4096, io.nic.hostRegister(dst), false);
            io.nic.history.clear();
            assertEquals(Status.SUCCESS, io.execute(rq, null).status(), "exactly one response, successful");
            byte[] back = new byte[4096];
            dst.get(back);
            assertArrayEquals(data, back);
            InMemoryNic.Wr write = io.nic.history.stream().filter(x -> x.op() == 'W').findFirst().orElseThrow();
            assertTrue(write.local() >= pool.regionAddress() && write.local() < pool.regionAddress() + pool.region().capacity(),
                    "sent from a pool buffer");
        }
    }

    @Test
    void rdmaReadsStayWithinTheInitiatorDepth() {
        Host io = ioQueue(0, 1);
        // Four writes arrive together; with an initiator depth of 1 only one READ may be outstanding.
        for (int i = 0; i < 4; i++) {
            ByteBuffer src = ByteBuffer.allocateDirect(4096);
            byte[] w = sqe(Opcodes.IO_WRITE);
            new Command().<Command>wrap(new UnsafeBuffer(w), 0).nsid(1).slba(i * 8L).blockCount(8).cid(1000 + i);
            keyed(w, src, 4096, io.nic.hostRegister(src), false);
            io.nic.hostSend(w);
        }
        io.nic.maxReadsPerFlush = 0;
        io.nic.run(group);
        assertEquals(1, io.nic.maxReadsPerFlush, "never more READs in flight than the initiator depth");
        assertEquals(1 + 4, io.nic.responses.size(), "Connect, then all four writes completed");
    }

    @Test
    void badSglsGetStatusesAndUnregisteredKeyEndsOnlyThatQueue() {
        Host admin = new Host(32, 0, 4);
        int cntlid = bringUp(admin);
        Host io = new Host(128, 8192, 4);
        assertEquals(Status.SUCCESS, io.execute(connect(io, 1, 127, cntlid), null).status());
        ByteBuffer buf = ByteBuffer.allocateDirect(4096);
        long key = io.nic.hostRegister(buf);

        byte[] mismatch = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(mismatch), 0).nsid(1).slba(0).blockCount(8);
        keyed(mismatch, buf, 2048, key, false);
        assertEquals(Status.SGL_INVALID_DATA_LENGTH, Status.code(io.execute(mismatch, null).status()));

        byte[] segment = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(segment), 0).nsid(1).slba(0).blockCount(8);
        new UnsafeBuffer(segment).putByte(39, (byte) 0x30); // last segment descriptor: not supported
        assertEquals(Status.SGL_INVALID_TYPE, Status.code(io.execute(segment, null).status()));

        Host other = new Host(128, 8192, 4);
        assertEquals(Status.SUCCESS, other.execute(connect(other, 2, 127, cntlid), null).status());

        byte[] stray = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(stray), 0).nsid(1).slba(0).blockCount(8).cid(77);
        keyed(stray, buf, 4096, 0xBAD, false); // a key the host never registered
        io.nic.hostSend(stray);
        io.nic.run(group);
        assertTrue(io.queue.isClosed(), "the remote access error ends this queue pair");
        assertTrue(io.nic.disconnected);
        assertEquals(1, io.queue.submissionQueue().inUse(), "the failed write keeps its buffer while the QP exists");
        io.queue.queuePairDestroyed(); // what the transport does on the DISCONNECTED event
        assertEquals(0, io.queue.submissionQueue().inUse(), "and releases what it held once the QP is gone");

        ByteBuffer dst = ByteBuffer.allocateDirect(4096);
        byte[] rq = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(0).blockCount(8);
        keyed(rq, dst, 4096, other.nic.hostRegister(dst), false);
        assertEquals(Status.SUCCESS, other.execute(rq, null).status(), "the other queue pair still serves");
    }

    @Test
    void readsWaitForARegisteredBufferInsteadOfFailing() {
        Host io = ioQueue(0, 4);
        // 100 reads of 128 KiB arrive at once; the pool holds 8 of that size (+2 of 1 MiB), so most must wait.
        int before = io.nic.responses.size();
        for (int i = 0; i < 100; i++) {
            ByteBuffer dst = ByteBuffer.allocateDirect(131072);
            byte[] rq = sqe(Opcodes.IO_READ);
            new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(i * 256L).blockCount(256).cid(2000 + i);
            keyed(rq, dst, 131072, io.nic.hostRegister(dst), false);
            io.nic.hostSend(rq);
        }
        io.nic.run(group);
        assertEquals(before + 100, io.nic.responses.size());
        for (int i = before; i < io.nic.responses.size(); i++) {
            Completion c = new Completion().wrap(new UnsafeBuffer(io.nic.responses.get(i)), 0);
            assertEquals(Status.SUCCESS, c.status(), "cid " + c.cid());
        }
        assertEquals(8, pool.available(1), "every buffer came back");
    }

    private static byte[] read(ByteBuffer dst, long slba, int blocks, int cid, Host h) {
        return readOrWrite(Opcodes.IO_READ, dst, slba, blocks, cid, h);
    }

    private static byte[] write(ByteBuffer src, long slba, int blocks, int cid, Host h) {
        return readOrWrite(Opcodes.IO_WRITE, src, slba, blocks, cid, h);
    }

    /** A read or write of namespace 1's 512 B blocks, the host's buffer registered on its NIC. */
    private static byte[] readOrWrite(int opcode, ByteBuffer buf, long slba, int blocks, int cid, Host h) {
        byte[] rq = sqe(opcode);
        new Command().<Command>wrap(new UnsafeBuffer(rq), 0).nsid(1).slba(slba).blockCount(blocks).cid(cid);
        keyed(rq, buf, blocks * 512, h.nic.hostRegister(buf), false);
        return rq;
    }

    private static int status(Host h, int cid) {
        for (byte[] r : h.nic.responses) {
            Completion c = new Completion().wrap(new UnsafeBuffer(r), 0);
            if (c.cid() == cid) {
                return c.status();
            }
        }
        return -1;
    }

    @Test
    void aTransferLargerThanEveryBufferFailsAtOnceAndHoldsNothingUp() {
        // A target whose MDTS (2 MiB) is larger than this pool's largest buffer (1 MiB): the 2 MiB read used to wait
        // for a buffer for ever, and every read queued behind it waited too.
        core = new TargetCore(new TargetLimits(8, 128, 2 << 20));
        Subsystem s = new Subsystem(NQN, Subsystem.Type.NVM, "SN1", "rdma test", 16, true);
        // Sparse: reads of blocks never written have no namespace memory to send from and go through the pool's
        // registered buffers, which these tests are about (up front, every read is sent from the namespace).
        s.addNamespace(new Namespace(1, new RamBackend(16 << 20, true), 512, UUID.randomUUID()));
        core.addSubsystem(s);
        Host io = ioQueue(0, 4);
        io.nic.hostSend(read(ByteBuffer.allocateDirect(2 << 20), 0, 4096, 3000, io));
        for (int i = 0; i < 20; i++) {
            io.nic.hostSend(read(ByteBuffer.allocateDirect(131072), 8192 + i * 256L, 256, 3001 + i, io));
        }
        io.nic.run(group);
        assertEquals(Status.INTERNAL, Status.code(status(io, 3000)), "the 2 MiB read is answered, not left waiting");
        for (int i = 0; i < 20; i++) {
            assertEquals(Status.SUCCESS, status(io, 3001 + i), "128 KiB read " + i);
        }
        assertEquals(0, group.bufferWaiters());
    }

    @Test
    void aBufferFreedByOneQueueServesARequestWaitingOnAnother() {
        Host first = ioQueue(0, 4);
        Host second = ioQueue(0, 4);
        // The pool has two 1 MiB buffers: the first queue's two reads take both, the second queue's read must wait,
        // and only the first queue's completions free a buffer for it.
        first.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 0, 2048, 4000, first));
        first.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 2048, 2048, 4001, first));
        // The first queue takes its capsules and posts its WRITEs and SENDs, whose completions are not delivered yet.
        first.postWithoutCompleting();
        assertEquals(0, pool.available(2), "the first queue holds both 1 MiB buffers");
        second.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 4096, 2048, 4002, second));
        second.nic.run(group);
        assertEquals(1, group.bufferWaiters(), "the second queue's read waits for a buffer");
        first.nic.run(group); // the first queue's SENDs complete and free both buffers
        second.nic.run(group);
        assertEquals(Status.SUCCESS, status(first, 4000));
        assertEquals(Status.SUCCESS, status(first, 4001));
        assertEquals(Status.SUCCESS, status(second, 4002), "the second queue's read got a buffer the first freed");
        assertEquals(2, pool.available(2), "both 1 MiB buffers came back");
    }

    /** Aborts command {@code cid} of queue {@code sqid} through {@code admin}; returns DW0 bit 0 (0: aborted). */
    private int abort(Host admin, int sqid, int cid) {
        byte[] a = sqe(Opcodes.ADMIN_ABORT);
        new Command().<Command>wrap(new UnsafeBuffer(a), 0).cdw10(sqid | cid << 16);
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(a), Command.DPTR).keyed(0, 0, 0, false);
        Completion c = admin.execute(a, null);
        assertEquals(Status.SUCCESS, c.status());
        return c.dw0() & 1;
    }

    private static long responsesWithCid(Host h, int cid) {
        return h.nic.responses.stream()
                .filter(r -> new Completion().<Completion>wrap(new UnsafeBuffer(r), 0).cid() == cid).count();
    }

    @Test
    void aReadWaitingForAPoolBufferIsAborted() {
        Host holder = ioQueue(0, 4);
        Host admin = new Host(32, 0, 4);
        int cntlid = bringUp(admin);
        Host io = new Host(128, 0, 4);
        assertEquals(Status.SUCCESS, io.execute(connect(io, 1, 127, cntlid), null).status());
        // The other queue's two 1 MiB reads hold both 1 MiB buffers; this queue's read waits for one.
        holder.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 0, 2048, 7000, holder));
        holder.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 2048, 2048, 7001, holder));
        holder.postWithoutCompleting();
        io.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 4096, 2048, 7002, io));
        io.nic.run(group);
        assertEquals(1, group.bufferWaiters());

        assertEquals(0, abort(admin, 1, 7002), "the read waiting for a buffer is aborted");
        io.nic.run(group);
        assertEquals(Status.ABORT_REQUESTED, status(io, 7002));
        assertEquals(0, group.bufferWaiters(), "it waits no more");
        holder.nic.run(group);
        assertEquals(Status.SUCCESS, status(holder, 7000));
        assertEquals(Status.SUCCESS, status(holder, 7001));
        io.nic.run(group);
        assertEquals(1, responsesWithCid(io, 7002), "completed once, never served");
        assertEquals(2, pool.available(2), "both 1 MiB buffers came back");
        assertEquals(1, abort(admin, 1, 7002), "gone: nothing to abort");
    }

    @Test
    void aWriteWaitingForItsTurnToReadHostDataIsAbortedAndOneReadingItIsNot() {
        Host admin = new Host(32, 0, 4);
        int cntlid = bringUp(admin);
        Host io = new Host(128, 0, 1); // one RDMA READ at a time
        assertEquals(Status.SUCCESS, io.execute(connect(io, 1, 127, cntlid), null).status());
        ByteBuffer a = ByteBuffer.allocateDirect(128 << 10);
        ByteBuffer b = ByteBuffer.allocateDirect(128 << 10);
        for (int i = 0; i < a.capacity(); i++) {
            a.put(i, (byte) (i * 7 + 1));
            b.put(i, (byte) 0x5A);
        }
        // A's RDMA READ is posted and not yet completed; B holds a buffer and waits for its turn to read.
        io.nic.hostSend(write(a, 0, 256, 7100, io));
        io.nic.hostSend(write(b, 256, 256, 7101, io));
        io.postWithoutCompleting();
        assertEquals(6, pool.available(1), "A and B hold a buffer each");

        assertEquals(0, abort(admin, 1, 7101), "B, whose data was not asked for, is aborted");
        assertEquals(1, abort(admin, 1, 7100), "A, whose data is being read, is not");
        io.nic.run(group);
        assertEquals(Status.SUCCESS, status(io, 7100));
        assertEquals(Status.ABORT_REQUESTED, status(io, 7101));
        assertEquals(1, responsesWithCid(io, 7101), "completed once");
        assertEquals(8, pool.available(1), "both buffers came back");
        ByteBuffer back = ByteBuffer.allocateDirect(256 << 10);
        io.execute(read(back, 0, 512, 7102, io), null);
        assertEquals(a, back.slice(0, 128 << 10), "A's data written");
        assertEquals(ByteBuffer.allocateDirect(128 << 10), back.slice(128 << 10, 128 << 10),
                "B's data never read nor written");
    }

    @Test
    void compareNeedsNoSecondRegisteredBuffer() {
        Host holder = ioQueue(0, 4);
        Host io = ioQueue(0, 4);
        // Another queue's 1 MiB read holds one of the two 1 MiB buffers (its WRITE and SEND posted, not completed).
        holder.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 0, 2048, 6000, holder));
        holder.postWithoutCompleting();
        assertEquals(1, pool.available(2));
        // A 1 MiB Compare of never-written blocks against zeroes: its host data takes the other buffer; the stored
        // data it compares with used to need a third and failed with an internal error.
        ByteBuffer zeroes = ByteBuffer.allocateDirect(1 << 20);
        byte[] cmp = sqe(Opcodes.IO_COMPARE);
        new Command().<Command>wrap(new UnsafeBuffer(cmp), 0).nsid(1).slba(8192).blockCount(2048).cid(6001);
        keyed(cmp, zeroes, 1 << 20, io.nic.hostRegister(zeroes), false);
        io.nic.hostSend(cmp);
        io.nic.run(group);
        assertEquals(Status.SUCCESS, status(io, 6001), "Compare of zeroes with never-written blocks");
    }

    @Test
    void thePoolsLargestBuffersFitMdts() {
        int[][] small = RdmaPollGroupThread.poolLayout(128 << 10);
        assertEquals(1 << 20, small[0][2], "at least 1 MiB");
        assertEquals(16, small[1][2]);
        int[][] large = RdmaPollGroupThread.poolLayout(4 << 20);
        assertEquals(4 << 20, large[0][2], "MDTS 4 MiB: 4 MiB buffers");
        assertEquals(4, large[1][2], "16 MiB of them");
        assertEquals(2, RdmaPollGroupThread.poolLayout(64 << 20)[1][2], "never fewer than two");
    }

    @Test
    void staleCompletionsOfAClosedQueueNeverReachANewOne() {
        Host old = new Host(128, 8192, 4);
        long staleWrId = RdmaPollGroup.wrId(old.queue.id(), RdmaQueue.KIND_RECV, 71);
        old.queue.closeNow("test");
        Host fresh = new Host(32, 0, 4);
        assertTrue(fresh.queue.id() != old.queue.id(), "queue IDs are not reused");
        group.dispatch(staleWrId, false, "WR_FLUSH_ERR", 0); // the old queue's flushed receive arrives late
        group.afterBatch();
        assertTrue(!fresh.queue.isClosed(), "the new queue is untouched");
        bringUp(fresh);
    }

    @Test
    void shortCapsuleDisconnects() {
        Host admin = new Host(32, 0, 4);
        admin.nic.hostSend(new byte[40]);
        admin.nic.run(group);
        assertTrue(admin.queue.isClosed());
        assertTrue(admin.nic.disconnected);
        admin.queue.queuePairDestroyed(); // what the transport does on the DISCONNECTED event
        assertEquals(0, core.liveQueues());
    }

    /**
     * A queue's request slots (twice the largest queue: 256 here) keep their SQEs and CQEs in one slab: a direct
     * buffer each (512 per queue) made every Connect pay a native allocation per slot and left that many cleaners for
     * the JDK's single reference thread per disconnect, which fell behind under connection churn (4.2 million pending
     * in 100 s of the RDMA fuzzer, several GB of memory).
     */
    @Test
    void aQueuesRequestSlotsTakeNoDirectBufferEach() {
        java.lang.management.BufferPoolMXBean direct = directPool();
        long before = direct.getCount();
        Host h = new Host(32, 0, 4);
        long added = direct.getCount() - before;
        assertTrue(added <= 3, "the queue's receives and responses and its slots' slab, nothing per slot: " + added
                + " direct buffers for " + 2 * core.limits().maxQueueSize() + " slots");
        bringUp(h);
    }

    /**
     * A queue pair's receive and response memory goes back when the queue pair is destroyed, not when a collection
     * happens to run: hosts that connect and disconnect quickly would otherwise pile up direct memory the memory limits
     * count as free (the fuzzer's process grew to 7.8 GB in 3 minutes of short-lived queue pairs).
     */
    @Test
    void destroyingTheQueuePairFreesItsReceiveAndResponseMemoryAtOnce() {
        java.lang.management.BufferPoolMXBean direct = directPool();
        long before = direct.getMemoryUsed();
        Host io = new Host(128, 8192, 4);
        long held = io.queue.bufferedBytes();
        assertTrue(held >= 128L * (64 + 8192), "receives for 128 capsules with 8 KiB in-capsule data: " + held);
        assertTrue(direct.getMemoryUsed() - before >= held, "the queue's receives and responses are direct memory");
        io.queue.closeNow("host left");
        io.queue.queuePairDestroyed();
        long after = direct.getMemoryUsed();
        assertTrue(after - before < held / 2, "freed when the queue pair is destroyed: " + (after - before)
                + " bytes still held of " + held);
        io.queue.queuePairDestroyed(); // a second destroy event frees nothing twice
        assertEquals(after, direct.getMemoryUsed());
        // Memory the NIC could not be made to forget stays allocated: never pages it may still write.
        Host kept = new Host(128, 8192, 4);
        long held2 = direct.getMemoryUsed() - after;
        kept.nic.refuseDeregistrations = true;
        kept.queue.closeNow("host left");
        kept.queue.queuePairDestroyed();
        assertEquals(after + held2, direct.getMemoryUsed(), "not freed when its deregistration failed");
    }

    @Test
    void aClosingQueueKeepsItsBuffersUntilItsQueuePairIsDestroyed() {
        Host io = ioQueue(0, 4);
        // A 1 MiB read: the RDMA WRITE from a pool buffer and the response SEND are posted, not yet completed.
        io.nic.hostSend(read(ByteBuffer.allocateDirect(1 << 20), 0, 2048, 5000, io));
        io.postWithoutCompleting();
        assertEquals(1, pool.available(2), "the read holds a 1 MiB buffer");
        io.queue.closeNow("host vanished");
        assertEquals(1, pool.available(2), "still held: the NIC may still be reading it (iWARP keeps the QP running)");
        io.queue.queuePairDestroyed();
        assertEquals(2, pool.available(2), "back in the pool once the queue pair is gone");
    }
}

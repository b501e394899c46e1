package io.nvmeof.tgt.rdma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.rdma.RdmaCmReject;
import io.nvmeof.protocol.rdma.RdmaConnectParameters;
import io.nvmeof.protocol.rdma.RdmaCmRequest;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Subsystem;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.core.TargetLimits;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Fuzzes NVMe/RDMA as a host drives it: the RDMA CM connect request's private data, then a stream of capsules SENT on
 * the queue pair the target sets up from it, through the real queue and core over the in-memory NIC (no RDMA device;
 * READs and WRITEs move bytes by address and fail on a bad key or range, as a NIC does).
 *
 * <p>Input: bytes 0-31 are the private data (a short input is a short private data); byte 32's bits 1:0 pick the
 * stage (0 or 3: a new queue pair; 1: its admin queue connected and enabled; 2: an I/O queue of a connected
 * controller) and its bit 2 whether the receives hold 4 KiB of in-capsule data; the rest is records, each a 2-byte
 * little-endian length and its bytes, most of them capsules. A
 * keyed SGL in a capsule is pointed into the host's one registered 1 MiB buffer (its address taken modulo that size,
 * the length as given, the key the buffer's unless the fuzzed key's low byte is FFh): otherwise no fuzzed address
 * could ever reach memory, and no RDMA READ or WRITE would run. A record whose length has bit 15 set is not sent: it
 * is a 4-byte offset and bytes the host puts in that buffer (write data, Dataset Management ranges, its own Connect
 * data). The buffer starts each input zeroed but for Connect data for the fuzzed subsystem (dynamic controller) at
 * offset 0, so a Connect the fuzzer writes can succeed. {@link #writeSeeds} writes the seeds.
 *
 * <p>Invariants, after every input: a refused connect request names a reject status the specification defines; an
 * accepted one gives the queue pair at least one receive and no more than the largest queue allows; nothing threw
 * inside the target; every queue, controller and registered buffer is back once the queue pairs are gone; another
 * host's controller, on queue pairs of its own, still writes and reads back its data.
 */
class RdmaQueueFuzzTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:rdma-fuzz";
    private static final String NEIGHBOUR_NQN = "nqn.2026-12.io.nvmeof:rdma-fuzz-neighbour";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:22222222-3333-4444-5555-666666666666";
    private static final int HOST_BUFFER = 1 << 20;
    /** Set in a record's length: the record is bytes the host puts in its buffer, not a capsule it sends. */
    private static final int HOST_MEMORY_RECORD = 0x8000;
    private static final int[] SIZES = {4096, 131072, 1 << 20};
    private static final int[] COUNTS = {64, 8, 2};

    private static TargetCore core;
    private static RdmaPollGroup group;
    private static RegisteredBufferPool pool;
    private static final ByteBuffer hostBuffer = ByteBuffer.allocateDirect(HOST_BUFFER);
    private static final ByteBuffer connectData = ByteBuffer.allocateDirect(ConnectData.LENGTH);
    private static InMemoryHost neighbour;
    /** The neighbour's data buffers, registered once (a direct buffer per check would be garbage per input). */
    private static final ByteBuffer neighbourSource = ByteBuffer.allocateDirect(4096);
    private static final ByteBuffer neighbourDestination = ByteBuffer.allocateDirect(4096);
    private static long neighbourSourceKey;
    private static long neighbourDestinationKey;
    private static int baselineQueues;
    private static int baselineControllers;
    private static long executions;
    /** The last input's queue pair, for {@link #theSeedsDoWhatTheySay}. */
    private static InMemoryHost lastHost;
    private static final Random random = new Random(16);

    /** One queue pair of a host: its NIC and the target's queue on it. */
    static final class InMemoryHost {
        final InMemoryNic nic = new InMemoryNic();
        final RdmaQueue queue;
        final long hostKey;
        final long connectKey;
        private int cid;

        InMemoryHost(int receiveDepth, int receiveInline) {
            queue = new RdmaQueue(core, nic, pool, nic, group, "fuzz", receiveDepth, 8192, receiveInline, 4);
            queue.start();
            hostKey = nic.hostRegister(hostBuffer);
            connectKey = nic.hostRegister(connectData);
            nic.run(group);
        }

        /** Sends a capsule; false when the target had no receive posted (an RNR a real NIC would retry, then fail). */
        boolean send(byte[] capsule) {
            try {
                nic.hostSend(capsule);
            } catch (IllegalStateException e) {
                return false;
            }
            nic.run(group);
            return !queue.isClosed();
        }

        /** Sends a command and returns its response. */
        Completion execute(byte[] sqe) {
            new Command().<Command>wrap(new UnsafeBuffer(sqe), 0).cid(++cid);
            int before = nic.responses.size();
            assertTrue(send(sqe), "the queue pair took the command");
            assertEquals(before + 1, nic.responses.size(), "one response");
            return new Completion().wrap(new UnsafeBuffer(nic.responses.get(before)), 0);
        }

        int connect(int qid, int cntlid, String nqn) {
            new ConnectData().<ConnectData>wrap(new UnsafeBuffer(connectData), 0).cntlid(cntlid).subnqn(nqn).hostnqn(HOST);
            byte[] s = sqe(Opcodes.FABRICS);
            new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(s), 0).fctype(Opcodes.FCTYPE_CONNECT).qid(qid)
                    .sqsize(qid == 0 ? 31 : 63);
            keyed(s, InMemoryNic.address(connectData), ConnectData.LENGTH, connectKey);
            Completion c = execute(s);
            assertEquals(Status.SUCCESS, c.status(), "Connect");
            return c.dw0() & 0xFFFF;
        }

        void enable() {
            byte[] cc = sqe(Opcodes.FABRICS);
            new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(cc), 0).fctype(Opcodes.FCTYPE_PROPERTY_SET)
                    .propertySize(4).propertyOffset(ControllerRegisters.CC).propertyValue(ControllerRegisters.CC_ENABLE_DEFAULT);
            keyed(cc, 0, 0, 0);
            assertEquals(Status.SUCCESS, execute(cc).status(), "CC.EN");
        }

        /** The queue pair is torn down, as the transport does on the DISCONNECTED event. */
        void close() {
            queue.closeNow("fuzz input done");
            queue.queuePairDestroyed();
            nic.run(group);
        }
    }

    static byte[] sqe(int opcode) {
        byte[] b = new byte[Command.LENGTH];
        new Command().<Command>wrap(new UnsafeBuffer(b), 0).opcode(opcode).psdt(Command.PSDT_SGL);
        return b;
    }

    static void keyed(byte[] sqe, long address, int length, long key) {
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(sqe), Command.DPTR).keyed(address, length, key, false);
    }

    @BeforeAll
    static void start() {
        core = new TargetCore(new TargetLimits(4, 128, 1 << 20));
        Subsystem fuzz = new Subsystem(NQN, Subsystem.Type.NVM, "SN-RFUZZ-1", "rdma fuzz", 8, true);
        fuzz.addNamespace(new Namespace(1, new RamBackend(4 << 20), 512, UUID.randomUUID()));
        // Sparse: reads of unwritten blocks go through the pool's registered buffers rather than namespace memory.
        fuzz.addNamespace(new Namespace(2, new RamBackend(4 << 20, true), 4096, UUID.randomUUID()));
        core.addSubsystem(fuzz);
        Subsystem other = new Subsystem(NEIGHBOUR_NQN, Subsystem.Type.NVM, "SN-RFUZZ-2", "neighbour", 8, false);
        other.allowedHosts().add(HOST);
        other.addNamespace(new Namespace(1, new RamBackend(1 << 20, true), 512, UUID.randomUUID()));
        core.addSubsystem(other);
        group = new RdmaPollGroup();
        int total = 0;
        for (int i = 0; i < SIZES.length; i++) {
            total += SIZES[i] * COUNTS[i];
        }
        pool = new RegisteredBufferPool(ByteBuffer.allocateDirect(total), SIZES, COUNTS);
        pool.lkey(9);
        InMemoryHost admin = new InMemoryHost(32, 0);
        int cntlid = admin.connect(0, 0xFFFF, NEIGHBOUR_NQN);
        admin.enable();
        neighbour = new InMemoryHost(64, 4096);
        neighbour.connect(1, cntlid, NEIGHBOUR_NQN);
        neighbourSourceKey = neighbour.nic.hostRegister(neighbourSource);
        neighbourDestinationKey = neighbour.nic.hostRegister(neighbourDestination);
        baselineQueues = core.liveQueues();
        baselineControllers = core.liveControllers();
    }

    @AfterAll
    static void stop() {
        assertEquals(baselineControllers, core.liveControllers(), "controllers left after " + executions + " inputs");
        assertEquals(0, core.internalErrors());
        core.stopBackendWork(5_000);
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void connectAndCapsules(byte[] input) {
        executions++;
        int pdLength = Math.min(input.length, RdmaCmRequest.LENGTH);
        byte[] privateData = java.util.Arrays.copyOf(input, pdLength);
        RdmaConnectParameters p = RdmaConnectParameters.parse(new UnsafeBuffer(privateData), pdLength,
                TargetLimits.ADMIN_QUEUE_SIZE, core.limits().maxQueueSize(), core.limits().maxIoQueues());
        if (!p.acceptable()) {
            assertTrue(p.rejectStatus() >= RdmaCmReject.STS_INVALID_LENGTH
                    && p.rejectStatus() <= RdmaCmReject.STS_INVALID_ORD, "reject status " + p.rejectStatus());
            return;
        }
        int limit = p.qid() == 0 ? TargetLimits.ADMIN_QUEUE_SIZE : core.limits().maxQueueSize();
        assertTrue(p.receiveDepth() >= 1 && p.receiveDepth() <= limit + 1, "receive depth " + p.receiveDepth());
        assertTrue(p.hostReceiveQueueSize() >= 1 && p.hostReceiveQueueSize() <= limit + 1);
        new UnsafeBuffer(hostBuffer).setMemory(0, HOST_BUFFER, (byte) 0); // what an input finds there is its own
        new ConnectData().<ConnectData>wrap(new UnsafeBuffer(hostBuffer), 0).cntlid(0xFFFF).subnqn(NQN).hostnqn(HOST);
        int options = input.length > pdLength ? input[pdLength] & 0xFF : 0;
        int stage = (options & 3) % 3; // bits 1:0 (3 is 0 again); bit 2 is the in-capsule data
        InMemoryHost admin = null;
        InMemoryHost host = new InMemoryHost(p.receiveDepth(), (options & 4) != 0 ? 4096 : 0);
        lastHost = host;
        try {
            if (stage == 1) {
                host.connect(0, 0xFFFF, NQN);
                host.enable();
            } else if (stage == 2) {
                admin = new InMemoryHost(32, 0);
                int cntlid = admin.connect(0, 0xFFFF, NQN);
                admin.enable();
                host.connect(1, cntlid, NQN);
            }
            UnsafeBuffer in = new UnsafeBuffer(input);
            for (int at = pdLength + 1; at + 2 <= input.length; ) {
                int header = in.getShort(at, java.nio.ByteOrder.LITTLE_ENDIAN) & 0xFFFF;
                int length = Math.min(header & ~HOST_MEMORY_RECORD, input.length - at - 2);
                byte[] record = java.util.Arrays.copyOfRange(input, at + 2, at + 2 + length);
                at += 2 + length;
                if ((header & HOST_MEMORY_RECORD) != 0) {
                    putInHostMemory(record);
                    continue;
                }
                pointIntoHostMemory(record, host);
                if (!host.send(record)) {
                    break;
                }
            }
        } finally {
            host.close();
            if (admin != null) {
                admin.close();
            }
        }
        assertEquals(0, core.internalErrors(), "an exception inside the target (see the log)");
        assertEquals(baselineQueues, core.liveQueues(), "a queue outlived its queue pair");
        assertEquals(baselineControllers, core.liveControllers(), "a controller outlived its admin queue");
        for (int i = 0; i < SIZES.length; i++) {
            assertEquals(COUNTS[i], pool.available(i), "registered " + SIZES[i] + "-byte buffers back in the pool");
        }
        assertEquals(0, group.bufferWaiters());
        neighbourStillWorks();
        if (executions % 100_000 == 0) {
            // For the long runs' logs: heap after a collection and direct memory stay flat unless something is kept
            // per input (each queue pair's receives are direct memory, freed when it is destroyed).
            System.gc();
            Runtime rt = Runtime.getRuntime();
            long direct = RdmaQueueTest.directPool().getMemoryUsed();
            System.out.printf("rdma fuzz: %,d inputs, heap %d MiB after GC, direct %d MiB, %d queues, %d controllers%n",
                    executions, (rt.totalMemory() - rt.freeMemory()) >> 20, direct >> 20, core.liveQueues(),
                    core.liveControllers());
        }
    }

    /** A host memory record: a 4-byte little-endian offset (modulo the buffer's size) and the bytes put there. */
    private static void putInHostMemory(byte[] record) {
        if (record.length < 4) {
            return;
        }
        int offset = (int) Long.remainderUnsigned(new UnsafeBuffer(record).getInt(0, java.nio.ByteOrder.LITTLE_ENDIAN)
                & 0xFFFF_FFFFL, HOST_BUFFER);
        int length = Math.min(record.length - 4, HOST_BUFFER - offset);
        new UnsafeBuffer(hostBuffer).putBytes(offset, record, 4, length);
    }

    /** A keyed SGL descriptor is made to address the host's registered buffer (see the class comment). */
    private static void pointIntoHostMemory(byte[] capsule, InMemoryHost host) {
        if (capsule.length < Command.LENGTH) {
            return;
        }
        UnsafeBuffer b = new UnsafeBuffer(capsule);
        SglDescriptor sgl = new SglDescriptor().wrap(b, Command.DPTR);
        if (sgl.type() != SglDescriptor.TYPE_KEYED_DATA_BLOCK) {
            return;
        }
        long offset = Long.remainderUnsigned(b.getLong(Command.DPTR), HOST_BUFFER);
        b.putLong(Command.DPTR, InMemoryNic.address(hostBuffer) + offset);
        if ((b.getByte(Command.DPTR + 11) & 0xFF) != 0xFF) {
            b.putInt(Command.DPTR + 11, (int) host.hostKey);
        }
    }

    /** The other host's controller is untouched: a write of fresh data reads back (host memory by RDMA both ways). */
    private static void neighbourStillWorks() {
        byte[] data = new byte[4096];
        random.nextBytes(data);
        long lba = (executions % 256) * 8;
        neighbourSource.clear().put(data).clear();
        byte[] w = sqe(Opcodes.IO_WRITE);
        new Command().<Command>wrap(new UnsafeBuffer(w), 0).nsid(1).slba(lba).blockCount(8);
        keyed(w, InMemoryNic.address(neighbourSource), 4096, neighbourSourceKey);
        assertEquals(Status.SUCCESS, neighbour.execute(w).status(), "the other host's write");
        new UnsafeBuffer(neighbourDestination).setMemory(0, 4096, (byte) 0);
        byte[] r = sqe(Opcodes.IO_READ);
        new Command().<Command>wrap(new UnsafeBuffer(r), 0).nsid(1).slba(lba).blockCount(8);
        keyed(r, InMemoryNic.address(neighbourDestination), 4096, neighbourDestinationKey);
        assertEquals(Status.SUCCESS, neighbour.execute(r).status(), "the other host's read");
        byte[] back = new byte[4096];
        neighbourDestination.clear().get(back);
        assertArrayEquals(data, back, "the other host's data");
        neighbour.nic.responses.clear(); // this check's own: the lists would grow with every input
        neighbour.nic.history.clear();
    }

    // ---- seeds ----

    /** The harness itself: the seeds' commands reach the target and do what they say, so inputs near them can too. */
    @Test
    void theSeedsDoWhatTheySay() throws java.io.IOException {
        Path dir = Path.of("src/test/resources/io/nvmeof/tgt/rdma/RdmaQueueFuzzTestInputs/connectAndCapsules");
        connectAndCapsules(Files.readAllBytes(dir.resolve("admin-connect-enable-identify")));
        assertEquals(java.util.List.of(Status.SUCCESS, Status.SUCCESS, Status.SUCCESS, Status.SUCCESS), statuses(),
                "Connect, CC.EN, Identify and Get Log Page");
        assertEquals(NQN, new io.nvmeof.protocol.identify.IdentifyController()
                .<io.nvmeof.protocol.identify.IdentifyController>wrap(new UnsafeBuffer(hostBuffer), 0x2000).subnqn(),
                "Identify Controller written into the host's buffer at the SGL's offset");

        connectAndCapsules(Files.readAllBytes(dir.resolve("io-read-write-flush-dsm-compare")));
        assertEquals(java.util.List.of(Status.SUCCESS, Status.SUCCESS, Status.SUCCESS, Status.SUCCESS, Status.SUCCESS,
                Status.SUCCESS, Status.SUCCESS), statuses(),
                "the harness's Connect, then Write, Read, Read, Flush, Dataset Management, Compare");
        byte[] back = new byte[8];
        new UnsafeBuffer(hostBuffer).getBytes(0x20000, back);
        assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, back, "the write's data (host memory record) read back");
        assertTrue(lastHost.queue.isClosed() && lastHost.nic.error,
                "a read into a key the host never registered ends the queue pair (remote access error)");

        connectAndCapsules(Files.readAllBytes(dir.resolve("io-in-capsule-write")));
        assertEquals(java.util.List.of(Status.SUCCESS, Status.SUCCESS, Status.SUCCESS), statuses(),
                "the harness's Connect, the write and the read");
        assertEquals(0x5A, hostBuffer.get(0x20000 + 4095), "the in-capsule write read back");
    }

    private static java.util.List<Integer> statuses() {
        java.util.List<Integer> statuses = new java.util.ArrayList<>();
        for (byte[] r : lastHost.nic.responses) {
            statuses.add(new Completion().<Completion>wrap(new UnsafeBuffer(r), 0).status());
        }
        return statuses;
    }

    /** Writes the seeds: {@code ./mvnw test -pl nvmeof-target -Dtest=RdmaQueueFuzzTest#writeSeeds -Dfuzz.writeSeeds=true}. */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void writeSeeds() throws java.io.IOException {
        Path dir = Path.of("src/test/resources/io/nvmeof/tgt/rdma/RdmaQueueFuzzTestInputs/connectAndCapsules");
        Files.createDirectories(dir);
        Files.write(dir.resolve("short-private-data"), new byte[] {0, 0, 1, 0});
        Files.write(dir.resolve("admin-hsqsize-too-large"), privateData(0, 64, 63));
        // Stage 0: the input connects (the Connect data the harness leaves at offset 0) and enables the controller.
        byte[] connect = sqe(Opcodes.FABRICS);
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(connect), 0).fctype(Opcodes.FCTYPE_CONNECT).qid(0)
                .sqsize(31);
        keyed(connect, 0, ConnectData.LENGTH, 0);
        byte[] enable = sqe(Opcodes.FABRICS);
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(enable), 0).fctype(Opcodes.FCTYPE_PROPERTY_SET)
                .propertySize(4).propertyOffset(ControllerRegisters.CC).propertyValue(ControllerRegisters.CC_ENABLE_DEFAULT);
        keyed(enable, 0, 0, 0);
        byte[] identify = sqe(Opcodes.ADMIN_IDENTIFY);
        new Command().<Command>wrap(new UnsafeBuffer(identify), 0).cdw10(Opcodes.CNS_CONTROLLER);
        keyed(identify, 0x2000, 4096, 0);
        byte[] smart = sqe(Opcodes.ADMIN_GET_LOG_PAGE);
        new Command().<Command>wrap(new UnsafeBuffer(smart), 0).logPage(Opcodes.LOG_SMART_HEALTH, 512, 0);
        keyed(smart, 0x4000, 512, 0);
        Files.write(dir.resolve("admin-connect-enable-identify"),
                input(privateData(0, 32, 31), 0, connect, enable, identify, smart));
        // Stage 1: an enabled admin queue.
        byte[] keepAlive = sqe(Opcodes.ADMIN_KEEP_ALIVE);
        byte[] aer = sqe(Opcodes.ADMIN_ASYNC_EVENT_REQUEST);
        new Command().<Command>wrap(new UnsafeBuffer(aer), 0).cid(7);
        byte[] abort = sqe(Opcodes.ADMIN_ABORT);
        new Command().<Command>wrap(new UnsafeBuffer(abort), 0).cdw10(7 << 16); // SQID 0, CID 7: the AER
        Files.write(dir.resolve("admin-enabled-keep-alive-and-aer"),
                input(privateData(0, 32, 31), 1, keepAlive, aer, abort));
        // Stage 2: an I/O queue, 4 KiB of in-capsule data.
        byte[] inCapsuleWrite = java.util.Arrays.copyOf(sqe(Opcodes.IO_WRITE), Command.LENGTH + 4096);
        new Command().<Command>wrap(new UnsafeBuffer(inCapsuleWrite), 0).nsid(2).slba(1).blockCount(1);
        new SglDescriptor().<SglDescriptor>wrap(new UnsafeBuffer(inCapsuleWrite), Command.DPTR).inCapsule(0, 4096);
        java.util.Arrays.fill(inCapsuleWrite, Command.LENGTH, inCapsuleWrite.length, (byte) 0x5A);
        Files.write(dir.resolve("io-in-capsule-write"),
                input(privateData(1, 32, 31), 2 | 4, inCapsuleWrite, io(Opcodes.IO_READ, 2, 1, 1, 0x20000, 4096)));
        // Stage 2: writes by RDMA READ, reads by RDMA WRITE, Flush, Dataset Management (its ranges in host memory),
        // Compare, and a read with a key the host never registered.
        byte[] range = new byte[4 + 16];
        UnsafeBuffer r = new UnsafeBuffer(range);
        r.putInt(0, 0x80000, java.nio.ByteOrder.LITTLE_ENDIAN);
        r.putInt(4 + 4, 8, java.nio.ByteOrder.LITTLE_ENDIAN); // NLB
        r.putLong(4 + 8, 16, java.nio.ByteOrder.LITTLE_ENDIAN); // SLBA
        byte[] dsm = sqe(Opcodes.IO_DATASET_MANAGEMENT);
        new Command().<Command>wrap(new UnsafeBuffer(dsm), 0).nsid(1).cdw10(0).cdw11(1 << 2); // one range, deallocate
        keyed(dsm, 0x80000, 16, 0);
        byte[] flush = sqe(Opcodes.IO_FLUSH);
        new Command().<Command>wrap(new UnsafeBuffer(flush), 0).nsid(1);
        keyed(flush, 0, 0, 0);
        byte[] badKey = io(Opcodes.IO_READ, 1, 0, 8, 0, 4096);
        new UnsafeBuffer(badKey).putByte(Command.DPTR + 11, (byte) 0xFF);
        Files.write(dir.resolve("io-read-write-flush-dsm-compare"), input(privateData(1, 64, 63), 2,
                hostMemory(0x10000, new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), io(Opcodes.IO_WRITE, 1, 0, 8, 0x10000, 4096),
                io(Opcodes.IO_READ, 1, 0, 8, 0x20000, 4096), io(Opcodes.IO_READ, 2, 0, 1, 0x40000, 4096), flush,
                range, dsm, io(Opcodes.IO_COMPARE, 1, 0, 8, 0x10000, 4096), badKey));
    }

    private static byte[] privateData(int qid, int hrqsize, int hsqsize) {
        byte[] pd = new byte[RdmaCmRequest.LENGTH];
        new RdmaCmRequest().<RdmaCmRequest>wrap(new UnsafeBuffer(pd), 0).recfmt(0).qid(qid).hrqsize(hrqsize)
                .hsqsize(hsqsize);
        return pd;
    }

    private static byte[] io(int opcode, int nsid, long slba, int blocks, long hostOffset, int length) {
        byte[] b = sqe(opcode);
        new Command().<Command>wrap(new UnsafeBuffer(b), 0).nsid(nsid).slba(slba).blockCount(blocks);
        keyed(b, hostOffset, length, 0);
        return b;
    }

    /** A host memory record's body (offset and bytes); {@link #input} marks it by its length. */
    private static byte[] hostMemory(int offset, byte[] bytes) {
        byte[] record = new byte[4 + bytes.length];
        new UnsafeBuffer(record).putInt(0, offset, java.nio.ByteOrder.LITTLE_ENDIAN);
        System.arraycopy(bytes, 0, record, 4, bytes.length);
        return record;
    }

    /** Private data, the options byte, then the records: capsules (64 bytes and more) and host memory records. */
    private static byte[] input(byte[] privateData, int options, byte[]... records) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        out.writeBytes(privateData);
        out.write(options);
        for (byte[] record : records) {
            int length = record.length | (record.length < Command.LENGTH ? HOST_MEMORY_RECORD : 0);
            out.write(length & 0xFF);
            out.write(length >> 8);
            out.writeBytes(record);
        }
        return out.toByteArray();
    }
}

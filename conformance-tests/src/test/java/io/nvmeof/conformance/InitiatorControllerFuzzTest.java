package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Coverage-guided fuzzing of what the initiator's {@link NvmeofController} makes of a controller's admin responses
 * (issue 15): Connect's CNTLID, the properties CAP, VS and CSTS, Identify Controller, the active namespace list,
 * Identify Namespace, Set Features Number of Queues, an Asynchronous Event and the rescan it starts, and the discovery
 * log. For each input a fake NVMe/TCP controller on loopback answers the whole connect sequence with well-formed PDUs
 * carrying well-formed defaults (a healthy NVM controller, or a discovery controller with two log entries) that the
 * input patches; the initiator connects with a 1 s command timeout and no reconnects, then (discovery) reads the
 * discovery log, then closes.
 *
 * <p>Input: byte 0 is {@link #F_DISCOVERY flags}; the rest is a list of patches, each
 * {@code [what][offset: u16 LE][len][bytes...]}. {@code what} bits 4:0 pick the response region (modulo
 * {@link #REGIONS}: the result and status of each kind of completion, the data of each kind of Identify and of the
 * discovery log); an offset with bit 15 set is an index into the region's {@link #FIELDS}. {@code what} bits 6:5 say
 * how: 0 XOR {@code len} bytes at {@code offset}, 1 overwrite them, 2 fill {@code (len + 1) * 16} bytes with the one
 * byte that follows, 3 XOR them with it (so one patch can fill a whole namespace list); bit 7 set applies the patch
 * only from the second time that region is served (a CSTS that becomes ready, a namespace list that changes at the
 * rescan, a discovery log that changes between its two reads). A completion region is 10 bytes: DW0 and DW1 (little
 * endian), then the status as {@link Status} has it (SCT << 8 | SC, DNR 0x4000). CAP.TO is kept at most
 * {@link #MAX_CAP_TO} so that waiting for CSTS.RDY fits an input.
 *
 * <p>Invariants, after every input: the connect, the discovery log read and the rescan either succeed or throw an
 * {@link NvmeofException} with a message whose causes are no bug (never a NullPointerException,
 * IndexOutOfBoundsException, IllegalArgumentException, ArithmeticException, OutOfMemoryError...); a connected
 * controller's values are what the controller sent, within the bounds it set: CNTLID as in Connect, queue depth in
 * [2, asked], at most CAP.MQES + 1 and MAXCMD, as sent in each I/O queue's Connect, 1 to the asked number of I/O
 * queues and no more than granted, the largest transfer what MDTS allows up to 32 MiB, every namespace one the
 * controller listed, with the size and block size (a power of two, 512 B to the largest transfer; the LBA format
 * index from FLBAS bits 3:0 and 6:5) its Identify data gave and a byte size that does not overflow; after a
 * successful event a new AER; the discovery log has as many entries as NUMREC, and a TCP entry becomes a
 * {@link TransportId} that connect takes, or an NvmeofException; the input ends within {@link #DEADLINE} (no hang);
 * after close no thread of the controller is left and every connection it opened was closed by it; no Netty buffer
 * was reported unreleased.
 *
 * <p>Seeds ({@link #writeSeeds}): a healthy NVM controller with one namespace, and with two and two I/O queues; a
 * namespace change event; a discovery controller with two entries, with none, and with a log that keeps changing;
 * odd but legal values (CAP.MQES 1, CAP.TO 0, MDTS 0, MAXCMD 0, IOCCSZ 4, one queue granted of two, LBA format 3 with
 * separate metadata, 2^40 blocks, CSTS.RDY at the second poll, 64 KiB blocks, LBA format 16); error statuses.
 */
class InitiatorControllerFuzzTest {
    static final String NQN = "nqn.2024-01.io.nvmeof:fuzz-controller";

    // Flags, input byte 0.
    /** Connect to the discovery NQN: the controller is a discovery controller and the discovery log is read. */
    static final int F_DISCOVERY = 1;
    /** Complete the first Asynchronous Event Request (a Namespace Attribute Changed notice unless patched). */
    static final int F_AER = 1 << 1;
    /** Two namespaces (NSID 1 and 2) in the default active namespace list, else one. */
    static final int F_TWO_NAMESPACES = 1 << 2;
    /** Ask for two I/O queues, else one. */
    static final int F_TWO_QUEUES = 1 << 3;
    /** Successful data is sent with the C2HData SUCCESS flag and no response capsule. */
    static final int F_DATA_SUCCESS = 1 << 4;
    /** The discovery log's GENCTR moves with every read (a log that keeps changing). */
    static final int F_GENCTR_MOVES = 1 << 5;
    /** Ask for a queue depth of 1024 (beyond the default CAP.MQES, so it is clamped), else 64. */
    static final int F_DEEP_QUEUES = 1 << 6;
    /** Keep Alive Timeout 200 ms, so Keep Alives run while the input lasts; else the default. */
    static final int F_SHORT_KATO = 1 << 7;

    // Completion regions: DW0, DW1, status.
    static final int C_CONNECT_ADMIN = 0;
    static final int C_CONNECT_IO = 1;
    static final int C_CAP = 2;
    static final int C_VS = 3;
    static final int C_CSTS = 4;
    static final int C_PROPERTY_SET = 5;
    static final int C_IDENTIFY_CONTROLLER = 6;
    static final int C_IDENTIFY_LIST = 7;
    static final int C_IDENTIFY_NAMESPACE = 8;
    static final int C_NUMBER_OF_QUEUES = 9;
    static final int C_SET_FEATURES = 10;
    static final int C_AER = 11;
    static final int C_GET_LOG_PAGE = 12;
    static final int C_KEEP_ALIVE = 13;
    // Data regions.
    static final int D_IDENTIFY_CONTROLLER = 14;
    static final int D_NAMESPACE_LIST = 15;
    static final int D_NAMESPACE_1 = 16;
    static final int D_NAMESPACE_2 = 17;
    /** Identify Namespace of any other NSID the list names. */
    static final int D_NAMESPACE_OTHER = 18;
    /** The discovery log: a header and room for four entries (the default has two); beyond it, zeroes. */
    static final int D_DISCOVERY_LOG = 19;
    static final int REGIONS = 20;
    static final int COMPLETION_LENGTH = 10;
    static final int DISCOVERY_LOG_LENGTH = DiscoveryLogHeader.LENGTH + 4 * DiscoveryLogEntry.LENGTH;
    /** The fake discovery log ends after 64 entries (zeroes past the four patched), whatever its NUMREC says. */
    static final long MAX_DISCOVERY_LOG = DiscoveryLogHeader.LENGTH + 64 * DiscoveryLogEntry.LENGTH;

    static final int MODE_XOR = 0;
    static final int MODE_SET = 1;
    static final int MODE_FILL = 2;
    static final int MODE_FILL_XOR = 3;
    static final int LATER = 0x80;

    /** Every input ends by then: the fake controller then drops its connections and reports a hang. */
    static final Duration DEADLINE = Duration.ofSeconds(10);
    /** The initiator's cap on one command's data (TcpHostTransport.TRANSFER_CAP). */
    static final long TRANSFER_CAP = 32L << 20;
    /** MAXH2CDATA of the ICResp this fake answers with ({@link InitiatorTcpFuzzTest#validIcResp()}). */
    static final long ICRESP_MAXH2CDATA = 32 * 1024;
    /**
     * CAP.TO is kept at most this (1 s): the initiator waits CAP.TO for CSTS.RDY as it must, and each input that
     * never sets it costs that long.
     */
    static final int MAX_CAP_TO = 1;
    /** Exceptions that are a bug of ours wherever they come from, also as the cause of a refusal. */
    private static final List<Class<?>> BUGS = List.of(NullPointerException.class, IndexOutOfBoundsException.class,
            IllegalArgumentException.class, IllegalStateException.class, ArithmeticException.class,
            NegativeArraySizeException.class, ClassCastException.class, ArrayStoreException.class,
            java.nio.BufferOverflowException.class, java.nio.BufferUnderflowException.class, Error.class);
    private static final String[] CONTROLLER_THREADS = {"nvmeof-initiator", "nvmeof-controller"};

    private static ServerSocket server;
    private static ExecutorService fakeController;
    private static volatile Script current;
    private static long executions;

    @BeforeAll
    static void start() throws IOException {
        server = new ServerSocket(0, 16, InetAddress.getByName("127.0.0.1"));
        fakeController = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "fuzz-fake-controller");
            t.setDaemon(true);
            return t;
        });
        fakeController.submit(InitiatorControllerFuzzTest::acceptLoop);
    }

    @AfterAll
    static void stop() throws IOException {
        server.close();
        fakeController.shutdownNow();
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void adminResponses(byte[] input) throws Exception {
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
        }
    }

    // ------------------------------------------------------------------------------------------ one input

    /** What the initiator made of one input, read before close. */
    record Outcome(NvmeofException failure, int cntlid, int queueDepth, int ioQueues, long maxTransfer,
                   List<long[]> namespaces, List<DiscoveryEntry> discovery, NvmeofException discoveryFailure,
                   List<String> commands) {
    }

    static Outcome run(byte[] input) throws Exception {
        executions++;
        Script sc = Script.parse(input);
        Set<Thread> before = controllerThreads();
        current = sc;
        NvmeofException failure = null;
        NvmeofException discoveryFailure = null;
        List<DiscoveryEntry> discovery = null;
        int cntlid = -1;
        int depth = -1;
        int ioQueues = -1;
        long maxTransfer = -1;
        List<long[]> namespaces = List.of();
        try {
            ConnectOptions.Builder o = ConnectOptions.builder().connectTimeout(Duration.ofSeconds(2))
                    .commandTimeout(Duration.ofSeconds(1)).ctrlLossTimeout(Duration.ZERO)
                    .ioQueues(sc.has(F_TWO_QUEUES) ? 2 : 1).queueDepth(sc.askedDepth());
            if (sc.has(F_SHORT_KATO)) {
                o.keepAliveTimeoutMs(200);
            }
            TransportId tid = TransportId.tcp("127.0.0.1", server.getLocalPort(),
                    sc.has(F_DISCOVERY) ? Nqn.DISCOVERY : NQN);
            NvmeofController c = null;
            try {
                c = NvmeofController.connect(tid, o.build());
            } catch (NvmeofException e) {
                failure = refusal("connect", e);
            }
            if (c != null) {
                try {
                    checkMaxTransfer(sc, c);
                    boolean discoveryType = c.info().controllerType() == IdentifyController.CNTRLTYPE_DISCOVERY;
                    if (!sc.has(F_DISCOVERY) && !discoveryType) {
                        if (sc.has(F_AER) && sc.aecEnabled) {
                            // The AER follows the Asynchronous Event Configuration that the controller took, and may
                            // reach the fake controller after connect returns.
                            sc.aerSeen.await(1, TimeUnit.SECONDS);
                        }
                        if (sc.aerFired && (le(sc.first(C_AER)).getShort(8) & 0x7FFF) == 0) {
                            // The event is handled on the controller's own thread: a rescan, then a new AER however
                            // that went, while the controller is connected (an error status ends the AERs, as in
                            // Linux).
                            boolean rearmed = sc.rearmed.await(3, TimeUnit.SECONDS);
                            assertTrue(rearmed || !c.isConnected(), "no new Asynchronous Event Request after the"
                                    + " event: " + sc.summary());
                            try {
                                c.rescanNamespaces(); // the same decoding, where an exception reaches us
                            } catch (NvmeofException e) {
                                refusal("rescan", e);
                            }
                        }
                        checkController(sc, c);
                    } else {
                        assertEquals(0, c.ioQueueCount(), "a discovery controller has no I/O queues");
                        assertEquals(List.of(), c.namespaces(), "a discovery controller has no namespaces");
                        try {
                            discovery = c.discoveryLog();
                            checkDiscoveryLog(sc, discovery);
                        } catch (NvmeofException e) {
                            discoveryFailure = refusal("discovery log", e);
                        }
                    }
                    cntlid = c.cntlid();
                    depth = c.queueDepth();
                    ioQueues = c.ioQueueCount();
                    maxTransfer = c.maxTransferBytes();
                    namespaces = c.namespaces().stream()
                            .map(n -> new long[] {n.nsid(), n.blockCount(), n.blockSize()}).toList();
                } finally {
                    c.close();
                }
            }
        } finally {
            sc.closed = true; // by now every connection must end: a connection still open is left behind
            current = null;
            sc.finish();
        }
        assertFalse(sc.hung, "the initiator was still busy " + DEADLINE.toSeconds() + " s into the input (a hang); it"
                + " sent: " + sc.summary());
        assertEquals(List.of(), sc.errors, "the fake controller saw the initiator break the protocol");
        assertEquals(List.of(), sc.lingering, "connections the initiator left open after close");
        awaitThreadsGone(before);
        assertEquals(List.of(), LeakTracker.LEAKS, "a Netty buffer was never released");
        return new Outcome(failure, cntlid, depth, ioQueues, maxTransfer, namespaces, discovery, discoveryFailure,
                List.copyOf(sc.commands));
    }

    /** A refusal must be an NvmeofException that says why, and no bug of ours may hide behind it. */
    private static NvmeofException refusal(String what, NvmeofException e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) {
            throw new AssertionError(what + " failed without a message", e);
        }
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            for (Class<?> bug : BUGS) {
                if (bug.isInstance(t)) {
                    throw new AssertionError(what + " failed with a bug as its cause", e);
                }
            }
        }
        return e;
    }

    /** A connected NVM controller: its values are what the fake controller sent, within the bounds it set. */
    private static void checkController(Script sc, NvmeofController c) {
        long cap = sc.result(C_CAP);
        assertEquals(sc.result(C_CONNECT_ADMIN) & 0xFFFF, c.cntlid(), "CNTLID from Connect");
        byte[] idc = sc.first(D_IDENTIFY_CONTROLLER);
        IdentifyController id = new IdentifyController().wrap(new UnsafeBuffer(idc), 0);

        long mqes = ControllerRegisters.capMqes(cap) + 1;
        int depth = c.queueDepth();
        assertTrue(depth >= 2 && depth <= sc.askedDepth() && depth <= mqes, "queue depth " + depth + ", asked "
                + sc.askedDepth() + ", CAP.MQES+1 " + mqes);
        assertTrue(id.maxcmd() == 0 || depth <= id.maxcmd(), "queue depth " + depth + " beyond MAXCMD " + id.maxcmd());
        for (int sqsize : sc.ioSqsizes) {
            assertEquals(depth - 1, sqsize, "an I/O queue's Connect SQSIZE");
        }

        int asked = sc.has(F_TWO_QUEUES) ? 2 : 1;
        int granted = (int) Math.min(Features.submissionQueues((int) sc.result(C_NUMBER_OF_QUEUES)),
                Features.completionQueues((int) sc.result(C_NUMBER_OF_QUEUES)));
        int queues = c.ioQueueCount();
        assertTrue(queues >= 1 && queues <= asked && queues <= granted, queues + " I/O queues, asked " + asked
                + ", granted " + granted);
        assertEquals(queues, sc.ioSqsizes.size(), "I/O queues connected");

        long maxTransfer = c.maxTransferBytes();

        Set<Long> seen = new HashSet<>();
        for (NamespaceHandle n : c.namespaces()) {
            long nsid = n.nsid();
            assertTrue(seen.add(nsid), "namespace " + nsid + " listed twice");
            assertTrue(sc.listed.contains(nsid), "namespace " + nsid + " was never in the active list " + sc.listed);
            assertTrue(nsid != 0 && nsid != 0xFFFF_FFFFL, "NSID " + nsid);
            assertTrue(n == c.namespace(nsid), "namespace(" + nsid + ")");
            int bs = n.blockSize();
            assertTrue(bs >= 512 && Integer.bitCount(bs) == 1 && bs <= maxTransfer, "namespace " + nsid
                    + " block size " + bs + " (largest transfer " + maxTransfer + ")");
            assertTrue(n.blockCount() > 0, "namespace " + nsid + " of " + n.blockCount() + " blocks");
            assertTrue(n.blockCount() <= Long.MAX_VALUE / bs, "namespace " + nsid + ": " + n.blockCount()
                    + " blocks of " + bs + " bytes overflow a long");
            assertTrue(n.sizeBytes() > 0 && n.sizeBytes() / bs == n.blockCount(), "namespace " + nsid + " size");
            assertTrue(n.maxBlocksPerIo() >= 1, "namespace " + nsid + ": no block fits one transfer");
            boolean matches = false;
            for (byte[] d : sc.namespaceData.getOrDefault(nsid, List.of())) {
                IdentifyNamespace ns = new IdentifyNamespace().wrap(new UnsafeBuffer(d), 0);
                int format = formatIndex(ns);
                matches |= ns.nsze() == n.blockCount() && ns.lbafDataSizeShift(format) < 31
                        && 1 << ns.lbafDataSizeShift(format) == bs;
            }
            assertTrue(matches, "namespace " + nsid + " (" + n.blockCount() + " x " + bs + ") is not what its"
                    + " Identify Namespace data said");
        }
    }

    /**
     * The largest transfer is what MDTS allows (in pages of CAP.MPSMIN), capped at the initiator's own 32 MiB; an
     * MDTS beyond any number is no limit (as Linux takes it); an MDTS of 0 over NVMe/TCP is the controller's
     * MAXH2CDATA (32 KiB in this fake's ICResp), which Linux's nvmet-tcp holds hosts to.
     */
    private static void checkMaxTransfer(Script sc, NvmeofController c) {
        int pageShift = 12 + (int) ((sc.result(C_CAP) >>> 48) & 0xF);
        int mdts = sc.first(D_IDENTIFY_CONTROLLER)[IdentifyController.MDTS] & 0xFF;
        long expected = mdts == 0 ? Math.min(TRANSFER_CAP, ICRESP_MAXH2CDATA)
                : pageShift + mdts >= 63 ? TRANSFER_CAP : Math.min(TRANSFER_CAP, 1L << (pageShift + mdts));
        assertEquals(expected, c.maxTransferBytes(), "largest transfer for MDTS " + mdts + " (pages of 2^" + pageShift
                + ")");
    }

    /** The LBA format in use: FLBAS bits 3:0, bits 6:5 above them (NVMe 2.0: 64 formats), as Linux reads it. */
    static int formatIndex(IdentifyNamespace ns) {
        int flbas = ns.flbas();
        return (flbas & 0xF) | (flbas & 0x60) >>> 1;
    }

    /** As many entries as the log's NUMREC, each decoded; a TCP entry's address usable or refused with a message. */
    private static void checkDiscoveryLog(Script sc, List<DiscoveryEntry> entries) {
        byte[] last = sc.lastDiscoveryHeader;
        assertNotNull(last, "the log was read");
        long numrec = ByteBuffer.wrap(last).order(ByteOrder.LITTLE_ENDIAN).getLong(DiscoveryLogHeader.NUMREC);
        assertEquals(numrec, entries.size(), "entries against NUMREC");
        for (DiscoveryEntry e : entries) {
            assertNotNull(e.traddr());
            assertNotNull(e.trsvcid());
            assertNotNull(e.subnqn());
            assertTrue(e.traddr().length() <= 256 && e.trsvcid().length() <= 32 && e.subnqn().length() <= 256,
                    "field lengths of " + e);
            if (e.trtype() == DiscoveryLogEntry.TRTYPE_TCP) {
                try {
                    TransportId t = e.toTransportId();
                    // What connect takes without an IllegalArgumentException: a port, an address, a valid NQN.
                    assertTrue(t.trsvcid() >= 1 && t.trsvcid() <= 65535, "port of " + t);
                    assertFalse(t.traddr().isBlank(), "address of " + t);
                    assertNull(Nqn.validate(t.subnqn()), "NQN of " + t);
                } catch (NvmeofException refused) {
                    refusal("an entry's transport id", refused);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------ threads

    private static Set<Thread> controllerThreads() {
        // The root thread group lists every live thread without the stack traces getAllStackTraces takes.
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] all = new Thread[root.activeCount() + 64];
        int n = root.enumerate(all, true);
        Set<Thread> out = new HashSet<>();
        for (Thread t : Arrays.copyOf(all, n)) {
            for (String prefix : CONTROLLER_THREADS) {
                if (t.isAlive() && t.getName().startsWith(prefix)) {
                    out.add(t);
                }
            }
        }
        return out;
    }

    /** The controller's event loop and housekeeping threads end soon after close; none may stay. */
    private static void awaitThreadsGone(Set<Thread> before) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        Set<Thread> now = controllerThreads();
        now.removeAll(before);
        for (Thread t : now) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
        }
        List<String> left = now.stream().filter(Thread::isAlive).map(Thread::getName).toList();
        assertEquals(List.of(), left, "threads left behind after close");
    }

    // ------------------------------------------------------------------------------------------ fake controller

    private static void acceptLoop() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                return;
            }
            Script sc = current;
            if (sc == null) {
                close(s); // between inputs: nothing of ours should connect
                continue;
            }
            sc.connections.add(fakeController.submit(() -> sc.serve(s)));
        }
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // gone already
        }
    }

    /**
     * Where the fields are, for patches whose offset has bit 15 set (then bits 14:0 pick one of these): a random
     * offset finds a one-byte field of a 4 KiB page once in 4096 tries, an index once in a few dozen.
     */
    static final int[][] FIELDS = new int[REGIONS][];

    static {
        int[] completion = {0, 2, 4, 8, 9};
        for (int r = 0; r < D_IDENTIFY_CONTROLLER; r++) {
            FIELDS[r] = completion;
        }
        FIELDS[D_IDENTIFY_CONTROLLER] = new int[] {IdentifyController.VID, IdentifyController.SN, IdentifyController.MN,
                IdentifyController.FR, IdentifyController.MDTS, IdentifyController.CNTLID, IdentifyController.VER,
                IdentifyController.OAES, IdentifyController.CTRATT, IdentifyController.CNTRLTYPE,
                IdentifyController.OACS,
                IdentifyController.KAS, IdentifyController.SQES, IdentifyController.CQES, IdentifyController.MAXCMD,
                IdentifyController.NN, IdentifyController.ONCS, IdentifyController.SGLS, IdentifyController.SUBNQN,
                IdentifyController.IOCCSZ, IdentifyController.IORCSZ, IdentifyController.ICDOFF,
                IdentifyController.FCATT,
                IdentifyController.MSDBD};
        FIELDS[D_NAMESPACE_LIST] = new int[] {0, 4, 8, 12, 4088, 4092};
        int[] lbafs = {0, 1, 2, 3, 15, 16, 17, 32, 48, 63};
        int[] ns = new int[6 + 2 * lbafs.length];
        int[] fixed = {IdentifyNamespace.NSZE, IdentifyNamespace.NCAP, IdentifyNamespace.NUSE, IdentifyNamespace.NSFEAT,
                IdentifyNamespace.NLBAF, IdentifyNamespace.FLBAS};
        System.arraycopy(fixed, 0, ns, 0, fixed.length);
        for (int i = 0; i < lbafs.length; i++) {
            ns[6 + 2 * i] = IdentifyNamespace.LBAF0 + 4 * lbafs[i]; // metadata size
            ns[7 + 2 * i] = IdentifyNamespace.LBAF0 + 4 * lbafs[i] + 2; // LBA data size
        }
        FIELDS[D_NAMESPACE_1] = ns;
        FIELDS[D_NAMESPACE_2] = ns;
        FIELDS[D_NAMESPACE_OTHER] = ns;
        int[] entry = {DiscoveryLogEntry.TRTYPE, DiscoveryLogEntry.ADRFAM, DiscoveryLogEntry.SUBTYPE,
                DiscoveryLogEntry.TREQ, DiscoveryLogEntry.PORTID, DiscoveryLogEntry.CNTLID, DiscoveryLogEntry.ASQSZ,
                DiscoveryLogEntry.EFLAGS,
                DiscoveryLogEntry.TRSVCID, DiscoveryLogEntry.SUBNQN, DiscoveryLogEntry.TRADDR, DiscoveryLogEntry.TSAS};
        int[] log = new int[3 + 4 * entry.length];
        log[0] = DiscoveryLogHeader.GENCTR;
        log[1] = DiscoveryLogHeader.NUMREC;
        log[2] = DiscoveryLogHeader.RECFMT;
        for (int e = 0; e < 4; e++) {
            for (int f = 0; f < entry.length; f++) {
                log[3 + e * entry.length + f] = DiscoveryLogHeader.entryOffset(e) + entry[f];
            }
        }
        FIELDS[D_DISCOVERY_LOG] = log;
    }

    /** One patch of a response region. */
    record Patch(int region, int mode, boolean later, int offset, byte[] bytes, int fillLength) {
        void apply(byte[] b) {
            int[] fields = FIELDS[region];
            int at = (offset & 0x8000) != 0 ? fields[(offset & 0x7FFF) % fields.length] % b.length : offset % b.length;
            if (mode == MODE_XOR || mode == MODE_SET) {
                for (int k = 0; k < bytes.length && at + k < b.length; k++) {
                    b[at + k] = mode == MODE_XOR ? (byte) (b[at + k] ^ bytes[k]) : bytes[k];
                }
            } else {
                for (int k = 0; k < fillLength && at + k < b.length; k++) {
                    b[at + k] = mode == MODE_FILL_XOR ? (byte) (b[at + k] ^ bytes[0]) : bytes[0];
                }
            }
        }
    }

    /** One input's controller: its responses, and what it saw of the initiator. */
    static final class Script {
        final int flags;
        final List<Patch> patches;
        final long deadline = System.nanoTime() + DEADLINE.toNanos();
        private final int[] serves = new int[REGIONS];
        private final Map<Integer, byte[]> firstServed = new ConcurrentHashMap<>();
        final Set<Long> listed = ConcurrentHashMap.newKeySet();
        final Map<Long, List<byte[]>> namespaceData = new ConcurrentHashMap<>();
        final List<Integer> ioSqsizes = Collections.synchronizedList(new ArrayList<>());
        final List<String> commands = Collections.synchronizedList(new ArrayList<>());
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        final List<String> lingering = Collections.synchronizedList(new ArrayList<>());
        final List<Future<?>> connections = Collections.synchronizedList(new ArrayList<>());
        final CountDownLatch aerSeen = new CountDownLatch(1);
        final CountDownLatch rearmed = new CountDownLatch(1);
        final AtomicInteger aers = new AtomicInteger();
        final AtomicInteger discoveryReads = new AtomicInteger();
        volatile long cc;
        volatile boolean aerFired;
        volatile boolean aecEnabled;
        volatile boolean hung;
        volatile boolean closed;
        volatile byte[] lastDiscoveryHeader;

        Script(int flags, List<Patch> patches) {
            this.flags = flags;
            this.patches = patches;
        }

        static Script parse(byte[] in) {
            int flags = in.length > 0 ? in[0] & 0xFF : 0;
            List<Patch> patches = new ArrayList<>();
            int i = 1;
            while (i + 4 <= in.length) {
                int what = in[i] & 0xFF;
                int offset = (in[i + 1] & 0xFF) | (in[i + 2] & 0xFF) << 8;
                int len = in[i + 3] & 0xFF;
                i += 4;
                int mode = what >>> 5 & 0x3;
                byte[] bytes;
                if (mode >= MODE_FILL) {
                    bytes = new byte[] {i < in.length ? in[i] : 0};
                    i++;
                } else {
                    bytes = Arrays.copyOfRange(in, i, Math.min(in.length, i + len));
                    i += bytes.length;
                }
                patches.add(new Patch((what & 0x1F) % REGIONS, mode, (what & LATER) != 0, offset, bytes,
                        (len + 1) * 16));
            }
            return new Script(flags, List.copyOf(patches));
        }

        boolean has(int flag) {
            return (flags & flag) != 0;
        }

        int askedDepth() {
            return has(F_DEEP_QUEUES) ? 1024 : 64;
        }

        /** The default bytes of a region, patched as this input says for the how-manieth time it is served. */
        synchronized byte[] serve(int region, byte[] defaults) {
            int n = ++serves[region];
            for (Patch p : patches) {
                if (p.region() == region && (!p.later() || n >= 2)) {
                    p.apply(defaults);
                }
            }
            if (region == C_CAP) {
                // CAP.TO within MAX_CAP_TO: an input that never sets CSTS.RDY must still end in time.
                long cap = le(defaults).getLong(0);
                if (ControllerRegisters.capTimeout500ms(cap) > MAX_CAP_TO) {
                    le(defaults).putLong(0, cap & ~(0xFFL << 24) | (long) MAX_CAP_TO << 24);
                }
            }
            firstServed.putIfAbsent(region, defaults.clone());
            return defaults;
        }

        /** What the region was the first time it was served (zeroes if never). */
        byte[] first(int region) {
            byte[] b = firstServed.get(region);
            return b != null ? b : new byte[region < D_IDENTIFY_CONTROLLER ? COMPLETION_LENGTH : 4096];
        }

        /** DW0 | DW1 << 32 of a completion region as first served. */
        long result(int region) {
            return le(first(region)).getLong(0);
        }

        String summary() {
            synchronized (commands) {
                int n = commands.size();
                return n + " commands, the last: " + commands.subList(Math.max(0, n - 8), n);
            }
        }

        /** After close: every connection's task ends, each having seen the initiator close it. */
        void finish() throws Exception {
            List<Future<?>> all;
            synchronized (connections) {
                all = List.copyOf(connections);
            }
            for (Future<?> f : all) {
                try {
                    f.get(DEADLINE.toMillis() + 2000, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    f.cancel(true);
                    lingering.add("a connection still served after the deadline");
                }
            }
        }

        // ---------------------------------------------------------------------------- serving one connection

        void serve(Socket s) {
            int qid = -1;
            try (s) {
                s.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                byte[] icreq = readPdu(s, in);
                if (icreq == null) {
                    return;
                }
                if (icreq[0] != PduHeader.TYPE_IC_REQ || icreq.length != ICReqPdu.LENGTH) {
                    errors.add("expected ICReq, got type " + icreq[0] + " of " + icreq.length + " bytes");
                    return;
                }
                out.write(InitiatorTcpFuzzTest.validIcResp());
                out.flush();
                while (true) {
                    byte[] p = readPdu(s, in);
                    if (p == null) {
                        return; // the initiator closed: as it must at the end
                    }
                    if (p[0] == PduHeader.TYPE_H2C_TERM_REQ) {
                        continue; // the initiator gave up on the connection; it closes it next
                    }
                    if (p[0] != PduHeader.TYPE_CAPSULE_CMD || p.length < 8 + 64) {
                        errors.add("unexpected PDU type " + p[0] + " of " + p.length + " bytes on qid " + qid);
                        return;
                    }
                    qid = command(out, p, qid);
                }
            } catch (SocketTimeoutException e) {
                // DEADLINE passed with the initiator still connected: still busy, or done and the socket forgotten
                if (closed) {
                    lingering.add("the connection of queue " + qid + " was still open " + DEADLINE.toSeconds()
                            + " s into the input, after close");
                } else {
                    hung = true;
                }
            } catch (IOException e) {
                // the initiator closed or reset the connection while we wrote: as good as EOF
            }
        }

        /** Reads one PDU; null at EOF. The socket times out at the deadline. */
        private byte[] readPdu(Socket s, DataInputStream in) throws IOException {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                throw new SocketTimeoutException("deadline");
            }
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
            byte[] ch = new byte[8];
            try {
                in.readFully(ch);
            } catch (EOFException e) {
                return null;
            }
            int plen = le(ch).getInt(4);
            if (plen < 8 || plen > 1 << 16) {
                errors.add("PDU type " + ch[0] + " with PLEN " + plen);
                throw new EOFException("bad PLEN");
            }
            byte[] p = Arrays.copyOf(ch, plen);
            in.readFully(p, 8, plen - 8);
            return p;
        }

        /** Answers one command capsule; returns the connection's qid (set by Connect). */
        private int command(OutputStream out, byte[] p, int qid) throws IOException {
            ByteBuffer b = le(p);
            int sqe = 8;
            int opcode = p[sqe] & 0xFF;
            int cid = b.getShort(sqe + 2) & 0xFFFF;
            long nsid = b.getInt(sqe + 4) & 0xFFFF_FFFFL;
            int length = b.getInt(sqe + 24 + 8);
            int cdw10 = b.getInt(sqe + 40);
            int cdw11 = b.getInt(sqe + 44);
            if (opcode == Opcodes.FABRICS) {
                int fctype = p[sqe + 4] & 0xFF;
                commands.add("fabrics " + fctype + " qid " + qid);
                switch (fctype) {
                    case Opcodes.FCTYPE_CONNECT: {
                        int connectQid = b.getShort(sqe + 42) & 0xFFFF;
                        if (connectQid != 0) {
                            ioSqsizes.add(b.getShort(sqe + 44) & 0xFFFF);
                        }
                        respond(out, cid, connectQid, completion(connectQid == 0 ? C_CONNECT_ADMIN : C_CONNECT_IO,
                                connectQid == 0 ? 1 : 0));
                        return connectQid;
                    }
                    case Opcodes.FCTYPE_PROPERTY_GET: {
                        long ofst = b.getInt(sqe + 44) & 0xFFFF_FFFFL;
                        if (ofst == ControllerRegisters.CAP) {
                            respond(out, cid, qid, completion(C_CAP, ControllerRegisters.cap(128, 2)));
                        } else if (ofst == ControllerRegisters.VS) {
                            respond(out, cid, qid, completion(C_VS, ControllerRegisters.VERSION_1_3));
                        } else if (ofst == ControllerRegisters.CSTS) {
                            long now = cc;
                            respond(out, cid, qid, completion(C_CSTS, (now & 1) | (ControllerRegisters.ccShn(now) != 0
                                    ? ControllerRegisters.SHST_COMPLETE << 2 : 0)));
                        } else if (ofst == ControllerRegisters.CC) {
                            respond(out, cid, qid, status(0, cc));
                        } else {
                            respond(out, cid, qid, status(Status.INVALID_FIELD | Status.DNR, 0));
                        }
                        return qid;
                    }
                    case Opcodes.FCTYPE_PROPERTY_SET:
                        if ((b.getInt(sqe + 44) & 0xFFFF_FFFFL) == ControllerRegisters.CC) {
                            cc = b.getLong(sqe + 48) & 0xFFFF_FFFFL;
                        }
                        respond(out, cid, qid, completion(C_PROPERTY_SET, 0));
                        return qid;
                    default:
                        respond(out, cid, qid, status(Status.INVALID_OPCODE | Status.DNR, 0));
                        return qid;
                }
            }
            commands.add("opcode " + opcode + " nsid " + nsid + " cdw10 0x" + Integer.toHexString(cdw10) + " qid "
                    + qid);
            if (qid != 0) {
                errors.add("opcode " + opcode + " on I/O queue " + qid + ": the harness sends no I/O");
                respond(out, cid, qid, status(Status.INVALID_OPCODE | Status.DNR, 0));
                return qid;
            }
            switch (opcode) {
                case Opcodes.ADMIN_IDENTIFY: {
                    int cns = cdw10 & 0xFF;
                    if (length != IdentifyController.LENGTH) {
                        errors.add("Identify of " + length + " bytes");
                    }
                    if (cns == Opcodes.CNS_CONTROLLER) {
                        data(out, cid, completion(C_IDENTIFY_CONTROLLER, 0), serve(D_IDENTIFY_CONTROLLER,
                                identifyController(has(F_DISCOVERY))), length);
                    } else if (cns == Opcodes.CNS_ACTIVE_NAMESPACE_LIST) {
                        byte[] list = serve(D_NAMESPACE_LIST, namespaceList(has(F_TWO_NAMESPACES)));
                        ByteBuffer l = le(list);
                        for (int i = 0; i < 1024 && l.getInt(i * 4) != 0; i++) {
                            listed.add(l.getInt(i * 4) & 0xFFFF_FFFFL);
                        }
                        data(out, cid, completion(C_IDENTIFY_LIST, 0), list, length);
                    } else if (cns == Opcodes.CNS_NAMESPACE) {
                        int region = nsid == 1 ? D_NAMESPACE_1 : nsid == 2 ? D_NAMESPACE_2 : D_NAMESPACE_OTHER;
                        byte[] ns = serve(region, identifyNamespace(region));
                        List<byte[]> seen = namespaceData.computeIfAbsent(nsid,
                                k -> Collections.synchronizedList(new ArrayList<>()));
                        if (seen.size() < 4) {
                            seen.add(ns.clone());
                        }
                        data(out, cid, completion(C_IDENTIFY_NAMESPACE, 0), ns, length);
                    } else {
                        respond(out, cid, qid, status(Status.INVALID_FIELD | Status.DNR, 0));
                    }
                    return qid;
                }
                case Opcodes.ADMIN_SET_FEATURES:
                    if ((cdw10 & 0xFF) == Opcodes.FEAT_NUMBER_OF_QUEUES) {
                        // Grants what was asked, up to 8 of each, as 0-based counts.
                        int sq = Math.min(8, Features.submissionQueues(cdw11));
                        int cq = Math.min(8, Features.completionQueues(cdw11));
                        respond(out, cid, qid, completion(C_NUMBER_OF_QUEUES,
                                Features.numberOfQueues(sq, cq) & 0xFFFF_FFFFL));
                    } else {
                        byte[] completion = completion(C_SET_FEATURES, 0);
                        aecEnabled |= (cdw10 & 0xFF) == Opcodes.FEAT_ASYNC_EVENT_CONFIG
                                && (le(completion).getShort(8) & 0x7FFF) == 0;
                        respond(out, cid, qid, completion);
                    }
                    return qid;
                case Opcodes.ADMIN_ASYNC_EVENT_REQUEST:
                    if (aers.incrementAndGet() == 1 && has(F_AER) && !has(F_DISCOVERY)) {
                        // Served before the harness is told: it reads the completion's status to know what follows.
                        byte[] completion = completion(C_AER, Features.asyncEvent(Features.AER_TYPE_NOTICE,
                                Features.AER_INFO_NS_ATTRIBUTE_CHANGED, Opcodes.LOG_CHANGED_NAMESPACE_LIST));
                        aerFired = true;
                        aerSeen.countDown();
                        respond(out, cid, qid, completion);
                    } else {
                        aerSeen.countDown();
                        rearmed.countDown(); // held, as a controller holds it until an event
                    }
                    return qid;
                case Opcodes.ADMIN_GET_LOG_PAGE: {
                    int lid = cdw10 & 0xFF;
                    long offset = b.getLong(sqe + 48);
                    long numd = (cdw10 >>> 16 & 0xFFFF) | (long) (cdw11 & 0xFFFF) << 16;
                    if ((numd + 1) * 4 != length) {
                        errors.add("Get Log Page NUMD " + numd + " for " + length + " bytes");
                    }
                    byte[] page;
                    if (lid == Opcodes.LOG_DISCOVERY && offset + length > MAX_DISCOVERY_LOG) {
                        // Beyond the end of the log, as the spec has it answered. Without this bound every input
                        // whose NUMREC is near the initiator's limit would move 16 MiB, ten times if GENCTR moves.
                        respond(out, cid, qid, status(Status.INVALID_FIELD | Status.DNR, 0));
                        return qid;
                    }
                    if (lid == Opcodes.LOG_DISCOVERY) {
                        long moved = has(F_GENCTR_MOVES) ? discoveryReads.getAndIncrement() : 0;
                        byte[] log = serve(D_DISCOVERY_LOG, discoveryLog(moved));
                        if (offset == 0) {
                            lastDiscoveryHeader = Arrays.copyOf(log, DiscoveryLogHeader.LENGTH);
                        }
                        page = slice(log, offset, length);
                    } else {
                        page = new byte[Math.max(0, length)];
                        if (lid == Opcodes.LOG_CHANGED_NAMESPACE_LIST && page.length >= 4) {
                            le(page).putInt(0, 1);
                        }
                    }
                    data(out, cid, completion(C_GET_LOG_PAGE, 0), page, length);
                    return qid;
                }
                case Opcodes.ADMIN_KEEP_ALIVE:
                    respond(out, cid, qid, completion(C_KEEP_ALIVE, 0));
                    return qid;
                default:
                    respond(out, cid, qid, status(Status.INVALID_OPCODE | Status.DNR, 0));
                    return qid;
            }
        }

        /** A completion region served: its default result, patched. */
        private byte[] completion(int region, long result) {
            return serve(region, status(0, result));
        }

        /** Sends the data and its completion: C2HData PDUs of at most 32 KiB, then the response (or SUCCESS). */
        private void data(OutputStream out, int cid, byte[] completion, byte[] data, int length) throws IOException {
            int status = le(completion).getShort(8) & 0x7FFF;
            if (status != 0 || length <= 0) {
                respond(out, cid, 0, completion);
                return;
            }
            boolean success = has(F_DATA_SUCCESS) && le(completion).getLong(0) == 0;
            ByteArrayOutputStream pdus = new ByteArrayOutputStream();
            for (int done = 0; done < length; ) {
                int n = Math.min(32 * 1024, length - done);
                byte[] chunk = slice(data, done, n);
                boolean last = done + n == length;
                int pduFlags = last ? PduHeader.FLAG_DATA_LAST | (success ? PduHeader.FLAG_DATA_SUCCESS : 0) : 0;
                pdus.write(InitiatorTcpFuzzTest.c2hData(cid, done, chunk, pduFlags));
                done += n;
            }
            out.write(pdus.toByteArray());
            if (!success) {
                respond(out, cid, 0, completion);
            } else {
                out.flush();
            }
        }

        private static void respond(OutputStream out, int cid, int qid, byte[] completion) throws IOException {
            byte[] r = new byte[CapsuleResponsePdu.HEADER_LENGTH];
            UnsafeBuffer u = new UnsafeBuffer(r);
            new CapsuleResponsePdu().<CapsuleResponsePdu>wrap(u, 0)
                    .header(PduHeader.TYPE_CAPSULE_RESP, 0, r.length, 0, r.length);
            new Completion().<Completion>wrap(u, CapsuleResponsePdu.CQE).result64(le(completion).getLong(0))
                    .sqid(Math.max(qid, 0)).cid(cid).status(le(completion).getShort(8) & 0x7FFF);
            out.write(r);
            out.flush();
        }
    }

    /** A completion region's bytes: result, then status. */
    static byte[] status(int status, long result) {
        byte[] b = new byte[COMPLETION_LENGTH];
        le(b).putLong(0, result).putShort(8, (short) status);
        return b;
    }

    // ------------------------------------------------------------------------------------------ defaults

    /** A Linux-like fabrics controller: MDTS 5 (128 KiB), MAXCMD 128, 8 KiB in-capsule data, keep alive. */
    static byte[] identifyController(boolean discovery) {
        byte[] d = new byte[IdentifyController.LENGTH];
        new IdentifyController().<IdentifyController>wrap(new UnsafeBuffer(d), 0).vid(0x1b36).ssvid(0x1af4)
                .serialNumber("FUZZ0001").modelNumber("Fuzzed NVMe").firmwareRevision("1.0").mdts(5).cntlid(1)
                .version(ControllerRegisters.VERSION_1_3).maxcmd(128).nn(discovery ? 0 : 2)
                .ioccsz((64 + 8192) / 16).iorcsz(1).icdoff(0).kas(1).oncs(IdentifyController.ONCS_DSM)
                .sgls(IdentifyController.SGLS_SUPPORTED | IdentifyController.SGLS_OFFSET)
                .controllerType(discovery ? IdentifyController.CNTRLTYPE_DISCOVERY : IdentifyController.CNTRLTYPE_IO)
                .subnqn(discovery ? Nqn.DISCOVERY : NQN);
        return d;
    }

    static byte[] namespaceList(boolean two) {
        byte[] d = new byte[4096];
        le(d).putInt(0, 1).putInt(4, two ? 2 : 0);
        return d;
    }

    /** NSID 1: 2048 blocks of 512 B; NSID 2: 2^20 blocks of 4 KiB (format 1 of 2); others: 4 KiB with 8 B metadata. */
    static byte[] identifyNamespace(int region) {
        byte[] d = new byte[IdentifyNamespace.LENGTH];
        IdentifyNamespace ns = new IdentifyNamespace().wrap(new UnsafeBuffer(d), 0);
        if (region == D_NAMESPACE_1) {
            ns.nsze(2048).ncap(2048).nuse(2048).nlbaf(0).flbas(0).lbaf(0, 0, 9, 0);
        } else if (region == D_NAMESPACE_2) {
            ns.nsze(1 << 20).ncap(1 << 20).nuse(0).nlbaf(1).flbas(1).lbaf(0, 0, 9, 2).lbaf(1, 0, 12, 0);
        } else {
            ns.nsze(4096).ncap(4096).nuse(4096).nlbaf(0).flbas(0).lbaf(0, 8, 12, 0);
        }
        return d;
    }

    /** Two entries: this subsystem over TCP/IPv4 and the current discovery subsystem over TCP/IPv6. */
    static byte[] discoveryLog(long genctr) {
        byte[] log = new byte[DISCOVERY_LOG_LENGTH];
        UnsafeBuffer u = new UnsafeBuffer(log);
        new DiscoveryLogHeader().<DiscoveryLogHeader>wrap(u, 0).genctr(5 + genctr).numrec(2).recfmt(0);
        new DiscoveryLogEntry().<DiscoveryLogEntry>wrap(u, DiscoveryLogHeader.entryOffset(0))
                .trtype(DiscoveryLogEntry.TRTYPE_TCP).adrfam(DiscoveryLogEntry.ADRFAM_IPV4)
                .subtype(DiscoveryLogEntry.SUBTYPE_NVM).treq(DiscoveryLogEntry.TREQ_NOT_REQUIRED).portid(1)
                .cntlid(DiscoveryLogEntry.CNTLID_DYNAMIC).asqsz(32).trsvcid("4420").traddr("127.0.0.1").subnqn(NQN);
        new DiscoveryLogEntry().<DiscoveryLogEntry>wrap(u, DiscoveryLogHeader.entryOffset(1))
                .trtype(DiscoveryLogEntry.TRTYPE_TCP).adrfam(DiscoveryLogEntry.ADRFAM_IPV6)
                .subtype(DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY).treq(DiscoveryLogEntry.TREQ_NOT_REQUIRED)
                .portid(2).cntlid(DiscoveryLogEntry.CNTLID_DYNAMIC).asqsz(32).trsvcid("8009").traddr("::1")
                .subnqn(Nqn.DISCOVERY);
        return log;
    }

    /** {@code length} bytes of {@code b} from {@code offset}, zeroes past its end. */
    static byte[] slice(byte[] b, long offset, int length) {
        byte[] out = new byte[Math.max(0, length)];
        if (offset >= 0 && offset < b.length) {
            System.arraycopy(b, (int) offset, out, 0, (int) Math.min(out.length, b.length - offset));
        }
        return out;
    }

    static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    // ------------------------------------------------------------------------------------------ inputs

    static byte[] input(int flags, byte[]... patches) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(flags);
        for (byte[] p : patches) {
            out.write(p);
        }
        return out.toByteArray();
    }

    /** Overwrites {@code bytes} at {@code offset} of {@code region} (every time it is served). */
    static byte[] set(int region, int offset, byte... bytes) {
        return patch(region | MODE_SET << 5, offset, bytes.length, bytes);
    }

    /** XORs {@code bytes} into {@code region} at {@code offset} (every time it is served). */
    static byte[] xor(int region, int offset, byte... bytes) {
        return patch(region | MODE_XOR << 5, offset, bytes.length, bytes);
    }

    /** As {@link #xor}, from the second time the region is served. */
    static byte[] xorLater(int region, int offset, byte... bytes) {
        return patch(region | MODE_XOR << 5 | LATER, offset, bytes.length, bytes);
    }

    /** As {@link #set}, from the second time the region is served. */
    static byte[] setLater(int region, int offset, byte... bytes) {
        return patch(region | MODE_SET << 5 | LATER, offset, bytes.length, bytes);
    }

    static byte[] setLong(int region, int offset, long value, int bytes) {
        return set(region, offset, Arrays.copyOf(le(new byte[8]).putLong(0, value).array(), bytes));
    }

    /** Fills {@code (units + 1) * 16} bytes from {@code offset} with {@code value}. */
    static byte[] fill(int region, int offset, int units, int value) {
        return patch(region | MODE_FILL << 5, offset, units, new byte[] {(byte) value});
    }

    private static byte[] patch(int what, int offset, int len, byte[] bytes) {
        byte[] p = new byte[4 + bytes.length];
        p[0] = (byte) what;
        p[1] = (byte) offset;
        p[2] = (byte) (offset >>> 8);
        p[3] = (byte) len;
        System.arraycopy(bytes, 0, p, 4, bytes.length);
        return p;
    }

    // ------------------------------------------------------------------------------------------ the harness itself

    /** The harness works: the defaults connect, with exactly the values the fake controller sent. */
    @Test
    void aHealthyControllerIsServed() throws Exception {
        Outcome o = run(input(F_TWO_NAMESPACES | F_TWO_QUEUES));
        assertNull(o.failure(), "connect");
        assertEquals(1, o.cntlid());
        assertEquals(64, o.queueDepth());
        assertEquals(2, o.ioQueues());
        assertEquals(128 * 1024, o.maxTransfer(), "MDTS 5 of 4 KiB pages");
        assertEquals(2, o.namespaces().size());
        assertEquals("[1, 2048, 512]", Arrays.toString(o.namespaces().get(0)), "NSID, blocks, block size");
        assertEquals("[2, 1048576, 4096]", Arrays.toString(o.namespaces().get(1)), "NSID, blocks, block size");
        assertTrue(o.commands().contains("opcode " + Opcodes.ADMIN_ASYNC_EVENT_REQUEST + " nsid 0 cdw10 0x0 qid 0"),
                "an AER is kept outstanding: " + o.commands());
    }

    /** An AER's namespace change reaches the rescan: namespace 2 appears, its 4 KiB blocks as identified. */
    @Test
    void aNamespaceChangeIsSeen() throws Exception {
        Outcome o = run(input(F_AER, setLater(D_NAMESPACE_LIST, 4, (byte) 2)));
        assertNull(o.failure(), "connect");
        assertEquals(2, o.namespaces().size(), "namespaces after the event");
        assertEquals("[2, 1048576, 4096]", Arrays.toString(o.namespaces().get(1)), "NSID, blocks, block size");
    }

    /** An event whose log page the controller fails is still followed by a new AER (it used to end them). */
    @Test
    void anEventWhoseLogPageFailsIsRearmed() throws Exception {
        Outcome o = run(input(F_AER, setLong(C_GET_LOG_PAGE, 8, Status.INVALID_LOG_PAGE | Status.DNR, 2)));
        assertNull(o.failure(), "connect");
        long aers = o.commands().stream().filter(c -> c.startsWith("opcode " + Opcodes.ADMIN_ASYNC_EVENT_REQUEST + " "))
                .count();
        assertEquals(2, aers, "AERs sent: " + o.commands());
    }

    /** A discovery controller: no I/O queues, and its log's two entries exactly as sent. */
    @Test
    void aDiscoveryControllerIsServed() throws Exception {
        Outcome o = run(input(F_DISCOVERY));
        assertNull(o.failure(), "connect");
        assertNull(o.discoveryFailure(), "discovery log");
        assertEquals(0, o.ioQueues());
        assertEquals(List.of(
                new DiscoveryEntry(DiscoveryLogEntry.TRTYPE_TCP, DiscoveryLogEntry.ADRFAM_IPV4,
                        DiscoveryLogEntry.SUBTYPE_NVM, DiscoveryLogEntry.TREQ_NOT_REQUIRED, 1, 0xFFFF, 32, "4420", NQN,
                        "127.0.0.1"),
                new DiscoveryEntry(DiscoveryLogEntry.TRTYPE_TCP, DiscoveryLogEntry.ADRFAM_IPV6,
                        DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY, DiscoveryLogEntry.TREQ_NOT_REQUIRED, 2, 0xFFFF, 32,
                        "8009", Nqn.DISCOVERY, "::1")), o.discovery());
        assertEquals(TransportId.tcp("127.0.0.1", 4420, NQN), o.discovery().get(0).toTransportId());
    }

    /** Refusals come back as NvmeofExceptions, which the harness lets pass: a Connect error, a changing log. */
    @Test
    void refusalsAreReported() throws Exception {
        Outcome refused = run(input(0, setLong(C_CONNECT_ADMIN, 8, Status.CONNECT_INVALID_HOST | Status.DNR, 2)));
        assertNotNull(refused.failure());
        assertTrue(refused.failure().getMessage().contains("Connect"), refused.failure().getMessage());
        Outcome moving = run(input(F_DISCOVERY | F_GENCTR_MOVES));
        assertNull(moving.failure());
        assertInstanceOf(NvmeofException.class, moving.discoveryFailure());
        assertTrue(moving.discoveryFailure().getMessage().contains("GENCTR"), moving.discoveryFailure().getMessage());
    }

    /** Writes the seeds: {@code -Dtest=InitiatorControllerFuzzTest#writeSeeds -Dfuzz.writeSeeds=true}. */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void writeSeeds() throws IOException {
        Path dir = Path.of("src/test/resources/io/nvmeof/conformance/InitiatorControllerFuzzTestInputs/adminResponses");
        Files.createDirectories(dir);
        Files.write(dir.resolve("nvm-one-namespace"), input(0));
        Files.write(dir.resolve("nvm-two-namespaces-two-queues"),
                input(F_TWO_NAMESPACES | F_TWO_QUEUES | F_DATA_SUCCESS));
        Files.write(dir.resolve("nvm-namespace-change-event"), input(F_AER | F_SHORT_KATO,
                setLater(D_NAMESPACE_LIST, 4, (byte) 2)));
        Files.write(dir.resolve("discovery-two-entries"), input(F_DISCOVERY));
        Files.write(dir.resolve("discovery-log-keeps-changing"), input(F_DISCOVERY | F_GENCTR_MOVES | F_DATA_SUCCESS));
        Files.write(dir.resolve("discovery-empty-log"),
                input(F_DISCOVERY, setLong(D_DISCOVERY_LOG, DiscoveryLogHeader.NUMREC, 0, 8)));
        // Odd but legal: CAP.MQES 1 (queues of 2), TO 0, MDTS 0 (no limit), MAXCMD 0 (not reported), IOCCSZ 4 (no
        // in-capsule data), one queue granted of two asked, NVMe 2.0, a namespace formatted with LBA format 3 of 4
        // (512 B blocks, 8 B metadata apart), 2^40 blocks; CSTS.RDY only at the second poll.
        Files.write(dir.resolve("nvm-odd-but-legal"), input(F_TWO_QUEUES | F_DEEP_QUEUES,
                setLong(C_CAP, 0, 1L | 1L << 16 | 1L << 37, 8),
                setLong(C_VS, 0, 0x00020000, 4),
                xor(C_CSTS, 0, (byte) 1), xorLater(C_CSTS, 0, (byte) 1),
                set(D_IDENTIFY_CONTROLLER, IdentifyController.MDTS, (byte) 0),
                set(D_IDENTIFY_CONTROLLER, IdentifyController.MAXCMD, (byte) 0, (byte) 0),
                set(D_IDENTIFY_CONTROLLER, IdentifyController.IOCCSZ, (byte) 4, (byte) 0, (byte) 0, (byte) 0),
                setLong(C_NUMBER_OF_QUEUES, 0, 0, 4),
                set(D_NAMESPACE_1, IdentifyNamespace.NSZE, (byte) 0, (byte) 0, (byte) 0, (byte) 0, (byte) 0, (byte) 1),
                set(D_NAMESPACE_1, IdentifyNamespace.NLBAF, (byte) 3, (byte) 3),
                set(D_NAMESPACE_1, IdentifyNamespace.LBAF0 + 12, (byte) 8, (byte) 0, (byte) 9, (byte) 0)));
        // Legal, rarer formats: 64 KiB blocks (Linux takes up to 64 KiB), and an NVMe 2.0 format index above 15
        // (17 formats, FLBAS bits 6:5 = 01b: format 16, 4 KiB blocks).
        Files.write(dir.resolve("nvm-large-blocks"),
                input(0, set(D_NAMESPACE_1, IdentifyNamespace.LBAF0 + 2, (byte) 16)));
        Files.write(dir.resolve("nvm-format-index-above-15"), input(F_TWO_NAMESPACES,
                set(D_NAMESPACE_2, IdentifyNamespace.NLBAF, (byte) 16, (byte) 0x20),
                set(D_NAMESPACE_2, IdentifyNamespace.LBAF0 + 16 * 4, (byte) 0, (byte) 0, (byte) 12, (byte) 0)));
        Files.write(dir.resolve("nvm-errors"), input(F_TWO_NAMESPACES,
                setLong(C_IDENTIFY_NAMESPACE, 8, Status.INVALID_NAMESPACE | Status.DNR, 2),
                setLong(C_SET_FEATURES, 8, Status.INVALID_FIELD | Status.DNR, 2)));
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.channel.EventLoopGroup;
import io.nvmeof.initiator.tcp.TcpQueue;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.NamespaceRef;
import io.nvmeof.netty.EventLoops;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.tcp.CapsuleResponsePdu;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICRespPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Coverage-guided fuzzing of the initiator's NVMe/TCP decoding (issue 15): the target's side of a connection is the
 * input. For each input a fake target on loopback accepts the initiator's queue, answers its ICReq, takes three
 * commands (a Read of 8 KiB, a Write of 16 KiB by R2T and a Flush), then sends the input's bytes and closes.
 *
 * <p>Input: byte 0 bit 0 set means the input's first 128 bytes are the ICResp (else a valid one: no digests, CPDA 0,
 * MAXH2CDATA 32 KiB); the rest follows the ICResp as it is. The commands' CIDs are fixed for a fresh queue
 * ({@link #READ_CID}, {@link #WRITE_CID}, {@link #FLUSH_CID}), so inputs can name them.
 *
 * <p>Invariants, after every input: every command completes exactly once (success, an NVMe error, or a transport
 * error); nothing is written outside the read's buffer (guard bytes on both sides) and the write's source is never
 * written; no exception other than an I/O error reached the queue's pipeline ({@code TcpQueue.internalErrors}); no
 * Netty buffer was reported unreleased.
 */
class InitiatorTcpFuzzTest {
    static final int READ_CID = 1 << 2;
    static final int WRITE_CID = 1 << 2 | 1;
    static final int FLUSH_CID = 1 << 2 | 2;
    private static final int READ_BYTES = 8192;
    private static final int WRITE_BYTES = 16384;
    private static final int GUARD = 64;
    private static final byte GUARD_BYTE = (byte) 0xA5;

    private static EventLoopGroup loop;
    private static ServerSocket server;
    private static ExecutorService fakeTarget;
    private static long executions;

    @BeforeAll
    static void start() throws IOException {
        loop = EventLoops.createForClients(1, "fuzz-initiator", Duration.ZERO, EventLoops.LoopPlacement.NONE);
        server = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"));
        fakeTarget = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "fuzz-fake-target");
            t.setDaemon(true);
            return t;
        });
    }

    @AfterAll
    static void stop() throws IOException {
        fakeTarget.shutdownNow();
        server.close();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void responseStream(byte[] input) throws Exception {
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
        }
    }

    /** What one input did: each command's status and how often it completed, and the read's buffer. */
    record Outcome(int[] status, AtomicIntegerArray completions, ByteBuffer readBuffer, List<Integer> cidsSeen) {
    }

    static Outcome run(byte[] input) throws Exception {
        executions++;
        boolean ownIcResp = input.length > 0 && (input[0] & 1) != 0;
        byte[] icResp = ownIcResp ? Arrays.copyOfRange(input, 1, 1 + ICRespPdu.LENGTH) // zero-padded
                : validIcResp();
        int restAt = ownIcResp ? Math.min(input.length, 1 + ICRespPdu.LENGTH) : Math.min(input.length, 1);
        byte[] rest = Arrays.copyOfRange(input, restAt, input.length);
        List<Integer> cids = new java.util.concurrent.CopyOnWriteArrayList<>();
        CountDownLatch commandsSent = new CountDownLatch(1);
        Future<?> target = fakeTarget.submit(() -> {
            try (Socket s = server.accept()) {
                s.setSoTimeout(3000);
                s.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                in.readFully(new byte[ICRespPdu.LENGTH]); // the ICReq
                out.write(icResp);
                out.flush();
                try {
                    commandsSent.await(3, TimeUnit.SECONDS);
                    for (int i = 0; i < 3; i++) {
                        byte[] ch = new byte[8];
                        in.readFully(ch);
                        int plen = ByteBuffer.wrap(ch).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
                        byte[] pdu = new byte[Math.max(0, Math.min(plen, 1 << 20) - 8)];
                        in.readFully(pdu);
                        if (ch[0] == PduHeader.TYPE_CAPSULE_CMD && pdu.length >= 4) {
                            cids.add((pdu[2] & 0xFF) | (pdu[3] & 0xFF) << 8); // SQE byte 2: CID
                        }
                    }
                } catch (IOException e) {
                    // the initiator refused the ICResp and closed: the rest goes nowhere
                }
                out.write(rest);
                out.flush();
                s.shutdownOutput();
                s.getInputStream().skip(Long.MAX_VALUE); // until the initiator closes
            } catch (IOException | InterruptedException e) {
                // the initiator closed first
            }
            return null;
        });

        ByteBuffer readArea = ByteBuffer.allocateDirect(GUARD + READ_BYTES + GUARD);
        for (int i = 0; i < readArea.capacity(); i++) {
            readArea.put(i, GUARD_BYTE);
        }
        ByteBuffer source = ByteBuffer.allocateDirect(WRITE_BYTES);
        for (int i = 0; i < WRITE_BYTES; i++) {
            source.put(i, (byte) (i * 7));
        }
        int[] status = new int[3];
        AtomicIntegerArray completions = new AtomicIntegerArray(3);
        CountDownLatch done = new CountDownLatch(3);
        TcpQueue q = new TcpQueue("127.0.0.1", server.getLocalPort(), 1, 4, false, false, Duration.ofSeconds(3), 4096,
                (1 << 20) + TcpQueue.PDU_OVERHEAD);
        boolean connected = false;
        try {
            try {
                q.connect(loop, Duration.ofSeconds(3));
                connected = true;
            } catch (RuntimeException refused) {
                // a bad ICResp is refused (the error says why): there is nothing to send
            } finally {
                commandsSent.countDown();
            }
            if (connected) {
                NamespaceRef nsid1 = NamespaceRef.fixed(1);
                q.submit(Opcodes.IO_READ, nsid1, 0, 0, READ_BYTES / 512 - 1, 0, 0, 0, HostQueue.DIR_C2H, readArea,
                        GUARD, READ_BYTES, null, 0, (st, result) -> complete(0, st, status, completions, done));
                q.submit(Opcodes.IO_WRITE, nsid1, 0, 0, WRITE_BYTES / 512 - 1, 0, 0, 0, HostQueue.DIR_H2C, source, 0,
                        WRITE_BYTES, null, 0, (st, result) -> complete(1, st, status, completions, done));
                q.submit(Opcodes.IO_FLUSH, nsid1, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, null, 0,
                        (st, result) -> complete(2, st, status, completions, done));
                assertTrue(done.await(15, TimeUnit.SECONDS), "commands still outstanding: " + completions);
            }
        } finally {
            q.close();
            target.get(10, TimeUnit.SECONDS);
        }
        for (int i = 0; i < 3; i++) {
            assertEquals(connected ? 1 : 0, completions.get(i), "command " + i + " completions");
        }
        for (int i = 0; i < GUARD; i++) {
            assertEquals(GUARD_BYTE, readArea.get(i), "byte " + (GUARD - i) + " before the read's buffer was written");
            assertEquals(GUARD_BYTE, readArea.get(GUARD + READ_BYTES + i), "byte " + i + " after the read's buffer");
        }
        for (int i = 0; i < WRITE_BYTES; i++) {
            assertEquals((byte) (i * 7), source.get(i), "the write's source was written at " + i);
        }
        assertEquals(0, q.internalErrors(), "an exception inside the initiator (see the log)");
        assertEquals(List.of(), LeakTracker.LEAKS, "a Netty buffer was never released");
        return new Outcome(status, completions, readArea, cids);
    }

    private static void complete(int i, int st, int[] status, AtomicIntegerArray completions, CountDownLatch done) {
        status[i] = st;
        if (completions.incrementAndGet(i) == 1) {
            done.countDown();
        }
    }

    static byte[] validIcResp() {
        byte[] b = new byte[ICRespPdu.LENGTH];
        new ICRespPdu().<ICRespPdu>wrap(new UnsafeBuffer(b), 0).init().pfv(0).cpda(0).digest(0).maxh2cdata(32 * 1024);
        return b;
    }

    // ------------------------------------------------------------------------------------------ seeds

    static byte[] capsuleResp(int cid, int status) {
        byte[] b = new byte[24];
        new CapsuleResponsePdu().<CapsuleResponsePdu>wrap(new UnsafeBuffer(b), 0).header(PduHeader.TYPE_CAPSULE_RESP, 0, 24, 0, 24);
        new Completion().<Completion>wrap(new UnsafeBuffer(b), 8).cid(cid).status(status);
        return b;
    }

    static byte[] c2hData(int cid, long datao, byte[] data, int flags) {
        int pdo = DataPdu.HEADER_LENGTH;
        byte[] b = new byte[pdo + data.length];
        new DataPdu().<DataPdu>wrap(new UnsafeBuffer(b), 0).init(PduHeader.TYPE_C2H_DATA, flags, pdo, b.length)
                .cccid(cid).datao(datao).datal(data.length);
        System.arraycopy(data, 0, b, pdo, data.length);
        return b;
    }

    static byte[] r2t(int cid, int ttag, long offset, long length) {
        byte[] b = new byte[R2TPdu.LENGTH];
        new R2TPdu().<R2TPdu>wrap(new UnsafeBuffer(b), 0).init(0, R2TPdu.LENGTH).cccid(cid).ttag(ttag).r2to(offset)
                .r2tl(length);
        return b;
    }

    static byte[] termReq(int fes) {
        byte[] b = new byte[TermReqPdu.HEADER_LENGTH];
        new TermReqPdu().<TermReqPdu>wrap(new UnsafeBuffer(b), 0).init(PduHeader.TYPE_C2H_TERM_REQ, fes, 0, 0);
        return b;
    }

    static byte[] input(boolean ownIcResp, byte[]... parts) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(ownIcResp ? 1 : 0);
        for (byte[] p : parts) {
            out.write(p);
        }
        return out.toByteArray();
    }

    static byte[] pattern(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 13 + 1);
        }
        return b;
    }

    /** The harness works: a well-behaved stream completes the Read with its data and the Flush, CIDs as documented. */
    @Test
    void aWellBehavedTargetIsServed() throws Exception {
        byte[] data = pattern(READ_BYTES);
        Outcome o = run(input(false, c2hData(READ_CID, 0, Arrays.copyOf(data, 4096), 0),
                c2hData(READ_CID, 4096, Arrays.copyOfRange(data, 4096, READ_BYTES),
                        PduHeader.FLAG_DATA_LAST | PduHeader.FLAG_DATA_SUCCESS),
                capsuleResp(FLUSH_CID, 0)));
        assertEquals(List.of(READ_CID, WRITE_CID, FLUSH_CID), o.cidsSeen(), "the CIDs inputs name");
        assertEquals(0, o.status()[0], "the Read succeeded");
        assertEquals(0, o.status()[2], "the Flush succeeded");
        assertTrue(o.status()[1] < 0, "the Write, never answered, failed when the target closed: " + o.status()[1]);
        byte[] got = new byte[READ_BYTES];
        o.readBuffer().get(GUARD, got);
        assertTrue(Arrays.equals(data, got), "the Read's data");
    }

    /** Writes the seeds: {@code -Dtest=InitiatorTcpFuzzTest#writeSeeds -Dfuzz.writeSeeds=true}. */
    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void writeSeeds() throws IOException {
        Path dir = Path.of("src/test/resources/io/nvmeof/conformance/InitiatorTcpFuzzTestInputs/responseStream");
        Files.createDirectories(dir);
        byte[] data = pattern(READ_BYTES);
        Files.write(dir.resolve("read-flush-ok"), input(false,
                c2hData(READ_CID, 0, data, PduHeader.FLAG_DATA_LAST | PduHeader.FLAG_DATA_SUCCESS),
                capsuleResp(FLUSH_CID, 0)));
        Files.write(dir.resolve("read-in-two-then-response"), input(false,
                c2hData(READ_CID, 0, Arrays.copyOf(data, 4096), 0),
                c2hData(READ_CID, 4096, Arrays.copyOfRange(data, 4096, READ_BYTES), PduHeader.FLAG_DATA_LAST),
                capsuleResp(READ_CID, 0), capsuleResp(FLUSH_CID, 0x4002)));
        Files.write(dir.resolve("write-r2t-then-response"), input(false, r2t(WRITE_CID, 7, 0, WRITE_BYTES),
                capsuleResp(WRITE_CID, 0)));
        Files.write(dir.resolve("write-two-r2ts"), input(false, r2t(WRITE_CID, 7, 0, 8192), r2t(WRITE_CID, 8, 8192, 8192),
                capsuleResp(WRITE_CID, 0)));
        Files.write(dir.resolve("errors"), input(false, capsuleResp(READ_CID, 0x4281), capsuleResp(WRITE_CID, 0x0002),
                capsuleResp(FLUSH_CID, 0x4004)));
        Files.write(dir.resolve("term-req"), input(false, termReq(TermReqPdu.FES_INVALID_HEADER_FIELD)));
        byte[] ownIc = validIcResp();
        new ICRespPdu().<ICRespPdu>wrap(new UnsafeBuffer(ownIc), 0).cpda(3);
        Files.write(dir.resolve("own-icresp-cpda"), input(true, ownIc, capsuleResp(FLUSH_CID, 0)));
    }
}

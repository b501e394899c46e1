package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.tcp.Crc32c;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.tcp.TcpQueue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * The target's small NVMe/TCP PDUs (capsule responses, R2Ts, C2HData headers, data digests) are written into slots
 * of memory each queue keeps and reuses once a PDU is sent, not into a buffer allocated for each (issue 14). A reused
 * slot still holds an earlier PDU's bytes, so the wire format is checked byte by byte under reuse; and the slots a
 * queue makes stay bounded by what it has in flight, however many PDUs it sends.
 */
class SmallPduTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:small-pdus";

    private static NvmeTarget start() throws Exception {
        return NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SN-SP-1", "small pdus", 8, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "16MiB", 512, null, null))))));
    }

    /**
     * A host asking for the largest data alignment (HPDA 31: data at offset 128) and both digests. Identify's data
     * and Property Get's responses alternate 40 times, so each slot is reused by PDUs of other kinds and lengths: every
     * C2HData header keeps PDO 128 with zeroed padding and a right header digest, every data digest matches, and every
     * response's header digest is right.
     */
    @Test
    void reusedSlotsKeepTheWireFormatWithTheLargestAlignmentAndDigests() throws Exception {
        try (NvmeTarget target = start(); RawTcpHost host = new RawTcpHost(target.tcpPort(0))) {
            host.initialize(3, 31);
            assertEquals(Status.SUCCESS, host.connect(0, 31, 0xFFFF, NQN, RawTcpHost.HOSTNQN, 0).status());
            assertEquals(Status.SUCCESS, host.propertySet(ControllerRegisters.CC,
                    ControllerRegisters.CC_ENABLE_DEFAULT).status());
            Crc32c crc = new Crc32c();
            byte[] first = null;
            for (int round = 0; round < 40; round++) {
                byte[] sqe = RawTcpHost.identifySqe(1, 0);
                RawTcpHost.cmd(sqe).cid(++host.cid);
                host.send(host.capsule(sqe, null));
                byte[] c2h = host.readPdu();
                assertEquals(PduHeader.TYPE_C2H_DATA, c2h[0], "round " + round);
                UnsafeBuffer u = new UnsafeBuffer(c2h);
                DataPdu d = new DataPdu().wrap(u, 0);
                assertEquals(128, d.pdo(), "data at the host's alignment");
                assertEquals(4096, d.datal());
                assertEquals(128 + 4096 + 4, c2h.length, "PLEN: header, padding, data, data digest");
                assertEquals(crc.of(u, 0, DataPdu.HEADER_LENGTH), u.getInt(DataPdu.HEADER_LENGTH, ByteOrder.LITTLE_ENDIAN),
                        "header digest, round " + round);
                assertArrayEquals(new byte[128 - 28], Arrays.copyOfRange(c2h, 28, 128), "padding, round " + round);
                assertEquals(crc.of(u, 128, 4096), u.getInt(128 + 4096, ByteOrder.LITTLE_ENDIAN),
                        "data digest, round " + round);
                byte[] data = Arrays.copyOfRange(c2h, 128, 128 + 4096);
                if (first == null) {
                    first = data;
                } else {
                    assertArrayEquals(first, data, "Identify's data, round " + round);
                }
                assertResponse(host.readPdu(), host.cid, crc);
                // Property Get (CAP): a capsule response in a slot a C2HData header or a data digest had.
                byte[] get = RawTcpHost.sqe();
                new io.nvmeof.protocol.fabrics.FabricsCommand().<io.nvmeof.protocol.fabrics.FabricsCommand>wrap(
                        new UnsafeBuffer(get), 0).fctype(io.nvmeof.protocol.Opcodes.FCTYPE_PROPERTY_GET)
                        .propertySize(8).propertyOffset(ControllerRegisters.CAP)
                        .opcode(io.nvmeof.protocol.Opcodes.FABRICS);
                RawTcpHost.cmd(get).cid(++host.cid);
                host.send(host.capsule(get, null));
                assertResponse(host.readPdu(), host.cid, crc);
            }
            int slots = onAdminQueue(target, TcpQueue::smallPduSlots);
            assertTrue(slots <= 32, "one slab of slots for one command at a time, not one per PDU: " + slots);
        }
    }

    private static void assertResponse(byte[] pdu, int cid, Crc32c crc) {
        assertEquals(PduHeader.TYPE_CAPSULE_RESP, pdu[0]);
        assertEquals(28, pdu.length, "CapsuleResp with a header digest");
        UnsafeBuffer u = new UnsafeBuffer(pdu);
        assertEquals(crc.of(u, 0, 24), u.getInt(24, ByteOrder.LITTLE_ENDIAN), "response header digest");
        Completion c = new Completion().wrap(new UnsafeBuffer(Arrays.copyOfRange(pdu, 8, 24)), 0);
        assertEquals(cid, c.cid());
        assertEquals(Status.SUCCESS, c.status());
    }

    /**
     * 2,048 writes and reads of 512 B to 16 KiB at QD 32 (capsule responses, R2Ts, C2HData headers): all read back as
     * written, and the I/O queue has made slots for what it had in flight, a few slabs, not one per PDU.
     */
    @Test
    void aQueueKeepsSlotsForWhatItHasInFlightNotForEveryPdu() throws Exception {
        try (NvmeTarget target = start();
             NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NQN),
                     ConnectOptions.builder().queueDepth(64).build())) {
            NamespaceHandle ns = c.namespace(1);
            Random random = new Random(17);
            int ios = 1024;
            byte[][] data = new byte[ios][];
            List<CompletableFuture<Void>> inFlight = new ArrayList<>();
            for (int i = 0; i < ios; i++) {
                int blocks = i % 3 == 2 ? 32 : 1 + i % 16; // in the capsule up to 8 KiB; 16 KiB by R2T
                data[i] = new byte[blocks * 512];
                random.nextBytes(data[i]);
                inFlight.add(ns.write((long) i * 32, blocks, ByteBuffer.allocateDirect(data[i].length).put(data[i]).flip()));
                awaitEvery32(inFlight);
            }
            awaitAll(inFlight);
            List<ByteBuffer> reads = new ArrayList<>();
            for (int i = 0; i < ios; i++) {
                ByteBuffer dst = ByteBuffer.allocateDirect(data[i].length);
                reads.add(dst);
                inFlight.add(ns.read((long) i * 32, data[i].length / 512, dst));
                awaitEvery32(inFlight);
            }
            awaitAll(inFlight);
            for (int i = 0; i < ios; i++) {
                byte[] got = new byte[data[i].length];
                reads.get(i).get(0, got);
                assertArrayEquals(data[i], got, "I/O " + i);
            }
            long slots = 0;
            for (Controller ctrl : target.core().controllers()) {
                SubmissionQueue q = ctrl.queue(1);
                if (q != null && q.transport() instanceof TcpQueue t) {
                    slots += onLoop(t, TcpQueue::smallPduSlots);
                }
            }
            assertTrue(slots > 0 && slots <= 4 * 32, "slots for at most 32 commands in flight (about 3,400 small PDUs "
                    + "sent): " + slots);
        }
    }

    private static void awaitEvery32(List<CompletableFuture<Void>> inFlight) throws Exception {
        if (inFlight.size() == 32) {
            awaitAll(inFlight);
        }
    }

    private static void awaitAll(List<CompletableFuture<Void>> inFlight) throws Exception {
        for (CompletableFuture<Void> f : inFlight) {
            f.get(10, TimeUnit.SECONDS);
        }
        inFlight.clear();
    }

    private static int onAdminQueue(NvmeTarget target, java.util.function.ToIntFunction<TcpQueue> f) throws Exception {
        Controller c = target.core().controllers().iterator().next();
        return onLoop((TcpQueue) c.queue(0).transport(), f);
    }

    private static int onLoop(TcpQueue t, java.util.function.ToIntFunction<TcpQueue> f) throws Exception {
        CompletableFuture<Integer> v = new CompletableFuture<>();
        t.execute(() -> v.complete(f.applyAsInt(t)));
        return v.get(5, TimeUnit.SECONDS);
    }
}

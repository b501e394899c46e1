package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.PduHeader;
import io.nvmeof.protocol.tcp.R2TPdu;
import io.nvmeof.tgt.NvmeTarget;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Our first check against an implementation we did not write: Wireshark's nvme-tcp dissector must decode every PDU of
 * a connect + identify + write + read session, in both directions, with no malformed packet and no expert error.
 */
class WiresharkDecodeTest {
    /** Kept after the run (target/wireshark/) so a failure can be opened in Wireshark. */
    private static final Path ARTIFACTS = Path.of("target", "wireshark");

    /** One whole session on a fresh connection pair: admin bring-up, identify, in-capsule and R2T writes, reads. */
    private static void session(int port, int digests) throws Exception {
        try (RawTcpHost admin = new RawTcpHost(port)) {
            admin.initialize(digests);
            Completion c = admin.connect(0, 31, 0xFFFF, TestTargets.NQN, RawTcpHost.HOSTNQN, 5000);
            assertEquals(Status.SUCCESS, c.status());
            int cntlid = c.dw0() & 0xFFFF;
            admin.propertySet(0x14, io.nvmeof.protocol.regs.ControllerRegisters.CC_ENABLE_DEFAULT);
            assertEquals(Status.SUCCESS, admin.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status());
            assertEquals(Status.SUCCESS, admin.execute(RawTcpHost.identifySqe(Opcodes.CNS_NAMESPACE, 1), null).status());
            try (RawTcpHost io = new RawTcpHost(port)) {
                io.initialize(digests);
                assertEquals(Status.SUCCESS, io.connect(1, 127, cntlid, TestTargets.NQN, RawTcpHost.HOSTNQN, 0).status());
                byte[] small = new byte[4096];
                ThreadLocalRandom.current().nextBytes(small);
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 8, 8, 4096, true), small).status());
                // A write through R2T and two H2CData PDUs.
                byte[] sqe = RawTcpHost.rwSqe(Opcodes.IO_WRITE, 1, 64, 128, 65536, false);
                RawTcpHost.cmd(sqe).cid(900);
                io.send(io.capsule(sqe, null));
                byte[] r2t = io.readPdu();
                assertEquals(PduHeader.TYPE_R2T, r2t[0]);
                int ttag = new R2TPdu().<R2TPdu>wrap(new UnsafeBuffer(r2t), 0).ttag();
                io.send(io.h2cData(900, ttag, 0, new byte[32768], false));
                io.send(io.h2cData(900, ttag, 32768, new byte[32768], true));
                assertEquals(Status.SUCCESS, io.awaitResponse().status());
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 8, 8, 4096, false), null).status());
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 64, 128, 65536, false), null).status());
            }
        }
    }

    /** The same through the initiator library: its admin bring-up, discovery, and I/O through R2T and C2HData. */
    private static void librarySession(int port, boolean digests) throws Exception {
        io.nvmeof.initiator.ConnectOptions o = io.nvmeof.initiator.ConnectOptions.builder().ioQueues(2).queueDepth(16)
                .headerDigest(digests).dataDigest(digests).build();
        try (io.nvmeof.initiator.NvmeofController d = io.nvmeof.initiator.NvmeofController.connect(
                new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, io.nvmeof.protocol.fabrics.Nqn.DISCOVERY), o)) {
            assertEquals(2, d.discoveryLog().size());
        }
        try (io.nvmeof.initiator.NvmeofController c = io.nvmeof.initiator.NvmeofController.connect(
                new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, TestTargets.NQN), o)) {
            io.nvmeof.initiator.NamespaceHandle ns = c.namespace(1);
            for (int size : new int[] {512, 8192, 200 * 1024}) {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(size);
                ns.write(1000, size / 512, b).get(10, java.util.concurrent.TimeUnit.SECONDS);
                ns.read(1000, size / 512, b).get(10, java.util.concurrent.TimeUnit.SECONDS);
            }
            ns.flush().get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    @Test
    void dissectorDecodesEveryPduWithoutErrors() throws Exception {
        Path pcap = freshCapture("session.pcapng");
        try (NvmeTarget target = TestTargets.start()) {
            int port = target.tcpPort(0);
            try (Tshark.Capture capture = new Tshark.Capture(port, pcap)) {
                session(port, 0);
                session(port, 3); // header and data digests
                librarySession(port, false);
                librarySession(port, true);
            }
        }
        List<String> types = Tshark.decode(pcap, port(pcap), "-Y", "nvme-tcp", "-T", "fields", "-e", "nvme-tcp.type");
        Map<Integer, Integer> counts = new TreeMap<>();
        for (String line : types) {
            for (String t : line.split(",")) {
                if (!t.isBlank()) {
                    counts.merge(Integer.decode(t.trim()), 1, Integer::sum);
                }
            }
        }
        for (int type : new int[] {PduHeader.TYPE_IC_REQ, PduHeader.TYPE_IC_RESP, PduHeader.TYPE_CAPSULE_CMD,
                PduHeader.TYPE_CAPSULE_RESP, PduHeader.TYPE_H2C_DATA, PduHeader.TYPE_C2H_DATA, PduHeader.TYPE_R2T}) {
            assertTrue(counts.getOrDefault(type, 0) > 0,
                    "Wireshark decoded no " + PduHeader.typeName(type) + " PDU; decoded types: " + counts);
        }
        // Raw sessions: 2 x 2 connections; library sessions: 2 x (discovery + admin + 2 I/O queues). Each opens with
        // ICReq/ICResp.
        assertEquals(12, counts.get(PduHeader.TYPE_IC_REQ), "ICReq count: " + counts);
        assertEquals(12, counts.get(PduHeader.TYPE_IC_RESP), "ICResp count: " + counts);
        List<String> bad = Tshark.decode(pcap, port(pcap), "-Y", "_ws.malformed || _ws.expert.severity >= 0x00800000");
        assertEquals(List.of(), bad, "malformed packets or expert errors in Wireshark's decode");
        // Commands decode as NVMe: opcode names appear for our Connect, Identify, Write and Read.
        List<String> detail = Tshark.decode(pcap, port(pcap), "-Y", "nvme-tcp");
        String text = String.join("\n", detail);
        for (String expected : new String[] {"NVMeOF Connect", "Property Set Controller Configuration", "Identify Controller", "Identify Namespace", "NVMe Write", "NVMe Read", "NVMe Flush", "Ready To Transfer", "Get Log Page"}) {
            assertTrue(text.contains(expected), "tshark's decode does not mention '" + expected + "'");
        }
    }

    /**
     * A referral entry of the discovery log (issue 35 part 3) as Wireshark's NVMe dissector reads it: SUBTYPE 1 with
     * the referred address, port and PORTID and the discovery NQN, next to the entries of our own listener.
     */
    @Test
    void dissectorDecodesAReferralEntryOfTheDiscoveryLog() throws Exception {
        Path pcap = freshCapture("referral.pcapng");
        try (NvmeTarget target = TestTargets.start()) {
            target.live().addReferral(new io.nvmeof.tgt.config.TargetConfig.ReferralConfig(null, "tcp", "192.0.2.20",
                    4420, null, null, 7));
            int port = target.tcpPort(0);
            try (Tshark.Capture capture = new Tshark.Capture(port, pcap);
                 io.nvmeof.initiator.NvmeofController d = io.nvmeof.initiator.NvmeofController.connect(
                         new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port,
                                 io.nvmeof.protocol.fabrics.Nqn.DISCOVERY),
                         io.nvmeof.initiator.ConnectOptions.defaults())) {
                assertTrue(d.discoveryLog().stream().anyMatch(io.nvmeof.initiator.DiscoveryEntry::isReferral));
            }
        }
        String rcrd = "nvme.cmd.get_logpage.identify.rcrd.";
        List<String> rows = Tshark.decode(pcap, port(pcap), "-Y", rcrd + "subtype", "-T", "fields", "-E",
                "occurrence=a", "-E", "aggregator=|", "-e", rcrd + "subtype", "-e", rcrd + "portid", "-e",
                rcrd + "trsvcid", "-e", rcrd + "subnqn", "-e", rcrd + "traddr", "-e", rcrd + "cntlid");
        assertEquals(1, rows.size(), "one read of the whole log: " + rows);
        String[] fields = rows.get(0).split("\t");
        List<String> subtypes = List.of(fields[0].split("\\|"));
        int referral = subtypes.indexOf("0x01");
        assertTrue(referral > 0, "a SUBTYPE 1 entry after our own: " + subtypes);
        assertEquals("0x0007", fields[1].split("\\|")[referral]);
        assertEquals("4420", fields[2].split("\\|")[referral].trim());
        assertEquals(io.nvmeof.protocol.fabrics.Nqn.DISCOVERY, fields[3].split("\\|")[referral]);
        assertEquals("192.0.2.20", fields[4].split("\\|")[referral].trim());
        assertEquals("0xffff", fields[5].split("\\|")[referral]);
        assertEquals(List.of(), Tshark.decode(pcap, port(pcap), "-Y",
                "_ws.malformed || _ws.expert.severity >= 0x00800000"), "malformed packets or expert errors");
    }

    /** Where a capture goes, none there yet (skips the test without tshark). */
    private static Path freshCapture(String name) throws Exception {
        Tshark.requireInstalled();
        java.nio.file.Files.createDirectories(ARTIFACTS);
        Path pcap = ARTIFACTS.resolve(name).toAbsolutePath();
        java.nio.file.Files.deleteIfExists(pcap);
        return pcap;
    }

    /** The port the session used, read back from the capture (the first SYN's destination). */
    private static int port(Path pcap) throws Exception {
        List<String> ports = Tshark.decode(pcap, 1, "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0", "-T", "fields", "-e", "tcp.dstport", "-c", "1");
        return Integer.parseInt(ports.get(0).trim());
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Features;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Referrals in the discovery log (NVMe-oF "Discovery Log Page Entry", SUBTYPE 1): the entry's bytes at the
 * specification's offsets as a raw host reads them, the generation counter and the Discovery Log Change notice when
 * one is added or removed, and our initiator reading one and following it to the other target.
 */
class ReferralTest {
    private static final String REMOTE_NQN = "nqn.2026-12.io.example:remote";

    NvmeTarget target;
    int port;

    @BeforeEach
    void start() throws Exception {
        target = TestTargets.start();
        port = target.tcpPort(0);
    }

    @AfterEach
    void stop() {
        target.close();
    }

    @Test
    void aReferralIsListedAtTheSpecificationsOffsetsAndNoticedWhenAddedAndRemoved() throws Exception {
        try (RawTcpHost disc = new RawTcpHost(port)) {
            disc.bringUpAdmin(Nqn.DISCOVERY);
            byte[] sf = RawTcpHost.sqe();
            RawTcpHost.cmd(sf).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(Opcodes.FEAT_ASYNC_EVENT_CONFIG)
                    .cdw11(Features.AEC_DISCOVERY_LOG_CHANGE);
            assertEquals(Status.SUCCESS, disc.execute(sf, null).status());
            ByteBuffer before = readLog(disc);
            long genctrBefore = before.getLong(0);
            long numrecBefore = before.getLong(8);

            postAsyncEventRequest(disc, 700);
            ReferralConfig added = target.live().addReferral(new ReferralConfig(null, "tcp", "127.0.0.2", 4421, null,
                    null, 7));
            assertEquals(1, added.id(), "the lowest free id");
            assertNotice(disc.awaitResponse(), 700);

            ByteBuffer log = readLog(disc);
            assertTrue(log.getLong(0) > genctrBefore, "GENCTR grows");
            assertEquals(numrecBefore + 1, log.getLong(8), "NUMREC");
            int at = 1024 * (int) (numrecBefore + 1); // entries follow the 1024-byte header; the referral is last
            assertEquals(3, log.get(at) & 0xFF, "TRTYPE: TCP");
            assertEquals(1, log.get(at + 1) & 0xFF, "ADRFAM: IPv4");
            assertEquals(1, log.get(at + 2) & 0xFF, "SUBTYPE: referral to a discovery service");
            // Not specified, as nvmet's referrals: Debian 12's libnvme turns TLS on for a TCP entry that says "not
            // required", and its connect-all failed against kernels without TLS (the guest's kernel-host-referral).
            assertEquals(0, log.get(at + 3) & 0xFF, "TREQ: secure channel not specified, nothing else");
            assertEquals(7, log.getShort(at + 4) & 0xFFFF, "PORTID: the other end's");
            assertEquals(0xFFFF, log.getShort(at + 6) & 0xFFFF, "CNTLID: dynamic");
            assertEquals(32, log.getShort(at + 8) & 0xFFFF, "ASQSZ");
            assertEquals(0, log.getShort(at + 10), "EFLAGS");
            assertEquals(padded("4421", 32, ' '), text(log, at + 32, 32), "TRSVCID, space padded");
            assertEquals(padded(Nqn.DISCOVERY, 256, '\0'), text(log, at + 256, 256), "SUBNQN, NUL padded");
            assertEquals(padded("127.0.0.2", 256, ' '), text(log, at + 512, 256), "TRADDR, space padded");
            assertEquals(0, log.get(at + 768), "TSAS SECTYPE: none");

            // SPDK's variant: a referral that names a subsystem is an NVM subsystem entry; TLS shows in TREQ and TSAS.
            postAsyncEventRequest(disc, 701);
            ReferralConfig direct = target.live().addReferral(new ReferralConfig(5, null, "127.0.0.3", null,
                    REMOTE_NQN, "required", null));
            assertEquals(8009, direct.port(), "the NVMe/TCP discovery port nvme discover assumes");
            assertNotice(disc.awaitResponse(), 701);
            log = readLog(disc);
            at = 1024 * (int) (numrecBefore + 2);
            assertEquals(2, log.get(at + 2) & 0xFF, "SUBTYPE: NVM subsystem");
            assertEquals(1, log.get(at + 3) & 0xFF, "TREQ: secure channel required");
            assertEquals(0, log.getShort(at + 4), "PORTID: 0 when not given, as SPDK");
            assertEquals(padded("8009", 32, ' '), text(log, at + 32, 32));
            assertEquals(padded(REMOTE_NQN, 256, '\0'), text(log, at + 256, 256));
            assertEquals(2, log.get(at + 768) & 0xFF, "TSAS SECTYPE: TLS 1.3");

            postAsyncEventRequest(disc, 702);
            long genctr = log.getLong(0);
            target.live().removeReferral(1);
            assertNotice(disc.awaitResponse(), 702);
            log = readLog(disc);
            assertTrue(log.getLong(0) > genctr, "GENCTR grows on removal too");
            assertEquals(numrecBefore + 1, log.getLong(8));
            assertEquals(padded(REMOTE_NQN, 256, '\0'), text(log, 1024 * (int) (numrecBefore + 1) + 256, 256),
                    "the other referral stays");
        }
    }

    /** Our initiator reads the referral and, asked to, follows it: the other target's log lists its subsystem. */
    @Test
    void ourInitiatorReadsAReferralAndCanFollowIt() throws Exception {
        try (NvmeTarget other = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null))) {
            int otherPort = other.tcpPort(0);
            target.live().addReferral(new ReferralConfig(null, "tcp", "127.0.0.1", otherPort, null, null, null));
            List<DiscoveryEntry> log;
            try (NvmeofController d = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port,
                    Nqn.DISCOVERY), ConnectOptions.defaults())) {
                log = d.discoveryLog();
            }
            List<DiscoveryEntry> referrals = log.stream().filter(DiscoveryEntry::isReferral).toList();
            assertEquals(1, referrals.size(), log.toString());
            DiscoveryEntry r = referrals.get(0);
            assertEquals(Nqn.DISCOVERY, r.subnqn());
            assertEquals(Integer.toString(otherPort), r.trsvcid());
            assertFalse(log.get(0).isReferral(), "the current discovery subsystem is no referral");

            try (NvmeofController d = NvmeofController.connect(r.toTransportId(), ConnectOptions.defaults())) {
                assertTrue(d.discoveryLog().stream().anyMatch(e -> e.subnqn().equals(TargetConfig.DEFAULT_NQN)),
                        "the referred target lists its subsystem");
            }
        }
    }

    /**
     * A target listening on the wildcard address lists the address the host reached instead (nvmet's
     * nvmet_set_disc_traddr): a host that followed a referral to it can connect to what its log lists.
     */
    @Test
    void aListenerOnTheWildcardAddressIsListedWithTheAddressTheHostReached() throws Exception {
        try (NvmeTarget any = NvmeTarget.start(TargetConfig.defaults("0.0.0.0", 0, "4MiB", 512, null))) {
            List<DiscoveryEntry> log;
            try (NvmeofController d = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", any.tcpPort(0),
                    Nqn.DISCOVERY), ConnectOptions.defaults())) {
                log = d.discoveryLog();
            }
            assertEquals(List.of("127.0.0.1", "127.0.0.1"), log.stream().map(DiscoveryEntry::traddr).toList());
            try (NvmeofController c = NvmeofController.connect(log.get(1).toTransportId(), ConnectOptions.defaults())) {
                assertEquals(TargetConfig.DEFAULT_NQN, c.info().subnqn());
            }
        }
    }

    private static void postAsyncEventRequest(RawTcpHost disc, int cid) throws Exception {
        byte[] aer = RawTcpHost.sqe();
        RawTcpHost.cmd(aer).opcode(Opcodes.ADMIN_ASYNC_EVENT_REQUEST).cid(cid);
        disc.send(disc.capsule(aer, null));
    }

    private static void assertNotice(Completion event, int cid) {
        assertEquals(cid, event.cid());
        assertEquals(Features.asyncEvent(Features.AER_TYPE_NOTICE, Features.AER_INFO_DISCOVERY_LOG_CHANGED,
                Opcodes.LOG_DISCOVERY), event.dw0(), "Discovery Log Page Change notice");
    }

    /** The first 8 KiB of the discovery log (header and 7 entries), read as the host's GET LOG PAGE does. */
    private static ByteBuffer readLog(RawTcpHost disc) throws Exception {
        int length = 8192;
        byte[] sqe = RawTcpHost.sqe();
        RawTcpHost.cmd(sqe).opcode(Opcodes.ADMIN_GET_LOG_PAGE).cdw10(Opcodes.LOG_DISCOVERY | (length / 4 - 1) << 16);
        RawTcpHost.sgl(sqe).transportBlock(length);
        RawTcpHost.Reply page = disc.executeForData(sqe, length);
        assertEquals(Status.SUCCESS, page.cqe().status());
        return ByteBuffer.wrap(page.data()).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static String text(ByteBuffer log, int at, int length) {
        return new String(Arrays.copyOfRange(log.array(), at, at + length), StandardCharsets.US_ASCII);
    }

    private static String padded(String s, int length, char pad) {
        return s + String.valueOf(pad).repeat(length - s.length());
    }
}

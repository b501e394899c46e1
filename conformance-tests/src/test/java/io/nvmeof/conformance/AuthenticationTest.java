package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.auth.AuthMessages;
import io.nvmeof.protocol.auth.AuthMessages.Challenge;
import io.nvmeof.protocol.auth.AuthMessages.Negotiate;
import io.nvmeof.protocol.auth.AuthMessages.Reply;
import io.nvmeof.protocol.auth.DhExchange;
import io.nvmeof.protocol.auth.DhGroup;
import io.nvmeof.protocol.auth.Dhchap;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * DH-HMAC-CHAP on the target, driven by a raw host that computes its side from the specification's formulas (the
 * Linux kernel's host does the same against this target in the guest suite): the right secret authenticates, with
 * and without a DH group and in both directions, and every way of getting it wrong is refused with the Failure1
 * reason Linux's nvmet sends, the queue closed, and other hosts untouched.
 */
class AuthenticationTest {
    static final String SUB = "nqn.2026-12.io.nvmeof:secured";
    /** Authenticates with the null group, SHA-256, one way. */
    static final String PLAIN = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-0000000000a1";
    /** Configured for ffdhe2048 and SHA-384, with a controller secret: both directions. */
    static final String DH = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-0000000000a2";
    /** Allowed without a secret. */
    static final String OPEN = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-0000000000a3";
    /** Allowed; its secret is set, rotated and removed while the target runs (admin API). */
    static final String ROTATED = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-0000000000a4";

    static final SecureRandom RANDOM = new SecureRandom();
    static final DhchapSecret PLAIN_KEY = secret(32, DhchapHash.SHA256);
    static final DhchapSecret DH_KEY = secret(48, null);
    static final DhchapSecret DH_CTRL_KEY = secret(64, DhchapHash.SHA512);

    static NvmeTarget target;
    static int port;

    static DhchapSecret secret(int bytes, DhchapHash transform) {
        byte[] k = new byte[bytes];
        RANDOM.nextBytes(k);
        return DhchapSecret.of(k, transform);
    }

    @BeforeAll
    static void start() throws Exception {
        TargetConfig cfg = new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(SUB, null, null, null, false, List.of(PLAIN, DH, OPEN, ROTATED),
                        List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null)))))
                .withHosts(List.of(new HostConfig(PLAIN, PLAIN_KEY.representation(), null, null, null),
                        new HostConfig(DH, DH_KEY.representation(), DH_CTRL_KEY.representation(), "hmac(sha384)",
                                "ffdhe2048")));
        target = NvmeTarget.start(cfg);
        port = target.tcpPort(0);
    }

    @AfterAll
    static void stop() {
        target.close();
    }

    // ------------------------------------------------------------------------------------------------ the host side

    static byte[] authSendSqe(int length) {
        byte[] b = RawTcpHost.sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_AUTH_SEND)
                .auth(length).opcode(Opcodes.FABRICS);
        RawTcpHost.sgl(b).inCapsule(0, length);
        return b;
    }

    static Completion authSend(RawTcpHost h, byte[] message) throws Exception {
        return h.execute(authSendSqe(message.length), message);
    }

    static RawTcpHost.Reply authReceive(RawTcpHost h, int al) throws Exception {
        byte[] b = RawTcpHost.sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_AUTH_RECEIVE)
                .auth(al).opcode(Opcodes.FABRICS);
        RawTcpHost.sgl(b).transportBlock(al);
        return h.executeForData(b, al);
    }

    /** The host's secrets and choices for one transaction. */
    record HostSide(String hostNqn, DhchapSecret key, DhchapSecret ctrlKey, int[] hashes, int[] groups) {
    }

    /** Everything one transaction showed, for the tests to look into. */
    static final class Transcript {
        Challenge challenge;
        byte[] replyMessage;
        byte[] success1;
        Completion replyCompletion;
    }

    static RawTcpHost connect(String hostNqn, int qid, int cntlid) throws Exception {
        RawTcpHost h = new RawTcpHost(port);
        h.initialize(0);
        Completion c = h.connect(qid, 31, cntlid, SUB, hostNqn, 0);
        assertEquals(Status.SUCCESS, c.status(), "Connect");
        h.cntlid = c.dw0() & 0xFFFF;
        return h;
    }

    /** Runs a transaction up to and including Success1 (and Success2 when both directions); returns the transcript. */
    static Transcript authenticate(RawTcpHost h, HostSide side, int tid) throws Exception {
        Transcript t = new Transcript();
        assertEquals(Status.SUCCESS, authSend(h, new Negotiate(tid, 0, side.hashes(), side.groups()).encode()).status());
        RawTcpHost.Reply ch = authReceive(h, 4096);
        assertEquals(Status.SUCCESS, ch.cqe().status(), "AUTH_Receive (Challenge)");
        if (AuthMessages.id(ch.data()) == AuthMessages.ID_FAILURE1) {
            t.success1 = ch.data();
            return t;
        }
        t.challenge = Challenge.decode(ch.data());
        DhchapHash hash = DhchapHash.byId(t.challenge.hashId());
        DhGroup group = DhGroup.byId(t.challenge.dhGroupId());
        byte[] c1 = t.challenge.challenge();
        byte[] dhValue = new byte[0];
        byte[] session = null;
        if (group != DhGroup.NULL) {
            DhExchange mine = DhExchange.generate(group, RANDOM);
            dhValue = mine.publicValue();
            session = mine.sharedSecret(t.challenge.dhValue());
            c1 = Dhchap.augmentedChallenge(hash, session, c1);
        }
        byte[] r1 = Dhchap.hostResponse(hash, side.key().transform(side.hostNqn()), c1, t.challenge.seqnum(), tid, 0,
                side.hostNqn(), SUB);
        byte[] c2 = null;
        long s2 = 0;
        if (side.ctrlKey() != null) {
            c2 = new byte[hash.length()];
            RANDOM.nextBytes(c2);
            s2 = 0x1234_5678L;
        }
        t.replyMessage = new Reply(tid, r1, c2, s2, dhValue).encode();
        t.replyCompletion = authSend(h, t.replyMessage);
        RawTcpHost.Reply s1 = authReceive(h, 4096);
        assertEquals(Status.SUCCESS, s1.cqe().status(), "AUTH_Receive (Success1)");
        t.success1 = s1.data();
        if (AuthMessages.id(t.success1) == AuthMessages.ID_SUCCESS1 && c2 != null) {
            byte[] r2 = AuthMessages.success1Response(t.success1);
            assertNotNull(r2, "the controller answers the host's challenge (RVALID)");
            byte[] cc = session != null ? Dhchap.augmentedChallenge(hash, session, c2) : c2;
            byte[] expected = Dhchap.controllerResponse(hash, side.ctrlKey().transform(SUB), cc, s2, tid, SUB,
                    side.hostNqn());
            assertArrayEquals(expected, r2, "the controller proves it holds the controller secret");
            assertEquals(Status.SUCCESS, authSend(h, AuthMessages.success2(tid)).status(), "Success2");
        }
        return t;
    }

    static final int[] ALL_HASHES = {1, 2, 3};
    static final int[] ALL_GROUPS = {0, 1, 2, 3, 4, 5};

    /** The host with the right secret authenticates on a fresh connection and is served. */
    static void rightSecretStillServed() throws Exception {
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            Transcript t = authenticate(h, new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS), 11);
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(t.success1));
            assertServed(h);
        }
    }

    static void assertServed(RawTcpHost h) throws Exception {
        assertEquals(Status.SUCCESS, h.propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT).status());
        assertEquals(Status.SUCCESS, h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status(),
                "Identify once authenticated");
    }

    static int failureOf(byte[] message) {
        assertEquals(AuthMessages.TYPE_COMMON, AuthMessages.type(message));
        assertEquals(AuthMessages.ID_FAILURE1, AuthMessages.id(message), "Failure1");
        assertEquals(AuthMessages.RESCODE_FAILED, message[6] & 0xFF);
        return AuthMessages.failureExplanation(message);
    }

    // ------------------------------------------------------------------------------------------------ tests

    @Test
    void theRightSecretAuthenticatesAndNothingIsServedBefore() throws Exception {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, SUB, PLAIN, 0);
            assertEquals(Status.SUCCESS, c.status());
            assertEquals(1, (c.dw0() >>> 17) & 1, "Connect says authentication is required (AUTHREQ.ATR, DW0 bit 17)");
            assertEquals(Status.AUTH_REQUIRED | Status.DNR,
                    h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status(), "Identify before");
            assertEquals(Status.AUTH_REQUIRED | Status.DNR, h.propertyGet(ControllerRegisters.CAP, 8).status(),
                    "Property Get before");
            Transcript t = authenticate(h, new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS), 7);
            assertEquals(DhchapHash.SHA256.id(), t.challenge.hashId(), "the configured hash (the default, SHA-256)");
            assertEquals(DhGroup.NULL.id(), t.challenge.dhGroupId(), "the configured group (the default, null)");
            assertEquals(0, t.challenge.dhValue().length);
            assertEquals(32, t.challenge.challenge().length);
            assertNotEquals(0, t.challenge.seqnum(), "S1 is never 0");
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(t.success1));
            assertNull(AuthMessages.success1Response(t.success1), "no controller response when not asked for");
            assertServed(h);
        }
    }

    @Test
    void aDhGroupAndBothDirectionsAuthenticateOnEveryQueue() throws Exception {
        HostSide side = new HostSide(DH, DH_KEY, DH_CTRL_KEY, ALL_HASHES, ALL_GROUPS);
        try (RawTcpHost admin = connect(DH, 0, 0xFFFF)) {
            Transcript t = authenticate(admin, side, 1);
            assertEquals(DhchapHash.SHA384.id(), t.challenge.hashId());
            assertEquals(DhGroup.FFDHE2048.id(), t.challenge.dhGroupId());
            assertEquals(256, t.challenge.dhValue().length, "the controller's public value, the prime's length");
            assertServed(admin);
            try (RawTcpHost io = connect(DH, 1, admin.cntlid)) {
                byte[] read = RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false);
                assertEquals(Status.AUTH_REQUIRED | Status.DNR, io.execute(read, null).status(),
                        "an I/O queue authenticates on its own");
                authenticate(io, side, 2);
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), null)
                        .status(), "a read once the I/O queue authenticated");
            }
        }
    }

    /**
     * Issue 51, finding 2: a Negotiate after a Challenge no Reply answered is offered the same DH key again, so
     * restarting transactions does not make the target generate a key each time; the transaction still authenticates,
     * and a key once combined with a host value is not offered again.
     */
    @Test
    void aRestartedTransactionIsOfferedTheUnusedKeyAndAUsedOneIsNotReused() throws Exception {
        HostSide side = new HostSide(DH, DH_KEY, DH_CTRL_KEY, ALL_HASHES, ALL_GROUPS);
        try (RawTcpHost admin = connect(DH, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(admin, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            RawTcpHost.Reply first = authReceive(admin, 4096);
            byte[] offered = Challenge.decode(first.data()).dhValue();
            Transcript t = authenticate(admin, side, 2); // a new transaction on the same queue
            assertArrayEquals(offered, t.challenge.dhValue(), "the unused key is offered again, not a new one");
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(t.success1), "and the transaction authenticates");
            Transcript again = authenticate(admin, side, 3); // re-authentication: the key was used
            assertFalse(java.util.Arrays.equals(offered, again.challenge.dhValue()), "a used key is not offered again");
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(again.success1));
            try (RawTcpHost other = connect(DH, 0, 0xFFFF)) {
                Transcript o = authenticate(other, side, 4);
                assertFalse(java.util.Arrays.equals(offered, o.challenge.dhValue()), "another queue has its own key");
            }
        }
    }

    /**
     * Issue 51, finding 4: a peer that knows the host NQN and the controller ID connects QID 1 of an authenticated
     * controller first and never authenticates. It held the QID, and the real host's Connect for it was refused until
     * the peer left or its 60 s passed; a queue takes its QID only once it has authenticated now, so the real host
     * connects it, authenticates and is served, and the peer's queue, which cannot authenticate, serves nothing.
     */
    @Test
    void anUnauthenticatedQueueDoesNotHoldTheQidOfAnAuthenticatedController() throws Exception {
        HostSide side = new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS);
        try (RawTcpHost admin = connect(PLAIN, 0, 0xFFFF)) {
            authenticate(admin, side, 1);
            assertServed(admin);
            try (RawTcpHost squatter = connect(PLAIN, 1, admin.cntlid); // accepted: it may still authenticate
                 RawTcpHost io = connect(PLAIN, 1, admin.cntlid)) { // refused before: the QID was taken
                assertEquals(Status.AUTH_REQUIRED | Status.DNR, squatter.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0,
                        1, 512, false), null).status());
                authenticate(io, side, 2);
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), null)
                        .status(), "the host's own queue serves once authenticated");
                assertEquals(Status.AUTH_REQUIRED | Status.DNR, squatter.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0,
                        1, 512, false), null).status(), "the other serves nothing");
            }
            // With the host's queue gone, another one of the host's can take the QID again.
            int cntlid = admin.cntlid;
            assertTrue(TestTargets.eventually(() -> target.core().subsystem(SUB).controller(cntlid).queue(1) == null,
                    5_000), "the closed queue left its QID");
            try (RawTcpHost io = connect(PLAIN, 1, admin.cntlid)) {
                authenticate(io, side, 3);
                assertEquals(Status.SUCCESS, io.execute(RawTcpHost.rwSqe(Opcodes.IO_READ, 1, 0, 1, 512, false), null)
                        .status());
            }
        }
    }

    @Test
    void aWrongSecretGetsFailure1AndTheQueueCloses() throws Exception {
        io.nvmeof.tgt.core.Subsystem sub = target.core().subsystem(SUB);
        long failures = sub.authenticationFailures();
        long successes = sub.authenticationSuccesses();
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            Transcript t = authenticate(h, new HostSide(PLAIN, secret(32, DhchapHash.SHA256), null, ALL_HASHES,
                    ALL_GROUPS), 3);
            assertEquals(AuthMessages.EXP_FAILED, failureOf(t.success1));
            assertTrue(h.closedByTarget(), "the queue is closed after Failure1");
        }
        assertEquals(failures + 1, sub.authenticationFailures(), "the failure is counted (/metrics)");
        theRightSecretAuthenticatesAndNothingIsServedBefore(); // the host with the right secret is untouched
        assertEquals(successes + 1, sub.authenticationSuccesses(), "the success is counted");
    }

    @Test
    void aReplayedReplyIsRefused() throws Exception {
        byte[] captured;
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            captured = authenticate(h, new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS), 9).replyMessage;
        }
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(9, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            assertEquals(Status.SUCCESS, authReceive(h, 4096).cqe().status());
            authSend(h, captured); // an eavesdropper's copy of a good Reply, to another challenge
            assertEquals(AuthMessages.EXP_FAILED, failureOf(authReceive(h, 4096).data()));
            assertTrue(h.closedByTarget());
        }
    }

    @Test
    void aDowngradeToTheNullGroupIsRefused() throws Exception {
        try (RawTcpHost h = connect(DH, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(4, 0, ALL_HASHES, new int[] {0}).encode()).status());
            assertEquals(AuthMessages.EXP_DHGROUP_UNUSABLE, failureOf(authReceive(h, 4096).data()));
            assertTrue(h.closedByTarget());
        }
    }

    @Test
    void aWrongTransactionIdOrMessageOutOfTurnIsRefused() throws Exception {
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(5, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            Challenge c = Challenge.decode(authReceive(h, 4096).data());
            byte[] r1 = Dhchap.hostResponse(DhchapHash.SHA256, PLAIN_KEY.transform(PLAIN), c.challenge(), c.seqnum(), 6,
                    0, PLAIN, SUB);
            authSend(h, new Reply(6, r1, null, 0, new byte[0]).encode());
            assertEquals(AuthMessages.EXP_INCORRECT_PAYLOAD, failureOf(authReceive(h, 4096).data()));
            assertTrue(h.closedByTarget());
        }
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            authSend(h, AuthMessages.success2(0)); // Success2 before anything
            assertEquals(AuthMessages.EXP_INCORRECT_MESSAGE, failureOf(authReceive(h, 4096).data()));
            assertTrue(h.closedByTarget());
        }
    }

    @Test
    void oversizedOrMalformedAuthenticationCommandsAreRefusedAndChangeNothing() throws Exception {
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            byte[] big = authSendSqe(8193);
            RawTcpHost.sgl(big).transportBlock(8193);
            assertEquals(Status.INVALID_FIELD | Status.DNR, h.execute(big, null).status(), "TL beyond 8 KiB");
            byte[] badSecp = authSendSqe(72);
            new UnsafeBuffer(badSecp).putByte(FabricsCommand.SECP, (byte) 0xEA);
            assertEquals(Status.INVALID_FIELD | Status.DNR,
                    h.execute(badSecp, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status(), "SECP");
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            assertEquals(Status.INVALID_FIELD | Status.DNR, authReceive(h, 20).cqe().status(),
                    "AL too small for the Challenge");
            // Nothing changed: the transaction goes on to success.
            Challenge c = Challenge.decode(authReceive(h, 4096).data());
            byte[] r1 = Dhchap.hostResponse(DhchapHash.SHA256, PLAIN_KEY.transform(PLAIN), c.challenge(), c.seqnum(), 1,
                    0, PLAIN, SUB);
            assertEquals(Status.SUCCESS, authSend(h, new Reply(1, r1, null, 0, new byte[0]).encode()).status());
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(authReceive(h, 4096).data()));
            assertServed(h);
        }
    }

    @Test
    void aHostWithoutASecretConnectsAsBeforeAndCannotAuthenticate() throws Exception {
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, SUB, OPEN, 0);
            assertEquals(Status.SUCCESS, c.status());
            assertEquals(0, (c.dw0() >>> 17) & 1, "no AUTHREQ for a host without a secret");
            assertEquals(Status.INVALID_FIELD | Status.DNR,
                    authSend(h, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            assertServed(h);
        }
    }

    @Test
    void aQueueThatNeverAuthenticatesIsClosedAndRefusedCommandsDoNotKeepItAlive() throws Exception {
        io.nvmeof.tgt.auth.QueueAuthentication.deadline(java.time.Duration.ofMillis(1500));
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            long t0 = System.nanoTime();
            // Keep Alives every 300 ms: refused (Authentication Required) and no reason to keep the queue.
            boolean closed = false;
            while (!closed && System.nanoTime() - t0 < 8_000_000_000L) {
                byte[] ka = RawTcpHost.sqe();
                RawTcpHost.cmd(ka).opcode(Opcodes.ADMIN_KEEP_ALIVE);
                try {
                    assertEquals(Status.AUTH_REQUIRED | Status.DNR, h.execute(ka, null).status());
                    Thread.sleep(300);
                } catch (java.io.IOException e) {
                    closed = true;
                }
            }
            assertTrue(closed || h.closedByTarget(), "closed after the deadline");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 1400 && ms < 5000, "closed after " + ms + " ms");
        } finally {
            io.nvmeof.tgt.auth.QueueAuthentication.deadline(null);
        }
    }

    /**
     * Review of issue 51's fix for finding 4: an I/O queue that waits for its QID until it authenticates is closed at
     * the authentication deadline like any other (the sweep looked at the QID slots only, so such a queue, and its
     * reservation, stayed for as long as the controller lived).
     */
    @Test
    void aPendingIoQueueThatNeverAuthenticatesIsClosedAtTheDeadline() throws Exception {
        io.nvmeof.tgt.auth.QueueAuthentication.deadline(java.time.Duration.ofMillis(1500));
        try (RawTcpHost admin = connect(PLAIN, 0, 0xFFFF)) {
            authenticate(admin, new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS), 31);
            assertServed(admin);
            try (RawTcpHost io = connect(PLAIN, 1, admin.cntlid)) {
                io.soTimeout(8000);
                long t0 = System.nanoTime();
                assertTrue(io.closedByTarget(), "closed at the deadline");
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms < 7000, "closed after " + ms + " ms");
            }
            assertServed(admin); // the controller itself goes on
        } finally {
            io.nvmeof.tgt.auth.QueueAuthentication.deadline(null);
        }
    }

    /**
     * Issue 51, finding 3: a host with a secret authenticates, registers and takes Write Exclusive; a host without one
     * (allowed on the subsystem) reads its Host ID from Reservation Report and connects with it. It was let in and
     * wrote through the reservation; the Host ID belongs to the host that authenticated with it now, so the Connect is
     * refused (Connect Invalid Host), and a controller that used the ID before its owner authenticated ends then.
     */
    @Test
    void anAuthenticatedHostsIdIsNotLentToAHostWithoutASecret() throws Exception {
        java.util.UUID owned = java.util.UUID.randomUUID();
        // A host without a secret that happens to use the ID first: its association ends when the owner proves itself.
        io.nvmeof.initiator.NvmeofController early = io.nvmeof.initiator.NvmeofController.connect(
                new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, SUB),
                io.nvmeof.initiator.ConnectOptions.builder().hostNqn(OPEN).hostId(owned)
                        .ctrlLossTimeout(java.time.Duration.ZERO).build());
        try (io.nvmeof.initiator.NvmeofController a = io.nvmeof.initiator.NvmeofController.connect(
                new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, SUB),
                io.nvmeof.initiator.ConnectOptions.builder().hostNqn(PLAIN).hostId(owned)
                        .dhchapSecret(PLAIN_KEY.representation()).ctrlLossTimeout(java.time.Duration.ZERO).build())) {
            assertTrue(TestTargets.eventually(() -> !early.isConnected(), 5_000),
                    "the association that borrowed the ID ended once its owner authenticated");
            early.close();
            var ns = a.namespace(1);
            ns.reservations().register(0xA1, 0).get(5, java.util.concurrent.TimeUnit.SECONDS);
            ns.reservations().acquire(0xA1, io.nvmeof.protocol.reservation.Reservations.WRITE_EXCLUSIVE)
                    .get(5, java.util.concurrent.TimeUnit.SECONDS);
            java.util.UUID seen = ns.reservations().report().get(5, java.util.concurrent.TimeUnit.SECONDS)
                    .registrants().get(0).hostId();
            assertEquals(owned, seen, "the Host ID any host can read from Reservation Report");
            io.nvmeof.initiator.NvmeStatusException refused = org.junit.jupiter.api.Assertions.assertThrows(
                    io.nvmeof.initiator.NvmeStatusException.class,
                    () -> io.nvmeof.initiator.NvmeofController.connect(
                            new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, SUB),
                            io.nvmeof.initiator.ConnectOptions.builder().hostNqn(OPEN).hostId(seen)
                                    .ctrlLossTimeout(java.time.Duration.ZERO).build()));
            assertEquals(Status.CONNECT_INVALID_HOST, Status.code(refused.status()), refused.toString());
            // The owner itself connects with it as before.
            try (io.nvmeof.initiator.NvmeofController again = io.nvmeof.initiator.NvmeofController.connect(
                    new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, SUB),
                    io.nvmeof.initiator.ConnectOptions.builder().hostNqn(PLAIN).hostId(owned)
                            .dhchapSecret(PLAIN_KEY.representation()).ctrlLossTimeout(java.time.Duration.ZERO).build())) {
                assertTrue(again.isConnected());
            }
            ns.reservations().release(0xA1, io.nvmeof.protocol.reservation.Reservations.WRITE_EXCLUSIVE)
                    .get(5, java.util.concurrent.TimeUnit.SECONDS);
            ns.reservations().unregister(0xA1).get(5, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    static io.nvmeof.initiator.NvmeofController initiator(String hostNqn, DhchapSecret key, DhchapSecret ctrlKey) {
        io.nvmeof.initiator.ConnectOptions.Builder b = io.nvmeof.initiator.ConnectOptions.builder().hostNqn(hostNqn)
                .ioQueues(2).ctrlLossTimeout(java.time.Duration.ZERO);
        if (key != null) {
            b.dhchapSecret(key.representation());
        }
        if (ctrlKey != null) {
            b.dhchapCtrlSecret(ctrlKey.representation());
        }
        return io.nvmeof.initiator.NvmeofController.connect(
                new io.nvmeof.initiator.TransportId("tcp", "127.0.0.1", port, SUB), b.build());
    }

    @Test
    void ourInitiatorAuthenticatesEveryQueueBothWaysAndMovesData() throws Exception {
        try (io.nvmeof.initiator.NvmeofController c = initiator(DH, DH_KEY, DH_CTRL_KEY)) {
            io.nvmeof.initiator.NamespaceHandle ns = c.namespace(1);
            java.nio.ByteBuffer src = java.nio.ByteBuffer.allocateDirect(4096);
            for (int i = 0; i < 4096; i++) {
                src.put(i, (byte) (i * 7));
            }
            ns.write(8, 8, src).get(10, java.util.concurrent.TimeUnit.SECONDS);
            java.nio.ByteBuffer dst = java.nio.ByteBuffer.allocateDirect(4096);
            ns.read(8, 8, dst).get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(src, dst);
        }
        try (io.nvmeof.initiator.NvmeofController c = initiator(PLAIN, PLAIN_KEY, null)) {
            assertEquals(8L << 20, c.namespace(1).blockCount() * c.namespace(1).blockSize());
        }
    }

    @Test
    void ourInitiatorSaysWhyWhenRefusedOrWhenTheControllerIsNotWhoItClaims() {
        io.nvmeof.initiator.NvmeofException wrong = org.junit.jupiter.api.Assertions.assertThrows(
                io.nvmeof.initiator.NvmeofException.class, () -> initiator(PLAIN, secret(32, null), null).close());
        assertTrue(wrong.getMessage().contains("refused the host's authentication"), wrong.getMessage());
        io.nvmeof.initiator.NvmeofException none = org.junit.jupiter.api.Assertions.assertThrows(
                io.nvmeof.initiator.NvmeofException.class, () -> initiator(PLAIN, null, null).close());
        assertTrue(none.getMessage().contains("dhchapSecret"), none.getMessage());
        // The host holds a controller secret the target does not: the target's response cannot match it.
        io.nvmeof.initiator.NvmeofException impostor = org.junit.jupiter.api.Assertions.assertThrows(
                io.nvmeof.initiator.NvmeofException.class, () -> initiator(DH, DH_KEY, secret(32, null)).close());
        assertTrue(impostor.getMessage().contains("controller's response does not match"), impostor.getMessage());
        assertFalse(impostor.getMessage().contains("DHHC-1"), "no secret in the message");
    }

    /**
     * Review finding 1: an Authentication Send whose data comes by R2T was parsed while no step ran, so a Receive sent
     * before its data could run beside it; a failing step then completed the Receive with whatever the pooled buffer
     * held (another host's data). One authentication command at a time: the second is refused, and a Receive returns
     * a whole message in a zeroed buffer or an error, never stale bytes.
     */
    @Test
    void aSecondAuthenticationCommandWhileOneIsPendingIsRefusedAndNothingStaleIsReturned() throws Exception {
        try (RawTcpHost h = connect(DH, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            byte[] bad = new Negotiate(1, 0, new int[] {0xFF}, ALL_GROUPS).encode();
            byte[] sqe = authSendSqe(bad.length);
            RawTcpHost.sgl(sqe).transportBlock(bad.length); // the data by R2T, not in the capsule
            RawTcpHost.cmd(sqe).cid(1000);
            h.send(h.capsule(sqe, null));
            byte[] r2t = h.readPdu();
            assertEquals(io.nvmeof.protocol.tcp.PduHeader.TYPE_R2T, r2t[0]);
            int ttag = new io.nvmeof.protocol.tcp.R2TPdu().<io.nvmeof.protocol.tcp.R2TPdu>wrap(new UnsafeBuffer(r2t), 0)
                    .ttag();
            byte[] rsqe = RawTcpHost.sqe();
            new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(rsqe), 0).fctype(Opcodes.FCTYPE_AUTH_RECEIVE)
                    .auth(8192).opcode(Opcodes.FABRICS);
            RawTcpHost.sgl(rsqe).transportBlock(8192);
            RawTcpHost.cmd(rsqe).cid(1001);
            h.send(h.capsule(rsqe, null));
            h.send(h.h2cData(1000, ttag, 0, bad, true));
            byte[] data = new byte[8192];
            int receiveStatus = -1;
            int responses = 0;
            while (responses < 2) {
                byte[] p = h.readPdu();
                if (p[0] == io.nvmeof.protocol.tcp.PduHeader.TYPE_C2H_DATA) {
                    io.nvmeof.protocol.tcp.DataPdu d = new io.nvmeof.protocol.tcp.DataPdu().wrap(new UnsafeBuffer(p), 0);
                    System.arraycopy(p, d.pdo(), data, (int) d.datao(), (int) d.datal());
                } else if (p[0] == io.nvmeof.protocol.tcp.PduHeader.TYPE_CAPSULE_RESP) {
                    Completion c = new Completion().wrap(new UnsafeBuffer(Arrays.copyOfRange(p, 8, 24)), 0);
                    if (c.cid() == 1001) {
                        receiveStatus = c.status();
                    }
                    responses++;
                }
            }
            assertEquals(Status.COMMAND_SEQUENCE_ERROR | Status.DNR, receiveStatus,
                    "a Receive while a Send waits for its data is refused");
            for (byte b : data) {
                assertEquals(0, b, "no data comes back with a refused Receive");
            }
        }
    }

    /** Review finding 6: a failed re-authentication leaves the queue unauthenticated at once, Failure1 fetched or not. */
    @Test
    void aFailedReauthenticationStopsServiceAtOnce() throws Exception {
        try (RawTcpHost h = connect(PLAIN, 0, 0xFFFF)) {
            authenticate(h, new HostSide(PLAIN, PLAIN_KEY, null, ALL_HASHES, ALL_GROUPS), 1);
            assertServed(h);
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(2, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            Challenge c = Challenge.decode(authReceive(h, 4096).data());
            authSend(h, new Reply(2, new byte[32], null, 0, new byte[0]).encode()); // a wrong response
            int status;
            try {
                status = h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status();
            } catch (java.io.IOException closed) {
                status = -1; // closed: not served either
            }
            assertNotEquals(Status.SUCCESS, status, "Identify after a failed re-authentication");
            assertNotNull(c);
        }
    }

    /**
     * Review finding 3: a failed transaction cannot be restarted on the same queue (each restart costs the target a
     * DH key pair): after a failure every Send keeps the failure, and the next Receive returns Failure1.
     */
    @Test
    void aFailedTransactionCannotBeRestartedOnTheSameQueue() throws Exception {
        try (RawTcpHost h = connect(DH, 0, 0xFFFF)) {
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(1, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            Challenge.decode(authReceive(h, 4096).data());
            byte[] value = DhExchange.generate(DhGroup.FFDHE2048, RANDOM).publicValue();
            authSend(h, new Reply(1, new byte[48], null, 0, value).encode()); // a wrong response
            assertEquals(Status.SUCCESS, authSend(h, new Negotiate(2, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            assertEquals(AuthMessages.EXP_FAILED, failureOf(authReceive(h, 4096).data()), "no fresh challenge");
            assertTrue(h.closedByTarget());
        }
    }

    /** Review finding 4: a host that holds a controller secret refuses a controller that never asks it to authenticate. */
    @Test
    void ourInitiatorWithAControllerSecretRefusesAControllerThatDoesNotAuthenticate() {
        io.nvmeof.initiator.NvmeofException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.nvmeof.initiator.NvmeofException.class, () -> initiator(OPEN, DH_KEY, DH_CTRL_KEY).close());
        assertTrue(e.getMessage().contains("did not ask"), e.getMessage());
    }

    /** An Identify on a queue that is served (authenticated, or never asked to). */
    static int identify(RawTcpHost h) throws Exception {
        return h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null).status();
    }

    static HostSide rotatedSide(DhchapSecret key) {
        return new HostSide(ROTATED, key, null, ALL_HASHES, ALL_GROUPS);
    }

    /**
     * Key rotation as nvmet and SPDK do it (issue 34): a queue that authenticated keeps serving, a transaction in
     * progress finishes with the key it began with, and every new Connect and re-authentication uses the new key.
     */
    @Test
    void aRotatedKeyAppliesFromTheNextTransactionAndAuthenticatedQueuesKeepServing() throws Exception {
        DhchapSecret oldKey = secret(32, null);
        DhchapSecret newKey = secret(48, DhchapHash.SHA384);
        io.nvmeof.tgt.live.LiveConfiguration live = target.live();
        live.hostSecrets().setHostAuthentication(new HostConfig(ROTATED, oldKey.representation(), null, null, null));
        try (RawTcpHost authenticated = connect(ROTATED, 0, 0xFFFF); RawTcpHost midway = connect(ROTATED, 0, 0xFFFF)) {
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(authenticate(authenticated, rotatedSide(oldKey), 1)
                    .success1));
            assertServed(authenticated);
            assertEquals(Status.SUCCESS, authSend(midway, new Negotiate(2, 0, ALL_HASHES, ALL_GROUPS).encode()).status());
            Challenge c = Challenge.decode(authReceive(midway, 4096).data());

            live.hostSecrets().setHostAuthentication(new HostConfig(ROTATED, newKey.representation(), null, null, null));

            byte[] r1 = Dhchap.hostResponse(DhchapHash.SHA256, oldKey.transform(ROTATED), c.challenge(), c.seqnum(), 2,
                    0, ROTATED, SUB);
            assertEquals(Status.SUCCESS, authSend(midway, new Reply(2, r1, null, 0, new byte[0]).encode()).status());
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(authReceive(midway, 4096).data()),
                    "the transaction begun before the rotation finishes with the old key");
            assertServed(midway);
            assertEquals(Status.SUCCESS, identify(authenticated), "an authenticated queue keeps serving");

            try (RawTcpHost stale = connect(ROTATED, 0, 0xFFFF)) {
                assertEquals(AuthMessages.EXP_FAILED, failureOf(authenticate(stale, rotatedSide(oldKey), 3).success1),
                        "a new connection with the old key");
            }
            assertEquals(AuthMessages.ID_SUCCESS1, AuthMessages.id(authenticate(authenticated, rotatedSide(newKey), 4)
                    .success1), "a re-authentication takes the new key");
            assertEquals(Status.SUCCESS, identify(authenticated));
            try (RawTcpHost fresh = connect(ROTATED, 0, 0xFFFF)) {
                authenticate(fresh, rotatedSide(newKey), 5);
                assertServed(fresh);
            }

            // Removed: the host's next Connect needs no secret; its authenticated queues keep serving, and a
            // re-authentication fails, since it has no secret here any more.
            live.hostSecrets().removeHostAuthentication(ROTATED);
            assertEquals(Status.SUCCESS, identify(midway), "an authenticated queue keeps serving after the removal");
            try (RawTcpHost open = new RawTcpHost(port)) {
                open.initialize(0);
                Completion connected = open.connect(0, 31, 0xFFFF, SUB, ROTATED, 0);
                assertEquals(0, (connected.dw0() >>> 17) & 1, "no AUTHREQ once the settings are removed");
            }
            assertEquals(Status.SUCCESS, authSend(authenticated, new Negotiate(6, 0, ALL_HASHES, ALL_GROUPS).encode())
                    .status());
            assertEquals(AuthMessages.EXP_FAILED, failureOf(authReceive(authenticated, 4096).data()));
            assertTrue(authenticated.closedByTarget());
        } finally {
            try {
                live.hostSecrets().removeHostAuthentication(ROTATED);
            } catch (io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException alreadyRemoved) {
                // removed by the test itself
            }
        }
    }

    /** Review finding 2: the import's answer (a dry run of an empty document too) carries no secret. */
    @Test
    void theImportsAnswerCarriesNoSecret() {
        TargetConfig empty = new TargetConfig(null, null, null, null, null, null);
        String json = target.live().importConfiguration(empty, io.nvmeof.tgt.live.LiveConfiguration.ImportMode.MERGE, true, n -> { })
                .config().toJson();
        assertFalse(json.contains("DHHC-1"), json);
    }

    @Test
    void theExportCarriesNoSecret() {
        String json = target.live().export().toJson();
        assertFalse(json.contains("DHHC-1"), json);
        assertFalse(target.core().hostAuth().lookup(DH).toString().contains("DHHC-1:0"));
        assertFalse(Arrays.toString(new Object[] {PLAIN_KEY}).contains(PLAIN_KEY.representation()));
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.auth.AuthMessages;
import io.nvmeof.protocol.auth.AuthMessages.Negotiate;
import io.nvmeof.protocol.auth.DhchapHash;
import io.nvmeof.protocol.auth.DhchapSecret;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.MemoryBudget;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 51, findings 1 and 2: a flood of connections from one address that proves nothing (keyless discovery
 * Connects, queues naming a real host that never authenticate, Negotiates that ask for the costliest DH group) must
 * not lock other hosts out. Before, 164 such queues took this target's 64 MiB, after which every Connect from every
 * host got Controller Busy; and the authentication threads served the flood's steps first come first served.
 *
 * <p>The flood comes from 127.0.0.2, the hosts from 127.0.0.1: two machines to the target's per-source limits.
 * Figures (connect times, I/O during the flood) are printed, not asserted: the assertions are that the hosts get in
 * and are served, and that the flood holds no more than its address's allowance.
 */
@Timeout(300)
class HostLockoutTest {
    static final String SUB = "nqn.2026-12.io.nvmeof:lockout";
    /** Authenticates (null DH group). */
    static final String KEYED = "nqn.2014-08.org.nvmexpress:uuid:10c0c0c0-0000-4000-8000-000000000001";
    /** Configured for ffdhe8192: the host an attacker names to make each Challenge cost the target most. */
    static final String HEAVY = "nqn.2014-08.org.nvmexpress:uuid:10c0c0c0-0000-4000-8000-000000000002";
    /** Allowed without a secret. */
    static final String OPEN = "nqn.2014-08.org.nvmexpress:uuid:10c0c0c0-0000-4000-8000-000000000003";
    static final String ATTACKER = "127.0.0.2";
    static final DhchapSecret KEYED_KEY = AuthenticationTest.secret(32, DhchapHash.SHA256);
    static final DhchapSecret HEAVY_KEY = AuthenticationTest.secret(32, DhchapHash.SHA256);
    /** Admin queues as large as a Connect may ask: what costs the target most memory per connection. */
    static final int SQSIZE = 127;

    NvmeTarget target;
    int port;
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        TargetConfig cfg = new TargetConfig(1, 2, 128, 128 << 10,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(SUB, null, null, null, false, List.of(KEYED, HEAVY, OPEN),
                        List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null)))))
                .withHosts(List.of(new HostConfig(KEYED, KEYED_KEY.representation(), null, null, null),
                        new HostConfig(HEAVY, HEAVY_KEY.representation(), null, null, "ffdhe8192")))
                .withMemoryLimits("4MiB", "64MiB");
        target = NvmeTarget.start(cfg);
        port = target.tcpPort(0);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception e) {
                // the target may have closed it
            }
        }
        target.close();
    }

    /** Connect results of a flood. */
    record Flood(int accepted, int refused, List<Integer> refusals) {
    }

    /**
     * {@code attempts} connections from {@link #ATTACKER}, each an admin Connect to {@code subnqn} as {@code hostNqn}
     * (a new random one each when null); those accepted are kept open (and never authenticate).
     */
    Flood flood(int attempts, String subnqn, String hostNqn) throws IOException {
        return flood(ATTACKER, attempts, subnqn, hostNqn);
    }

    Flood flood(String from, int attempts, String subnqn, String hostNqn) throws IOException {
        int accepted = 0;
        List<Integer> refusals = new ArrayList<>();
        for (int i = 0; i < attempts; i++) {
            RawTcpHost h = new RawTcpHost(from, port);
            h.initialize(0);
            String nqn = hostNqn != null ? hostNqn : "nqn.2014-08.org.nvmexpress:uuid:" + UUID.randomUUID();
            Completion c = h.connect(0, SQSIZE, 0xFFFF, subnqn, nqn, 0);
            if (c.status() == Status.SUCCESS) {
                accepted++;
                open.add(h);
            } else {
                refusals.add(c.status());
                h.close();
            }
        }
        return new Flood(accepted, refusals.size(), refusals);
    }

    NvmeofController connect(String hostNqn, DhchapSecret secret) {
        ConnectOptions.Builder b = ConnectOptions.builder().hostNqn(hostNqn).ioQueues(2)
                .ctrlLossTimeout(Duration.ZERO);
        if (secret != null) {
            b.dhchapSecret(secret.representation());
        }
        return NvmeofController.connect(TransportId.tcp("127.0.0.1", port, SUB), b.build());
    }

    /** Reads for {@code ms} with 8 in flight; returns how many completed (each checked). */
    static long readsFor(NvmeofController c, long ms) throws Exception {
        List<ByteBuffer> bufs = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            bufs.add(ByteBuffer.allocateDirect(4096));
        }
        long done = 0;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < end) {
            List<java.util.concurrent.CompletableFuture<?>> f = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                f.add(c.namespace(1).read(i * 8L, 8, bufs.get(i).clear()));
            }
            for (var x : f) {
                x.get(10, TimeUnit.SECONDS);
                done++;
            }
        }
        return done;
    }

    /** The flood holds no more than one address's allowance, and its refusals say "retry later" (no DNR). */
    void assertBounded(Flood f, int attempts) {
        MemoryBudget m = target.core().memory();
        assertTrue(f.refused() > 0, "one address cannot open " + attempts + " queues that prove nothing: " + f);
        for (int s : f.refusals()) {
            assertEquals(Status.CONNECT_CONTROLLER_BUSY, s, "refused as busy, retryable: " + Status.name(s));
        }
        assertTrue(m.untrustedUsedBy(ATTACKER) <= m.perSourceLimit(), m.untrustedUsedBy(ATTACKER) + " bytes held");
        assertTrue(m.untrustedUsed() <= m.untrustedLimit());
    }

    /** Another host connects and authenticates while the flood holds what it could; returns how long it took. */
    long authenticatedHostConnects() throws Exception {
        long t0 = System.nanoTime();
        try (NvmeofController c = connect(KEYED, KEYED_KEY)) {
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            TlsTest.writeAndReadBack(c);
            return ms;
        }
    }

    @Test
    void aKeylessDiscoveryFloodFromOneAddressLocksNobodyOut() throws Exception {
        NvmeofController before = connect(OPEN, null);
        open.add(before);
        long quiet = readsFor(before, 1000);
        int attempts = 400;
        Flood f = flood(attempts, Nqn.DISCOVERY, null);
        assertBounded(f, attempts);
        long during = readsFor(before, 1000);
        long ms = authenticatedHostConnects();
        try (NvmeofController c = connect(OPEN, null)) {
            TlsTest.writeAndReadBack(c); // an allowed host without a secret too
        }
        try (RawTcpHost h = new RawTcpHost(port)) { // discovery from another address still answers
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, Nqn.DISCOVERY, OPEN, 0).status());
        }
        System.out.printf("keyless discovery flood from %s: %d connections kept, %d refused; an authenticated host"
                + " connected (admin and 2 I/O queues) in %d ms; a connected host's 4 KiB reads: %d/s before, %d/s"
                + " during%n", ATTACKER, f.accepted(), f.refused(), ms, quiet, during);
    }

    @Test
    void queuesNamingAHostThatNeverAuthenticateLockNobodyOut() throws Exception {
        int attempts = 400;
        Flood f = flood(attempts, SUB, KEYED); // the real host's NQN: each must authenticate, none does
        assertBounded(f, attempts);
        long ms = authenticatedHostConnects();
        try (NvmeofController c = connect(OPEN, null)) {
            TlsTest.writeAndReadBack(c);
        }
        System.out.printf("unauthenticated admin queues naming %s from %s: %d kept, %d refused; the host itself"
                + " connected and authenticated in %d ms%n", KEYED, ATTACKER, f.accepted(), f.refused(), ms);
    }

    /**
     * Review of finding 1: floods from several addresses, each within its own allowance, together fill the total
     * one; a host that then comes to authenticate (or to discover) is let in by closing the oldest queue of the
     * address that holds most. Before, it was refused Controller Busy for as long as the floods held on.
     */
    @Test
    void floodsFromSeveralAddressesGiveWayToAHostThatComesToAuthenticate() throws Exception {
        MemoryBudget m = target.core().memory();
        int kept = 0;
        for (int a = 2; a <= 12; a++) {
            kept += flood("127.0.0." + a, 10, a % 2 == 0 ? Nqn.DISCOVERY : SUB, a % 2 == 0 ? null : KEYED).accepted();
        }
        assertTrue(m.untrustedUsed() > m.untrustedLimit() - m.perSourceLimit(),
                "the floods hold the allowance: " + m.untrustedUsed() + " of " + m.untrustedLimit());
        long ms = authenticatedHostConnects();
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, Nqn.DISCOVERY, OPEN, 0).status(), "discovery too");
        }
        System.out.printf("floods from 127.0.0.2-12 kept %d queues (%d of %d bytes of the allowance); the authenticated"
                + " host connected in %d ms%n", kept, m.untrustedUsed(), m.untrustedLimit(), ms);
    }

    /**
     * Review of finding 1: a discovery host that asks for log pages and never reads them. Each response's memory was
     * given back as soon as it was queued for the socket, so what waited there for a reader nobody counted; a queue
     * whose host proved nothing keeps it counted now, within its address's allowance, until the host has read it.
     */
    @Test
    void dataADiscoveryHostNeverReadsStaysCountedWithinItsAllowance() throws Exception {
        MemoryBudget m = target.core().memory();
        try (RawTcpHost h = new RawTcpHost(ATTACKER, port, 4096)) {
            h.bringUpAdmin(Nqn.DISCOVERY);
            long reserved = m.untrustedUsedBy(ATTACKER);
            int length = 128 << 10; // the target's largest transfer
            for (int i = 0; i < 400; i++) { // 50 MiB asked for, none read
                byte[] sqe = RawTcpHost.sqe();
                RawTcpHost.cmd(sqe).cid(100 + i).opcode(io.nvmeof.protocol.Opcodes.ADMIN_GET_LOG_PAGE)
                        .cdw10(io.nvmeof.protocol.Opcodes.LOG_DISCOVERY | (length / 4 - 1) << 16);
                RawTcpHost.sgl(sqe).transportBlock(length);
                h.sendQuietly(h.capsule(sqe, null));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (m.untrustedUsedBy(ATTACKER) < m.perSourceLimit() - length && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            long held = m.untrustedUsedBy(ATTACKER);
            assertTrue(held > reserved + length, "the unread responses are counted: " + held + " bytes, " + reserved
                    + " of them the queue's reservation");
            assertTrue(held <= m.perSourceLimit(), "within the address's allowance: " + held);
            long ms = authenticatedHostConnects();
            System.out.printf("a discovery host that never reads: %d bytes of unread log pages counted (allowance %d);"
                    + " another host connected in %d ms%n", held - reserved, m.perSourceLimit(), ms);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (m.untrustedUsed() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(0, m.untrustedUsed(), "given back when the connection closes");
    }

    /**
     * Review of finding 1: a second Connect on a connection whose first still waits for its data (R2T) was run too,
     * reserving again; mixing a discovery Connect with a trusted one then released trusted bytes as untrusted and
     * left the first controller without its queue. It is refused now, and the counts go back to where they were.
     */
    @Test
    void aSecondConnectWhileTheFirstWaitsForItsDataIsRefused() throws Exception {
        MemoryBudget m = target.core().memory();
        long used = m.used();
        try (RawTcpHost h = new RawTcpHost(port)) {
            h.initialize(0);
            byte[] first = RawTcpHost.connectSqe(0, SQSIZE, 0);
            RawTcpHost.sgl(first).transportBlock(io.nvmeof.protocol.fabrics.ConnectData.LENGTH);
            RawTcpHost.cmd(first).cid(1);
            int ttag = h.sendForR2T(first); // the first Connect's data is asked for
            byte[] second = RawTcpHost.connectSqe(0, SQSIZE, 0);
            RawTcpHost.cmd(second).cid(2);
            h.send(h.capsule(second, RawTcpHost.connectData(0xFFFF, Nqn.DISCOVERY, OPEN)));
            Completion c2 = h.awaitResponse();
            assertEquals(2, c2.cid());
            assertEquals(Status.COMMAND_SEQUENCE_ERROR | Status.DNR, c2.status(), "one Connect per connection");
            h.send(h.h2cData(1, ttag, 0, RawTcpHost.connectData(0xFFFF, SUB, OPEN), true));
            Completion c1 = h.awaitResponse();
            assertEquals(1, c1.cid());
            assertEquals(Status.SUCCESS, c1.status(), "the first is served");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((m.used() != used || m.untrustedUsed() != 0) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(used, m.used(), "every byte given back");
        assertEquals(0, m.untrustedUsed());
    }

    /**
     * Finding 2: queues from one address naming the ffdhe8192 host send Negotiate and read the Challenge over and
     * over (each Challenge is a DH key the target generates). Another host's authentication is served in turn with
     * them, not after them.
     */
    @Test
    void aNegotiationFloodFromOneAddressDoesNotStarveAnotherHostsAuthentication() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong challenges = new AtomicLong();
        AtomicLong interrupted = new AtomicLong();
        List<Thread> attackers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            Thread th = new Thread(() -> negotiateForever(stop, challenges, interrupted), "attacker-" + t);
            th.setDaemon(true);
            th.start();
            attackers.add(th);
        }
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (challenges.get() < 20 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(challenges.get() >= 20, "the flood runs: " + challenges.get() + " Challenges");
            long worst = 0;
            for (int i = 0; i < 5; i++) {
                worst = Math.max(worst, authenticatedHostConnects());
            }
            System.out.printf("Negotiate flood (ffdhe8192) from %s: %d Challenges computed for it, %d of its steps"
                    + " answered Command Interrupted; another host connected and authenticated 5 times, slowest %d ms%n",
                    ATTACKER, challenges.get(), interrupted.get(), worst);
        } finally {
            stop.set(true);
            for (Thread th : attackers) {
                th.join(10_000);
            }
        }
    }

    /** One attacker thread: 40 connections, each Negotiate then Receive, again and again; reconnects as needed. */
    void negotiateForever(AtomicBoolean stop, AtomicLong challenges, AtomicLong interrupted) {
        RawTcpHost[] conns = new RawTcpHost[40];
        int tid = 1;
        while (!stop.get()) {
            for (int i = 0; i < conns.length && !stop.get(); i++) {
                try {
                    if (conns[i] == null) {
                        RawTcpHost h = new RawTcpHost(ATTACKER, port);
                        h.initialize(0);
                        if (h.connect(0, 31, 0xFFFF, SUB, HEAVY, 0).status() != Status.SUCCESS) {
                            h.close();
                            continue; // refused (its address's allowance is taken): try again next round
                        }
                        conns[i] = h;
                    }
                    tid = (tid + 1) & 0xFFFF;
                    Completion sent = AuthenticationTest.authSend(conns[i],
                            new Negotiate(tid, 0, new int[] {1}, new int[] {5}).encode());
                    if (sent.status() == Status.COMMAND_INTERRUPTED) {
                        interrupted.incrementAndGet();
                        continue;
                    }
                    RawTcpHost.Reply r = AuthenticationTest.authReceive(conns[i], 4096);
                    if (r.cqe().status() == Status.COMMAND_INTERRUPTED) {
                        interrupted.incrementAndGet();
                    } else if (r.cqe().status() == Status.SUCCESS
                            && AuthMessages.id(r.data()) == AuthMessages.ID_CHALLENGE) {
                        challenges.incrementAndGet();
                    } else {
                        conns[i].close();
                        conns[i] = null;
                    }
                } catch (Exception e) {
                    if (conns[i] != null) {
                        try {
                            conns[i].close();
                        } catch (IOException ignored) {
                            // gone already
                        }
                        conns[i] = null;
                    }
                }
            }
        }
        for (RawTcpHost h : conns) {
            if (h != null) {
                try {
                    h.close();
                } catch (IOException ignored) {
                    // gone already
                }
            }
        }
    }
}

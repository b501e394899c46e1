package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.tls.ConfiguredPsk;
import io.nvmeof.protocol.tls.TlsPskHash;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.HostConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * NVMe/TCP over TLS 1.3 with PSKs between our initiator and our target (the kernel host and nvmet with tlshd check
 * the same against each side in the guest suite): a listener that requires TLS, one that allows it, and one without;
 * keys derived either way; the discovery log's TREQ and TSAS; and each way of getting it wrong refused.
 */
class TlsTest {
    static final String SUB = "nqn.2026-12.io.nvmeof:tls";
    static final String OTHER_SUB = "nqn.2026-12.io.nvmeof:tls-other";
    static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-0000000000b1";
    /** Its key is derived the legacy way (nvme-cli 2.15 and earlier). */
    static final String LEGACY_HOST = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-0000000000b2";
    /** Has no TLS key. */
    static final String PLAIN_HOST = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-0000000000b3";
    static final String KEY = key(TlsPskHash.SHA256, 32);
    static final String LEGACY_KEY = key(TlsPskHash.SHA384, 48);

    static NvmeTarget target;
    static int requiredPort;
    static int allowedPort;
    static int plainPort;

    static String key(TlsPskHash hash, int length) {
        byte[] k = new byte[length];
        new SecureRandom().nextBytes(k);
        return ConfiguredPsk.format(hash, k);
    }

    @BeforeAll
    static void start() throws Exception {
        List<String> hosts = List.of(HOST, LEGACY_HOST, PLAIN_HOST);
        TargetConfig cfg = new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null, "required"),
                        new ListenerConfig(2, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null, "allowed"),
                        new ListenerConfig(3, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null, null)),
                List.of(new SubsystemConfig(SUB, null, null, null, false, hosts,
                                List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null))),
                        new SubsystemConfig(OTHER_SUB, null, null, null, false, hosts,
                                List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null)))))
                .withHosts(List.of(new HostConfig(HOST, null, null, null, null, KEY, null),
                        new HostConfig(LEGACY_HOST, null, null, null, null, LEGACY_KEY, "legacy")));
        target = NvmeTarget.start(cfg);
        requiredPort = target.tcpPort(0);
        allowedPort = target.tcpPort(1);
        plainPort = target.tcpPort(2);
    }

    @AfterAll
    static void stop() {
        target.close();
    }

    static ConnectOptions.Builder options(String hostNqn) {
        return ConnectOptions.builder().hostNqn(hostNqn).connectTimeout(Duration.ofSeconds(5)).ctrlLossTimeout(Duration.ZERO);
    }

    static NvmeofController connect(int port, String subnqn, ConnectOptions o) {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, subnqn), o);
    }

    /** Writes a pattern through {@code c} and reads it back. */
    static void writeAndReadBack(NvmeofController c) throws Exception {
        NamespaceHandle ns = c.namespace(1);
        int blocks = 64; // 32 KiB: more than one TLS record each way
        ByteBuffer out = ByteBuffer.allocateDirect(blocks * 512);
        for (int i = 0; i < out.capacity(); i++) {
            out.put(i, (byte) (i * 13 + 5));
        }
        ns.write(8, blocks, out).get(10, TimeUnit.SECONDS);
        ByteBuffer in = ByteBuffer.allocateDirect(blocks * 512);
        ns.read(8, blocks, in).get(10, TimeUnit.SECONDS);
        byte[] a = new byte[out.capacity()];
        byte[] b = new byte[in.capacity()];
        out.get(0, a);
        in.get(0, b);
        assertArrayEquals(a, b);
    }

    @Test
    void aHostWithItsKeyWritesAndReadsOverTlsEitherDerivation() throws Exception {
        try (NvmeofController c = connect(requiredPort, SUB, options(HOST).tlsKey(KEY).ioQueues(2).build())) {
            writeAndReadBack(c);
        }
        try (NvmeofController c = connect(allowedPort, SUB,
                options(LEGACY_HOST).tlsKey(LEGACY_KEY).tlsKeyDerivation("legacy").build())) {
            writeAndReadBack(c); // SHA-384: TLS_AES_256_GCM_SHA384
        }
    }

    @Test
    void theDiscoveryLogSaysWhichPortsTakeTls() throws Exception {
        try (NvmeofController d = connect(requiredPort, Nqn.DISCOVERY, options(HOST).tlsKey(KEY).build())) {
            List<DiscoveryEntry> log = d.discoveryLog();
            for (DiscoveryEntry e : log) {
                int port = Integer.parseInt(e.trsvcid());
                int treq = e.treq() & 3;
                if (port == requiredPort) {
                    assertEquals(1, treq, "required");
                    assertEquals(2, e.tcpSectype(), "TLS 1.3");
                } else if (port == allowedPort) {
                    assertEquals(2, treq, "not required");
                    assertEquals(2, e.tcpSectype());
                } else {
                    assertEquals(plainPort, port);
                    // Not specified, as nvmet: Debian 12's libnvme turns TLS on for a TCP entry saying "not required"
                    // and its connect-all then failed on kernels without TLS (the guest's kernel-host-referral job).
                    assertEquals(0, treq);
                    assertEquals(0, e.tcpSectype(), "no security");
                }
            }
            assertEquals(9, log.size(), "two subsystems and the discovery subsystem on three ports");
        }
    }

    @Test
    void aWrongKeyFailsTheHandshakeSayingWhatToCheck() {
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> connect(requiredPort, SUB, options(HOST).tlsKey(key(TlsPskHash.SHA256, 32)).build()));
        assertTrue(e.getMessage().contains("TLS handshake") && e.getMessage().contains("check that the target has this"
                + " host's TLS key"), e.getMessage());
        NvmeofException legacyMismatch = assertThrows(NvmeofException.class,
                () -> connect(requiredPort, SUB, options(LEGACY_HOST).tlsKey(LEGACY_KEY).build()));
        assertTrue(legacyMismatch.getMessage().contains("TLS handshake"), "the key derived another way is another key");
    }

    @Test
    void aHostWithoutAKeyIsRefusedByTheTlsPortAndServedByTheOthers() throws Exception {
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> connect(requiredPort, SUB, options(PLAIN_HOST).connectTimeout(Duration.ofSeconds(3)).build()));
        assertTrue(e.getMessage().contains("ICResp") || e.getMessage().contains("closed"), e.getMessage());
        try (NvmeofController c = connect(allowedPort, SUB, options(PLAIN_HOST).build())) {
            writeAndReadBack(c);
        }
        try (NvmeofController c = connect(plainPort, SUB, options(PLAIN_HOST).build())) {
            writeAndReadBack(c);
        }
    }

    @Test
    void aHostThatHasAKeyMayNotConnectInPlainText() {
        NvmeStatusException e = assertThrows(NvmeStatusException.class,
                () -> connect(allowedPort, SUB, options(HOST).build()));
        assertEquals(Status.CONNECT_INVALID_HOST, e.statusCode(), e.getMessage());
        NvmeStatusException plain = assertThrows(NvmeStatusException.class,
                () -> connect(plainPort, SUB, options(HOST).build()));
        assertEquals(Status.CONNECT_INVALID_HOST, plain.statusCode());
    }

    @Test
    void plaintextToTheTlsPortGetsNoNvmeAnswer() throws Exception {
        try (Socket s = new Socket("127.0.0.1", requiredPort)) {
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write(RawTcpHost.icReq(0, 0));
            out.flush();
            InputStream in = s.getInputStream();
            int first = in.read();
            assertTrue(first == -1 || first == 0x15, "a TLS alert or the connection's end, never an ICResp: " + first);
        }
        try (NvmeofController c = connect(requiredPort, SUB, options(HOST).tlsKey(KEY).build())) {
            writeAndReadBack(c); // the listener still serves
        }
    }

    /**
     * A raw NVMe/TCP host over TLS 1.3 with the PSK {@code key} derives for {@code hostNqn} and {@code subnqn} (the
     * identity it offers), on BouncyCastle's blocking client: written apart from the initiator, so a test can send a
     * Connect that names someone other than the identity.
     */
    static RawTcpHost overTls(int port, String hostNqn, String subnqn, String key) throws Exception {
        java.net.Socket socket = new java.net.Socket("127.0.0.1", port);
        socket.setSoTimeout(5000);
        org.bouncycastle.tls.TlsClientProtocol tls =
                new org.bouncycastle.tls.TlsClientProtocol(socket.getInputStream(), socket.getOutputStream());
        ConfiguredPsk configured = ConfiguredPsk.parse(key);
        io.nvmeof.protocol.tls.PskIdentity identity = configured.identity(hostNqn, subnqn, 0);
        byte[] psk = configured.tlsPsk(identity);
        org.bouncycastle.tls.crypto.TlsCrypto crypto =
                new org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider().create(new SecureRandom());
        tls.connect(new org.bouncycastle.tls.AbstractTlsClient(crypto) {
            @Override
            protected org.bouncycastle.tls.ProtocolVersion[] getSupportedVersions() {
                return org.bouncycastle.tls.ProtocolVersion.TLSv13.only();
            }

            @Override
            protected int[] getSupportedCipherSuites() {
                return new int[] {org.bouncycastle.tls.CipherSuite.TLS_AES_128_GCM_SHA256};
            }

            @Override
            public java.util.Vector getExternalPSKs() {
                java.util.Vector<org.bouncycastle.tls.TlsPSKExternal> v = new java.util.Vector<>();
                v.add(new org.bouncycastle.tls.BasicTlsPSKExternal(identity.bytes(), crypto.createSecret(psk),
                        org.bouncycastle.tls.PRFAlgorithm.tls13_hkdf_sha256));
                return v;
            }

            @Override
            public org.bouncycastle.tls.TlsAuthentication getAuthentication() throws java.io.IOException {
                throw new org.bouncycastle.tls.TlsFatalAlert(org.bouncycastle.tls.AlertDescription.handshake_failure);
            }
        });
        RawTcpHost h = new RawTcpHost(tls.getInputStream(), tls.getOutputStream());
        h.onClose = () -> {
            tls.close();
            socket.close();
        };
        return h;
    }

    /**
     * Issue 51's bypass attempts that held, kept: a Connect over TLS must name the host and subsystem of the PSK the
     * handshake proved, or one host's key would speak for another host (taking its namespaces and reservations) or
     * open another subsystem. The same key with the matching Connect is served.
     */
    @Test
    void aConnectOverTlsNamingAnotherHostOrSubsystemThanItsPskIsRefused() throws Exception {
        try (RawTcpHost h = overTls(requiredPort, HOST, SUB, KEY)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, SUB, PLAIN_HOST, 0);
            assertEquals(Status.CONNECT_INVALID_HOST | Status.DNR, c.status(), "another host NQN than the identity's");
        }
        try (RawTcpHost h = overTls(requiredPort, HOST, SUB, KEY)) {
            h.initialize(0);
            Completion c = h.connect(0, 31, 0xFFFF, OTHER_SUB, HOST, 0);
            assertEquals(Status.CONNECT_INVALID_HOST | Status.DNR, c.status(), "another subsystem than the identity's");
        }
        try (RawTcpHost h = overTls(requiredPort, HOST, SUB, KEY)) {
            h.initialize(0);
            assertEquals(Status.SUCCESS, h.connect(0, 31, 0xFFFF, SUB, HOST, 0).status(), "the identity's own");
        }
    }

    /**
     * Handshakes that start and never finish (a ClientHello's first bytes, then nothing) do not keep a host with its
     * key out, and the target drops them at its connect deadline.
     */
    @Test
    void halfOpenHandshakesKeepNobodyOutAndAreDropped() throws Exception {
        List<Socket> halfOpen = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 300; i++) {
                Socket s = new Socket("127.0.0.1", requiredPort);
                s.getOutputStream().write(new byte[] {0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); // a record of 512, 1 byte in
                s.getOutputStream().flush();
                halfOpen.add(s);
            }
            long t0 = System.nanoTime();
            try (NvmeofController c = connect(requiredPort, SUB, options(HOST).tlsKey(KEY).build())) {
                writeAndReadBack(c);
            }
            System.out.printf("a host with its key connected over TLS in %d ms beside 300 half-open handshakes%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            for (Socket s : halfOpen) {
                s.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
                assertEquals(-1, s.getInputStream().read() == 0x15 ? drain(s) : -1, "dropped at the deadline");
            }
        } finally {
            for (Socket s : halfOpen) {
                s.close();
            }
        }
    }

    /** Reads what is left (an alert's bytes) until the end of the connection; -1 then. */
    private static int drain(Socket s) throws java.io.IOException {
        while (s.getInputStream().read() != -1) {
            // the rest of the alert
        }
        return -1;
    }
}

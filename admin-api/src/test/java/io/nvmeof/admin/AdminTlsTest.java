package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin API over TLS, with a certificate made by openssl (an implementation we did not write), checked by curl
 * and by the JDK's client; and the refusal to serve a non-loopback address without TLS.
 */
@Timeout(60)
class AdminTlsTest {
    @TempDir
    Path dir;

    private NvmeTarget target;
    private String token;
    private Path cert;
    private Path key;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        token = AdminToken.loadOrCreate(dir.resolve("admin-token"));
        cert = dir.resolve("cert.pem");
        key = dir.resolve("key.pem");
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key.toString(), "-out", cert.toString());
    }

    @AfterEach
    void stop() {
        target.close();
    }

    private static String run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), String.join(" ", command));
        assertEquals(0, p.exitValue(), String.join(" ", command) + ": " + out);
        return out;
    }

    private SSLContext trustingOurCertificate() throws Exception {
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        try (InputStream in = Files.newInputStream(cert)) {
            ks.setCertificateEntry("admin", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    @Test
    void servesHttpsWithThePemCertificateAndStillNeedsTheToken() throws Exception {
        try (AdminServer admin = AdminServer.start(target.live(),
                new AdminOptions("127.0.0.1", 0, token, List.of(), new AdminOptions.Tls(cert, key)))) {
            String base = "https://127.0.0.1:" + admin.port();
            // curl verifies the chain and the address against the certificate, as an admin's script would.
            String body = run("curl", "-sS", "--fail-with-body", "--cacert", cert.toString(),
                    "-H", "Authorization: Bearer " + token, base + "/api/v1/subsystems");
            assertTrue(body.contains(TargetConfig.DEFAULT_NQN), body);
            String code = run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", cert.toString(),
                    base + "/api/v1/subsystems");
            assertEquals("401", code, "the token is still required over TLS");

            HttpClient trusting = HttpClient.newBuilder().sslContext(trustingOurCertificate()).build();
            HttpResponse<String> health = trusting.send(HttpRequest.newBuilder(URI.create(base + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode());

            // A client that does not trust the certificate gets no answer at all (not even /health).
            HttpClient untrusting = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            assertThrows(SSLHandshakeException.class, () -> untrusting.send(
                    HttpRequest.newBuilder(URI.create(base + "/health")).build(), HttpResponse.BodyHandlers.ofString()));
            // Plain HTTP on the TLS port is not served: the connection closes without an answer.
            assertThrows(IOException.class, () -> untrusting.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + admin.port() + "/health")).build(), HttpResponse.BodyHandlers.ofString()));
        }
    }

    @Test
    void aNonLoopbackAddressWithoutTlsIsRefusedBeforeListening() {
        // 0.0.0.0 would expose the token and configurations to the network in the clear; nothing binds.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AdminServer.start(target.live(),
                new AdminOptions("0.0.0.0", 0, token, List.of())));
        assertTrue(e.getMessage().contains("only with TLS"), e.getMessage());
        assertTrue(e.getMessage().contains("--admin-tls-cert"), e.getMessage());
    }

    @Test
    void aMissingOrWrongPemFileIsNamed() throws Exception {
        Path missing = dir.resolve("nope.pem");
        IOException e = assertThrows(IOException.class, () -> AdminServer.start(target.live(),
                new AdminOptions("127.0.0.1", 0, token, List.of(), new AdminOptions.Tls(missing, key))));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        IOException swapped = assertThrows(IOException.class, () -> AdminServer.start(target.live(),
                new AdminOptions("127.0.0.1", 0, token, List.of(), new AdminOptions.Tls(key, cert))));
        assertTrue(swapped.getMessage().contains("no PEM certificate"), swapped.getMessage());
    }
}

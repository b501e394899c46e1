package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.initiator.NvmeofController;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the TLS front of an NVMe/TCP listener that requires TLS: each input is sent as it is on a
 * fresh connection (a ClientHello, records, plaintext NVMe/TCP, anything), then the connection is read until the target
 * ends it or goes quiet.
 *
 * <p>Invariants: the target never answers in plain NVMe/TCP (every byte back is in TLS records: an alert, or a
 * handshake message), nothing threw inside the target, and the host with the right key is still served (checked
 * every 25 inputs, and after the first).
 *
 * <p>{@code ./mvnw test} runs the kept inputs in
 * {@code src/test/resources/io/nvmeof/conformance/TlsFrontFuzzTestInputs/clientBytes/}; {@code ./test --fuzz MIN
 * --fuzz-target TlsFrontFuzzTest#clientBytes} fuzzes.
 */
class TlsFrontFuzzTest {
    private static int inputs;

    @BeforeAll
    static void start() throws Exception {
        TlsTest.start();
    }

    @AfterAll
    static void stop() {
        TlsTest.stop();
    }

    @FuzzTest(maxDuration = "24h")
    void clientBytes(byte[] input) throws Exception {
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
            if (inputs++ % 25 == 0) {
                try (NvmeofController c = TlsTest.connect(TlsTest.requiredPort, TlsTest.SUB,
                        TlsTest.options(TlsTest.HOST).tlsKey(TlsTest.KEY).build())) {
                    TlsTest.writeAndReadBack(c);
                }
            }
        }
        assertEquals(0, TlsTest.target.core().internalErrors(), "an exception inside the target (see the log)");
    }

    private static void run(byte[] input) throws IOException {
        try (Socket s = new Socket("127.0.0.1", TlsTest.requiredPort)) {
            s.setSoTimeout(250); // a target that waits for more of a handshake is quiet: that is an answer too
            try {
                s.getOutputStream().write(input);
                s.getOutputStream().flush();
            } catch (IOException closed) {
                return; // the target ended the connection while the input was still going out
            }
            InputStream in = s.getInputStream();
            byte[] header = new byte[5];
            try {
                while (readFully(in, header)) {
                    int type = header[0] & 0xFF;
                    assertTrue(type >= 0x14 && type <= 0x17, "a byte back that is no TLS record: " + type);
                    assertNotEquals(0x17, type, "application data back to a client that never completed a handshake");
                    assertEquals(3, header[1], "TLS record version");
                    int length = (header[3] & 0xFF) << 8 | (header[4] & 0xFF);
                    assertTrue(length <= 16384 + 256, "record length " + length);
                    in.skipNBytes(length);
                }
            } catch (SocketTimeoutException quiet) {
                // the target waits for more of a handshake: an answer too
            } catch (java.io.EOFException | java.net.SocketException ended) {
                // the target ended the connection
            }
        }
    }

    private static boolean readFully(InputStream in, byte[] b) throws IOException {
        int at = 0;
        while (at < b.length) {
            int n = in.read(b, at, b.length - at);
            if (n < 0) {
                if (at == 0) {
                    return false;
                }
                throw new java.io.EOFException("cut short");
            }
            at += n;
        }
        return true;
    }
}

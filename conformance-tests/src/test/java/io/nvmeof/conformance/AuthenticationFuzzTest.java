package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import java.io.IOException;
import java.util.Arrays;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the target's DH-HMAC-CHAP exchange: for each input a fresh connection of a host that
 * must authenticate (the harness sends ICReq and Connect), then the input as a sequence of Authentication Send and
 * Receive commands of its choosing. Record: one byte of kind (bit 0: Receive, else Send; bit 1: then an Identify),
 * two bytes of length (little-endian, TL or AL), and for a Send that many bytes of message (cut short at the input's
 * end).
 *
 * <p>Invariants: no Identify is ever served (the input does not know the host's secret, so no sequence of messages
 * may authenticate it), nothing threw inside the target, the target answers or closes within 5 s, and afterwards
 * the host with the right secret still authenticates and is served.
 *
 * <p>{@code ./mvnw test} runs the kept inputs in
 * {@code src/test/resources/io/nvmeof/conformance/AuthenticationFuzzTestInputs/authExchange/}; {@code ./test --fuzz
 * MIN --fuzz-target AuthenticationFuzzTest#authExchange} fuzzes.
 */
class AuthenticationFuzzTest {
    @BeforeAll
    static void start() throws Exception {
        AuthenticationTest.start();
    }

    @AfterAll
    static void stop() {
        AuthenticationTest.stop();
    }

    @FuzzTest(maxDuration = "24h")
    void authExchange(byte[] input) throws Exception {
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections(
                (host, port) -> host.equals("127.0.0.1") || host.equals("localhost"))) {
            run(input);
        }
    }

    private static void run(byte[] input) throws Exception {
        try (RawTcpHost h = AuthenticationTest.connect(AuthenticationTest.PLAIN, 0, 0xFFFF)) {
            h.soTimeout(5000);
            int at = 0;
            try {
                while (at + 3 <= input.length) {
                    int kind = input[at] & 0xFF;
                    int length = (input[at + 1] & 0xFF) | (input[at + 2] & 0xFF) << 8;
                    at += 3;
                    if ((kind & 1) == 0) {
                        byte[] message = Arrays.copyOfRange(input, at, Math.min(input.length, at + length));
                        at += message.length;
                        byte[] sqe = AuthenticationTest.authSendSqe(message.length);
                        if (message.length == 0) {
                            RawTcpHost.sgl(sqe).transportBlock(0);
                        }
                        h.execute(sqe, message.length == 0 ? null : message);
                    } else {
                        byte[] sqe = RawTcpHost.sqe();
                        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(sqe), 0)
                                .fctype(Opcodes.FCTYPE_AUTH_RECEIVE).auth(length).opcode(Opcodes.FABRICS);
                        RawTcpHost.sgl(sqe).transportBlock(length);
                        h.executeForData(sqe, Math.max(length, 1));
                    }
                    if ((kind & 2) != 0) {
                        Completion id = h.execute(RawTcpHost.identifySqe(Opcodes.CNS_CONTROLLER, 0), null);
                        assertNotEquals(Status.SUCCESS, id.status(), "Identify served to a host that never proved its secret");
                        assertEquals(Status.AUTH_REQUIRED | Status.DNR, id.status());
                    }
                }
            } catch (IOException closed) {
                // The target ended the queue (a Failure1 went out, or a malformed command): that is an answer.
            }
        }
        assertEquals(0, AuthenticationTest.target.core().internalErrors(), "an exception inside the target (see the log)");
        AuthenticationTest.rightSecretStillServed();
    }
}

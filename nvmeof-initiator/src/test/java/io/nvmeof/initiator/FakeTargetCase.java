package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A test with a fresh {@link FakeTarget} per method, which must see no protocol violation. */
abstract class FakeTargetCase {
    protected FakeTarget target;

    @BeforeEach
    void startTarget() throws Exception {
        target = new FakeTarget();
    }

    @AfterEach
    void stopTarget() throws Exception {
        target.close();
        assertEquals(List.of(), target.errors, "the fake target saw protocol violations");
    }

    /** Polls {@code condition} every 5 ms; fails saying {@code what} when it does not hold within {@code ms}. */
    protected static void waitFor(java.util.function.BooleanSupplier condition, long ms, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(ms);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + ms + " ms: " + what);
            }
            Thread.sleep(5);
        }
    }

    /** A direct buffer of {@code len} bytes, each {@code c}. */
    protected static java.nio.ByteBuffer filled(int len, char c) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(len);
        for (int i = 0; i < len; i++) {
            b.put(i, (byte) c);
        }
        return b;
    }

    protected TransportId tid() {
        return TransportId.tcp("127.0.0.1", target.port(), FakeTarget.NQN);
    }
}

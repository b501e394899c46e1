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

    protected TransportId tid() {
        return TransportId.tcp("127.0.0.1", target.port(), FakeTarget.NQN);
    }
}

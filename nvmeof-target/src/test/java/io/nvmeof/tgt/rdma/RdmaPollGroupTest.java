package io.nvmeof.tgt.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The tasks other threads hand an RDMA poll group (queue closes, namespace drains, the admin API's changes). */
class RdmaPollGroupTest {
    /**
     * Issue 30, finding 18: a task that threw an Error (an OutOfMemoryError while the heap was exhausted) left the
     * group's batch and, caught only as an Exception by the thread's loop, ended the thread: every queue of the group
     * went unserved. Each task now fails alone; the ones after it run in the same batch.
     */
    @Test
    void aTaskThatThrowsAnErrorDoesNotStopTheOthers() {
        RdmaPollGroup group = new RdmaPollGroup();
        AtomicInteger ran = new AtomicInteger();
        group.execute(ran::incrementAndGet);
        group.execute(() -> {
            throw new OutOfMemoryError("injected by the test");
        });
        group.execute(() -> {
            throw new IllegalStateException("injected by the test");
        });
        group.execute(ran::incrementAndGet);
        assertEquals(4, group.afterBatch(), "every task counts as work");
        assertEquals(2, ran.get(), "the tasks around the failing ones ran");
        group.execute(ran::incrementAndGet);
        group.afterBatch();
        assertEquals(3, ran.get(), "and later ones run too");
    }
}

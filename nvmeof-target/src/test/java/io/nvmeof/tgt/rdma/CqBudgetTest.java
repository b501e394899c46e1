package io.nvmeof.tgt.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Queue pairs are counted against their completion queue: none is created that could make it overflow. */
class CqBudgetTest {
    @Test
    void queuePairsThatCouldOverrunTheCompletionQueueAreRefused() {
        // The old fixed 8192-entry CQ: I/O queues of 128 entries (receive depth 129, send depth 2 * 129 + 16).
        CqBudget budget = new CqBudget(8192);
        int perQueue = CqBudget.entriesFor(2 * 129 + 16, 129);
        assertEquals(403, perQueue);
        int admitted = 0;
        while (budget.reserve(perQueue)) {
            admitted++;
        }
        assertEquals(8192 / 403, admitted, "64 such queues on one group overran it; now the 21st is refused");
        assertTrue(budget.committed() <= budget.capacity());
        budget.release(perQueue);
        assertTrue(budget.reserve(perQueue), "a released queue pair's entries serve the next");
        assertFalse(budget.reserve(perQueue));
    }
}

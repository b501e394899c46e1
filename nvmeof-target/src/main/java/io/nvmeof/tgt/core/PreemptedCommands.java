package io.nvmeof.tgt.core;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wait of a Reservation Acquire with Preempt and Abort: a cluster takes its success as "the preempted host is
 * fenced" and writes the same blocks next, so it completes only once no other host's command for the namespace is in
 * flight any more (nvmet waits for the preempted controllers' commands likewise). Commands those hosts send from now
 * on are refused by the new reservation, when parsed and again when they execute (their data may have been moving
 * meanwhile); the ones already executing finish first. Runs on a backend thread: it blocks.
 */
public final class PreemptedCommands {
    private static final Logger LOG = LoggerFactory.getLogger(PreemptedCommands.class);
    /** Longer than this and the Acquire completes anyway, with a warning: a backend call that does not return. */
    static final long WAIT_MS = 30_000;
    /** How long a queue's thread may take to answer whether it holds a command; no answer counts as holding. */
    static final long ANSWER_MS = 1_000;

    private PreemptedCommands() {
    }

    /**
     * Blocks until no queue of a host the reservation now denies writing (other than {@code issuer}; null: any) holds a
     * command for {@code ns} (or WAIT_MS).
     */
    public static void awaitDone(Namespace ns, UUID issuer, Subsystem subsystem) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        try {
            while (holdingQueues(ns, issuer, subsystem) > 0) {
                if (System.nanoTime() > deadline) {
                    LOG.warn("namespace {}: Preempt and Abort completes with commands of preempted hosts still in"
                            + " flight after {} s (a backend call that does not return); they may still land", ns.nsid(),
                            WAIT_MS / 1000);
                    return;
                }
                Thread.sleep(2);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** How many of the other hosts' queues hold a command for {@code ns}, each asked on its own thread. */
    private static int holdingQueues(Namespace ns, UUID issuer, Subsystem subsystem) throws InterruptedException {
        List<SubmissionQueue> queues = new ArrayList<>();
        for (Controller c : subsystem.controllers()) {
            // The hosts the reservation now fences: a host it still lets write is not being fenced (waiting for its
            // commands would only stall the Acquire behind surviving hosts' steady I/O).
            if (!c.hostUuid().equals(issuer) && ns.reservations().deniesWrite(c.hostUuid())) {
                queues.addAll(c.queues());
            }
        }
        AtomicInteger holding = new AtomicInteger();
        CountDownLatch answered = new CountDownLatch(queues.size());
        for (SubmissionQueue q : queues) {
            try {
                q.transport().execute(() -> {
                    if (q.holds(ns)) {
                        holding.incrementAndGet();
                    }
                    answered.countDown();
                });
            } catch (RuntimeException e) {
                answered.countDown(); // its thread has ended: nothing runs there any more
            }
        }
        if (!answered.await(ANSWER_MS, TimeUnit.MILLISECONDS)) {
            return holding.get() + (int) answered.getCount();
        }
        return holding.get();
    }
}

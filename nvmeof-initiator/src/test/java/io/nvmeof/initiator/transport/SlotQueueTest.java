package io.nvmeof.initiator.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * The transport-independent queue logic with a transport that records what it is asked to send and completes
 * commands when the test says so: slots, command identifiers, overflow order, back-pressure, failure of waiting work.
 */
class SlotQueueTest {
    static final NamespaceRef NS1 = NamespaceRef.fixed(1);

    static final class Slot extends QueueSlot {
        Slot(int index) {
            super(index, new UnsafeBuffer(new byte[64]));
        }
    }

    /**
     * A transport whose "wire" is a list; the I/O thread is whichever thread calls {@link #runIoThread} (the test
     * thread, or one the test starts), and ends with {@link #stopIoThread}.
     */
    static final class FakeQueue extends SlotQueue<Slot> {
        final List<Integer> wire = new ArrayList<>();
        final java.util.Queue<Runnable> tasks = new java.util.concurrent.ConcurrentLinkedQueue<>();
        volatile int handOvers;
        volatile boolean full;
        private boolean ioAlive = true;

        FakeQueue(int slots) {
            super(1, "fake queue", new Slot[slots], 1_000_000_000L);
            for (int i = 0; i < slots; i++) {
                this.slots[i] = new Slot(i);
            }
            freeAllSlots();
        }

        @Override
        protected void prepare(Slot r) {
            if (r.dataLength < 0) {
                throw new IllegalArgumentException("negative length");
            }
        }

        @Override
        protected void handOver() {
            handOvers++;
        }

        @Override
        protected boolean runOnIoThread(Runnable task) {
            synchronized (tasks) {
                if (!ioAlive) {
                    return false;
                }
                tasks.add(task);
                return true;
            }
        }

        @Override
        protected void fail(String reason, int code) {
            if (state == OPEN) {
                state = FAILED;
                failure = reason;
                failAll(code);
                notifyFailure();
            }
        }

        @Override
        protected void failAll(int code) {
            failSubmitted(code);
            for (Slot r : slots) {
                if (r.state == QueueSlot.INFLIGHT) {
                    releaseAndFail(r, code);
                }
            }
            failPending(code);
        }

        /** The I/O thread's last act, as a transport's event loop ends after the queue closed. */
        void stopIoThread() {
            synchronized (tasks) {
                ioAlive = false;
            }
            runTasks();
            ioThreadStopped();
        }

        void runTasks() {
            Runnable t;
            while ((t = tasks.poll()) != null) {
                t.run();
            }
        }

        @Override
        protected void start(Slot r) {
            r.state = QueueSlot.INFLIGHT;
            wire.add((int) r.cmd.cdw10());
        }

        @Override
        protected boolean canStart() {
            return !full;
        }

        @Override
        protected boolean outstanding(Slot r) {
            return r.state == QueueSlot.INFLIGHT;
        }

        void runIoThread() {
            runTasks();
            if (state != OPEN) {
                failAll(closedCode());
                return;
            }
            Slot r;
            while (canStart() && (r = pollSubmitted()) != null) {
                start(r);
            }
            startPending();
        }

        void answer(int cid, int status) {
            Slot r = lookup(cid);
            releaseAndDeliver(r, status, 0);
        }

        Slot slot(int i) {
            return slots[i];
        }

        @Override
        public void close() {
            if (!markClosed()) {
                return;
            }
            if (!runOnIoThread(() -> failAll(closedCode()))) {
                ioThreadStopped();
            }
        }
    }

    static void submit(FakeQueue q, int tag, List<String> log) {
        q.submit(Opcodes.IO_READ, NS1, tag, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0,
                (ctx, status) -> log.add(ctx + ":" + status), tag, null);
    }

    @Test
    void commandsBeyondTheSlotsWaitInOrderAndStartAsSlotsFree() {
        FakeQueue q = new FakeQueue(2);
        List<String> log = new ArrayList<>();
        for (int tag = 1; tag <= 5; tag++) {
            submit(q, tag, log);
        }
        q.runIoThread();
        assertEquals(List.of(1, 2), q.wire, "two slots: two commands on the wire");
        q.answer(q.slot(0).cid, 0);
        q.runIoThread();
        q.answer(q.slot(1).cid, 0);
        q.runIoThread();
        assertEquals(List.of(1, 2, 3, 4), q.wire, "waiting commands start in submission order");
        assertEquals(List.of("1:0", "2:0"), log);
        q.close();
        q.runIoThread();
        assertEquals(List.of("1:0", "2:0", "3:" + IoCallback.ERR_CLOSED, "4:" + IoCallback.ERR_CLOSED,
                "5:" + IoCallback.ERR_CLOSED), log, "sent and waiting commands fail at close");
        submit(q, 6, log);
        assertEquals(5, log.size(), "not completed on the submitting thread");
        q.runIoThread();
        assertEquals("6:" + IoCallback.ERR_CLOSED, log.get(log.size() - 1), "a closed queue fails new commands at once");
    }

    @Test
    void commandIdsChangeWithEachUseAndStaleOnesAreNotFound() {
        FakeQueue q = new FakeQueue(1);
        List<String> log = new ArrayList<>();
        submit(q, 1, log);
        q.runIoThread();
        int first = q.slot(0).cid;
        assertSame(q.slot(0), q.lookup(first));
        q.answer(first, 0);
        assertNull(q.lookup(first), "answered: no longer outstanding");
        submit(q, 2, log);
        q.runIoThread();
        int second = q.slot(0).cid;
        assertNotEquals(first, second, "the same slot carries a new generation");
        assertNull(q.lookup(first), "a late answer to the old command id is not taken for the new command");
        assertSame(q.slot(0), q.lookup(second));
        assertNull(q.lookup(second ^ 0x100), "a forged id");
    }

    @Test
    void backPressureHoldsCommandsUntilTheTransportCanSend() {
        FakeQueue q = new FakeQueue(8);
        List<String> log = new ArrayList<>();
        q.full = true;
        submit(q, 1, log);
        submit(q, 2, log);
        q.runIoThread();
        assertTrue(q.wire.isEmpty(), "nothing sent while the transport is full");
        q.full = false;
        q.runIoThread();
        assertEquals(List.of(1, 2), q.wire);
    }

    @Test
    void aSubmissionTheTransportRefusesFreesItsSlot() {
        FakeQueue q = new FakeQueue(1);
        List<String> log = new ArrayList<>();
        assertThrows(IllegalArgumentException.class, () -> q.submit(Opcodes.IO_READ, NS1, 9, 0, 0, 0, 0, 0,
                HostQueue.DIR_NONE, null, 0, -1, (c, s) -> log.add("called"), 0, null));
        submit(q, 3, log);
        q.runIoThread();
        assertEquals(List.of(3), q.wire, "the only slot was given back");
        assertTrue(log.isEmpty(), "the refused submission's callback never runs");
    }

    /**
     * A loader that pipelines its next read from the callback must not recurse: refused submissions complete on the
     * I/O thread (or the late-completion thread once it is gone), never inside submit. Before, this chain overflowed
     * the stack at a depth of a few thousand, the error was swallowed, and the rest of the reads silently never ran.
     */
    @Test
    void aCallbackThatResubmitsAfterCloseNeitherRecursesNorLosesIo() throws Exception {
        FakeQueue q = new FakeQueue(4);
        q.close();
        q.stopIoThread();
        int n = 200_000;
        java.util.concurrent.atomic.AtomicInteger completions = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger depth = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger maxDepth = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        IoCallback[] chain = new IoCallback[1];
        chain[0] = (ctx, status) -> {
            maxDepth.accumulateAndGet(depth.incrementAndGet(), Math::max);
            assertEquals(IoCallback.ERR_CLOSED, status);
            if (completions.incrementAndGet() < n) {
                q.submit(Opcodes.IO_READ, NS1, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, chain[0], ctx + 1,
                        null);
            } else {
                done.countDown();
            }
            depth.decrementAndGet();
        };
        q.submit(Opcodes.IO_READ, NS1, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, chain[0], 0, null);
        assertTrue(done.await(20, java.util.concurrent.TimeUnit.SECONDS), "completions: " + completions.get());
        assertEquals(n, completions.get());
        assertEquals(1, maxDepth.get(), "a callback never runs inside another");
    }

    /** An Error thrown by a callback is not swallowed: the queue fails, so nothing else on it waits forever. */
    /**
     * A request that reaches a queue just after its connection failed goes to the controller to be sent again after
     * the reconnect, as the requests in flight on it do; before, it failed at once with a transport error (the
     * controller had picked the queue while it was still open).
     */
    @Test
    void aSubmissionToAFailedQueueIsHandedBackLikeTheOnesInFlight() {
        FakeQueue q = new FakeQueue(2);
        List<String> log = new ArrayList<>();
        List<PendingRequest> handedBack = new ArrayList<>();
        q.requeueTo(handedBack::add);
        submit(q, 1, log);
        q.runIoThread();
        q.fail("connection lost", IoCallback.ERR_TRANSPORT);
        submit(q, 2, log); // picked while the queue was open, submitted after it failed
        q.runTasks();
        assertEquals(List.of(), log, "nothing failed: both wait for the reconnect");
        assertEquals(2, handedBack.size());
        assertEquals(2, new Command().<Command>wrap(new UnsafeBuffer(handedBack.get(1).sqe()), 0).cdw10(),
                "the late one is handed back whole");
        q.close(); // the controller releases the failed queue once its association is torn down
        submit(q, 3, log); // picked while the queue was open, submitted after the teardown
        q.runTasks();
        assertEquals(List.of(), log, "a request racing the teardown of a lost connection is not failed as closed by"
                + " this host (CLOSED_BY_CALLER): the controller holds it for the reconnect");
        assertEquals(3, handedBack.size());
    }

    /** Only a queue the host closed while it was open fails its requests as closed by the host. */
    @Test
    void aQueueClosedWhileOpenFailsItsRequestsAsClosed() {
        FakeQueue q = new FakeQueue(2);
        List<String> log = new ArrayList<>();
        List<PendingRequest> handedBack = new ArrayList<>();
        q.requeueTo(handedBack::add);
        submit(q, 1, log);
        q.runIoThread();
        q.close();
        q.runTasks();
        submit(q, 2, log);
        q.runTasks();
        assertEquals(List.of("1:" + IoCallback.ERR_CLOSED, "2:" + IoCallback.ERR_CLOSED), log);
        assertEquals(List.of(), handedBack, "nothing is sent again once the host closed the queue");
    }

    /** A namespace reference a test retires by hand, as the controller's scan retires a handle. */
    static final class Retirable implements NamespaceRef {
        volatile boolean current = true;

        @Override
        public long nsid() {
            return 1;
        }

        @Override
        public boolean isCurrent() {
            return current;
        }
    }

    /**
     * Issue 29: a request of a namespace retired after it was submitted but before it went on the wire (handed over
     * to the I/O thread, or waiting for a slot) fails with ERR_NAMESPACE_GONE instead of being sent; others go on, and
     * a request handed back by a failed queue keeps its namespace, so it is checked again when resent.
     */
    @Test
    void requestsOfARetiredNamespaceAreNotSent() {
        FakeQueue q = new FakeQueue(1);
        Retirable ns = new Retirable();
        List<String> log = new ArrayList<>();
        IoCallback cb = (ctx, status) -> log.add(ctx + ":" + status);
        q.submit(Opcodes.IO_READ, ns, 1, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, 1, null); // handed over
        q.submit(Opcodes.IO_READ, ns, 2, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, 2, null); // waits
        q.submit(Opcodes.IO_READ, NS1, 3, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, 3, null); // waits
        ns.current = false;
        q.runIoThread();
        assertEquals(List.of(3), q.wire, "only the request of the namespace still current went out");
        assertEquals(List.of("1:" + IoCallback.ERR_NAMESPACE_GONE, "2:" + IoCallback.ERR_NAMESPACE_GONE), log);

        Retirable other = new Retirable();
        List<PendingRequest> handedBack = new ArrayList<>();
        q.requeueTo(handedBack::add);
        q.submit(Opcodes.IO_READ, other, 4, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, 4, null); // waits
        q.fail("connection lost", IoCallback.ERR_TRANSPORT);
        assertEquals(2, handedBack.size(), "the one in flight and the one waiting");
        assertSame(NS1, handedBack.get(0).namespace());
        assertSame(other, handedBack.get(1).namespace());
    }

    @Test
    void anErrorThrownByACallbackFailsTheQueue() {
        FakeQueue q = new FakeQueue(2);
        List<String> log = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        q.failureListener(x -> failures.add(x.failure()));
        q.submit(Opcodes.IO_READ, NS1, 1, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, (ctx, status) -> {
            throw new StackOverflowError("deep");
        }, 1, null);
        submit(q, 2, log);
        q.runIoThread();
        q.answer(q.slot(0).cid, 0);
        q.runTasks();
        assertEquals(List.of("2:" + IoCallback.ERR_TRANSPORT), log, "the other command fails instead of hanging");
        assertEquals(1, failures.size());
        assertTrue(failures.get(0).contains("StackOverflowError"), failures.get(0));
        assertEquals(1, q.statistics().callbackFailures());
    }

    /**
     * Submissions racing close() and the end of the I/O thread: every one completes exactly once (before, one that
     * passed the open check before the close and was handed over after the I/O thread's last sweep never completed).
     */
    @Test
    void submissionsRacingCloseCompleteExactlyOnce() throws Exception {
        for (int round = 0; round < 200; round++) {
            FakeQueue q = new FakeQueue(16);
            int perThread = 3000;
            java.util.concurrent.atomic.AtomicIntegerArray seen = new java.util.concurrent.atomic.AtomicIntegerArray(2 * perThread);
            java.util.concurrent.atomic.AtomicInteger completions = new java.util.concurrent.atomic.AtomicInteger();
            IoCallback cb = (ctx, status) -> {
                seen.incrementAndGet((int) ctx);
                completions.incrementAndGet();
            };
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread io = new Thread(() -> {
                while (!stop.get()) {
                    q.runIoThread();
                    for (int i = 0; i < 16; i++) {
                        Slot r = q.slot(i);
                        if (r.state == QueueSlot.INFLIGHT) {
                            q.answer(r.cid, 0);
                        }
                    }
                }
                q.stopIoThread();
            });
            io.start();
            Thread[] submitters = new Thread[2];
            for (int t = 0; t < 2; t++) {
                int base = t * perThread;
                submitters[t] = new Thread(() -> {
                    for (int i = 0; i < perThread; i++) {
                        q.submit(Opcodes.IO_READ, NS1, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, base + i,
                                null);
                    }
                });
                submitters[t].start();
            }
            Thread.sleep(round % 3);
            q.close();
            stop.set(true);
            io.join();
            for (Thread t : submitters) {
                t.join();
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (completions.get() < 2 * perThread && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(2 * perThread, completions.get(), "round " + round);
            for (int i = 0; i < 2 * perThread; i++) {
                assertEquals(1, seen.get(i), "request " + i + " in round " + round);
            }
        }
    }

    @Test
    void slotCountsOutsideTheCommandIdSpaceAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> SlotQueue.checkSlotCount(0));
        assertThrows(IllegalArgumentException.class, () -> SlotQueue.checkSlotCount(65536));
        assertEquals(65535, SlotQueue.checkSlotCount(65535));
    }
}

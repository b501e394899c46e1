package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a lost connection, a timeout or a hung controller does to the callers of the initiator over NVMe/TCP: commands
 * the caller was told failed can no longer execute, failures are visible and reported with the right kind, and the
 * controller reconnects and sends interrupted I/O again, as the Linux host does.
 */
@Timeout(60)
class ReconnectTest extends FakeTargetCase {
    private static ConnectOptions.Builder opts() {
        return ConnectOptions.builder().connectTimeout(Duration.ofSeconds(2)).commandTimeout(Duration.ofSeconds(5))
                .reconnectDelay(Duration.ofMillis(100));
    }

    /**
     * Defect 1: a write whose R2T comes after the command timeout must not send the caller's buffer later: the caller
     * was told it failed and reuses the buffer. Before, "Z" written into the buffer after the timeout reached the disk.
     */
    @Test
    void aTimedOutWriteCannotLandLater() throws Exception {
        target.r2tDelayMs = 2500; // well past the 1 s command timeout
        try (NvmeofController c = NvmeofController.connect(tid(),
                opts().commandTimeout(Duration.ofMillis(1000)).build())) {
            NamespaceHandle ns = c.namespace(1);
            ByteBuffer buf = filled(32 * 512, 'A'); // larger than the in-capsule limit: data goes by R2T
            ExecutionException ee = assertThrows(ExecutionException.class,
                    () -> ns.write(FakeTarget.DELAYED_R2T_LBA, 32, buf).get(5, TimeUnit.SECONDS));
            assertInstanceOf(NvmeofTimeoutException.class, ee.getCause());
            assertEquals(ErrorKind.TIMED_OUT, ((NvmeofException) ee.getCause()).kind());
            for (int i = 0; i < buf.capacity(); i++) {
                buf.put(i, (byte) 'Z'); // the caller reuses its buffer, as it may after a failure
            }
            Thread.sleep(3000); // past the delayed R2T
            int at = (int) FakeTarget.DELAYED_R2T_LBA * FakeTarget.BLOCK;
            byte[] disk = Arrays.copyOfRange(target.disk, at, at + 32 * 512);
            assertArrayEquals(new byte[32 * 512], disk, "the timed-out write must not have landed");
            assertTrue(target.h2c.isEmpty(), "no data was sent for the timed-out write");
            waitFor(c::isConnected, 5000, "reconnected after the timeout");
            ns.write(0, 1, filled(512, 'B')).get(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Defect 2: timed-out commands must not keep their slots, leaving a queue that reports healthy but fails all it
     * gets. Depth 4 (3 slots): three reads time out; then three writes succeed (the queue was reset).
     */
    @Test
    void timedOutCommandsDoNotWedgeTheQueue() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(),
                opts().queueDepth(4).commandTimeout(Duration.ofMillis(1000)).build())) {
            NamespaceHandle ns = c.namespace(1);
            List<CompletableFuture<Void>> reads = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                reads.add(ns.read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512)));
            }
            for (CompletableFuture<Void> r : reads) {
                ExecutionException ee = assertThrows(ExecutionException.class, () -> r.get(5, TimeUnit.SECONDS));
                assertEquals(ErrorKind.TIMED_OUT, ((NvmeofException) ee.getCause()).kind(), ee.getCause().getMessage());
            }
            assertTrue(c.lastFailure().contains("timed out"), c.lastFailure());
            for (int i = 0; i < 3; i++) {
                ns.write(10 + i, 1, filled(512, (char) ('a' + i))).get(5, TimeUnit.SECONDS);
            }
            assertTrue(c.isConnected());
            assertEquals('c', target.disk[12 * 512]);
            long timeouts = c.queueStatistics().stream().mapToLong(QueueStatistics::timeouts).sum();
            assertEquals(0, timeouts, "statistics are per queue; the new queue has had none");
        }
    }

    /**
     * A caller told its command failed sees the controller's side of it at once: when its future completes, the
     * controller is no longer CONNECTED and {@code lastFailure()} says why. Before, the queue failed its commands
     * before telling the controller, so a caller (and CI) could read a null lastFailure after a timeout.
     */
    @Test
    void theControllerKnowsOfAFailureBeforeTheCallerIsTold() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(),
                opts().commandTimeout(Duration.ofMillis(1000)).build())) {
            NamespaceHandle ns = c.namespace(1);
            CompletableFuture<String> seen = new CompletableFuture<>();
            ns.read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512))
                    .whenComplete((v, e) -> seen.complete(c.state() + " / " + c.lastFailure()));
            String atCompletion = seen.get(5, TimeUnit.SECONDS);
            assertFalse(atCompletion.startsWith("CONNECTED"), atCompletion);
            assertTrue(atCompletion.contains("timed out"), atCompletion);
            waitFor(c::isConnected, 5000, "reconnected after the timeout");
        }
    }

    /**
     * Defect 3: a controller that stops answering (as a SIGSTOPped target: connections open, nothing answered) is
     * detected by the keep alive within KATO, and close() is bounded.
     */
    @Test
    void aHungControllerIsDetectedWithinKatoAndCloseIsBounded() throws Exception {
        List<ControllerState> states = Collections.synchronizedList(new ArrayList<>());
        NvmeofController c = NvmeofController.connect(tid(), opts().keepAliveTimeoutMs(1000)
                .stateListener((ctrl, st, why) -> states.add(st)).build());
        try {
            target.hung = true;
            long t0 = System.nanoTime();
            waitFor(() -> !c.isConnected(), 3000, "the hung controller noticed");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            // By design at most KATO + KATO/2 + one 250 ms tick (1750 ms); the rest is slack for a loaded machine.
            assertTrue(ms <= 2500, "noticed after " + ms + " ms with KATO 1000 ms");
            // The state changes just before lastFailure is written, on the housekeeping thread.
            waitFor(() -> c.lastFailure() != null, 3000, "the failure recorded");
            assertTrue(c.lastFailure().contains("Keep Alive"), c.lastFailure());
            // The listener runs on the housekeeping thread, after the state has changed: wait for it, not race it.
            waitFor(() -> !states.isEmpty(), 3000, "the state listener told");
            assertEquals(ControllerState.RECONNECTING, states.get(0));
        } finally {
            long t0 = System.nanoTime();
            c.close();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < 6000, "close took " + ms + " ms");
        }
    }

    /** Before, close() of a connected controller that stopped answering waited commandTimeout + 5 s for each step. */
    @Test
    void closeOfAConnectedButHungControllerIsBounded() throws Exception {
        NvmeofController c = NvmeofController.connect(tid(), opts().commandTimeout(Duration.ofSeconds(20)).build());
        target.hung = true;
        long t0 = System.nanoTime();
        c.close();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 7000, "close took " + ms + " ms");
        assertEquals(ControllerState.CLOSED, c.state());
    }

    /**
     * Defect 5: a lost connection is not reported as "closed by this host". Losing only the admin connection used to
     * close the I/O queues, failing their commands with ERR_CLOSED.
     */
    @Test
    void aLostConnectionIsNotReportedAsClosedByTheCaller() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().ctrlLossTimeout(Duration.ZERO).build())) {
            AtomicInteger status = new AtomicInteger(1);
            CountDownLatch done = new CountDownLatch(1);
            c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512), (ctx, st) -> {
                status.set(st);
                done.countDown();
            }, 0);
            waitFor(() -> target.commands(1).stream().anyMatch(x -> x.opcode() == 0x02), 5000, "read sent");
            target.drop(0);
            assertTrue(done.await(5, TimeUnit.SECONDS));
            assertEquals(IoCallback.ERR_TRANSPORT, status.get(), IoCallback.describe(status.get()));
            assertEquals(ErrorKind.CONNECTION_LOST, ErrorKind.of(status.get()));
            waitFor(() -> c.state() == ControllerState.FAILED, 5000, "failed: ctrlLossTimeout 0 does not reconnect");
            ExecutionException ee = assertThrows(ExecutionException.class,
                    () -> c.namespace(1).read(0, 1, ByteBuffer.allocate(512)).get(5, TimeUnit.SECONDS));
            assertEquals(ErrorKind.CONNECTION_LOST, ((NvmeofException) ee.getCause()).kind());
        }
        NvmeofController c = NvmeofController.connect(tid(), opts().build());
        CompletableFuture<Void> read = c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512));
        c.close();
        ExecutionException ee = assertThrows(ExecutionException.class, () -> read.get(5, TimeUnit.SECONDS));
        assertEquals(ErrorKind.CLOSED_BY_CALLER, ((NvmeofException) ee.getCause()).kind());
    }

    /**
     * Issue 30, finding 14: a program that checks what it read (the loader, its dataset label) must be able to tell
     * whether a reconnect came between: the association generation is 0 once connected, and a read held across a
     * reconnect and sent again completes already seeing the new one.
     */
    @Test
    void theAssociationGenerationMovesBeforeAReconnectedReadCompletes() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            assertEquals(0, c.associationGeneration());
            AtomicInteger seen = new AtomicInteger(-1);
            CountDownLatch first = new CountDownLatch(1);
            c.namespace(1).read(0, 1, ByteBuffer.allocateDirect(512), (ctx, st) -> {
                seen.set(c.associationGeneration());
                first.countDown();
            }, 0);
            assertTrue(first.await(5, TimeUnit.SECONDS));
            assertEquals(0, seen.get(), "a read on the first association");
            target.refuse = true;
            target.drop(-1);
            waitFor(() -> !c.isConnected(), 2000, "the loss is noticed");
            AtomicInteger status = new AtomicInteger(1);
            CountDownLatch held = new CountDownLatch(1);
            c.namespace(1).read(0, 1, ByteBuffer.allocateDirect(512), (ctx, st) -> {
                status.set(st);
                seen.set(c.associationGeneration());
                held.countDown();
            }, 0);
            Thread.sleep(300); // a few refused attempts
            target.refuse = false;
            assertTrue(held.await(5, TimeUnit.SECONDS));
            assertEquals(0, status.get(), IoCallback.describe(status.get()));
            assertTrue(seen.get() >= 1, "the held read came through a later association: " + seen.get());
            waitFor(c::isConnected, 5000, "reconnected");
            assertEquals(seen.get(), c.associationGeneration(), "nothing moved it after the connected attempt");
        }
    }

    /** Defect 9: an I/O queue's failure is visible (isConnected) and not permanent (the association is rebuilt). */
    @Test
    void anIoQueueFailureIsVisibleAndRepaired() throws Exception {
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        try (NvmeofController c = NvmeofController.connect(tid(), opts().reconnectDelay(Duration.ofMillis(300))
                .stateListener((ctrl, st, why) -> events.add(st + ": " + why)).build())) {
            int before = target.connections.get();
            target.drop(1);
            waitFor(() -> !c.isConnected(), 2000, "the I/O queue's loss is visible");
            assertEquals(ControllerState.RECONNECTING, c.state());
            waitFor(c::isConnected, 5000, "reconnected");
            assertEquals(before + 2, target.connections.get(), "a new admin and I/O queue");
            c.namespace(1).write(5, 1, filled(512, 'q')).get(5, TimeUnit.SECONDS);
            waitFor(() -> events.size() >= 2, 3000, "the state listener told of both changes"); // it runs after them
            assertEquals(2, events.size(), events.toString());
            assertTrue(events.get(0).startsWith("RECONNECTING: queue 1 of"), events.toString());
            assertTrue(events.get(1).startsWith("CONNECTED: reconnected after 1 attempt"), events.toString());
        }
    }

    /**
     * The target goes away and comes back, again and again, under a running read/write job with every block
     * verified: the job completes with correct data and no error reaches it (interrupted I/O was held and resent).
     */
    @Test
    void aVerifiedJobSurvivesTheTargetGoingAwayAndComingBack() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().ioQueues(2).queueDepth(8).build())) {
            NamespaceHandle ns = c.namespace(1);
            int blocks = 512;
            AtomicInteger errors = new AtomicInteger();
            List<String> firstErrors = Collections.synchronizedList(new ArrayList<>());
            Thread chaos = new Thread(() -> {
                try {
                    for (int i = 0; i < 4; i++) {
                        Thread.sleep(150);
                        // Each outage must be repaired before the next, or two merge into one reconnect.
                        waitFor(c::isConnected, 10_000, "reconnected before the next drop");
                        target.refuse = true;
                        target.drop(-1);
                        Thread.sleep(250);
                        target.refuse = false;
                    }
                } catch (Exception | AssertionError e) {
                    firstErrors.add("chaos: " + e);
                }
            });
            chaos.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
            int pass = 0;
            while (chaos.isAlive() || pass < 2) {
                assertTrue(System.nanoTime() < deadline, "job did not finish");
                pass++;
                byte stamp = (byte) pass;
                List<CompletableFuture<Void>> writes = new ArrayList<>();
                for (int lba = 0; lba < blocks; lba += 8) {
                    ByteBuffer b = ByteBuffer.allocateDirect(8 * 512);
                    for (int i = 0; i < 8 * 512; i += 512) {
                        b.putInt(i, lba + i / 512).put(i + 4, stamp);
                    }
                    writes.add(ns.write(lba, 8, b));
                }
                for (CompletableFuture<Void> w : writes) {
                    try {
                        w.get(30, TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        errors.incrementAndGet();
                        firstErrors.add(e.getCause().toString());
                    }
                }
                for (int lba = 0; lba < blocks; lba += 8) {
                    ByteBuffer b = ByteBuffer.allocateDirect(8 * 512);
                    try {
                        ns.read(lba, 8, b).get(30, TimeUnit.SECONDS);
                        for (int i = 0; i < 8; i++) {
                            if (b.getInt(i * 512) != lba + i || b.get(i * 512 + 4) != stamp) {
                                errors.incrementAndGet();
                                firstErrors.add("block " + (lba + i) + " of pass " + pass + " reads "
                                        + b.getInt(i * 512) + "/" + b.get(i * 512 + 4));
                            }
                        }
                    } catch (ExecutionException e) {
                        errors.incrementAndGet();
                        firstErrors.add(e.getCause().toString());
                    }
                }
            }
            chaos.join();
            assertEquals(0, errors.get(), firstErrors.subList(0, Math.min(5, firstErrors.size())).toString());
            assertTrue(target.connections.get() >= 2 + 4 * 3, "reconnected each time: " + target.connections.get());
            waitFor(c::isConnected, 5000, "connected at the end");
        }
    }

    /** A target that never comes back: held and new requests fail once ctrlLossTimeout runs out, not before. */
    @Test
    void aTargetThatNeverComesBackFailsEverythingAfterCtrlLossTimeout() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(),
                opts().ctrlLossTimeout(Duration.ofMillis(1000)).reconnectDelay(Duration.ofMillis(200)).build())) {
            CompletableFuture<Void> read = c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512));
            waitFor(() -> target.commands(1).stream().anyMatch(x -> x.opcode() == 0x02), 5000, "read sent");
            target.refuse = true;
            long t0 = System.nanoTime();
            target.drop(-1);
            CompletableFuture<Void> meanwhile = c.namespace(1).read(0, 1, ByteBuffer.allocate(512));
            Thread.sleep(300); // well inside the 1000 ms ctrlLossTimeout, on a slow machine too
            assertFalse(read.isDone(), "held while reconnecting");
            assertFalse(meanwhile.isDone(), "held while reconnecting");
            ExecutionException ee = assertThrows(ExecutionException.class, () -> read.get(5, TimeUnit.SECONDS));
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= 700 && ms < 3000, "failed after " + ms + " ms");
            assertEquals(ErrorKind.CONNECTION_LOST, ((NvmeofException) ee.getCause()).kind());
            assertThrows(ExecutionException.class, () -> meanwhile.get(1, TimeUnit.SECONDS));
            assertEquals(ControllerState.FAILED, c.state());
            assertTrue(c.lastFailure().contains("ctrlLossTimeout"), c.lastFailure());
            long t1 = System.nanoTime();
            assertThrows(ExecutionException.class, () -> c.namespace(1).read(0, 1, ByteBuffer.allocate(512)).get(1, TimeUnit.SECONDS));
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1) < 500, "fails at once once failed");
        }
    }

    /** fastIoFailTimeout: held I/O fails after it, new I/O fails at once, and all works again once reconnected. */
    @Test
    void fastIoFailTimeoutFailsHeldIoButKeepsReconnecting() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().fastIoFailTimeout(Duration.ofMillis(300))
                .reconnectDelay(Duration.ofMillis(100)).build())) {
            target.refuse = true;
            target.drop(-1);
            waitFor(() -> !c.isConnected(), 2000, "loss noticed");
            CompletableFuture<Void> held = c.namespace(1).read(0, 1, ByteBuffer.allocate(512));
            ExecutionException ee = assertThrows(ExecutionException.class, () -> held.get(5, TimeUnit.SECONDS));
            assertEquals(ErrorKind.CONNECTION_LOST, ((NvmeofException) ee.getCause()).kind());
            assertThrows(ExecutionException.class, () -> c.namespace(1).read(0, 1, ByteBuffer.allocate(512)).get(1, TimeUnit.SECONDS));
            target.refuse = false;
            waitFor(c::isConnected, 5000, "reconnected");
            c.namespace(1).read(0, 1, ByteBuffer.allocate(512)).get(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Issue 29, finding 11: an ordinary connection reset (or broken pipe) is logged as one line, without a stack
     * trace; before, it was a WARN with Netty's whole read loop. (slf4j-simple writes to the System.err of the
     * moment, so the test swaps it.)
     */
    @Test
    void aConnectionResetIsLoggedWithoutAStackTrace() throws Exception {
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        java.io.PrintStream err = System.err;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            System.setErr(new java.io.PrintStream(log, true, java.nio.charset.StandardCharsets.UTF_8));
            try {
                target.reset(1);
                waitFor(() -> log.toString(java.nio.charset.StandardCharsets.UTF_8).contains("queue 1 of"), 5000,
                        "the reset logged");
                waitFor(() -> c.lastFailure() != null, 5000, "the loss noticed");
                waitFor(c::isConnected, 5000, "reconnected");
            } finally {
                System.setErr(err);
            }
            String text = log.toString(java.nio.charset.StandardCharsets.UTF_8);
            err.print(text);
            assertTrue(text.contains("queue 1 of") && text.toLowerCase().contains("connection reset"), text);
            assertFalse(text.lines().anyMatch(l -> l.startsWith("\tat ") || l.startsWith("Caused by")),
                    "no stack trace for a connection reset:\n" + text);
            c.namespace(1).write(0, 1, filled(512, 'r')).get(5, TimeUnit.SECONDS);
        }
    }

    /** Capacity: in-flight counts, waiting for room, and per-queue statistics over TCP. */
    @Test
    void capacityIsVisibleAndCallersCanWaitForRoom() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().queueDepth(4).build())) {
            NamespaceHandle ns = c.namespace(1);
            assertTrue(c.awaitRoom(Duration.ofMillis(100)));
            List<CompletableFuture<Void>> stuck = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                stuck.add(ns.read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512)));
            }
            waitFor(() -> c.outstanding() == 3, 2000, "three in flight");
            assertFalse(c.awaitRoom(Duration.ofMillis(100)), "every slot is taken");
            ns.write(0, 1, filled(512, 'w')); // waits for a slot
            assertEquals(4, c.outstanding());
            QueueStatistics q = c.queueStatistics().get(0);
            assertEquals(3, q.slots());
            assertEquals(3, q.inFlight());
            assertEquals(1, q.waiting());
            assertTrue(q.commands() >= 0);
            c.close();
            for (CompletableFuture<Void> f : stuck) {
                assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
            }
        }
    }

    /** Cancelling or timing out a read's future cannot leave the read writing into the buffer afterwards. */
    @Test
    void aFutureCompletesOnlyOnceItsCommandIsDoneWithTheBuffer() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().commandTimeout(Duration.ofMillis(1000))
                .ctrlLossTimeout(Duration.ZERO).build())) {
            CompletableFuture<Void> read = c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512));
            assertFalse(read.cancel(true), "the command cannot be withdrawn");
            CompletableFuture<Void> timed = c.namespace(1).read(FakeTarget.BLACKHOLE_LBA, 1, ByteBuffer.allocate(512))
                    .orTimeout(50, TimeUnit.MILLISECONDS);
            Thread.sleep(150);
            assertFalse(read.isDone(), "still in flight: not completed by cancel()");
            assertThrows(java.util.concurrent.CancellationException.class, () -> read.get(5, TimeUnit.SECONDS));
            assertTrue(read.isCancelled(), "completes as cancelled once the command is done");
            ExecutionException ee = assertThrows(ExecutionException.class, () -> timed.get(5, TimeUnit.SECONDS));
            assertInstanceOf(java.util.concurrent.TimeoutException.class, ee.getCause());
        }
    }
}

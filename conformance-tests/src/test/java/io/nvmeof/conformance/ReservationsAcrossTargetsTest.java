package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeStatusException;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.reservation.Reservations;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, finding 2: two target processes export one subsystem over one shared file, as a cluster's two paths to
 * its disk. A host keeps writing through target B while the cluster's survivor, through target A, preempts and aborts
 * it. With the subsystem's reservations shared ({@code sharedReservations}), from the moment the Preempt and Abort
 * completes no write of the fenced host succeeds through B, and none of its writes lands over what the survivor
 * writes afterwards; before, B kept its own reservations and let the fenced host write on. Without a shared directory
 * such a subsystem offers no reservations at all.
 */
class ReservationsAcrossTargetsTest {
    private static final int BLOCK = SharedFileTarget.BLOCK;

    @TempDir
    Path dir;

    private static NvmeofController connect(int port, UUID hostId) {
        return NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, SharedFileTarget.NQN),
                ConnectOptions.builder().hostNqn("nqn.2014-08.org.nvmexpress:uuid:" + hostId).hostId(hostId)
                        .ioQueues(1).queueDepth(32).commandTimeout(Duration.ofSeconds(30)).build());
    }

    @Test
    void aHostPreemptedAndAbortedThroughOneTargetWritesNothingThroughTheOther() throws Exception {
        try (Cluster c = new Cluster(dir)) {
            NamespaceHandle nsA = c.nsA;
            NamespaceHandle nsB = c.nsB;
            assertEquals(2, nsA.reservations().report().get(10, TimeUnit.SECONDS).registrants().size(),
                    "both registrations seen through A");

            FencedWriter writer = new FencedWriter(nsB);
            Thread.sleep(300);
            long before = writer.lastOk.get();
            nsA.reservations().preempt(0x51, 0xF1, Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true)
                    .get(30, TimeUnit.SECONDS);
            writer.preemptDoneAt.set(System.nanoTime());
            // The survivor writes its own data at once: nothing of the fenced host may land over it.
            ByteBuffer mine = ByteBuffer.allocateDirect(BLOCK);
            mine.putLong(0, -1L);
            nsA.write(7, 1, mine).get(10, TimeUnit.SECONDS);
            Thread.sleep(500);
            writer.stop();
            assertTrue(before > 0, "the fenced host was writing through B before the preempt");
            assertEquals(List.of(), writer.wrong);
            ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
            nsA.read(7, 1, back).get(10, TimeUnit.SECONDS);
            assertEquals(-1L, back.getLong(0), "the survivor's write stands (the fenced host's last success was "
                    + writer.lastOk.get() + ")");
            ByteBuffer viaBNow = ByteBuffer.allocateDirect(BLOCK);
            nsB.read(7, 1, viaBNow).get(10, TimeUnit.SECONDS);
            byte[] x = new byte[BLOCK];
            byte[] y = new byte[BLOCK];
            back.get(0, x);
            viaBNow.get(0, y);
            assertArrayEquals(x, y, "both targets read the same block");
            assertEquals(1, nsB.reservations().report().get(10, TimeUnit.SECONDS).registrants().size(),
                    "the fenced host is no longer registered, seen through B");
        }
    }

    /**
     * The same with target B stopped (SIGSTOP) while the survivor preempts and aborts through A: A cannot hear from B,
     * so the Preempt and Abort completes once B's lease has run out (B runs nothing on the namespace after that until it
     * has read the new state); continued, B runs none of the fenced host's writes that waited in it, and the
     * survivor's data stands.
     */
    @Test
    void aTargetStoppedWhileItsHostIsFencedRunsNoneOfItsWritesWhenItContinues() throws Exception {
        try (Cluster c = new Cluster(dir)) {
            NamespaceHandle nsA = c.nsA;
            NamespaceHandle nsB = c.nsB;
            FencedWriter writer = new FencedWriter(nsB);
            Thread.sleep(300);
            c.b.pause();
            long pausedAt = System.nanoTime();
            Thread.sleep(100); // the fenced host's next write waits in B's socket
            nsA.reservations().preempt(0x51, 0xF1, Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, true)
                    .get(30, TimeUnit.SECONDS);
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pausedAt);
            writer.preemptDoneAt.set(System.nanoTime());
            ByteBuffer mine = ByteBuffer.allocateDirect(BLOCK);
            mine.putLong(0, -1L);
            nsA.write(7, 1, mine).get(10, TimeUnit.SECONDS);
            c.b.resume();
            Thread.sleep(1500);
            writer.stop();
            assertTrue(waitedMs >= 1000, "the preempt waited out B's lease: " + waitedMs + " ms");
            assertEquals(List.of(), writer.wrong);
            ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
            nsA.read(7, 1, back).get(10, TimeUnit.SECONDS);
            assertEquals(-1L, back.getLong(0), "the survivor's write stands (the fenced host's last success was "
                    + writer.lastOk.get() + ")");
        }
    }

    /**
     * Two targets over one file sharing the subsystem's reservations; the fenced host connected through B, the survivor
     * through A, both registered, the fenced host holding Write Exclusive - Registrants Only.
     */
    private static final class Cluster implements AutoCloseable {
        final TargetProcess a;
        final TargetProcess b;
        final NvmeofController viaA;
        final NvmeofController viaB;
        final NamespaceHandle nsA;
        final NamespaceHandle nsB;

        Cluster(Path dir) throws Exception {
            Path file = dir.resolve("shared.img");
            Path shared = dir.resolve("reservations");
            a = SharedFileTarget.start(file, 1, "8MiB", dir.resolve("a.log"), shared);
            b = SharedFileTarget.start(file, 101, "8MiB", dir.resolve("b.log"), shared);
            viaA = connect(a.port, UUID.fromString("50000000-0000-0000-0000-000000000005"));
            viaB = connect(b.port, UUID.fromString("f0000000-0000-0000-0000-00000000000f"));
            nsA = viaA.namespace(1);
            nsB = viaB.namespace(1);
            nsB.reservations().register(0xF1, Reservations.CPTPL_NO_CHANGE).get(10, TimeUnit.SECONDS);
            nsA.reservations().register(0x51, Reservations.CPTPL_NO_CHANGE).get(10, TimeUnit.SECONDS);
            nsB.reservations().acquire(0xF1, Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY).get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws Exception {
            viaA.close();
            viaB.close();
            a.close();
            b.close();
        }
    }

    /**
     * The fenced host: writes block 7 through its target, one write after another, each its own sequence number, and
     * notes a success of a write sent after the preempt completed, or a failure other than the ones a fenced host
     * gets (Reservation Conflict; ANA Transition while its target re-reads the shared state).
     */
    private static final class FencedWriter {
        final AtomicBoolean stopped = new AtomicBoolean();
        final AtomicLong lastOk = new AtomicLong();
        final AtomicLong preemptDoneAt = new AtomicLong(Long.MAX_VALUE);
        final List<String> wrong = new java.util.concurrent.CopyOnWriteArrayList<>();
        final Thread thread;

        FencedWriter(NamespaceHandle ns) {
            thread = new Thread(() -> {
                ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
                for (long seq = 1; !stopped.get(); seq++) {
                    buf.clear();
                    buf.putLong(0, seq);
                    long started = System.nanoTime();
                    try {
                        ns.write(7, 1, buf).get(30, TimeUnit.SECONDS);
                        lastOk.set(seq);
                        if (started > preemptDoneAt.get()) {
                            wrong.add("write " + seq + " sent after the preempt completed succeeded");
                        }
                    } catch (ExecutionException e) {
                        int code = e.getCause() instanceof NvmeStatusException s ? Status.code(s.status()) : -1;
                        if (code != Status.RESERVATION_CONFLICT && code != Status.ANA_TRANSITION) {
                            wrong.add("unexpected failure: " + e.getCause());
                        }
                    } catch (Exception e) {
                        wrong.add("unexpected failure: " + e);
                        return;
                    }
                }
            }, "fenced-writer");
            thread.start();
        }

        void stop() throws InterruptedException {
            stopped.set(true);
            thread.join(30_000);
        }
    }

    @Test
    void withoutASharedDirectorySuchASubsystemOffersNoReservations() throws Exception {
        Path file = dir.resolve("unshared.img");
        try (TargetProcess a = SharedFileTarget.start(file, 1, "8MiB", dir.resolve("a.log"));
             NvmeofController viaA = connect(a.port, UUID.randomUUID())) {
            byte[] ns = viaA.identify(0, 1);
            assertEquals(0, ns[31], "RESCAP: no reservation type");
            byte[] ctrl = viaA.identify(1, 0);
            assertEquals(0, ctrl[520] & 0x20, "ONCS bit 5: no reservation commands");
            ExecutionException refused = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> viaA.namespace(1).reservations().register(0x11, Reservations.CPTPL_NO_CHANGE)
                            .get(10, TimeUnit.SECONDS));
            assertEquals(Status.INVALID_OPCODE, Status.code(((NvmeStatusException) refused.getCause()).status()));
        }
    }
}

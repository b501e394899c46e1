package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A handle stands for one namespace, not for an NSID (issue 29): when another volume appears under the NSID (its
 * identifiers changed), across a reconnect or live, the old handle is retired and nothing of it reaches the new volume;
 * the same namespace (same identifiers) keeps its handle, even when it grew.
 */
@Timeout(60)
class NamespaceIdentityTest extends FakeTargetCase {
    private static final byte[] NGUID_A = hex("0102030405060708090a0b0c0d0e0f10");
    private static final byte[] NGUID_B = hex("a1a2a3a4a5a6a7a8a9aaabacadaeafb0");
    private static final byte[] EUI64 = hex("0011223344556677");
    private static final UUID UUID_A = UUID.fromString("aaaaaaaa-0000-4000-8000-000000000001");
    private static final UUID UUID_B = UUID.fromString("bbbbbbbb-0000-4000-8000-000000000002");

    /** What the state listener was told. */
    private final List<List<NamespaceHandle>> reports = Collections.synchronizedList(new ArrayList<>());

    private ConnectOptions.Builder opts() {
        return ConnectOptions.builder().connectTimeout(Duration.ofSeconds(2)).commandTimeout(Duration.ofSeconds(10))
                .reconnectDelay(Duration.ofMillis(200)).stateListener(new ControllerStateListener() {
                    @Override
                    public void stateChanged(NvmeofController controller, ControllerState state, String reason) {
                    }

                    @Override
                    public void namespacesChanged(NvmeofController controller, List<NamespaceHandle> namespaces) {
                        reports.add(namespaces);
                    }
                });
    }

    private void identifiedAs(byte[] nguid, UUID uuid) {
        target.descriptors = true;
        target.nguid = nguid;
        target.uuid = uuid;
    }

    /**
     * The target restarts with another volume of the same size under NSID 1 while the controller reconnects. Before,
     * the old handle was kept (same size and block size): the writes held across the reconnect, and later ones, went
     * into the new volume.
     */
    @Test
    void aVolumeSwappedUnderNsid1WhileReconnectingFailsTheOldHandlesHeldWrites() throws Exception {
        identifiedAs(NGUID_A, UUID_A);
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle old = c.namespace(1);
            assertArrayEquals(NGUID_A, old.nguid().orElseThrow());
            assertEquals(UUID_A, old.uuid().orElseThrow());
            assertTrue(old.eui64().isEmpty(), "all zeros: not reported");
            old.write(0, 1, filled(512, 'a')).get(5, TimeUnit.SECONDS);
            byte[] oldVolume = target.disk;

            // A write sent but not answered when the target goes: handed back, to be sent again after the reconnect.
            target.hung = true;
            CompletableFuture<Void> inFlight = old.write(8, 1, filled(512, 'b'));
            waitFor(() -> target.ignoredIo.get() == 1, 5000, "the write reached the hung target");
            target.refuse = true;
            target.drop(-1);
            waitFor(() -> !c.isConnected(), 5000, "the loss noticed");
            // Writes submitted while reconnecting: held.
            CompletableFuture<Void> held = old.write(16, 1, filled(512, 'c'));
            AtomicInteger status = new AtomicInteger(1);
            CountDownLatch done = new CountDownLatch(1);
            old.write(24, 1, filled(512, 'd'), (ctx, st) -> {
                status.set(st);
                done.countDown();
            }, 7);
            Thread.sleep(300); // a reconnect attempt or two is refused meanwhile
            assertFalse(held.isDone(), "held while reconnecting");
            target.hung = false;
            target.replaceVolume(FakeTarget.BLOCKS, NGUID_B, UUID_B); // same size, another volume
            target.refuse = false;
            waitFor(c::isConnected, 10_000, "reconnected");

            for (CompletableFuture<Void> f : List.of(inFlight, held)) {
                NvmeofException e = failure(f);
                assertEquals(ErrorKind.NAMESPACE_GONE, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("namespace 1 of") && e.getMessage().contains("replaced")
                        && e.getMessage().contains("a1a2a3a4") && e.getMessage().contains(UUID_B.toString())
                        && e.getMessage().contains("controller.namespace(1)"), e.getMessage());
            }
            assertTrue(done.await(5, TimeUnit.SECONDS));
            assertEquals(IoCallback.ERR_NAMESPACE_GONE, status.get(), IoCallback.describe(status.get()));
            assertEquals(ErrorKind.NAMESPACE_GONE, ErrorKind.of(status.get()));

            NamespaceHandle now = c.namespace(1);
            assertNotSame(old, now);
            assertFalse(old.isCurrent());
            assertTrue(old.retiredBecause().orElseThrow().contains("identifiers changed"));
            assertTrue(now.isCurrent());
            assertArrayEquals(NGUID_B, now.nguid().orElseThrow());
            assertEquals(UUID_B, now.uuid().orElseThrow());
            waitFor(() -> !reports.isEmpty(), 5000, "namespacesChanged told");
            assertEquals(List.of(now), reports.get(0));

            // Every later request of the old handle fails at once, whatever its kind.
            assertGone(old.read(0, 1, ByteBuffer.allocate(512)));
            assertGone(old.write(0, 1, filled(512, 'e')));
            assertGone(old.flush());
            assertGone(old.writeZeroes(0, 1));
            assertGone(old.deallocate(0, 1));
            assertArrayEquals(new byte[FakeTarget.BLOCKS * FakeTarget.BLOCK], target.disk,
                    "nothing of the old handle reached the new volume");
            assertEquals('a', oldVolume[0]);

            now.write(0, 1, filled(512, 'n')).get(5, TimeUnit.SECONDS);
            assertEquals('n', target.disk[0]);
        }
    }

    /** The same namespace comes back (same identifiers, same size): the handle is kept and held writes are resent. */
    @Test
    void theSameNamespaceAfterAReconnectKeepsItsHandleAndItsHeldWrites() throws Exception {
        identifiedAs(NGUID_A, UUID_A);
        target.eui64 = EUI64;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            assertArrayEquals(EUI64, ns.eui64().orElseThrow());
            target.refuse = true;
            target.drop(-1);
            waitFor(() -> !c.isConnected(), 5000, "the loss noticed");
            CompletableFuture<Void> held = ns.write(16, 1, filled(512, 'h'));
            Thread.sleep(300);
            assertFalse(held.isDone(), "held while reconnecting");
            target.refuse = false;
            waitFor(c::isConnected, 10_000, "reconnected");
            held.get(5, TimeUnit.SECONDS);
            assertEquals('h', target.disk[16 * 512]);
            assertSame(ns, c.namespace(1));
            assertTrue(ns.isCurrent());
            ns.read(16, 1, ByteBuffer.allocate(512)).get(5, TimeUnit.SECONDS);
            Thread.sleep(200); // a report would be queued on the housekeeping thread by now
            assertEquals(List.of(), reports, "nothing changed");
        }
    }

    /** The namespace grew under the same identifiers: the handle is kept with the new size, and the change told. */
    @Test
    void aGrownNamespaceKeepsItsHandleWithItsNewSize() throws Exception {
        identifiedAs(NGUID_A, UUID_A);
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            assertEquals(FakeTarget.BLOCKS, ns.blockCount());
            int grown = 2 * FakeTarget.BLOCKS;
            target.disk = Arrays.copyOf(target.disk, grown * FakeTarget.BLOCK);
            target.nsze = grown;
            assertEquals(List.of(ns), c.rescanNamespaces());
            assertSame(ns, c.namespace(1));
            assertTrue(ns.isCurrent());
            assertEquals(grown, ns.blockCount());
            assertEquals((long) grown * 512, ns.sizeBytes());
            waitFor(() -> !reports.isEmpty(), 5000, "namespacesChanged told");
            assertSame(ns, reports.get(0).get(0));
            ns.write(grown - 1, 1, filled(512, 'g')).get(5, TimeUnit.SECONDS);
            assertEquals('g', target.disk[(grown - 1) * 512]);
        }
    }

    /**
     * An admin deletes NSID 1 and adds another volume as NSID 1, and the target says so (Namespace Attribute
     * Changed): the old handle's requests waiting for a queue slot fail instead of being sent when slots free, and
     * the old handle fails later I/O. Identifiers from Identify Namespace only (this controller refuses CNS 03h).
     */
    @Test
    void aLiveReplacementFailsTheOldHandlesWaitingRequests() throws Exception {
        target.nguid = NGUID_A;
        try (NvmeofController c = NvmeofController.connect(tid(), opts().ioQueues(1).queueDepth(4).build())) {
            NamespaceHandle old = c.namespace(1);
            assertArrayEquals(NGUID_A, old.nguid().orElseThrow());
            assertTrue(old.uuid().isEmpty(), "the descriptor list was refused: no UUID");
            waitFor(() -> target.asyncEventsWaiting() == 1, 5000, "an Asynchronous Event Request outstanding");
            List<CompletableFuture<Void>> reads = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // depth 4: 3 slots, all taken until the gate opens
                reads.add(old.read(FakeTarget.GATED_LBA, 1, ByteBuffer.allocate(512)));
            }
            List<CompletableFuture<Void>> waiting = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                waiting.add(old.write(i, 1, filled(512, 'w')));
            }
            assertEquals(2, c.queueStatistics().get(0).waiting());

            target.replaceVolume(FakeTarget.BLOCKS, NGUID_B, null);
            target.namespaceAttributeChanged();
            waitFor(() -> !old.isCurrent(), 5000, "the event's rescan retired the old handle");
            NamespaceHandle now = c.namespace(1);
            assertNotSame(old, now);
            assertArrayEquals(NGUID_B, now.nguid().orElseThrow());
            target.gate.countDown(); // slots free: the waiting writes would be sent now

            for (CompletableFuture<Void> w : waiting) {
                NvmeofException e = failure(w);
                assertEquals(ErrorKind.NAMESPACE_GONE, e.kind(), e.getMessage());
            }
            for (CompletableFuture<Void> r : reads) {
                r.get(5, TimeUnit.SECONDS); // on the wire before the change: outside the host's control
            }
            assertTrue(target.commands(1).stream().noneMatch(x -> x.opcode() == 0x01), "no write was sent");
            assertGone(old.write(0, 1, filled(512, 'x')));
            assertArrayEquals(new byte[FakeTarget.BLOCKS * FakeTarget.BLOCK], target.disk);
            waitFor(() -> !reports.isEmpty(), 5000, "namespacesChanged told");
            assertSame(now, reports.get(0).get(0));
            now.write(1, 1, filled(512, 'n')).get(5, TimeUnit.SECONDS);
            assertEquals('n', target.disk[512]);
            assertTrue(c.isConnected());
        }
    }

    /** NSID 1 disappears: its handle fails further I/O, saying the namespace was removed. */
    @Test
    void aRemovedNamespaceFailsItsHandle() throws Exception {
        identifiedAs(NGUID_A, UUID_A);
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            target.nsze = 0;
            assertEquals(List.of(), c.rescanNamespaces());
            assertThrows(IllegalArgumentException.class, () -> c.namespace(1));
            NvmeofException e = failure(ns.write(0, 1, filled(512, 'r')));
            assertEquals(ErrorKind.NAMESPACE_GONE, e.kind());
            assertTrue(e.getMessage().contains("namespace 1 of") && e.getMessage().contains("removed"), e.getMessage());
            assertEquals(0, target.disk[0]);
        }
    }

    /**
     * A controller that reports no identifiers (zeros in Identify Namespace, CNS 03h refused): size and block size
     * are all there is, as before: the same size keeps the handle and its held writes; another size is another
     * namespace (and the old handle is retired).
     */
    @Test
    void withoutIdentifiersTheSizeDecidesAsBefore() throws Exception {
        try (NvmeofController c = NvmeofController.connect(tid(), opts().build())) {
            NamespaceHandle ns = c.namespace(1);
            assertTrue(ns.nguid().isEmpty() && ns.eui64().isEmpty() && ns.uuid().isEmpty(), ns.toString());
            target.refuse = true;
            target.drop(-1);
            waitFor(() -> !c.isConnected(), 5000, "the loss noticed");
            CompletableFuture<Void> held = ns.write(16, 1, filled(512, 'h'));
            target.refuse = false;
            waitFor(c::isConnected, 10_000, "reconnected");
            held.get(5, TimeUnit.SECONDS);
            assertEquals('h', target.disk[16 * 512]);
            assertSame(ns, c.namespace(1));

            target.nsze = FakeTarget.BLOCKS / 2;
            c.rescanNamespaces();
            NamespaceHandle now = c.namespace(1);
            assertNotSame(ns, now);
            assertEquals(FakeTarget.BLOCKS / 2, now.blockCount());
            assertEquals(FakeTarget.BLOCKS, ns.blockCount());
            assertFalse(ns.isCurrent());
            assertGone(ns.read(0, 1, ByteBuffer.allocate(512)));
            now.read(0, 1, ByteBuffer.allocate(512)).get(5, TimeUnit.SECONDS);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static NvmeofException failure(CompletableFuture<Void> f) {
        ExecutionException ee = assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
        assertTrue(ee.getCause() instanceof NvmeofException, ee.getCause().toString());
        return (NvmeofException) ee.getCause();
    }

    private static void assertGone(CompletableFuture<Void> f) {
        NvmeofException e = failure(f);
        assertEquals(ErrorKind.NAMESPACE_GONE, e.kind(), e.getMessage());
    }

    private static byte[] hex(String s) {
        return java.util.HexFormat.of().parseHex(s);
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ControllerState;
import io.nvmeof.initiator.ErrorKind;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.NvmeofException;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our initiator against our own target process over NVMe/TCP: the target is stopped and started again (same port,
 * same file-backed namespace) under a running, verified read/write job, and namespaces are added and removed live.
 */
@Timeout(120)
class InitiatorResilienceTest {
    private static final String NQN = "nqn.2026-11.io.nvmeof:resilience";

    @TempDir
    Path dir;

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private TargetConfig config(int port, Path file) {
        return new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", port, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, "SN-RES-1", "resilience", 16, true, null,
                        List.of(new NamespaceConfig(1L, "file", "16MiB", 4096, file.toString(), null)))));
    }

    /**
     * Kill and restart the target twice during a write-then-verify job over 8 MiB: the job sees no error and every
     * block reads back as last written (interrupted writes and reads were held and sent again after reconnecting).
     */
    @Test
    void aVerifiedJobSurvivesTargetRestarts() throws Exception {
        int port = freePort();
        Path file = dir.resolve("ns1.img");
        AtomicReference<NvmeTarget> target = new AtomicReference<>(NvmeTarget.start(config(port, file)));
        List<ControllerState> states = Collections.synchronizedList(new ArrayList<>());
        ConnectOptions opts = ConnectOptions.builder().ioQueues(2).queueDepth(32)
                .connectTimeout(Duration.ofSeconds(2)).commandTimeout(Duration.ofSeconds(10))
                .reconnectDelay(Duration.ofMillis(200)).ctrlLossTimeout(Duration.ofSeconds(30))
                .stateListener((c, s, why) -> states.add(s)).build();
        try (NvmeofController c = NvmeofController.connect(TransportId.tcp("127.0.0.1", port, NQN), opts)) {
            List<String> problems = Collections.synchronizedList(new ArrayList<>());
            Thread chaos = new Thread(() -> {
                try {
                    for (int i = 0; i < 2; i++) {
                        // Each restart finds the controller connected again and I/O flowing: otherwise a second loss
                        // during the reconnect would count as one RECONNECTING (a slow machine reconnected in 600-800
                        // ms, against the 400 ms this waited).
                        if (!TestTargets.eventually(c::isConnected, 30_000)) {
                            problems.add("not reconnected within 30 s before restart " + (i + 1));
                            return;
                        }
                        Thread.sleep(400);
                        target.get().close();
                        Thread.sleep(600);
                        target.set(NvmeTarget.start(config(port, file)));
                    }
                } catch (Exception e) {
                    problems.add("restart: " + e);
                }
            });
            chaos.start();
            VerifiedJob job = new VerifiedJob(c, c.namespace(1), 8L << 20);
            job.run(chaos::isAlive, 90_000);
            chaos.join();
            assertEquals(List.of(), problems);
            assertEquals(List.of(), job.problems, job.firstProblems());
            assertTrue(TestTargets.eventually(c::isConnected, 5000));
            assertTrue(states.stream().filter(s -> s == ControllerState.RECONNECTING).count() >= 2, states.toString());
            assertEquals(ControllerState.CONNECTED, states.get(states.size() - 1), states.toString());
        } finally {
            target.get().close();
        }
    }

    /** A namespace added or removed on the target reaches the initiator by a Namespace Attribute Changed event. */
    @Test
    void namespacesAddedAndRemovedLiveAreSeenWithoutReconnecting() throws Exception {
        int port = freePort();
        try (NvmeTarget target = NvmeTarget.start(config(port, dir.resolve("ns.img")))) {
            AtomicInteger notices = new AtomicInteger();
            ConnectOptions opts = ConnectOptions.builder().stateListener(new io.nvmeof.initiator.ControllerStateListener() {
                @Override
                public void stateChanged(NvmeofController c, ControllerState s, String why) {
                }

                @Override
                public void namespacesChanged(NvmeofController c, List<NamespaceHandle> now) {
                    notices.incrementAndGet();
                }
            }).build();
            try (NvmeofController c = NvmeofController.connect(TransportId.tcp("127.0.0.1", port, NQN), opts)) {
                NamespaceHandle first = c.namespace(1);
                target.core().subsystem(NQN).addNamespace(new Namespace(7, new RamBackend(4 << 20), 512, UUID.randomUUID()));
                assertTrue(TestTargets.eventually(() -> c.namespaces().size() == 2, 5000), "added: " + c.namespaces());
                NamespaceHandle added = c.namespace(7);
                assertEquals(8192, added.blockCount());
                ByteBuffer b = ByteBuffer.allocateDirect(512);
                added.write(3, 1, b.putLong(0, 0x5EED).clear()).get(5, TimeUnit.SECONDS);
                assertTrue(first == c.namespace(1), "the unchanged namespace keeps its handle");
                target.core().subsystem(NQN).removeNamespace(7);
                assertTrue(TestTargets.eventually(() -> c.namespaces().size() == 1, 5000), "removed: " + c.namespaces());
                assertTrue(TestTargets.eventually(() -> notices.get() == 2, 5000), "notices: " + notices.get());
                assertTrue(c.isConnected());
            }
        }
    }
    /**
     * Issue 29: an admin deletes NSID 1 and adds another volume (same size and block size, another UUID) as NSID 1.
     * The old handle is retired and fails further I/O with NAMESPACE_GONE (before, it kept writing into the new
     * volume); {@code namespace(1)} gives the new one, with the new identifiers from the target's CNS 03h list.
     */
    @Test
    void aVolumeReplacedLiveUnderTheSameNsidRetiresTheOldHandle() throws Exception {
        int port = freePort();
        try (NvmeTarget target = NvmeTarget.start(config(port, dir.resolve("ns.img")));
             NvmeofController c = NvmeofController.connect(TransportId.tcp("127.0.0.1", port, NQN),
                     ConnectOptions.builder().build())) {
            NamespaceHandle old = c.namespace(1);
            UUID oldUuid = old.uuid().orElseThrow(() -> new AssertionError("the target reports a UUID"));
            assertTrue(old.nguid().isPresent());
            ByteBuffer b = ByteBuffer.allocateDirect(4096);
            old.write(0, 1, b.putLong(0, 0x01D).clear()).get(5, TimeUnit.SECONDS);

            UUID other = UUID.randomUUID();
            target.core().subsystem(NQN).removeNamespace(1);
            target.core().subsystem(NQN).addNamespace(new Namespace(1, new RamBackend(16 << 20), 4096, other));
            assertTrue(TestTargets.eventually(() -> c.namespaces().stream()
                    .anyMatch(n -> n.uuid().equals(java.util.Optional.of(other))), 5000),
                    "replaced: " + c.namespaces());
            // The scan publishes the new handles before it retires the old one (so a caller told its handle was
            // retired finds the new one at once): the retirement follows within the same scan.
            assertTrue(TestTargets.eventually(() -> !old.isCurrent(), 5000), "the old handle is retired");
            java.util.concurrent.ExecutionException ee = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class,
                    () -> old.write(0, 1, b.putLong(0, 0xBAD).clear()).get(5, TimeUnit.SECONDS));
            assertEquals(ErrorKind.NAMESPACE_GONE, ((NvmeofException) ee.getCause()).kind(),
                    ee.getCause().getMessage());
            NamespaceHandle now = c.namespace(1);
            assertTrue(now.uuid().orElseThrow().equals(other) && !other.equals(oldUuid));
            ByteBuffer r = ByteBuffer.allocateDirect(4096);
            now.read(0, 1, r).get(5, TimeUnit.SECONDS);
            assertEquals(0, r.getLong(0), "the new volume got nothing of the old handle");
            assertTrue(c.isConnected());
        }
    }
}

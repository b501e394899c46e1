package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, finding 4: a slow disk beside a fast one on one poll group. The target runs in a process of its own in a
 * block-I/O cgroup that throttles one loop device to 50 reads a second (cgroup v1 {@code blkio.throttle}, or v2
 * {@code io.max}); a host keeps 100 reads outstanding on that namespace, more than the poll group's ring holds (32
 * here), and meanwhile reads the other namespace, on an unthrottled loop device, one at a time. Those reads must come
 * back at the fast device's pace: before, they waited in one line behind the slow namespace's (2.09 s in the issue,
 * with 250 reads and a ring of 128). Needs root, loop devices and a block-I/O cgroup controller; skipped without them.
 */
class SlowNeighbourTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:slow-neighbour";
    private static final int SLOW_IOPS = 50;
    private static final int SLOW_OUTSTANDING = 100;

    @TempDir
    Path dir;

    @Test
    void aSlowDeviceSlowsOnlyItsOwnNamespace() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/loop-control")), "needs root and /dev/loop-control for losetup");
        List<String> loops = new ArrayList<>();
        Path cgroup = null;
        try {
            String slow = attachLoop(dir.resolve("slow.img"), loops);
            String fast = attachLoop(dir.resolve("fast.img"), loops);
            cgroup = throttledCgroup(majorMinor(slow), SLOW_IOPS);
            assumeTrue(cgroup != null, "no block-I/O cgroup controller that can throttle a device here");
            TargetConfig config = new TargetConfig(1, 2, 128, 1 << 20,
                    List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                    List.of(new SubsystemConfig(NQN, null, null, 4, true, null, List.of(
                            new NamespaceConfig(1L, "block", null, 4096, slow, null),
                            new NamespaceConfig(2L, "block", null, 4096, fast, null)))));
            try (TargetProcess target = TargetProcess.start(config, dir.resolve("target.log"),
                    List.of("-Dnvmeof.uring.depth=32"), cgroup.resolve("cgroup.procs"));
                 NvmeofController host = NvmeofController.connect(
                         new TransportId("tcp", "127.0.0.1", target.port, NQN),
                         ConnectOptions.builder().ioQueues(1).queueDepth(128).commandTimeout(java.time.Duration
                                 .ofSeconds(60)).build())) {
                NamespaceHandle slowNs = host.namespace(1);
                NamespaceHandle fastNs = host.namespace(2);
                List<CompletableFuture<Void>> slowReads = new ArrayList<>();
                long start = System.nanoTime();
                for (int i = 0; i < SLOW_OUTSTANDING; i++) {
                    slowReads.add(slowNs.read(i * 8L, 1, ByteBuffer.allocateDirect(4096)));
                }
                Thread.sleep(300); // the ring is full of them, the rest wait
                List<Long> latencies = new ArrayList<>();
                ByteBuffer buf = ByteBuffer.allocateDirect(4096);
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
                while (System.nanoTime() < until) {
                    long t = System.nanoTime();
                    fastNs.read((latencies.size() * 8L) % 4096, 1, buf.clear()).get(30, TimeUnit.SECONDS);
                    latencies.add(System.nanoTime() - t);
                }
                int slowDoneWhileFast = (int) slowReads.stream().filter(CompletableFuture::isDone).count();
                CompletableFuture.allOf(slowReads.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
                long slowMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
                double maxMs = sorted[sorted.length - 1] / 1e6;
                double medianMs = sorted[sorted.length / 2] / 1e6;
                System.out.printf("slow neighbour: %d fast reads in 1.5 s beside %d slow ones outstanding (ring of 32):"
                        + " median %.2f ms, max %.2f ms; the slow ones took %d ms in all (%d done during the fast"
                        + " reads: the device's %d IOPS)%n", sorted.length, SLOW_OUTSTANDING, medianMs, maxMs, slowMs,
                        slowDoneWhileFast, SLOW_IOPS);
                assertTrue(slowMs >= 1000, "the slow device really was throttled: " + SLOW_OUTSTANDING + " reads in "
                        + slowMs + " ms");
                assertTrue(sorted.length >= 20, "the fast namespace kept serving: " + sorted.length + " reads");
                assertTrue(maxMs < 300, "a fast read waited " + maxMs + " ms behind the slow namespace's (median "
                        + medianMs + " ms)");
            }
        } finally {
            for (String loop : loops) {
                new ProcessBuilder("losetup", "-d", loop).start().waitFor(30, TimeUnit.SECONDS);
            }
            if (cgroup != null) {
                Files.deleteIfExists(cgroup); // empty once the target is gone (rmdir)
            }
        }
    }

    /** A 16 MiB loop device of 4 KiB blocks over a new file; skipped where none can be attached. */
    private static String attachLoop(Path img, List<String> attached) throws Exception {
        try (FileChannel ch = FileChannel.open(img, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), (16 << 20) - 1);
        }
        Process attach = new ProcessBuilder("losetup", "-f", "--show", "-b", "4096", img.toString())
                .redirectErrorStream(true).start();
        String dev = new String(attach.getInputStream().readAllBytes()).strip();
        assumeTrue(attach.waitFor(30, TimeUnit.SECONDS) && attach.exitValue() == 0 && dev.startsWith("/dev/loop"),
                "losetup could not attach a loop device here: " + dev);
        attached.add(dev);
        return dev;
    }

    private static String majorMinor(String dev) throws Exception {
        long rdev = (Long) Files.getAttribute(Path.of(dev), "unix:rdev");
        return (((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL)) + ":" + ((rdev & 0xff) | ((rdev >>> 12) & ~0xffL));
    }

    /**
     * A new cgroup whose processes read from {@code majMin} at most {@code iops} times a second: cgroup v1's blkio
     * controller, else v2's io controller; null where neither is there to use.
     */
    private static Path throttledCgroup(String majMin, int iops) throws Exception {
        String name = "nvmeof-slow-neighbour-" + ProcessHandle.current().pid();
        Path v1 = Path.of("/sys/fs/cgroup/blkio");
        if (Files.isRegularFile(v1.resolve("blkio.throttle.read_iops_device"))) {
            Path g = Files.createDirectories(v1.resolve(name));
            Files.writeString(g.resolve("blkio.throttle.read_iops_device"), majMin + " " + iops);
            return g;
        }
        for (Path root : new Path[] {Path.of("/sys/fs/cgroup"), Path.of("/sys/fs/cgroup/unified")}) {
            Path controllers = root.resolve("cgroup.controllers");
            if (Files.isRegularFile(controllers)
                    && Arrays.asList(Files.readString(controllers).trim().split(" ")).contains("io")) {
                try {
                    Files.writeString(root.resolve("cgroup.subtree_control"), "+io");
                    Path g = Files.createDirectories(root.resolve(name));
                    Files.writeString(g.resolve("io.max"), majMin + " riops=" + iops);
                    return g;
                } catch (java.io.IOException e) {
                    return null; // a root cgroup with processes of its own cannot hand out controllers
                }
            }
        }
        return null;
    }
}

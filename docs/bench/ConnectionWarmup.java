// The first seconds of each new connection, with one warm host (issue 53, item 1): three connections of 10 s each to
// target A, then three to target B (started with A, idle until then), 4 KiB random reads at QD 32 through the
// initiator library; prints the p99 of each second. A host that stays warm tells the target's own warm-up from the
// host's (a fresh bench JVM has both). Figures: docs/performance.md, "The first seconds of a connection". A third
// argument gives the number of connections (default 6: three to each).
//   taskset -c 0 ./nvmeof target --no-admin --poll-groups 1 --size 1GiB --block-size 4096 --port 4977 --warm-up 0 &
//   taskset -c 0 ./nvmeof target --no-admin --poll-groups 1 --size 1GiB --block-size 4096 --port 4978 --warm-up W &
//   taskset -c 1 java -cp nvmeof-cli/target/nvmeof.jar docs/bench/ConnectionWarmup.java 4977 4978
import io.nvmeof.initiator.*;
import java.nio.ByteBuffer;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.HdrHistogram.Histogram;

public class ConnectionWarmup {
    public static void main(String[] a) throws Exception {
        int portA = Integer.parseInt(a[0]), portB = Integer.parseInt(a[1]);
        for (int round = 0; round < (a.length > 2 ? Integer.parseInt(a[2]) : 6); round++) { int port = round < 3 ? portA : portB;
            try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", port, "nqn.2026-11.io.nvmeof:default"),
                    ConnectOptions.builder().ioQueues(1).queueDepth(64).build())) {
                NamespaceHandle ns = c.namespace(1);
                long blocks = ns.blockCount();
                int qd = 32;
                Histogram[] perSec = new Histogram[10];
                for (int i = 0; i < 10; i++) perSec[i] = new Histogram(3_600_000_000L, 3);
                long start = System.nanoTime(), end = start + 10_000_000_000L;
                long[] issued = new long[qd];
                ByteBuffer[] bufs = new ByteBuffer[qd];
                for (int i = 0; i < qd; i++) bufs[i] = ByteBuffer.allocateDirect(4096);
                AtomicLong done = new AtomicLong();
                CountDownLatch finished = new CountDownLatch(qd);
                IoCallback[] cb = new IoCallback[1];
                cb[0] = (ctx, status) -> {
                    int slot = (int) ctx;
                    long now = System.nanoTime();
                    int sec = (int) ((now - start) / 1_000_000_000L);
                    synchronized (perSec) { if (sec < 10) perSec[sec].recordValue((now - issued[slot]) / 1000); }
                    done.incrementAndGet();
                    if (now < end) {
                        issued[slot] = System.nanoTime();
                        ns.read(ThreadLocalRandom.current().nextLong(blocks), 1, bufs[slot], cb[0], slot);
                    } else finished.countDown();
                };
                for (int i = 0; i < qd; i++) { issued[i] = System.nanoTime(); ns.read(ThreadLocalRandom.current().nextLong(blocks), 1, bufs[i], cb[0], i); }
                finished.await(30, TimeUnit.SECONDS);
                StringBuilder sb = new StringBuilder("round " + round + " p99 per second (us):");
                Histogram all = new Histogram(3_600_000_000L, 3);
                for (Histogram h : perSec) { sb.append(' ').append(h.getValueAtPercentile(99)); all.add(h); }
                System.out.println(sb + "  total " + done.get() + "  p99.9 of the 10 s " + all.getValueAtPercentile(99.9) + " us");
            }
        }
    }
}

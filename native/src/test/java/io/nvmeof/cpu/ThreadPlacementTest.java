package io.nvmeof.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Affinity read back from the kernel ({@code /proc/PID/task/TID/status}), not from our own bookkeeping. */
class ThreadPlacementTest {
    private static CpuList kernelSays(int tid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/task/" + tid + "/status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return CpuList.parse(line.substring(line.indexOf(':') + 1).strip());
            }
        }
        throw new IOException("no Cpus_allowed_list for thread " + tid);
    }

    @Test
    void aPollingThreadRunsAloneOnItsCpuAndEveryOtherThreadOnTheRest() throws Exception {
        assumeTrue(Affinity.unavailable() == null, Affinity.unavailable());
        CpuList allowed = Affinity.allowed();
        assumeTrue(allowed.size() >= 2, "needs two CPUs, this process may use " + allowed);
        int pollCpu = allowed.toArray()[0];
        CpuList rest = allowed.minus(CpuList.of(pollCpu));
        int main = Affinity.currentThreadId();
        AtomicInteger pollTid = new AtomicInteger();
        AtomicInteger childTid = new AtomicInteger();
        CountDownLatch placed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (ThreadPlacement placement = ThreadPlacement.start(CpuList.of(pollCpu))) {
            assertEquals(rest, kernelSays(main), "the starting thread goes to the housekeeping CPUs");
            Thread poll = new Thread(placement.pinned(0, () -> {
                try {
                    pollTid.set(Affinity.currentThreadId());
                    // A thread a polling thread starts inherits its CPU: the sweep must move it.
                    Thread child = new Thread(() -> {
                        try {
                            childTid.set(Affinity.currentThreadId());
                            release.await();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    child.start();
                    while (childTid.get() == 0) {
                        Thread.onSpinWait();
                    }
                    placed.countDown();
                    release.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }));
            poll.start();
            placed.await();
            assertEquals(CpuList.of(pollCpu), kernelSays(pollTid.get()));
            assertEquals(CpuList.of(pollCpu), kernelSays(childTid.get()), "inherited before the sweep");
            assertTrue(placement.sweep() >= 1);
            assertEquals(rest, kernelSays(childTid.get()), "moved by the sweep");
            assertEquals(CpuList.of(pollCpu), kernelSays(pollTid.get()), "the polling thread stays");
            Affinity.set(pollTid.get(), allowed); // as taskset -p would
            assertEquals(1, placement.sweep());
            assertEquals(CpuList.of(pollCpu), kernelSays(pollTid.get()), "a polling thread moved away is put back");
            release.countDown();
            poll.join();
        }
        assertEquals(allowed, kernelSays(main), "closing gives the threads all the process's CPUs back");
    }

    /** One placement per process (two would move each other's threads); a thread a poller starts can leave at once. */
    @Test
    void onePlacementAtATimeAndAThreadStartedByAPollerLeavesItsCpu() throws Exception {
        assumeTrue(Affinity.unavailable() == null, Affinity.unavailable());
        CpuList allowed = Affinity.allowed();
        assumeTrue(allowed.size() >= 2, "needs two CPUs, this process may use " + allowed);
        int pollCpu = allowed.toArray()[0];
        java.util.concurrent.atomic.AtomicReference<Object> seen = new java.util.concurrent.atomic.AtomicReference<>();
        try (ThreadPlacement placement = ThreadPlacement.start(CpuList.of(pollCpu))) {
            IllegalStateException second = assertThrows(IllegalStateException.class,
                    () -> ThreadPlacement.start(CpuList.of(pollCpu)));
            assertTrue(second.getMessage().contains("one placement at a time"), second.getMessage());
            Thread poll = new Thread(placement.pinned(0, () -> {
                Thread worker = new Thread(() -> {
                    ThreadPlacement.leavePollCpus();
                    try {
                        seen.set(Affinity.of(0));
                    } catch (IOException e) {
                        seen.set(e);
                    }
                });
                worker.start();
                try {
                    worker.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
            poll.start();
            poll.join();
            assertEquals(allowed.minus(CpuList.of(pollCpu)), seen.get(), "before any sweep");
        }
        ThreadPlacement.leavePollCpus(); // none in force: nothing moves
        assertEquals(allowed, Affinity.allowed());
        ThreadPlacement.start(CpuList.of(pollCpu)).close(); // a closed placement makes room for the next
    }

    @Test
    void cpusOutsideTheProcessOrNoneLeftOverAreRefusedSayingWhatToDo() throws Exception {
        assumeTrue(Affinity.unavailable() == null, Affinity.unavailable());
        CpuList allowed = Affinity.allowed();
        IllegalArgumentException all = assertThrows(IllegalArgumentException.class,
                () -> ThreadPlacement.start(allowed));
        assertTrue(all.getMessage().contains("leave at least one"), all.getMessage());
        IllegalArgumentException outside = assertThrows(IllegalArgumentException.class,
                () -> ThreadPlacement.start(CpuList.of(CpuList.MAX_CPU)));
        assertTrue(outside.getMessage().contains("taskset"), outside.getMessage());
        assertEquals(allowed, Affinity.allowed(), "a refused placement changes nothing");
    }
}

package io.nvmeof.tgt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nvmeof.cpu.Affinity;
import io.nvmeof.cpu.CpuList;
import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.live.LiveConfiguration.ImportResult;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** pollGroupCpus: what the kernel reports for each thread of the process while the target runs. */
class PollGroupCpusTest {
    /** "name[tid]" to the CPUs the kernel lets that thread run on, for every thread of this process. */
    private static Map<String, List<CpuList>> threadCpus() throws IOException {
        Map<String, List<CpuList>> byName = new HashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    String name = Files.readString(task.resolve("comm")).strip() + "[" + task.getFileName() + "]";
                    for (String line : Files.readAllLines(task.resolve("status"))) {
                        if (line.startsWith("Cpus_allowed_list:")) {
                            byName.computeIfAbsent(name, k -> new java.util.ArrayList<>())
                                    .add(CpuList.parse(line.substring(line.indexOf(':') + 1).strip()));
                        }
                    }
                } catch (IOException e) {
                    // the thread ended while listed
                }
            }
        }
        return byName;
    }

    @Test
    void thePollGroupRunsAloneOnItsCpuAndTheJvmsOtherThreadsOnTheRest() throws Exception {
        assumeTrue(Affinity.unavailable() == null, Affinity.unavailable());
        CpuList allowed = Affinity.allowed();
        assumeTrue(allowed.size() >= 2, "needs two CPUs, this process may use " + allowed);
        int pollCpu = allowed.toArray()[allowed.size() - 1];
        CpuList rest = allowed.minus(CpuList.of(pollCpu));
        TargetConfig config = TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null)
                .withPollGroupCpus(String.valueOf(pollCpu));
        try (NvmeTarget t = NvmeTarget.start(config)) {
            int loops = 0;
            for (io.netty.util.concurrent.EventExecutor ignored : t.pollGroups()) {
                loops++;
            }
            assertEquals(1, loops, "one poll group per CPU given");
            // The first poll group's thread starts with the target (it runs the keep-alive check).
            // The poll group says where it runs, and its thread's id.
            int[] pollTid = new int[1];
            CpuList onLoop = t.pollGroups().next().submit(() -> {
                pollTid[0] = Affinity.currentThreadId();
                return Affinity.of(0);
            }).get(5, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(CpuList.of(pollCpu), onLoop, "the poll group's thread runs on its CPU alone");
            Thread.sleep(1_100); // a sweep has run since
            Map<String, List<CpuList>> cpus = threadCpus();
            assertTrue(cpus.size() > 3, cpus.toString());
            for (Map.Entry<String, List<CpuList>> e : cpus.entrySet()) {
                if (!e.getKey().endsWith("[" + pollTid[0] + "]")) {
                    for (CpuList l : e.getValue()) {
                        assertFalse(l.contains(pollCpu), e.getKey() + " may run on the poll group's CPU: " + l);
                    }
                }
            }
            assertEquals(rest, Affinity.allowed(), "the thread that started the target is a housekeeping thread");
        }
        assertEquals(allowed, Affinity.allowed(), "a stopped target gives the threads their CPUs back");
    }

    /** A live import: a list that is no CPU list is refused (400) and changes nothing; another list is not applied. */
    @Test
    void anImportedListIsCheckedAndNeverAppliedLive() throws Exception {
        TargetConfig config = TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null);
        try (NvmeTarget t = NvmeTarget.start(config)) {
            LiveConfiguration live = t.live();
            TargetConfig now = live.export();
            LiveConfiguration.ConfigurationException bad = assertThrows(LiveConfiguration.ConfigurationException.class,
                    () -> live.importConfiguration(now.withPollGroupCpus("1-0"), ImportMode.MERGE, false, n -> { }));
            assertEquals(LiveConfiguration.ConfigurationException.Kind.INVALID, bad.kind());
            assertTrue(bad.getMessage().startsWith("pollGroupCpus: "), bad.getMessage());
            ImportResult other = live.importConfiguration(now.withPollGroupCpus("0"), ImportMode.MERGE, false,
                    n -> { });
            assertTrue(other.notApplied().stream().anyMatch(s -> s.startsWith("pollGroupCpus 0: fixed while")),
                    other.notApplied().toString());
            assertEquals(now, live.export(), "nothing changed");
        }
    }

    @Test
    void cpusThatCannotBeHonouredAreRefusedBeforeAnythingStarts() throws Exception {
        TargetConfig base = TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null);
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(base.withPollGroupCpus("0-x")).close());
        assertTrue(bad.getMessage().startsWith("pollGroupCpus: "), bad.getMessage());
        IllegalArgumentException mismatch = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(base.withPollGroups(2).withPollGroupCpus("0")).close());
        assertTrue(mismatch.getMessage().contains("one CPU per poll group"), mismatch.getMessage());
        assumeTrue(Affinity.unavailable() == null, Affinity.unavailable());
        CpuList allowed = Affinity.allowed();
        IllegalArgumentException all = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(base.withPollGroupCpus(allowed.toString())).close());
        assertTrue(all.getMessage().contains("leave at least one"), all.getMessage());
        assertTrue(all.getMessage().startsWith("pollGroupCpus " + allowed + " (--poll-group-cpus, or the configuration"),
                all.getMessage());
        assertEquals(allowed, Affinity.allowed(), "a refused start moves no thread");
    }
}

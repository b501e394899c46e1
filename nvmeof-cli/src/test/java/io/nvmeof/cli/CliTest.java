package io.nvmeof.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line against an in-process target: what a user types, what they get back, and the exit codes. */
class CliTest {
    static NvmeTarget target;
    static String port;
    static final String NQN = TargetConfig.DEFAULT_NQN;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "64MiB", 512, null));
        port = Integer.toString(target.tcpPort(0));
    }

    @AfterAll
    static void stop() {
        target.close();
    }

    /** Runs the CLI capturing standard output and error. */
    static String[] run(int expectedExit, String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            code = Main.run(args);
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        String[] result = {o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8)};
        assertEquals(expectedExit, code, "exit code of " + Arrays.toString(args) + "\nstdout: " + result[0] + "\nstderr: " + result[1]);
        return result;
    }

    @Test
    void identifyPrintsControllerAndNamespace() throws Exception {
        String out = run(0, "identify", "-t", "tcp", "-a", "127.0.0.1", "-s", port, "-n", NQN)[0];
        assertTrue(out.contains("subnqn    : " + NQN), out);
        assertTrue(out.contains("nsze      : 131072"), out);
        JsonNode json = new ObjectMapper().readTree(run(0, "identify", "-s", port, "-n", NQN, "--json")[0]);
        assertEquals(NQN, json.at("/controller/subnqn").asText());
        assertEquals(512, json.at("/namespaces/0/block_size").asInt());
    }

    @Test
    void writeThenReadRoundTripsAFile() throws Exception {
        byte[] data = new byte[100_000];
        new Random(1).nextBytes(data);
        Path in = dir.resolve("in.bin");
        Path out = dir.resolve("out.bin");
        Files.write(in, data);
        String err = run(0, "write", "-s", port, "-n", NQN, "--lba", "40", "-i", in.toString())[1];
        assertTrue(err.contains("wrote 100000 bytes as 196 blocks at LBA 40"), err);
        run(0, "read", "-s", port, "-n", NQN, "--lba", "40", "--count", "196", "-o", out.toString());
        byte[] back = Files.readAllBytes(out);
        assertEquals(196 * 512, back.length);
        assertArrayEquals(data, Arrays.copyOf(back, data.length));
        assertArrayEquals(new byte[196 * 512 - data.length], Arrays.copyOfRange(back, data.length, back.length), "zero padding");
    }

    /**
     * nvme-cli's -c/--block-count is 0-based; ours was -c/--count, 1-based: an nvme-cli user's "-c 7" read 7 blocks,
     * not 8. Both spellings are there, each meaning what its users expect, and a bare -c is refused naming both.
     */
    @Test
    void blockCountIsZeroBasedAsNvmeCliAndABareCIsRefused() throws Exception {
        Path out = dir.resolve("eight.bin");
        run(0, "read", "-s", port, "-n", NQN, "--block-count", "7", "-o", out.toString());
        assertEquals(8 * 512, Files.size(out));
        run(0, "read", "-s", port, "-n", NQN, "--count", "8", "-o", out.toString());
        assertEquals(8 * 512, Files.size(out));
        String err = run(1, "read", "-s", port, "-n", NQN, "-c", "7", "-o", out.toString())[1];
        assertTrue(err.contains("-c 7 is ambiguous") && err.contains("--count N") && err.contains("--block-count N-1"), err);
        err = run(1, "read", "-s", port, "-n", NQN, "--count", "8", "--block-count", "7", "-o", "-")[1];
        assertTrue(err.contains("one of them"), err);
    }

    /** identify -H decodes the bit fields as nvme id-ctrl -H does (before: only raw numbers). */
    @Test
    void identifyHumanReadableDecodesTheBitFields() {
        String out = run(0, "identify", "-s", port, "-n", NQN, "-H")[0];
        assertTrue(out.contains("[3:3] : 1\tWrite Zeroes Supported"), out);
        assertTrue(out.contains("[2:2] : 1\tData Set Management Supported"), out);
        assertTrue(out.contains("Keyed SGL Data Block Descriptor"), out);
        assertTrue(out.contains("  I/O Controller"), out);
        assertTrue(out.contains("Keep Alive Supported, granularity"), out);
        assertTrue(out.contains("ana       : optimized (ANA group 1)"), out);
    }

    @Test
    void discoverListsTheSubsystem() {
        String out = run(0, "discover", "-t", "tcp", "-a", "127.0.0.1", "-s", port)[0];
        assertTrue(out.contains("subnqn:  " + NQN), out);
        assertTrue(out.contains("trsvcid: " + port), out);
    }

    @Test
    void discoverShowsAReferralAsOne() {
        int id = target.live().addReferral(new io.nvmeof.tgt.config.TargetConfig.ReferralConfig(null, "tcp",
                "127.0.0.2", 4421, null, null, null)).id();
        String out;
        try {
            out = run(0, "discover", "-t", "tcp", "-a", "127.0.0.1", "-s", port)[0];
        } finally {
            target.live().removeReferral(id); // the target is the other tests' too
        }
        assertTrue(out.contains("subtype: discovery subsystem referral\ntreq:    not specified\nportid:  0\n"
                + "trsvcid: 4421\nsubnqn:  nqn.2014-08.org.nvmexpress.discovery\ntraddr:  127.0.0.2"), out);
        assertTrue(out.contains("1 referral(s) to other discovery services"), out);
    }

    @Test
    void benchReportsFioCompatibleJson() throws Exception {
        String out = run(0, "bench", "-s", port, "-n", NQN, "--rw", "randwrite", "--bs", "4k", "--qd", "4", "--time", "1",
                "--ramp", "0", "--json")[0];
        JsonNode job = new ObjectMapper().readTree(out).at("/jobs/0");
        assertTrue(job.at("/write/iops").asDouble() > 0, out);
        assertTrue(job.at("/write/total_ios").asLong() > 0, out);
        assertTrue(job.at("/write/clat_ns/percentile/99.000000").asLong() > 0, out);
        assertEquals(0, job.at("/read/total_ios").asLong());
    }

    /** The target's CPU per I/O next to the initiator's; the target is in this process here, so it includes both. */
    @Test
    void benchReportsTheTargetProcessesCpuPerIo() throws Exception {
        long self = ProcessHandle.current().pid();
        String out = run(0, "bench", "-s", port, "-n", NQN, "--qd", "8", "--time", "2", "--ramp", "0", "--json",
                "--target-pid", Long.toString(self))[0];
        JsonNode job = new ObjectMapper().readTree(out).at("/jobs/0");
        assertEquals(self, job.at("/target_pid").asLong(), out);
        double target = job.at("/target_cpu_seconds").asDouble();
        double mine = job.at("/cpu_seconds").asDouble();
        assertTrue(target > 0.5 * mine, "the same process, measured from /proc: " + out);
        assertEquals(target / (job.at("/read/total_ios").asLong() / 1e6),
                job.at("/target_cpu_seconds_per_million_ios").asDouble(), 1e-6, out);
        String text = run(0, "bench", "-s", port, "-n", NQN, "--qd", "4", "--time", "1", "--ramp", "0",
                "--target-pid", Long.toString(self))[0];
        assertTrue(text.contains("target CPU") && text.contains("PID " + self), text);
        String err = run(1, "bench", "-s", port, "-n", NQN, "--time", "1", "--target-pid", "999999999")[1];
        assertTrue(err.contains("--target-pid 999999999: no such process"), err);
    }

    /**
     * Starting from an nvmetcli configuration whose port requires TLS is refused, naming the setting and the option
     * that accepts dropping it; with --drop-security it starts, saying what it dropped.
     */
    @Test
    void aSecuredImportIsRefusedUnlessItsSecurityIsDropped() throws Exception {
        Path saved = dir.resolve("config.json");
        // A port that requires a secure channel but names none (no tsas): nothing here would secure it.
        Files.writeString(saved, "{\"ports\":[{\"portid\":1,\"addr\":{\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\","
                + "\"trsvcid\":\"4420\",\"trtype\":\"tcp\",\"treq\":\"required\"},"
                + "\"subsystems\":[]}],\"subsystems\":[]}");
        String err = run(1, "target", "--no-admin", "--import-nvmetcli", saved.toString(), "--print-config")[1];
        assertTrue(err.contains("ports[0].addr.treq=required") && err.contains("--drop-security"), err);
        String[] started = run(0, "target", "--no-admin", "--import-nvmetcli", saved.toString(), "--drop-security",
                "--print-config");
        assertTrue(started[1].contains("dropped security setting ports[0].addr.treq=required"), started[1]);
        assertEquals(4420, new ObjectMapper().readTree(started[0]).at("/listeners/0/port").asInt(), started[0]);
        // With TLS 1.3 named (tsas), the port's TLS is carried over: nothing to drop.
        Files.writeString(saved, "{\"ports\":[{\"portid\":1,\"addr\":{\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\","
                + "\"trsvcid\":\"4420\",\"trtype\":\"tcp\",\"treq\":\"required\",\"tsas\":\"tls1.3\"},"
                + "\"subsystems\":[]}],\"subsystems\":[]}");
        String[] tls = run(0, "target", "--no-admin", "--import-nvmetcli", saved.toString(), "--print-config");
        assertEquals("required", new ObjectMapper().readTree(tls[0]).at("/listeners/0/tls").asText(), tls[0]);
    }

    /**
     * The hosts' secrets come from the configuration file even when a state file is restored (review finding 5: a new
     * or rotated secret was dropped in favour of the saved document), and are never printed.
     */
    @Test
    void hostSecretsFromTheConfigurationWinOverTheStateFileAndAreNeverPrinted() throws Exception {
        Path state = dir.resolve("state-secrets");
        Files.createDirectories(state);
        Files.writeString(state.resolve("config.json"), "{\"listeners\":[{\"transport\":\"tcp\",\"address\":"
                + "\"127.0.0.1\",\"port\":4420}],\"subsystems\":[]}");
        String secret = io.nvmeof.protocol.auth.DhchapSecret.of(new byte[32], null).representation();
        Path cfg = dir.resolve("with-secrets.json");
        Files.writeString(cfg, "{\"listeners\":[{\"transport\":\"tcp\",\"address\":\"127.0.0.1\",\"port\":4420}],"
                + "\"hosts\":[{\"nqn\":\"nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-00000000000c\","
                + "\"dhchapKey\":\"" + secret + "\"}],\"subsystems\":[]}");
        String[] r = run(0, "target", "--state-dir", state.toString(), "--config", cfg.toString(), "--print-config");
        assertTrue(r[1].contains("secrets the command line's configuration gives are taken from it"), r[1]);
        assertTrue(r[1].contains("left out of the printed configuration"), r[1]);
        assertFalse(r[0].contains("DHHC-1") || r[1].contains("DHHC-1"), "no secret printed");
        String bad = run(1, "read", "-n", "nqn.x:y", "--count", "1", "-S", "DHHC-1:01:notbase64!!:")[1];
        assertTrue(bad.contains("--dhchap-secret") && !bad.contains("notbase64"), bad);
    }

    /**
     * With a state file that has hosts' secrets (set over the admin API) and a --config that names some hosts, the
     * file's entries win for the hosts it names and the others keep theirs: before, the whole list was replaced, and
     * a host whose key only the admin API had set connected without authenticating after a restart.
     */
    @Test
    void hostSecretsFromTheConfigurationReplaceOnlyTheHostsItNames() {
        TargetConfig.HostConfig savedA = new TargetConfig.HostConfig("nqn.2026-12.io.nvmeof:a", "saved-a", null, null, null);
        TargetConfig.HostConfig savedB = new TargetConfig.HostConfig("nqn.2026-12.io.nvmeof:b", "saved-b", null, null, null);
        TargetConfig.HostConfig givenB = new TargetConfig.HostConfig("nqn.2026-12.io.nvmeof:b", "given-b", null, null, null);
        TargetConfig.HostConfig givenC = new TargetConfig.HostConfig("nqn.2026-12.io.nvmeof:c", "given-c", null, null, null);
        assertEquals(List.of(savedA, givenB, givenC), TargetCommand.hostsOf(List.of(savedA, savedB), List.of(givenB, givenC)));
        assertEquals(List.of(givenB), TargetCommand.hostsOf(null, List.of(givenB)));
    }

    /**
     * The launcher's class-data training run (docs/performance.md, "Start-up") runs the common commands against a
     * target of its own and succeeds, in this JVM too; it is not offered to users.
     */
    @Test
    void theClassDataTrainingRunSucceedsAndIsHidden() throws Exception {
        run(0, "class-data-training");
        assertFalse(run(0, "--help")[0].contains("class-data-training"));
    }

    /** A wrong NQN or port says what to check, in one line and without Java or Netty class names. */
    @Test
    void aWrongNqnOrPortSaysWhatToCheck() throws Exception {
        String nqn = run(2, "identify", "-s", port, "-n", "nqn.2026-12.io.nvmeof:nothing")[1];
        assertTrue(nqn.contains("check the subsystem NQN ('nvmeof discover' or 'nvme discover'"), nqn);
        String closed = run(1, "identify", "-s", "1", "-n", NQN)[1];
        assertTrue(closed.contains("failed: Connection refused; check that an NVMe/TCP target listens on"), closed);
        assertFalse(closed.contains("io.netty") || closed.contains("Exception"), closed);
    }

    /** --print-config checks the sizes a start would refuse (before: "64 GB" was printed, and then read as 64 GiB). */
    @Test
    void printConfigRefusesAnAmbiguousSizeNamingBothReadings() throws Exception {
        String err = run(1, "target", "--no-admin", "--size", "64 GB", "--print-config")[1];
        assertTrue(err.contains("size '64 GB' is ambiguous") && err.contains("64GiB (68,719,476,736 bytes) or 64000000000"),
                err);
        String cfg = run(0, "target", "--no-admin", "--size", "1.5GiB", "--print-config")[0];
        assertEquals(3L << 29, io.nvmeof.tgt.config.TargetConfig.parseSize(
                new ObjectMapper().readTree(cfg).at("/subsystems/0/namespaces/0/size").asText()), cfg);
    }

    /** --busy-poll-us on both commands: the target's goes into its configuration, the bench's into its queues. */
    @Test
    void busyPollIsAnOptionOfTheTargetAndOfTheClientCommands() throws Exception {
        String cfg = run(0, "target", "--no-admin", "--busy-poll-us", "50", "--poll-groups", "1", "--print-config")[0];
        JsonNode doc = new ObjectMapper().readTree(cfg);
        assertEquals(50, doc.at("/busyPollUs").asInt(), cfg);
        assertEquals(1, doc.at("/pollGroups").asInt(), cfg);
        String out = run(0, "bench", "-s", port, "-n", NQN, "--qd", "1", "--time", "1", "--ramp", "0", "--json",
                "--busy-poll-us", "100")[0];
        JsonNode job = new ObjectMapper().readTree(out).at("/jobs/0");
        assertTrue(job.at("/read/total_ios").asLong() > 0, out);
        String err = run(1, "bench", "-s", port, "-n", NQN, "--time", "1", "--busy-poll-us", "-3")[1];
        assertTrue(err.contains("--busy-poll-us must be 0 (off) to 1000000"), err);
    }

    /**
     * --poll-group-cpus goes into the target's configuration; the bench's --event-loop-cpus runs its loop on the CPU
     * given and gives every thread its CPUs back when it ends. Bad lists are one clear line.
     */
    @Test
    void cpuPlacementIsAnOptionOfTheTargetAndOfTheBench() throws Exception {
        String cfg = run(0, "target", "--no-admin", "--poll-group-cpus", "1", "--print-config")[0];
        assertEquals("1", new ObjectMapper().readTree(cfg).at("/pollGroupCpus").asText(), cfg);
        String bad = run(1, "target", "--no-admin", "--poll-group-cpus", "0-x", "--print-config")[1];
        assertTrue(bad.contains("--poll-group-cpus: "), bad);
        Path saved = dir.resolve("placed.json");
        Files.writeString(saved, cfg);
        String dropped = run(0, "target", "--no-admin", "--config", saved.toString(), "--poll-group-cpus", "none",
                "--print-config")[0];
        assertTrue(new ObjectMapper().readTree(dropped).at("/pollGroupCpus").isMissingNode(), dropped);
        String badBench = run(1, "bench", "-s", port, "-n", NQN, "--time", "1", "--event-loop-cpus", "3-1")[1];
        assertTrue(badBench.contains("--event-loop-cpus: "), badBench);
        org.junit.jupiter.api.Assumptions.assumeTrue(io.nvmeof.cpu.Affinity.unavailable() == null,
                io.nvmeof.cpu.Affinity.unavailable());
        io.nvmeof.cpu.CpuList allowed = io.nvmeof.cpu.Affinity.allowed();
        org.junit.jupiter.api.Assumptions.assumeTrue(allowed.size() >= 2, "needs two CPUs: " + allowed);
        String last = Integer.toString(allowed.toArray()[allowed.size() - 1]);
        String out = run(0, "bench", "-s", port, "-n", NQN, "--qd", "2", "--time", "1", "--ramp", "0", "--json",
                "--event-loop-cpus", last)[0];
        assertTrue(new ObjectMapper().readTree(out).at("/jobs/0/read/total_ios").asLong() > 0, out);
        assertEquals(allowed, io.nvmeof.cpu.Affinity.allowed(), "the bench gives the threads their CPUs back");
    }

    @Test
    void failuresAreOneClearLineAndNonZeroExit() {
        String err = run(2, "read", "-s", port, "-n", "nqn.2026-11.io.nvmeof:missing", "--count", "1", "-o", "-")[1];
        // The in-process target logs to the same stderr; the CLI's own output is the lines it prefixes.
        java.util.List<String> mine = err.lines().filter(l -> l.startsWith("nvmeof ")).toList();
        assertEquals(1, mine.size(), err);
        assertTrue(mine.get(0).startsWith("nvmeof read: ") && mine.get(0).contains("CONNECT_INVALID_PARAM"), err);
        err = run(1, "read", "-s", port, "-n", NQN, "--lba", "131071", "--count", "2", "-o", "-")[1];
        assertTrue(err.contains("outside namespace 1"), err);
        run(1, "bench", "-s", port, "-n", NQN, "--rw", "sideways");
    }
}

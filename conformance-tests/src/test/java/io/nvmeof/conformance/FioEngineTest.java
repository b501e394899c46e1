package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof.conformance.FioRunner.Run;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Debian's fio (the one installed, unmodified) driving our initiator through the external engine
 * ({@code native/target/fio/nvmeof-fio.so}) against our target over NVMe/TCP on loopback: verified writes, a mixed
 * workload of 512 B to 1 MiB, several jobs at once in thread and process mode, batched submission, and each bad option
 * refused with its own error. Skipped, saying why, when the engine was not built (no fio source: see native/src/main/fio).
 */
@Timeout(300)
class FioEngineTest {
    static final String NQN = TargetConfig.DEFAULT_NQN;
    static NvmeTarget target;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws IOException {
        FioRunner.assumeBuilt();
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "256MiB", 512, null));
    }

    @AfterAll
    static void stop() {
        if (target != null) {
            target.close();
        }
    }

    Run fio(String jobFile, String... args) throws Exception {
        return new FioRunner(dir).run(jobFile, args);
    }

    String global(String more) {
        return "[global]\nioengine=external:" + FioRunner.ENGINE + "\nsubnqn=" + NQN + "\ntraddr=127.0.0.1\ntrsvcid="
                + target.tcpPort(0) + "\n" + more;
    }

    static void noErrors(Run r, int jobs) throws IOException {
        assertEquals(0, r.exit(), r.err());
        JsonNode j = r.json();
        assertEquals(jobs, j.get("jobs").size(), r.out());
        for (JsonNode job : j.get("jobs")) {
            assertEquals(0, job.get("error").asInt(), job.get("jobname") + ": " + r.err());
            assertTrue(job.get("read").get("io_bytes").asLong() + job.get("write").get("io_bytes").asLong() > 0,
                    job.get("jobname") + " moved no data");
        }
    }

    @Test
    void aRandomWriteIsVerifiedWithCrc32c() throws Exception {
        Run r = fio(global("thread=1\n") + "[verify]\nrw=randwrite\nbs=4k\niodepth=32\nsize=32m\nverify=crc32c\n"
                + "do_verify=1\nverify_fatal=1\n");
        noErrors(r, 1);
        JsonNode job = r.json().get("jobs").get(0);
        assertEquals(32 << 20, job.get("write").get("io_bytes").asLong());
        assertEquals(32 << 20, job.get("read").get("io_bytes").asLong(), "every block read back and verified");
        assertTrue(job.get("write").get("iops").asDouble() > 0);
        assertTrue(job.get("write").get("clat_ns").get("percentile").has("99.000000"), "latency percentiles");
    }

    /** busy_poll_us reaches the initiator: the same verified data at queue depth 1 and 8; out of range, fio refuses. */
    @Test
    void busyPollingIsAnEngineOption() throws Exception {
        Run r = fio(global("thread=1\nbusy_poll_us=200\n")
                + "[qd1]\nrw=randwrite\nbs=4k\niodepth=1\nsize=4m\nverify=crc32c\ndo_verify=1\nverify_fatal=1\n"
                + "[qd8]\nrw=randwrite\nbs=8k\niodepth=8\nsize=8m\noffset=16m\nverify=crc32c\ndo_verify=1\n"
                + "verify_fatal=1\n");
        noErrors(r, 2);
        assertEquals(4 << 20, r.json().get("jobs").get(0).get("read").get("io_bytes").asLong(), "all read back");
        Run bad = fio(global("busy_poll_us=2000000\n") + "[x]\nrw=read\nsize=1m\n");
        assertTrue(bad.exit() != 0, "out of range accepted: " + bad.out());
        assertTrue(bad.err().contains("busy_poll_us"), bad.err());
    }

    @Test
    void aMixedWorkloadFrom512BytesTo1MiBIsVerifiedWithMd5() throws Exception {
        Run r = fio(global("") + "[mixed]\nrw=randrw\nbssplit=512/20:4k/30:64k/20:256k/20:1m/10\niodepth=8\nsize=48m\n"
                + "verify=md5\ndo_verify=1\nverify_fatal=1\n");
        noErrors(r, 1);
        JsonNode job = r.json().get("jobs").get(0);
        assertTrue(job.get("write").get("io_bytes").asLong() > 0 && job.get("read").get("io_bytes").asLong() > 0);
    }

    @Test
    void severalJobsRunAtOnceInThreadAndProcessMode() throws Exception {
        for (String mode : new String[] {"thread=1\n", "thread=0\n"}) {
            Run r = fio(global(mode + "bs=4k\niodepth=16\nruntime=2\ntime_based=1\n")
                    + "[a]\nrw=randread\nsize=64m\nnumjobs=2\n[b]\nrw=randwrite\noffset=128m\nsize=64m\n"
                    + "iodepth_batch_submit=8\niodepth_batch_complete_min=4\niodepth_batch_complete_max=16\n");
            noErrors(r, 3);
        }
    }

    /**
     * docs/fio/verify.fio as a user runs it, on this test's 256 MiB namespace: before, its second job began at 256 MiB
     * and so did no I/O at all, and fio still exited 0. Now both jobs write and verify whatever the namespace's size.
     */
    @Test
    void theDocsVerifyJobWritesAndChecksOnANamespaceOfAnySize() throws Exception {
        String doc = Files.readString(Path.of("..", "docs", "fio", "verify.fio"));
        assertTrue(doc.contains("thread=1"), "the docs recommend thread=1");
        String job = doc.replace("ioengine=external:${NVMEOF_FIO}\n", global("").substring("[global]\n".length()));
        assertTrue(job.contains("trsvcid=" + target.tcpPort(0)), job);
        Run r = fio(job);
        noErrors(r, 2);
        JsonNode first = r.json().get("jobs").get(0);
        assertEquals(128L << 20, first.get("write").get("io_bytes").asLong(), "the first half, every block once");
        assertEquals(128L << 20, first.get("read").get("io_bytes").asLong(), "every block read back and verified");
    }

    @Test
    void eachBadOptionGetsItsOwnError() throws Exception {
        String[][] cases = {
            // The CLI's hints, and no Netty exception (issue 52: a bare status, and a Netty class name).
            {"trsvcid=4999", "failed: Connection refused; check that an NVMe/TCP target listens on"},
            {"subnqn=nqn.2026-11.io.nvmeof:nothing", "CONNECT_INVALID_PARAM"},
            {"subnqn=nqn.2026-11.io.nvmeof:nothing", "check the subsystem NQN ('nvmeof discover' or 'nvme discover'"},
            {"nsid=9", "namespace 9 is not active"},
            {"jvm=/nonexistent/libjvm.so", "cannot start a JVM"},
            {"trtype=fc", "trtype=fc is not tcp or rdma"},
            {"bs=1000", "multiples of the namespace's 512-byte blocks"},
        };
        for (String[] c : cases) {
            Run r = fio(global("") + "[bad]\nrw=read\nbs=4k\nsize=1m\n" + c[0] + "\n");
            assertNotEquals(0, r.exit(), c[0] + " was accepted: " + r.out());
            assertTrue(r.err().contains(c[1]) || r.out().contains(c[1]), c[0] + ": " + r.err());
            assertTrue(!r.err().contains("SIGSEGV") && !r.err().contains("core dumped"), c[0] + " crashed: " + r.err());
            assertTrue(!r.err().contains("io.netty"), c[0] + ": " + r.err());
        }
        Run badPort = fio("[x]\nioengine=external:" + FioRunner.ENGINE + "\nrw=read\nsize=1m\ntrsvcid=http\n");
        assertNotEquals(0, badPort.exit());
        assertTrue(badPort.err().contains("trsvcid=http is not a port number"), badPort.err());
    }
}

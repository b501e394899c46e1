package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof.conformance.FioRunner.Run;
import io.nvmeof.conformance.FioRunner.Running;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real fio through the engine while its target dies and stays down (an in-process target, closed mid-run): fio must
 * end within its runtime plus the grace docs/fio.md states, count the I/O the target never answered as errors and
 * still write its JSON; Ctrl-C and SIGTERM must end it; and the engine's ctrl_loss_tmo, fast_io_fail_tmo and
 * reconnect_delay must reach the initiator.
 */
@Timeout(300)
class FioTargetLossTest {
    /** Job options that make the job's controller recognisable on the target: admin + 2 I/O queues (the probe has 2). */
    static final int JOB_QUEUES = 3;

    @TempDir
    Path dir;
    NvmeTarget target;

    @BeforeAll
    static void built() {
        FioRunner.assumeBuilt();
    }

    @AfterEach
    void stopTarget() {
        if (target != null) {
            target.close();
        }
    }

    private void startTarget(int port) throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", port, "64MiB", 512, null)
                .withNamespaces(n -> new TargetConfig.NamespaceConfig(n.nsid(), n.backend(), n.size(), n.blockSize(),
                        null, "5b1c0f2e-8d3a-4f6b-9c1d-2e3f4a5b6c7d")));
    }

    private String job(String more) {
        return "[global]\nioengine=external:" + FioRunner.ENGINE + "\nsubnqn=" + TargetConfig.DEFAULT_NQN
                + "\ntraddr=127.0.0.1\ntrsvcid=" + target.tcpPort(0) + "\nio_queues=2\nrw=randrw\nbs=4k\niodepth=8\n"
                + "size=64m\n" + more + "[loss]\n";
    }

    /** Waits until the job (not the probe) is connected and has done I/O for a while, then closes the target. */
    private long killTargetMidRun(Running fio) throws Exception {
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() >= JOB_QUEUES || !fio.alive(), 60_000),
                "fio's job never connected");
        if (!fio.alive()) {
            fail("fio ended before its target died: " + fio.awaitWithin(Duration.ofSeconds(1), "it ended").err());
        }
        Thread.sleep(1000);
        target.close();
        target = null;
        return System.nanoTime();
    }

    private static long secondsSince(long nanos) {
        return Duration.ofNanos(System.nanoTime() - nanos).toSeconds();
    }

    /** fio ended on errors it reports: a non-zero exit, the JSON written, the job's error set, data moved before. */
    private static JsonNode endedWithErrors(Run r) throws Exception {
        assertNotEquals(0, r.exit(), "fio succeeded though its target died: " + r.err());
        JsonNode job = r.json().get("jobs").get(0);
        assertNotEquals(0, job.get("error").asInt(), "no error in the JSON: " + r.out());
        assertTrue(job.get("read").get("io_bytes").asLong() > 0, "no I/O before the loss: " + r.out());
        return job;
    }

    @Test
    void aTimeBasedRunEndsAtItsRuntimeWhenTheTargetDiesAndStaysDown() throws Exception {
        startTarget(0);
        int runtime = 4;
        Running fio = new FioRunner(dir).start(job("thread=1\ntime_based=1\nruntime=" + runtime + "\n"));
        killTargetMidRun(fio);
        // The target died at least a second into the runtime: what is left of it, plus a grace well under the
        // engine's default ctrl_loss_tmo (10 s), so it is the runtime that ends the job.
        Run r = fio.awaitWithin(Duration.ofSeconds(runtime + 4), "runtime=" + runtime + ", target down");
        endedWithErrors(r);
        assertTrue(r.err().contains("unreachable"), "the engine says why the I/O failed: " + r.err());
    }

    @Test
    void sigintAndSigtermEndFioPromptlyWhileTheTargetIsDown() throws Exception {
        String[][] cases = {{"INT", "thread=1\n"}, {"TERM", "thread=0\n"}};
        for (String[] c : cases) {
            startTarget(0);
            Running fio = new FioRunner(dir).start(job(c[1] + "time_based=1\nruntime=120\n"));
            killTargetMidRun(fio);
            Thread.sleep(1000);
            fio.signal(c[0]);
            endedWithErrors(fio.awaitWithin(Duration.ofSeconds(5), "SIG" + c[0] + " with the target down, "
                    + c[1].trim()));
        }
    }

    @Test
    void withTheDefaultsATargetThatStaysDownFailsTheJobAfterCtrlLossTmo() throws Exception {
        startTarget(0);
        Running fio = new FioRunner(dir).start(job("thread=1\ntime_based=1\nruntime=120\n"));
        long killed = killTargetMidRun(fio);
        Run r = fio.awaitWithin(Duration.ofSeconds(10 + 6), "the default ctrl_loss_tmo is 10 s");
        assertTrue(secondsSince(killed) >= 8, "held I/O failed before ctrl_loss_tmo (10 s): " + r.err());
        endedWithErrors(r);
    }

    @Test
    void fastIoFailTmoFailsHeldIoWhileReconnectingGoesOn() throws Exception {
        startTarget(0);
        Running fio = new FioRunner(dir).start(job("thread=1\ntime_based=1\nruntime=120\nctrl_loss_tmo=-1\n"
                + "fast_io_fail_tmo=1\n"));
        killTargetMidRun(fio);
        endedWithErrors(fio.awaitWithin(Duration.ofSeconds(5), "fast_io_fail_tmo=1"));
    }

    @Test
    void ctrlLossTmoZeroFailsAtOnce() throws Exception {
        startTarget(0);
        Running fio = new FioRunner(dir).start(job("thread=1\ntime_based=1\nruntime=120\nctrl_loss_tmo=0\n"));
        killTargetMidRun(fio);
        endedWithErrors(fio.awaitWithin(Duration.ofSeconds(4), "ctrl_loss_tmo=0"));
    }

    /** reconnect_delay=1 and ctrl_loss_tmo=20: a target back on its port 2 s later is reconnected to, no I/O lost. */
    @Test
    void aTargetRestartedWithinCtrlLossTmoIsRiddenThrough() throws Exception {
        startTarget(0);
        int port = target.tcpPort(0);
        Running fio = new FioRunner(dir).start(job("thread=1\ntime_based=1\nruntime=8\nctrl_loss_tmo=20\n"
                + "reconnect_delay=1\n"));
        killTargetMidRun(fio);
        Thread.sleep(2000);
        startTarget(port);
        assertTrue(TestTargets.eventually(() -> target.core().liveQueues() >= JOB_QUEUES, 10_000),
                "fio's job did not reconnect to the restarted target");
        Run r = fio.awaitWithin(Duration.ofSeconds(20), "runtime=8, the target back after 2 s");
        assertEquals(0, r.exit(), r.err());
        JsonNode job = r.json().get("jobs").get(0);
        assertEquals(0, job.get("error").asInt(), r.err());
    }

    @Test
    void badReconnectOptionsAreRefused() throws Exception {
        startTarget(0);
        String[][] cases = {{"reconnect_delay=0", "reconnect_delay"}, {"ctrl_loss_tmo=-2", "ctrl_loss_tmo"},
            {"fast_io_fail_tmo=-5", "fast_io_fail_tmo"}};
        for (String[] c : cases) {
            // In the job's section: fio drops a [global] it cannot parse and runs the job without it.
            Run r = new FioRunner(dir).run(job("") + c[0] + "\n");
            assertNotEquals(0, r.exit(), c[0] + " was accepted: " + r.out());
            assertTrue(r.err().contains(c[1]), c[0] + ": " + r.err());
        }
    }
}

package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.nvmeof.conformance.FioRunner.Run;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * fio's {@code filename=} in SPDK's fio plugin syntax ({@code trtype=tcp traddr=... trsvcid=... subnqn=... ns=N}),
 * with real fio against a target of two listeners and two subsystems: the I/O lands in the namespace each filename
 * names (read back through a controller of our own), several filenames spread a job's I/O over their namespaces,
 * and a filename the engine cannot honour is refused with a message saying what is wrong.
 */
@Timeout(300)
class FioFilenameTest {
    static final String NQN_A = "nqn.2026-11.io.nvmeof:fio-a";
    static final String NQN_B = "nqn.2026-11.io.nvmeof:fio-b";
    static final int SPAN = 1 << 20;
    static NvmeTarget target;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws Exception {
        FioRunner.assumeBuilt();
        target = NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null),
                        new ListenerConfig(2, "tcp", "127.0.0.1", 0, null, null, null)),
                List.of(new SubsystemConfig(NQN_A, null, null, 8, true, null,
                                List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null),
                                        new NamespaceConfig(7L, "ram", "4MiB", 4096, null, null))),
                        new SubsystemConfig(NQN_B, null, null, 8, true, null,
                                List.of(new NamespaceConfig(1L, "ram", "8MiB", 512, null, null))))));
    }

    @AfterAll
    static void stop() {
        if (target != null) {
            target.close();
        }
    }

    /** SPDK's filename for a namespace; fio splits filenames at ':', so the NQN's colon is escaped as SPDK's docs say. */
    static String filename(int listener, String nqn, long nsid) {
        return "trtype=tcp adrfam=IPv4 traddr=127.0.0.1 trsvcid=" + target.tcpPort(listener) + " subnqn="
                + nqn.replace(":", "\\:") + " ns=" + nsid;
    }

    /** A job with no engine option naming a target: only its filename says where. */
    static String job(String filenames, String more) {
        return "[spdk]\nioengine=external:" + FioRunner.ENGINE + "\nthread=1\nfilename=" + filenames + "\n" + more;
    }

    Run fio(String jobFile) throws Exception {
        return new FioRunner(dir).run(jobFile);
    }

    /** Whether the first {@link #SPAN} bytes of the namespace hold {@code pattern} in every 4-byte word. */
    static boolean holds(String nqn, long nsid, int pattern) {
        try (NvmeofController c = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), nqn),
                ConnectOptions.builder().build())) {
            NamespaceHandle ns = c.namespace(nsid);
            ByteBuffer buf = ByteBuffer.allocateDirect(SPAN).order(ByteOrder.BIG_ENDIAN);
            int chunk = 64 << 10;
            for (int off = 0; off < SPAN; off += chunk) {
                ns.read(off / ns.blockSize(), chunk / ns.blockSize(), buf.duplicate().position(off).limit(off + chunk))
                        .join();
            }
            for (int i = 0; i < SPAN; i += 4) {
                if (buf.getInt(i) != pattern) {
                    return false;
                }
            }
            return true;
        }
    }

    static void wrote(Run r, long bytes) throws Exception {
        assertEquals(0, r.exit(), r.err());
        JsonNode job = r.json().get("jobs").get(0);
        assertEquals(0, job.get("error").asInt(), r.err());
        assertEquals(bytes, job.get("write").get("io_bytes").asLong(), r.out());
    }

    @Test
    void anSpdkFilenameChoosesPortSubsystemAndNamespace() throws Exception {
        int pattern = 0x6e766d37;
        Run r = fio(job(filename(1, NQN_A, 7), "rw=write\nbs=64k\nsize=1m\nbuffer_pattern=0x"
                + Integer.toHexString(pattern) + "\n"));
        wrote(r, SPAN);
        assertTrue(holds(NQN_A, 7, pattern), "the data is not in " + NQN_A + " namespace 7");
        assertTrue(!holds(NQN_A, 1, pattern) && !holds(NQN_B, 1, pattern), "the data landed elsewhere too");
    }

    @Test
    void severalFilenamesSpreadTheJobOverTheirNamespaces() throws Exception {
        int pattern = 0x6e766d32;
        Run r = fio(job(filename(0, NQN_B, 1) + ":" + filename(1, NQN_A, 7), "rw=write\nbs=4k\nsize=2m\n"
                + "iodepth=8\nbuffer_pattern=0x" + Integer.toHexString(pattern) + "\n"));
        wrote(r, 2 * SPAN);
        assertTrue(holds(NQN_B, 1, pattern), "nothing written to " + NQN_B + " namespace 1");
        assertTrue(holds(NQN_A, 7, pattern), "nothing written to " + NQN_A + " namespace 7");
        assertTrue(!holds(NQN_A, 1, pattern), "the data landed in a namespace no filename names");
    }

    @Test
    void eachFilenameTheEngineCannotHonourIsRefused() throws Exception {
        String good = filename(0, NQN_A, 1);
        String[][] cases = {
            {job(good.replace("trtype=tcp", "trtype=PCIe"), ""), "trtype=PCIe"},
            {job(good.replace("adrfam=IPv4", "adrfam=IB"), ""), "adrfam=IB"},
            {job(good + " priority=2", ""), "priority"},
            {job(good.replace(" ns=1", ""), ""), "no ns="},
            {job(good.replace(" ns=1", " ns=0"), ""), "ns=0"},
            {job(good + " ns=2", ""), "ns twice"},
            {job(good.replace("traddr=127.0.0.1 ", ""), ""), "no traddr="},
            {job(good.replace(" subnqn=" + NQN_A.replace(":", "\\:"), ""), ""), "no subnqn="},
            {job(good.replace("trsvcid=" + target.tcpPort(0), "trsvcid=http"), ""), "trsvcid=http"},
            {job(good.replace("\\:", ":"), ""), "\\:"},
            {job(good, "traddr=127.0.0.2\n"), "traddr=127.0.0.2"},
            {job(good, "nsid=2\n"), "nsid=2"},
            {job(good.replace(" ns=1", " ns=9"), ""), "namespace 9 is not active"},
        };
        for (String[] c : cases) {
            Run r = fio(c[0] + "rw=read\nbs=4k\nsize=64k\n");
            String what = c[0].substring(c[0].indexOf("filename="));
            assertNotEquals(0, r.exit(), what + " was accepted: " + r.out());
            assertTrue(r.err().contains(c[1]), what + ": expected '" + c[1] + "' in: " + r.err());
            assertTrue(!r.err().contains("SIGSEGV") && !r.err().contains("core dumped"), what + " crashed: " + r.err());
        }
    }

    /** The engine's own options may repeat what the filename says; the filename's keys may be in any case. */
    @Test
    void matchingEngineOptionsAndSpdkSpellingsAreAccepted() throws Exception {
        Run r = fio(job(filename(0, NQN_B, 1).replace("trtype=tcp", "TRTYPE=TCP"), "traddr=127.0.0.1\nnsid=1\n"
                + "rw=write\nbs=4k\nsize=64k\n"));
        wrote(r, 64 << 10);
    }
}

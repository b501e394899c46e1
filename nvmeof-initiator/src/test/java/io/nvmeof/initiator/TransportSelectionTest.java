package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.rdma.RdmaLibrary;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Choosing the transport by trtype, and failing clearly where it cannot work. The RDMA data path itself runs against
 * real RDMA devices in the conformance guest (OurRdmaInterop, KernelTargetInterop over nvmet-rdma).
 */
class TransportSelectionTest {
    private static final String NQN = "nqn.2026-11.io.nvmeof:test";

    private static ConnectOptions quick() {
        return ConnectOptions.builder().connectTimeout(Duration.ofSeconds(3)).commandTimeout(Duration.ofSeconds(3)).build();
    }

    @Test
    void unknownTransportIsRefusedByName() {
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> NvmeofController.connect(new TransportId("fc", "127.0.0.1", 4420, NQN), quick()));
        assertTrue(e.getMessage().contains("'fc'") && e.getMessage().contains("\"rdma\""), e.getMessage());
    }

    @Test
    void rdmaWithoutAnRdmaPathFailsWithAReasonAndLeavesNoThreads() {
        // 127.0.0.1 is on no RDMA device here (CI machines have none; loopback never is one): either the RDMA
        // libraries are missing (the message names the packages) or address resolution finds no device.
        long before = Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("nvmeof-rdma")).count();
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> NvmeofController.connect(new TransportId("rdma", "127.0.0.1", 4420, NQN), quick()));
        String m = e.getMessage();
        if (!RdmaLibrary.isAvailable()) {
            assertTrue(m.contains(RdmaLibrary.unavailableReason()), "the reason, naming what is missing: " + m);
        } else {
            assertTrue(m.contains("NVMe/RDMA queue 0 to 127.0.0.1:4420"), m);
        }
        long after = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("nvmeof-rdma") && t.isAlive()).count();
        assertTrue(after <= before, "RDMA threads left behind: " + after);
    }
}

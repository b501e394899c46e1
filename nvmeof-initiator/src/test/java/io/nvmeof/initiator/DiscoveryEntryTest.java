package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.log.DiscoveryLogEntry;
import org.junit.jupiter.api.Test;

/**
 * A discovery log entry's text fields come from the discovery controller: {@link DiscoveryEntry#toTransportId()}
 * turns them into an address connect takes, or refuses them with an {@link NvmeofException} that says which field
 * is wrong (found by {@code InitiatorControllerFuzzTest#adminResponses}: a TRSVCID of "8009 ,$" escaped as a
 * NumberFormatException).
 */
class DiscoveryEntryTest {
    private static DiscoveryEntry tcp(String trsvcid, String subnqn, String traddr) {
        return new DiscoveryEntry(DiscoveryLogEntry.TRTYPE_TCP, DiscoveryLogEntry.ADRFAM_IPV4,
                DiscoveryLogEntry.SUBTYPE_NVM, DiscoveryLogEntry.TREQ_NOT_REQUIRED, 1, 0xFFFF, 32, trsvcid, subnqn,
                traddr);
    }

    @Test
    void aWellFormedEntryBecomesATransportId() {
        assertEquals(TransportId.tcp("10.0.0.1", 4420, "nqn.2024-01.io.nvmeof:a"),
                tcp("4420", "nqn.2024-01.io.nvmeof:a", "10.0.0.1").toTransportId());
        assertEquals(65535, tcp("65535", "testnqn", "::1").toTransportId().trsvcid(),
                "as liberal as connect about NQNs");
    }

    @Test
    void aTrsvcidThatIsNoPortIsRefused() {
        for (String bad : new String[] {"8009           ,$", "port", "", "0", "65536", "-1", "+4420", "99999999999"}) {
            NvmeofException e = assertThrows(NvmeofException.class,
                    () -> tcp(bad, "nqn.2024-01.io.nvmeof:a", "10.0.0.1").toTransportId(), bad);
            assertTrue(e.getMessage().contains("TRSVCID") && e.getMessage().contains("not a TCP port"), e.getMessage());
        }
    }

    @Test
    void anEmptyAddressOrAnInvalidNqnIsRefused() {
        NvmeofException e = assertThrows(NvmeofException.class,
                () -> tcp("4420", "nqn.2024-01.io.nvmeof:a", "").toTransportId());
        assertTrue(e.getMessage().contains("no TRADDR"), e.getMessage());
        e = assertThrows(NvmeofException.class, () -> tcp("4420", "", "10.0.0.1").toTransportId());
        assertTrue(e.getMessage().contains("invalid SUBNQN"), e.getMessage());
        e = assertThrows(NvmeofException.class, () -> tcp("4420", "nqn.bad\u00e9", "10.0.0.1").toTransportId());
        assertTrue(e.getMessage().contains("invalid SUBNQN"), e.getMessage());
    }

    /** Not for TCP: the caller's mistake, as before. */
    @Test
    void anRdmaEntryHasNoTcpTransportId() {
        DiscoveryEntry rdma = new DiscoveryEntry(DiscoveryLogEntry.TRTYPE_RDMA, 1, 2, 2, 1, 0xFFFF, 32, "4420", "nqn.x",
                "10.0.0.1");
        assertThrows(IllegalStateException.class, rdma::toTransportId);
    }
}

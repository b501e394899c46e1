package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.log.AnaLog;
import io.nvmeof.protocol.log.AnaState;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * How a controller applies the ANA logs it reads, against a fake target that serves the logs the tests write: as
 * Linux's nvme_update_ana_state, a malformed log changes nothing, a namespace the log does not list keeps its state,
 * and a log larger than MDTS turns ANA off (every namespace optimized).
 */
class AnaStatesTest extends FakeTargetCase {
    /** Identify Controller with ANA reporting ({@code groups} groups, MDTS {@code mdts}) and namespace 1 in group 1. */
    private void reportAna(long groups, int mdts) {
        target.edit = (what, d) -> {
            UnsafeBuffer u = new UnsafeBuffer(d);
            if (what.equals("identify-controller")) {
                new IdentifyController().<IdentifyController>wrap(u, 0).cmic(IdentifyController.CMIC_ANA)
                        .anatt(10).anacap(0x1F).anagrpmax(groups).nanagrpid(groups).mdts(mdts);
            } else if (what.equals("identify-namespace")) {
                new IdentifyNamespace().<IdentifyNamespace>wrap(u, 0).anagrpid(1);
            }
        };
    }

    /** A log with group 1 in {@code state} listing {@code nsids} (its NSID count said as {@code claimed}). */
    private static byte[] log(long change, AnaState state, long[] nsids, int claimed) {
        byte[] page = new byte[AnaLog.length(1, nsids.length)];
        AnaLog log = new AnaLog().wrap(new UnsafeBuffer(page), 0);
        log.changeCount(change);
        log.groupCount(1);
        log.descriptor(AnaLog.HEADER_LENGTH, 1, change, state, nsids, nsids.length);
        new UnsafeBuffer(page).putInt(AnaLog.HEADER_LENGTH + 4, claimed, java.nio.ByteOrder.LITTLE_ENDIAN);
        return page;
    }

    private static byte[] noGroups(long change) {
        byte[] page = new byte[AnaLog.HEADER_LENGTH];
        AnaLog log = new AnaLog().wrap(new UnsafeBuffer(page), 0);
        log.changeCount(change);
        return page;
    }

    @Test
    void aMalformedLogChangesNothing() throws Exception {
        reportAna(1, 5);
        target.anaLog = log(1, AnaState.NON_OPTIMIZED, new long[] {1}, 1);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(AnaState.NON_OPTIMIZED, c.namespace(1).anaState());
            // Group 1 now says it lists 100000 NSIDs, far past the log's end: refused whole, not read in part.
            target.anaLog = log(2, AnaState.OPTIMIZED, new long[] {1}, 100_000);
            c.rescanNamespaces();
            assertEquals(AnaState.NON_OPTIMIZED, c.namespace(1).anaState(), "a malformed log changed the state");
        }
    }

    @Test
    void aNamespaceTheLogDoesNotListKeepsItsState() throws Exception {
        reportAna(1, 5);
        target.anaLog = log(1, AnaState.NON_OPTIMIZED, new long[] {1}, 1);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(AnaState.NON_OPTIMIZED, c.namespace(1).anaState());
            target.anaLog = noGroups(2);
            c.rescanNamespaces();
            assertEquals(AnaState.NON_OPTIMIZED, c.namespace(1).anaState(), "unlisted: as it was");
        }
    }

    @Test
    void aNewNamespaceNoLogListsIsNotUsable() throws Exception {
        reportAna(1, 5);
        target.anaLog = noGroups(1);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(AnaState.INACCESSIBLE, c.namespace(1).anaState(), "no state of its own yet");
            target.anaLog = log(2, AnaState.OPTIMIZED, new long[] {1}, 1);
            c.rescanNamespaces();
            assertEquals(AnaState.OPTIMIZED, c.namespace(1).anaState());
        }
    }

    @Test
    void aLogLargerThanMdtsTurnsAnaOff() throws Exception {
        // MDTS 1: 8 KiB per command; 1000 groups make a log of 32 KiB and more.
        reportAna(1000, 1);
        target.anaLog = log(1, AnaState.INACCESSIBLE, new long[] {1}, 1);
        try (NvmeofController c = NvmeofController.connect(tid(), opts())) {
            assertEquals(AnaState.OPTIMIZED, c.namespace(1).anaState(), "ANA off: taken as optimized");
            assertTrue(target.commands(0).stream().noneMatch(s -> s.opcode() == 0x02 && (s.cdw10() & 0xFF) == 0x0C),
                    "the ANA log was not read in pieces");
        }
    }

    private static ConnectOptions opts() {
        return ConnectOptions.builder().ioQueues(1).queueDepth(8).build();
    }
}

package io.nvmeof.initiator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.protocol.log.AnaLog;
import io.nvmeof.protocol.log.AnaState;
import java.util.Arrays;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** The initiator's reading of the ANA log (0Ch): as Linux's nvme_parse_ana_log, a log that runs past its end is refused whole. */
class AnaLogParseTest {
    /** Two groups: 1 optimized with NSIDs 1 and 3, 2 inaccessible with NSID 2. */
    static byte[] twoGroups() {
        byte[] page = new byte[AnaLog.length(2, 3)];
        AnaLog log = new AnaLog().wrap(new UnsafeBuffer(page), 0);
        log.changeCount(7).groupCount(2);
        int at = AnaLog.HEADER_LENGTH;
        at = log.descriptor(at, 1, 7, AnaState.OPTIMIZED, new long[] {1, 3}, 2);
        log.descriptor(at, 2, 7, AnaState.INACCESSIBLE, new long[] {2}, 1);
        return page;
    }

    @Test
    void eachNamespaceGetsItsGroupsState() {
        AnaStates.Parsed p = AnaStates.parse(twoGroups(), "test");
        assertEquals(AnaState.OPTIMIZED, p.byNsid().get(1L));
        assertEquals(AnaState.INACCESSIBLE, p.byNsid().get(2L));
        assertEquals(AnaState.OPTIMIZED, p.byNsid().get(3L));
        assertEquals(2L, p.groupOf().get(2L));
        assertEquals(AnaState.INACCESSIBLE, p.byGroup().get(2L));
    }

    @Test
    void aLogWhoseLastDescriptorRunsPastItsEndIsRefusedWhole() {
        byte[] page = twoGroups();
        // Cut the last NSID off: the first group is intact, but nothing of the log is taken.
        byte[] cut = Arrays.copyOf(page, page.length - 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AnaStates.parse(cut, "test"));
        assertTrue(e.getMessage().contains("ANA group 2"), e.getMessage());

        byte[] moreGroups = page.clone();
        AnaLog more = new AnaLog().wrap(new UnsafeBuffer(moreGroups), 0);
        more.groupCount(3);
        e = assertThrows(IllegalArgumentException.class, () -> AnaStates.parse(moreGroups, "test"));
        assertTrue(e.getMessage().contains("lists 3 groups"), e.getMessage());

        assertThrows(IllegalArgumentException.class, () -> AnaStates.parse(new byte[8], "test"));
    }
}

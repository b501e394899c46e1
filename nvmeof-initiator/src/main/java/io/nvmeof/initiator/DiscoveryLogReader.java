package io.nvmeof.initiator;

import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a discovery controller's log (LID 70h) into {@link DiscoveryEntry} records: a log that may change while it is
 * read, and whose record count is checked before it sizes anything.
 */
final class DiscoveryLogReader {
    /** Logs under the controller's name, as before the split: log configurations name NvmeofController. */
    private static final Logger LOG = LoggerFactory.getLogger(NvmeofController.class);
    private static final int MAX_DISCOVERY_RETRIES = 10;

    private DiscoveryLogReader() {
    }

    /**
     * Reads the whole discovery log (LID 70h): the header for NUMREC, then header and records together; if GENCTR
     * moved in between, the log changed under us and is read again (bounded).
     */
    static List<DiscoveryEntry> read(AdminCommands admin, TransportId id) {
        for (int attempt = 0; attempt < MAX_DISCOVERY_RETRIES; attempt++) {
            UnsafeBuffer header = new UnsafeBuffer(admin.getLogPage(Opcodes.LOG_DISCOVERY, 0, DiscoveryLogHeader.LENGTH, 0));
            DiscoveryLogHeader h = new DiscoveryLogHeader().wrap(header, 0);
            long genctr = h.genctr();
            long numrec = h.numrec();
            if (numrec == 0) {
                return List.of();
            }
            // NUMREC is 64 bits: checked before it sizes anything (numrec * 1024 overflows from 2^53 on, and a large
            // enough value would ask for gigabytes).
            if (numrec < 0 || numrec > NvmeofController.MAX_DISCOVERY_RECORDS) {
                throw new NvmeofException("discovery log of " + id + " claims " + Long.toUnsignedString(numrec)
                        + " records (NUMREC); more than " + NvmeofController.MAX_DISCOVERY_RECORDS + " is taken for a"
                        + " corrupt log page and not read");
            }
            int total = DiscoveryLogHeader.LENGTH + (int) numrec * DiscoveryLogEntry.LENGTH;
            UnsafeBuffer log = new UnsafeBuffer(admin.getLogPage(Opcodes.LOG_DISCOVERY, 0, total, 0));
            DiscoveryLogHeader h2 = new DiscoveryLogHeader().wrap(log, 0);
            if (h2.genctr() != genctr || h2.numrec() != numrec) {
                LOG.debug("{}: discovery log changed while reading (genctr {} -> {}), retrying", id, genctr, h2.genctr());
                continue;
            }
            List<DiscoveryEntry> entries = new ArrayList<>((int) numrec);
            DiscoveryLogEntry e = new DiscoveryLogEntry();
            for (int i = 0; i < numrec; i++) {
                e.wrap(log, DiscoveryLogHeader.entryOffset(i));
                entries.add(new DiscoveryEntry(e.trtype(), e.adrfam(), e.subtype(), e.treq(), e.portid(), e.cntlid(),
                        e.asqsz(), e.trsvcid(), e.subnqn(), e.traddr(),
                        e.trtype() == DiscoveryLogEntry.TRTYPE_TCP ? e.tsas(0) : 0));
            }
            return entries;
        }
        throw new NvmeofException("discovery log of " + id + " kept changing (GENCTR) over " + MAX_DISCOVERY_RETRIES
                + " reads; try again later");
    }
}

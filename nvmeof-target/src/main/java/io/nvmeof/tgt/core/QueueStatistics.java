package io.nvmeof.tgt.core;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * One I/O queue's counters, for monitoring per host and per queue (SPDK's {@code nvmf_get_stats} gives the same per
 * queue pair): commands and bytes since the queue connected, and the commands outstanding now. The counters are the
 * queue thread's own plain fields, read here racily from another thread: a snapshot, not an exact cut, and nothing
 * is added to the data path for it.
 */
public record QueueStatistics(String subsystem, int cntlid, String hostNqn, int qid, int depth, int outstanding,
                              long reads, long writes, long bytesRead, long bytesWritten) {

    /** Every connected I/O queue of every host controller (discovery controllers have none), by subsystem, controller, QID. */
    public static List<QueueStatistics> of(TargetCore core) {
        List<QueueStatistics> out = new ArrayList<>();
        for (Controller c : core.controllers()) {
            if (c.isDead() || c.isDiscovery()) {
                continue;
            }
            for (int qid = 1; qid <= c.maxIoQueues(); qid++) {
                SubmissionQueue q = c.queue(qid);
                if (q != null) {
                    out.add(new QueueStatistics(c.subsystem().nqn(), c.cntlid(), c.hostNqn(), qid, q.size(), q.inUse(),
                            q.readCommands, q.writeCommands, q.bytesRead, q.bytesWritten));
                }
            }
        }
        out.sort(Comparator.comparing(QueueStatistics::subsystem).thenComparingInt(QueueStatistics::cntlid)
                .thenComparingInt(QueueStatistics::qid));
        return out;
    }
}

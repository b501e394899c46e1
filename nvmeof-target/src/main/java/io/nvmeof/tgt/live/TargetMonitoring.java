package io.nvmeof.tgt.live;

import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.core.Controller;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.Subsystem;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * What a running target is doing, read without changing anything: its associations, I/O queues, per-namespace
 * statistics, authentication outcomes and stopped data-path threads (the admin API's lists and /metrics). The
 * counters are read racily from the threads that own them: a snapshot, not an exact cut.
 */
public final class TargetMonitoring {
    private final NvmeTarget target;
    /** The configured subsystems' names, in the document's order. */
    private final Supplier<List<String>> subsystemNames;

    TargetMonitoring(NvmeTarget target, Supplier<List<String>> subsystemNames) {
        this.target = target;
        this.subsystemNames = subsystemNames;
    }

    /** A live controller (association), for listing. */
    public record ControllerView(String subsystem, int cntlid, String hostNqn, String hostId, String transport,
                                 String peer, int ioQueues, int queueDepth, long keepAliveTimeoutMs,
                                 String connectedAt) {
    }

    /** A subsystem's namespaces' I/O statistics. */
    public record SubsystemStatistics(String nqn, List<io.nvmeof.tgt.core.NamespaceStatistics> namespaces) {
    }

    /** A subsystem's DH-HMAC-CHAP outcomes, per queue, since the target started. */
    public record AuthenticationCounts(String nqn, long successes, long failures) {
    }

    /** Every subsystem's authentication outcomes (for /metrics). */
    public List<AuthenticationCounts> authentications() {
        List<AuthenticationCounts> out = new ArrayList<>();
        for (String nqn : subsystemNames.get()) {
            Subsystem sub = target.core().subsystem(nqn);
            if (sub != null) {
                out.add(new AuthenticationCounts(nqn, sub.authenticationSuccesses(), sub.authenticationFailures()));
            }
        }
        return out;
    }

    /** Every connected I/O queue's counters, by subsystem, controller and QID. */
    public List<io.nvmeof.tgt.core.QueueStatistics> queueStatistics() {
        return io.nvmeof.tgt.core.QueueStatistics.of(target.core());
    }

    /** I/O statistics of every namespace, by subsystem (counted per queue without locks; summed here). */
    public List<SubsystemStatistics> statistics() {
        List<SubsystemStatistics> out = new ArrayList<>();
        for (String nqn : subsystemNames.get()) {
            Subsystem sub = target.core().subsystem(nqn);
            if (sub != null) {
                out.add(statisticsOf(sub));
            }
        }
        return out;
    }

    /** One subsystem's. */
    public SubsystemStatistics statistics(String nqn) {
        Subsystem sub = target.core().subsystem(nqn);
        if (sub == null || sub.isDiscovery()) {
            throw ConfigurationChecks.notFound("subsystem " + Nqn.display(nqn) + " does not exist");
        }
        return statisticsOf(sub);
    }

    private static SubsystemStatistics statisticsOf(Subsystem sub) {
        List<io.nvmeof.tgt.core.NamespaceStatistics> list = new ArrayList<>();
        for (Namespace ns : sub.namespaces()) {
            list.add(sub.statistics(ns));
        }
        return new SubsystemStatistics(sub.nqn(), list);
    }

    /** What of the data path has stopped while the target runs (see {@link NvmeTarget#dataPathFailures}). */
    public List<String> dataPathFailures() {
        return target.dataPathFailures();
    }

    /** The live associations, by subsystem and controller ID. */
    public List<ControllerView> controllers() {
        List<ControllerView> out = new ArrayList<>();
        for (Controller c : target.core().controllers()) {
            if (c.isDead() || c.isDiscovery()) {
                continue;
            }
            SubmissionQueue admin = c.adminQueue();
            int depth = 0;
            for (int qid = 1; qid <= c.maxIoQueues(); qid++) {
                SubmissionQueue q = c.queue(qid);
                if (q != null) {
                    depth = Math.max(depth, q.size());
                }
            }
            out.add(new ControllerView(c.subsystem().nqn(), c.cntlid(), c.hostNqn(), uuid(c.hostId()),
                    admin.transport().trtype() == io.nvmeof.protocol.log.DiscoveryLogEntry.TRTYPE_TCP ? "tcp" : "rdma", admin.transport().peer(), c.connectedIoQueues(),
                    depth, c.kato(), c.connectedAt().toString()));
        }
        out.sort(Comparator.comparing(ControllerView::subsystem).thenComparingInt(ControllerView::cntlid));
        return out;
    }

    private static String uuid(byte[] b) {
        ByteBuffer bb = ByteBuffer.wrap(b);
        return new UUID(bb.getLong(), bb.getLong()).toString();
    }
}

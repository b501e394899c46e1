package io.nvmeof.initiator.tcp;

import io.netty.channel.EventLoopGroup;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.HostTransport;
import io.nvmeof.netty.EventLoops;
import io.nvmeof.netty.tls.ExternalPsk;
import io.nvmeof.protocol.tls.ConfiguredPsk;
import io.nvmeof.protocol.tls.PskIdentity;
import io.nvmeof.protocol.tls.TlsPskHash;
import java.nio.ByteBuffer;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** NVMe/TCP for one controller: its queues share one Netty event loop group. */
public final class TcpHostTransport implements HostTransport {
    /** Our cap on one command's data when the controller reports MDTS 0 (no limit). */
    static final long TRANSFER_CAP = 32L << 20;

    private final TransportId id;
    private final ConnectOptions options;
    private final EventLoopGroup group;

    public TcpHostTransport(TransportId id, ConnectOptions options) {
        this.id = id;
        this.options = options;
        // Daemon threads: a forgotten close() must not keep the JVM alive.
        this.group = EventLoops.createForClients(options.eventLoopThreads(), "nvmeof-initiator", options.busyPoll(),
                options.eventLoopPlacement());
    }

    @Override
    public HostQueue connectQueue(int qid, int slots, int inlineLimit, long maxTransfer) {
        TcpQueue q = new TcpQueue(id.traddr(), id.trsvcid(), qid, slots, options.headerDigest(), options.dataDigest(),
                options.commandTimeout(), qid == 0 ? TcpQueue.FABRICS_IN_CAPSULE : inlineLimit,
                maxTransfer + TcpQueue.PDU_OVERHEAD);
        q.connect(group, options.connectTimeout(), tlsPsk());
        return q;
    }

    /** The TLS PSK every queue offers, derived for this host and subsystem; null without TLS. */
    private ExternalPsk tlsPsk() {
        ConfiguredPsk key = options.tlsKey();
        if (key == null) {
            return null;
        }
        PskIdentity identity = key.identity(options.hostNqn(), id.subnqn(), 0);
        byte[] psk = key.tlsPsk(identity);
        try {
            return new ExternalPsk(identity.bytes(), psk, identity.hash() == TlsPskHash.SHA384);
        } finally {
            java.util.Arrays.fill(psk, (byte) 0);
        }
    }

    @Override
    public long maxTransferCap() {
        return TRANSFER_CAP;
    }

    /**
     * MDTS 0 over NVMe/TCP: at most the controller's MAXH2CDATA (ICResp) per command. Linux's nvmet-tcp reports MDTS 0
     * yet refuses a command of more than its MAXH2CDATA, 4 MiB (SGL Data Block Invalid, DNR), reads as well as
     * writes; the kernel's own host never sends that much (the block layer's max_sectors_kb), so only a host that
     * takes "no limit" at its word meets it.
     */
    @Override
    public long maxTransferWithoutMdts(HostQueue admin) {
        return admin instanceof TcpQueue q && q.maxh2cdata() > 0 ? Math.min(TRANSFER_CAP, q.maxh2cdata())
                : TRANSFER_CAP;
    }

    @Override
    public boolean inIoThread() {
        for (var executor : group) {
            if (executor.inEventLoop()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable task, long periodMs) {
        return group.next().scheduleAtFixedRate(task, periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public ByteBuffer allocateBuffer(int bytes) {
        return ByteBuffer.allocateDirect(bytes);
    }

    @Override
    public void close() {
        var f = group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        if (!inIoThread()) {
            f.awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}

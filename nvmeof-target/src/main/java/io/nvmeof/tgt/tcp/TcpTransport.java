package io.nvmeof.tgt.tcp;

import io.nvmeof.netty.tls.TlsPskHandler;
import io.nvmeof.tgt.core.TlsMode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.nvmeof.netty.Allocators;
import io.nvmeof.netty.EventLoops;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TargetCore;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVMe/TCP listener: accepts connections on a loop of its own and hands each to one of the poll groups' event loops;
 * each connection becomes one queue ({@link TcpQueue}) served entirely by the event loop it was assigned to.
 */
public final class TcpTransport implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
    /** Outbound bytes per connection above which its queue stops taking commands, and below which it resumes. */
    static final int WRITE_HIGH_MARK = 2 << 20;
    static final int WRITE_LOW_MARK = 512 << 10;

    private final TargetCore core;
    private final EventLoopGroup group;
    /**
     * The one loop that accepts here, this listener's own: shutting it down closes its selector, which is what makes
     * the JDK really close the listening socket (a socket registered with a selector is closed only at that selector's
     * next select, after Netty's close has completed), so a removed listener's port is free when removal returns.
     */
    private EventLoopGroup acceptLoop;
    private Channel serverChannel;
    private volatile ListenerInfo info;
    /** Connections accepted here (closed ones leave by themselves): removing the listener ends them. */
    private final io.netty.channel.group.ChannelGroup connections =
            new io.netty.channel.group.DefaultChannelGroup("nvme-tcp-connections", io.netty.util.concurrent.GlobalEventExecutor.INSTANCE);

    /** The pipeline name of a connection's TLS handler, in front of its queue. */
    static final String TLS_HANDLER = "tls";

    public TcpTransport(TargetCore core, EventLoopGroup group) {
        this.core = core;
        this.group = group;
    }

    /**
     * Binds and starts accepting. Port 0 picks a free port ({@link #port()} tells which).
     *
     * @param subsystems NQNs to export here; empty exports every subsystem
     */
    public ListenerInfo listen(int portId, String address, int port, TcpOptions options, Set<String> subsystems) throws IOException {
        if (options.tls() != TlsMode.NONE) {
            long warm = TlsPskHandler.warmUp();
            if (warm > 0) {
                LOG.info("TLS ready in {} ms (BouncyCastle's TLS 1.3 loaded and run once)",
                        TimeUnit.NANOSECONDS.toMillis(warm));
            }
        }
        acceptLoop = EventLoops.create(1, "nvme-tcp-accept", Duration.ZERO);
        ServerBootstrap b = new ServerBootstrap()
                .group(acceptLoop, group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.ALLOCATOR, Allocators.dataPath())
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                // A queue stops taking commands above the high mark until its host has read down to the low one.
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(WRITE_LOW_MARK, WRITE_HIGH_MARK))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        connections.add(ch);
                        TcpQueue q = new TcpQueue(core, options);
                        q.listener(info);
                        switch (options.tls()) {
                            case REQUIRED -> ch.pipeline().addLast(TLS_HANDLER, TlsPskHandler.server(core.tlsKeys()));
                            case ALLOWED -> ch.pipeline().addLast("tls-detect", new TlsDetector(core.tlsKeys()));
                            default -> { }
                        }
                        ch.pipeline().addLast("nvme-tcp", q);
                    }
                });
        try {
            serverChannel = b.bind(address, port).sync().channel();
        } catch (Exception e) {
            stopAcceptLoop();
            throw new IOException("cannot listen on NVMe/TCP " + address + ":" + port + ": " + e.getMessage()
                    + " (is another target already using the port? pick another with --port)", e);
        } 
        InetSocketAddress bound = (InetSocketAddress) serverChannel.localAddress();
        InetAddress addr = InetAddress.getByName(address);
        info = new ListenerInfo(portId, DiscoveryLogEntry.TRTYPE_TCP,
                addr instanceof Inet6Address ? DiscoveryLogEntry.ADRFAM_IPV6 : DiscoveryLogEntry.ADRFAM_IPV4,
                address, Integer.toString(bound.getPort()), subsystems, options.tls());
        core.addListener(info);
        boolean quiet = !subsystems.isEmpty() && subsystems.stream().allMatch(nqn -> core.subsystem(nqn) != null
                && core.subsystem(nqn).quiet()); // the start-up warm-up's own: scripts wait for the real one's line
        if (!quiet) {
            LOG.info("NVMe/TCP listening on {}:{} (in-capsule data {} B, MAXH2CDATA {} B{})", address, bound.getPort(),
                    options.inlineDataSize(), options.maxH2CData(),
                    options.tls() == TlsMode.NONE ? "" : ", TLS " + options.tls().label());
        }
        return info;
    }

    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    public ListenerInfo info() {
        return info;
    }

    /** Whether the listener takes new connections: it listens, and the loop accepting them has not ended. */
    public boolean accepting() {
        EventLoopGroup loop = acceptLoop;
        return loop != null && EventLoops.endedLoops(loop).isEmpty();
    }

    /**
     * Stops listening and ends every connection accepted here (the listener is removed while the target runs: its
     * hosts lose those queues, as with an nvmet port that goes away).
     */
    public void closeAndDisconnect() {
        close();
        connections.close().awaitUninterruptibly(5, java.util.concurrent.TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
            stopAcceptLoop();
            core.removeListener(info);
            serverChannel = null;
        }
    }

    private void stopAcceptLoop() {
        if (acceptLoop != null) {
            acceptLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
            acceptLoop = null;
        }
    }
}

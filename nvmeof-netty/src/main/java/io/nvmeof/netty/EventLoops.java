package io.nvmeof.netty;

import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.BusySpinIdleStrategy;

/**
 * The event loops that NVMe/TCP queues run on, on both sides: Netty's NIO loops (the target's), or for the initiator
 * Netty's native epoll loops where its library loads ({@link #createForClients}), blocking in {@code select()} /
 * {@code epoll_wait} when there is nothing to do (interrupt mode, the default), or busy-polling for a while after each
 * piece of work ({@link BusyPollSelectStrategy}). An Error out of a loop's I/O handling does not end its thread
 * ({@link SurvivingIoHandler}).
 */
public final class EventLoops {
    /** The most busy-poll time accepted: beyond a second the fall-back to blocking no longer serves an idle host. */
    public static final Duration MAX_BUSY_POLL = Duration.ofSeconds(1);

    /** Netty's {@code io.netty.recycler.chunkSize} unless the user set it (Netty's own default is 32). */
    static final int RECYCLER_CHUNK = 1024;

    static {
        // Netty returns a recycled object (a ChannelOutboundBuffer entry per PDU written) to its thread's batch of
        // chunkSize; beyond it, to a chunked MPSC queue that allocates a new chunk as it cycles. A poll group that
        // writes more than 32 PDUs in one flush (queue depth 32 and up) overflowed it and allocated ~1.5 MB/s at 400k
        // IOPS: a 20 ms young GC pause every ~15 s (docs/performance.md, "Tails"). Set before Netty's Recycler class
        // is first loaded; a value given with -D wins.
        if (System.getProperty("io.netty.recycler.chunkSize") == null) {
            System.setProperty("io.netty.recycler.chunkSize", String.valueOf(RECYCLER_CHUNK));
        }
    }

    private EventLoops() {
    }

    /**
     * Applies this project's Netty settings (the Recycler batch above): a program calls it before it uses Netty in any
     * other way, because Netty reads them once. Creating event loops here does it too; this is for a program that may
     * allocate a Netty buffer first.
     */
    public static void configureNetty() {
        // The static initialiser has run by now.
    }

    /**
     * A group of {@code threads} daemon loops named {@code name}-N (daemons: a forgotten close must not keep the JVM
     * alive).
     *
     * @param busyPoll how long a loop keeps polling without blocking after its last work; zero blocks at once
     * @throws IllegalArgumentException when {@code busyPoll} is negative or above {@link #MAX_BUSY_POLL}
     */
    public static EventLoopGroup create(int threads, String name, Duration busyPoll) {
        check(busyPoll);
        return create(threads, name, strategy(busyPoll));
    }

    /**
     * As {@link #create(int, String, Duration)}, each loop's thread running through {@code placement}: loop N (from 0)
     * runs {@code placement.around(N, loop)}, which may keep it to a CPU first.
     */
    public static EventLoopGroup create(int threads, String name, Duration busyPoll, LoopPlacement placement) {
        check(busyPoll);
        return create(threads, name, strategy(busyPoll), placement);
    }

    /**
     * As {@link #create(int, String, Duration, LoopPlacement)} for a host's connections: on Netty's native epoll when
     * its library loads here (Linux on x86-64), else on NIO; {@link #clientChannelType()} is the channel class to
     * connect with. Busy-polling, NIO's {@code selectNow} takes the selector's locks and walks its update and
     * deregister queues on every call, where epoll's is one {@code epoll_wait}: against SPDK's target the bench's 4 KiB
     * reads went from 386k to 419k IOPS at QD 32 (medians of six alternating rounds) and from 46-51k to 51-60k at QD
     * 1, the same in interrupt mode (docs/performance.md, "Side by side with SPDK"). {@code -Dnvmeof.netty.epoll=false}
     * keeps NIO.
     */
    public static EventLoopGroup createForClients(int threads, String name, Duration busyPoll,
            LoopPlacement placement) {
        check(busyPoll);
        SelectStrategyFactory strategy = strategy(busyPoll);
        return create(threads, name, ClientIo.EPOLL ? EpollIoHandler.newFactory(0, strategy)
                : NioIoHandler.newFactory(SelectorProvider.provider(), strategy), placement);
    }

    /** The socket channel class that loops of {@link #createForClients} take. */
    public static Class<? extends SocketChannel> clientChannelType() {
        return ClientIo.EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    /** Whether client loops run on epoll: decided once, loading Netty's native library only where a client asks. */
    private static final class ClientIo {
        static final boolean EPOLL = !"false".equals(System.getProperty("nvmeof.netty.epoll")) && Epoll.isAvailable();
    }

    private static SelectStrategyFactory strategy(Duration busyPoll) {
        return busyPoll.isZero() ? DefaultSelectStrategyFactory.INSTANCE
                : () -> new BusyPollSelectStrategy(busyPoll.toNanos(), new BusySpinIdleStrategy());
    }

    /** What runs a loop's thread: {@code loop} itself, or around it whatever places the thread (CPU affinity). */
    @FunctionalInterface
    public interface LoopPlacement {
        LoopPlacement NONE = (index, loop) -> loop;

        Runnable around(int index, Runnable loop);
    }

    static EventLoopGroup create(int threads, String name, SelectStrategyFactory strategy) {
        return create(threads, name, strategy, LoopPlacement.NONE);
    }

    private static EventLoopGroup create(int threads, String name, SelectStrategyFactory strategy,
            LoopPlacement placement) {
        return create(threads, name, NioIoHandler.newFactory(SelectorProvider.provider(), strategy), placement);
    }

    private static EventLoopGroup create(int threads, String name, IoHandlerFactory io, LoopPlacement placement) {
        DefaultThreadFactory named = new DefaultThreadFactory(name, true);
        AtomicInteger created = new AtomicInteger();
        ThreadFactory factory = placement == LoopPlacement.NONE ? named
                : r -> named.newThread(placement.around(created.getAndIncrement(), r));
        return new MultiThreadIoEventLoopGroup(threads, factory, SurvivingIoHandler.factory(io));
    }

    /**
     * The loops of {@code group} (numbered from 1 in its order) that have ended or are ending: unless their owner shut
     * them down, their channels are no longer served.
     */
    public static List<Integer> endedLoops(EventLoopGroup group) {
        List<Integer> ended = new ArrayList<>();
        int n = 0;
        for (EventExecutor loop : group) {
            n++;
            if (loop.isShuttingDown()) {
                ended.add(n);
            }
        }
        return ended;
    }

    /** Throws, saying what is accepted, unless {@code busyPoll} is from zero to {@link #MAX_BUSY_POLL}. */
    public static Duration check(Duration busyPoll) {
        if (busyPoll == null || busyPoll.isNegative() || busyPoll.compareTo(MAX_BUSY_POLL) > 0) {
            throw new IllegalArgumentException("busy-poll time " + busyPoll + " is not from 0 (off) to "
                    + MAX_BUSY_POLL.toMillis() + " ms");
        }
        return busyPoll;
    }
}

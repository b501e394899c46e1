package io.nvmeof.netty;

import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.BusySpinIdleStrategy;

/**
 * The event loops that NVMe/TCP queues run on, on both sides: Netty's NIO loops, blocking in {@code select()} when
 * there is nothing to do (interrupt mode, the default), or busy-polling for a while after each piece of work
 * ({@link BusyPollSelectStrategy}). An Error out of a loop's I/O handling does not end its thread
 * ({@link SurvivingIoHandler}).
 */
public final class EventLoops {
    /** The most busy-poll time accepted: beyond a second the fall-back to blocking no longer serves an idle host. */
    public static final Duration MAX_BUSY_POLL = Duration.ofSeconds(1);

    private EventLoops() {
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
        return create(threads, name, busyPoll.isZero() ? DefaultSelectStrategyFactory.INSTANCE
                : () -> new BusyPollSelectStrategy(busyPoll.toNanos(), new BusySpinIdleStrategy()));
    }

    static EventLoopGroup create(int threads, String name, SelectStrategyFactory strategy) {
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true),
                SurvivingIoHandler.factory(NioIoHandler.newFactory(SelectorProvider.provider(), strategy)));
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

package io.nvmeof.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class EventLoopsTest {
    /** The strategy's decisions, driven by hand: poll while work is recent, block once idle for the busy-poll time. */
    /**
     * Netty's Recycler batch is raised before Netty reads it, unless the user chose one: with Netty's 32, a poll group
     * flushing more PDUs at once allocated on every cycle (SteadyStateAllocationTest at depth 64).
     */
    @Test
    void theRecyclerBatchIsRaisedUnlessTheUserChoseOne() {
        EventLoops.configureNetty();
        String chosen = System.getProperty("io.netty.recycler.chunkSize");
        assertEquals(String.valueOf(EventLoops.RECYCLER_CHUNK), chosen);
        assertTrue(EventLoops.RECYCLER_CHUNK >= 256, "more than a queue's depth of PDUs per flush");
    }

    @Test
    void pollsWithoutBlockingWhileWorkIsRecentThenBlocks() throws Exception {
        AtomicInteger ready = new AtomicInteger();
        AtomicInteger selectNows = new AtomicInteger();
        io.netty.util.IntSupplier selectNow = () -> {
            selectNows.incrementAndGet();
            return ready.get();
        };
        BusyPollSelectStrategy s = new BusyPollSelectStrategy(TimeUnit.MILLISECONDS.toNanos(200), NoOpIdleStrategy.INSTANCE);
        ready.set(3);
        assertEquals(3, s.calculateStrategy(selectNow, false), "ready sockets are handled at once");
        ready.set(0);
        assertEquals(0, s.calculateStrategy(selectNow, false), "just after work: poll again, do not block");
        assertEquals(0, s.calculateStrategy(selectNow, true), "tasks waiting: run them, do not block");
        assertEquals(0, s.calculateStrategy(selectNow, false), "just done with the tasks: poll again");
        assertEquals(4, selectNows.get(), "every decision looked at the sockets without blocking first");
        Thread.sleep(300);
        assertEquals(SelectStrategy.SELECT, s.calculateStrategy(selectNow, false), "idle past the busy-poll time: block");
        assertEquals(0, s.calculateStrategy(selectNow, true), "a task is work: polling starts again");
        assertEquals(0, s.calculateStrategy(selectNow, false));
        assertThrows(IllegalArgumentException.class, () -> new BusyPollSelectStrategy(0, NoOpIdleStrategy.INSTANCE));
    }

    /**
     * The busy-poll time starts when the loop is done with its work, not when the work arrived: a batch that takes
     * longer than the busy-poll time to handle is still followed by the whole busy-poll time of polling. Before, a
     * target answering 32 commands per batch blocked after almost every batch (perf sched: some 2,000 epoll_wait
     * sleeps a second at queue depth 32), and paid a wake-up for the next one.
     */
    @Test
    void theBusyPollTimeCountsFromTheEndOfTheWork() throws Exception {
        AtomicInteger ready = new AtomicInteger(5);
        io.netty.util.IntSupplier selectNow = ready::get;
        BusyPollSelectStrategy s = new BusyPollSelectStrategy(TimeUnit.MILLISECONDS.toNanos(100), NoOpIdleStrategy.INSTANCE);
        assertEquals(5, s.calculateStrategy(selectNow, false));
        Thread.sleep(150); // the loop handles those keys for longer than the busy-poll time
        ready.set(0);
        assertEquals(0, s.calculateStrategy(selectNow, false), "just done with the work: poll, do not block");
        Thread.sleep(150);
        assertEquals(SelectStrategy.SELECT, s.calculateStrategy(selectNow, false), "idle for the busy-poll time: block");
    }

    @Test
    void busyPollTimesOutsideZeroToOneSecondAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EventLoops.create(1, "t", Duration.ofMillis(-1)));
        assertTrue(e.getMessage().contains("from 0 (off) to 1000 ms"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> EventLoops.check(Duration.ofMillis(1001)));
        assertThrows(IllegalArgumentException.class, () -> EventLoops.check(null));
        assertEquals(Duration.ZERO, EventLoops.check(Duration.ZERO));
    }

    /** A busy-polling loop serves sockets as a blocking one does: an echo round trip, both ends on polling loops. */
    @Test
    void aBusyPollingLoopServesSockets() throws Exception {
        EventLoopGroup group = EventLoops.create(2, "echo", Duration.ofMillis(5));
        try {
            echo(group, group, NioSocketChannel.class);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /**
     * A host's loops run on Netty's native epoll where its library is part of the build (Linux on x86-64: a packaging
     * mistake that loses the library fails here, rather than quietly falling back to NIO), busy-polling as NIO's do,
     * against a server on the NIO loops the target uses.
     */
    @Test
    void clientLoopsRunOnEpollWhereNettysLibraryLoads() throws Exception {
        boolean linuxX64 = System.getProperty("os.name").equals("Linux")
                && System.getProperty("os.arch").matches("amd64|x86_64");
        if (linuxX64) {
            assertTrue(Epoll.isAvailable(), () -> "Netty's native epoll does not load: " + Epoll.unavailabilityCause());
            assertEquals(EpollSocketChannel.class, EventLoops.clientChannelType());
        } else {
            assertEquals(Epoll.isAvailable() ? EpollSocketChannel.class : NioSocketChannel.class,
                    EventLoops.clientChannelType());
        }
        EventLoopGroup servers = EventLoops.create(1, "echo-server", Duration.ZERO);
        EventLoopGroup clients = EventLoops.createForClients(1, "echo-client", Duration.ofMillis(5),
                EventLoops.LoopPlacement.NONE);
        try {
            echo(servers, clients, EventLoops.clientChannelType());
        } finally {
            clients.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            servers.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** 100 lines echoed in order by a server on {@code servers}, sent by a client on {@code clients}. */
    private static void echo(EventLoopGroup servers, EventLoopGroup clients,
            Class<? extends io.netty.channel.socket.SocketChannel> clientType) throws Exception {
        Channel server = new ServerBootstrap().group(servers).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ctx.writeAndFlush(msg);
                    }
                }).bind("127.0.0.1", 0).sync().channel();
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        StringBuilder got = new StringBuilder();
        CompletableFuture<String> done = new CompletableFuture<>();
        Channel client = new Bootstrap().group(clients).channel(clientType)
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ByteBuf b = (ByteBuf) msg;
                        got.append(b.toString(StandardCharsets.US_ASCII));
                        b.release();
                        if (got.length() >= 1000) {
                            done.complete(got.toString());
                        }
                    }
                }).connect("127.0.0.1", port).sync().channel();
        for (int i = 0; i < 100; i++) {
            client.writeAndFlush(Unpooled.copiedBuffer(String.format("%09d\n", i), StandardCharsets.US_ASCII));
            Thread.sleep(i % 10 == 0 ? 20 : 0); // some writes find the loops blocked, most find them polling
        }
        String echoed = done.get(20, TimeUnit.SECONDS);
        assertTrue(echoed.startsWith("000000000\n000000001\n") && echoed.endsWith("000000099\n"), echoed);
        client.close().sync();
        server.close().sync();
    }

    /**
     * An idle process does not burn a core: a loop that polls 2 ms after its last work then blocks uses next to no
     * CPU over the following 400 ms, where one that polls for a second uses a good part of that window.
     */
    @Test
    void anIdleLoopFallsBackToBlocking() throws Exception {
        long shortPoll = idleCpuNanos(Duration.ofMillis(2));
        long longPoll = idleCpuNanos(Duration.ofSeconds(1));
        assertTrue(shortPoll < TimeUnit.MILLISECONDS.toNanos(40), "2 ms busy poll, then 400 ms idle: "
                + shortPoll / 1000 + " us of CPU");
        // The spinning loop's share of a loaded 2-core machine may be small; 5 % of the window is plenty to tell.
        assertTrue(longPoll > TimeUnit.MILLISECONDS.toNanos(20) && longPoll > 3 * shortPoll,
                "1 s busy poll keeps polling through 400 ms idle: " + longPoll / 1000 + " us of CPU (2 ms: "
                        + shortPoll / 1000 + " us)");
    }

    /** The CPU time a loop's thread uses in the 400 ms after its last task. */
    private static long idleCpuNanos(Duration busyPoll) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        EventLoopGroup group = EventLoops.create(1, "idle", busyPoll);
        try {
            long tid = group.next().submit(() -> Thread.currentThread().getId()).get(5, TimeUnit.SECONDS);
            Thread.sleep(50); // past the 2 ms loop's poll: from here on it blocks, the 1 s one keeps polling
            long before = mx.getThreadCpuTime(tid);
            Thread.sleep(400);
            return mx.getThreadCpuTime(tid) - before;
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /**
     * Issue 30, finding 18: an Error out of a loop's I/O handling (an OutOfMemoryError while the heap was exhausted)
     * ended the loop's thread, since Netty's loop rethrows Errors: every connection of that poll group, and every new
     * one it was given, went unserved while the process ran on. The loop now logs it and goes on serving.
     */
    @Test
    void anErrorOutOfTheIoHandlingDoesNotEndTheLoop() throws Exception {
        AtomicInteger thrown = new AtomicInteger();
        SelectStrategyFactory failingOnce = () -> (selectNow, hasTasks) -> {
            if (thrown.getAndIncrement() == 0) {
                throw new OutOfMemoryError("injected by the test");
            }
            return hasTasks ? selectNow.get() : SelectStrategy.SELECT;
        };
        EventLoopGroup group = EventLoops.create(1, "survivor", failingOnce);
        try {
            io.netty.util.concurrent.EventExecutor loop = group.next();
            loop.execute(() -> { }); // starts the thread, which runs the I/O handling first
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (thrown.get() < 2 && !loop.isShuttingDown() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertFalse(loop.isShuttingDown(), "the loop ended with the Error");
            assertTrue(thrown.get() >= 2, "the I/O handling ran again after the Error");
            assertEquals("still serving", group.next().submit(() -> "still serving").get(5, TimeUnit.SECONDS));
            assertEquals(java.util.List.of(), EventLoops.endedLoops(group));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** A loop that ended while its group runs is named, so a health check can say the data path is down. */
    @Test
    void aLoopThatEndedIsNamed() throws Exception {
        EventLoopGroup group = EventLoops.create(3, "named", Duration.ZERO);
        try {
            assertEquals(java.util.List.of(), EventLoops.endedLoops(group));
            java.util.Iterator<io.netty.util.concurrent.EventExecutor> it = group.iterator();
            it.next();
            it.next().shutdownGracefully(0, 0, TimeUnit.SECONDS).sync();
            assertEquals(java.util.List.of(2), EventLoops.endedLoops(group));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}

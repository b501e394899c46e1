package io.nvmeof.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A reusable read-only view of memory owned elsewhere: reads what is there, is recycled once written. */
class BorrowedMemoryBufTest {
    private static ByteBuffer region(int size, long seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(size);
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        b.put(0, bytes);
        return b;
    }

    private static byte[] bytes(ByteBuffer region, int offset, int length) {
        byte[] b = new byte[length];
        region.get(offset, b);
        return b;
    }

    @Test
    void readsTheBorrowedRangeAndRefusesWrites() throws Exception {
        ByteBuffer region = region(8192, 1);
        List<BorrowedMemoryBuf> recycled = new ArrayList<>();
        BorrowedMemoryBuf buf = new BorrowedMemoryBuf(recycled::add).borrow("ns 1", region, 100, 4000);
        assertEquals(4000, buf.readableBytes());
        assertEquals(4000, buf.capacity());
        assertEquals(region.getInt(100), buf.getInt(0), "big-endian, as every ByteBuf");
        assertEquals(Integer.reverseBytes(region.getInt(104)), buf.getIntLE(4));
        assertEquals(region.getLong(200), buf.getLong(100));
        assertEquals(region.get(4099), buf.getByte(3999));
        assertEquals(region.getShort(150) & 0xFFFF, buf.getUnsignedShort(50));
        assertEquals((region.get(110) & 0xFF) << 16 | (region.get(111) & 0xFF) << 8 | region.get(112) & 0xFF,
                buf.getUnsignedMedium(10));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getByte(4000), "nothing past the range");

        byte[] all = new byte[4000];
        buf.getBytes(0, all);
        assertArrayEquals(bytes(region, 100, 4000), all);
        ByteBuf direct = Unpooled.directBuffer(4000);
        ByteBuf heap = Unpooled.buffer(4000);
        buf.getBytes(0, direct, 0, 4000);
        buf.getBytes(0, heap, 0, 4000);
        assertArrayEquals(all, ByteBufUtil.getBytes(direct.setIndex(0, 4000)));
        assertArrayEquals(all, ByteBufUtil.getBytes(heap.setIndex(0, 4000)));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        buf.getBytes(1000, out, 10);
        assertArrayEquals(bytes(region, 1100, 10), out.toByteArray());
        ByteBuffer nio = buf.internalNioBuffer(10, 20);
        assertEquals(110, nio.position());
        assertEquals(20, nio.remaining());
        ByteBuf copy = buf.copy(0, 4000);
        assertArrayEquals(all, ByteBufUtil.getBytes(copy));
        copy.release();
        direct.release();

        assertTrue(buf.isReadOnly());
        assertThrows(ReadOnlyBufferException.class, () -> buf.setInt(0, 1));
        assertThrows(ReadOnlyBufferException.class, () -> buf.setBytes(0, new byte[4]));
        assertThrows(IllegalStateException.class, () -> buf.borrow("ns 1", region, 0, 10), "borrowed twice");

        assertEquals("ns 1", buf.holder());
        assertTrue(buf.release());
        assertEquals(List.of(buf), recycled, "given back once its count reaches 0");
        assertNull(buf.holder());
    }

    @Test
    void aRecycledBufferReadsTheNextRegionThroughTheSameNioView() {
        ByteBuffer first = region(4096, 2);
        ByteBuffer second = region(4096, 3);
        ArrayDeque<BorrowedMemoryBuf> free = new ArrayDeque<>();
        BorrowedMemoryBuf buf = new BorrowedMemoryBuf(free::add).borrow(null, first, 0, 512);
        ByteBuffer view = buf.internalNioBuffer(0, 512);
        buf.release();
        assertSame(buf, free.poll());
        buf.borrow(null, second, 1024, 512);
        assertSame(view, buf.internalNioBuffer(0, 512), "no new ByteBuffer per use");
        byte[] seen = new byte[512];
        buf.internalNioBuffer(0, 512).get(seen);
        assertArrayEquals(bytes(second, 1024, 512), seen, "the view reads the second region's memory now");
        byte[] viaGet = new byte[512];
        buf.getBytes(0, viaGet);
        assertArrayEquals(bytes(second, 1024, 512), viaGet);
        assertThrows(IllegalArgumentException.class,
                () -> new BorrowedMemoryBuf(b -> { }).borrow(null, ByteBuffer.allocate(64), 0, 8), "heap memory");
        assertThrows(IllegalArgumentException.class,
                () -> new BorrowedMemoryBuf(b -> { }).borrow(null, first, 4000, 200), "past the region");
        buf.release();
    }

    /**
     * Through a real NIO channel, interleaved with ordinary buffers as a read response's header and data are: the
     * peer receives exactly the borrowed bytes in order, and every buffer comes back once written.
     */
    @Test
    @Timeout(30)
    void aChannelSendsTheBorrowedBytesAndGivesEveryBufferBack() throws Exception {
        ByteBuffer[] regions = {region(1 << 16, 4), region(1 << 16, 5), region(1 << 16, 6)};
        int messages = 2000;
        ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            CompletableFuture<Void> all = new CompletableFuture<>();
            Random random = new Random(7);
            int[] offsets = new int[messages];
            int[] lengths = new int[messages];
            long total = 0;
            for (int i = 0; i < messages; i++) {
                lengths[i] = 1 + random.nextInt(8192);
                offsets[i] = random.nextInt((1 << 16) - lengths[i]);
                expected.write(new byte[] {(byte) i, (byte) (i >> 8)});
                expected.write(bytes(regions[i % 3], offsets[i], lengths[i]));
                total += 2 + lengths[i];
            }
            long want = total;
            Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ByteBuf b = (ByteBuf) msg;
                            byte[] chunk = new byte[b.readableBytes()];
                            b.readBytes(chunk);
                            b.release();
                            got.write(chunk, 0, chunk.length);
                            if (got.size() >= want) {
                                all.complete(null);
                            }
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            int port = ((InetSocketAddress) server.localAddress()).getPort();
            Channel client = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .handler(new ChannelInboundHandlerAdapter()).connect("127.0.0.1", port).sync().channel();
            ArrayDeque<BorrowedMemoryBuf> free = new ArrayDeque<>();
            int[] created = new int[1];
            CompletableFuture<Void> written = new CompletableFuture<>();
            client.eventLoop().execute(() -> {
                for (int i = 0; i < messages; i++) {
                    BorrowedMemoryBuf b = free.poll();
                    if (b == null) {
                        b = new BorrowedMemoryBuf(free::add);
                        created[0]++;
                    }
                    client.write(Unpooled.wrappedBuffer(new byte[] {(byte) i, (byte) (i >> 8)}));
                    client.write(b.borrow(i, regions[i % 3], offsets[i], lengths[i]));
                    if (i % 16 == 15) {
                        client.flush(); // several responses gathered into one write, as the target does
                    }
                }
                client.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> written.complete(null));
            });
            written.get(20, TimeUnit.SECONDS);
            all.get(20, TimeUnit.SECONDS);
            assertArrayEquals(expected.toByteArray(), got.toByteArray(), "the bytes, in order");
            CompletableFuture<Integer> back = new CompletableFuture<>();
            client.eventLoop().execute(() -> back.complete(free.size()));
            assertEquals(created[0], back.get(5, TimeUnit.SECONDS), "every buffer given back after its write");
            assertTrue(created[0] < messages, created[0] + " buffers for " + messages + " messages: reused");
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}

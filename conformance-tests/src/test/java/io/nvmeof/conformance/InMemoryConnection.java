package io.nvmeof.conformance;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.nvmeof.tgt.core.ListenerInfo;
import io.nvmeof.tgt.core.TargetCore;
import io.nvmeof.tgt.tcp.TcpOptions;
import io.nvmeof.tgt.tcp.TcpQueue;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * One NVMe/TCP connection to a target's core with no socket: the target's own {@link TcpQueue} on an
 * {@link EmbeddedChannel}, everything run on the caller's thread. What the host sends goes through the queue before
 * {@link #send} returns, and what the target sends is there to read at once; so a harness pays no system call or
 * thread hand-off per PDU. The core it serves must not be driven from other threads (no poll groups, no keep-alive
 * timer): an embedded channel's loop is the caller's.
 */
final class InMemoryConnection implements AutoCloseable {
    private final EmbeddedChannel channel;
    private final ByteBuf received = Unpooled.buffer();

    InMemoryConnection(TargetCore core, TcpOptions options, ListenerInfo listener) {
        TcpQueue q = new TcpQueue(core, options);
        q.listener(listener);
        channel = new EmbeddedChannel(q);
    }

    boolean isOpen() {
        return channel.isOpen();
    }

    /** Hands {@code bytes} to the target as one read from the socket would; nothing once the target has closed. */
    void send(byte[] bytes, int offset, int length) {
        if (channel.isOpen() && length > 0) {
            channel.writeInbound(Unpooled.copiedBuffer(bytes, offset, length));
        }
        pump();
    }

    /** Collects what the target has written (and runs the tasks it has queued on its loop). */
    private void pump() {
        channel.runPendingTasks();
        Object m;
        while ((m = channel.readOutbound()) != null) {
            try {
                if (m instanceof ByteBuf b) {
                    received.writeBytes(b, b.readerIndex(), b.readableBytes());
                } else {
                    throw new IllegalStateException("the target wrote a " + m.getClass().getName());
                }
            } finally {
                ReferenceCountUtil.release(m);
            }
        }
    }

    /** Drops what the target has sent so far. */
    void discardReceived() {
        pump();
        received.clear();
    }

    /** A raw host on this connection, for the handshakes and commands {@link RawTcpHost} knows. */
    RawTcpHost host() {
        return new RawTcpHost(new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (!received.isReadable()) {
                    pump();
                }
                if (!received.isReadable()) {
                    if (!channel.isOpen()) {
                        return -1;
                    }
                    // Everything runs on this thread: nothing more can come until the host sends more.
                    throw new IOException("the target has sent nothing more; it is waiting for the host");
                }
                int n = Math.min(len, received.readableBytes());
                received.readBytes(b, off, n);
                received.discardReadBytes();
                return n;
            }
        }, new OutputStream() {
            @Override
            public void write(int b) {
                send(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                send(b, off, len);
            }
        });
    }

    /** The end of the stream, as a host that closes its socket: the queue goes away, and every buffer is released. */
    @Override
    public void close() {
        channel.close();
        pump();
        channel.finishAndReleaseAll();
        received.release();
    }
}

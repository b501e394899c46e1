package io.nvmeof.netty.tls;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import org.bouncycastle.tls.AlertDescription;
import org.bouncycastle.tls.TlsClientProtocol;
import org.bouncycastle.tls.TlsProtocol;
import org.bouncycastle.tls.TlsServerProtocol;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TLS 1.3 with an external PSK in a Netty pipeline, in front of a handler that reads and writes plain bytes (the
 * NVMe/TCP queue): received records are decrypted and passed on as {@link ByteBuf}s, buffers written are encrypted.
 * BouncyCastle's TLS protocol runs in its non-blocking mode, on the channel's event loop (the JDK's TLS has no
 * external PSKs). Writes made before the handshake completes wait for it; the handshake's outcome is
 * {@link #handshakeFuture()}. A handshake that fails ends the connection after the alert went out, logged once.
 *
 * <p>Every byte goes through a copy here (BouncyCastle's records are byte arrays): a connection with TLS does not
 * send from a namespace's memory, which the transports do without it.
 */
public final class TlsPskHandler extends ChannelDuplexHandler {
    private static final Logger LOG = LoggerFactory.getLogger(TlsPskHandler.class);
    /** One TLS record's plaintext at most, with room for its header and tag. */
    private static final int COPY = 16 * 1024 + 256;

    private final TlsProtocol protocol;
    private final ExternalPskLookup lookup;
    private final ExternalPsk clientPsk;
    /**
     * Received bytes on their way into BouncyCastle: one array per event-loop thread, since offerInput consumes them
     * before channelRead returns (a connection that never completes a handshake holds no array of its own).
     */
    private static final io.netty.util.concurrent.FastThreadLocal<byte[]> INBOUND =
            new io.netty.util.concurrent.FastThreadLocal<>() {
                @Override
                protected byte[] initialValue() {
                    return new byte[COPY];
                }
            };
    /** The largest plaintext of one TLS record. */
    private static final int RECORD = 16 * 1024;
    /** Made when the handshake completes: a connection that never gets there holds none. */
    private byte[] staged;
    private int stagedLength;
    private final List<ChannelPromise> stagedPromises = new java.util.ArrayList<>();
    private final ArrayDeque<Object[]> waitingWrites = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private Promise<ExternalPsk> handshake;
    private boolean started;
    private boolean completed;
    private boolean announced;
    private boolean failed;
    /** Set by the peer object during the handshake (event loop). */
    ExternalPsk selected;
    String refusal;
    private String alert;

    private TlsPskHandler(TlsProtocol protocol, ExternalPskLookup lookup, ExternalPsk clientPsk) {
        this.protocol = protocol;
        this.lookup = lookup;
        this.clientPsk = clientPsk;
    }

    private static final java.util.concurrent.atomic.AtomicBoolean WARM = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * Runs one handshake and a record each way in memory, once per process, and returns how long it took (0 when it
     * ran before). A listener with TLS calls it before it takes connections: the first handshake of a process loads
     * and compiles BouncyCastle's TLS and crypto, which took longer than the Linux host's 10 s handshake timeout in a
     * slow (emulated) machine; the hosts' handshakes should not pay for it.
     */
    public static long warmUp() {
        if (!WARM.compareAndSet(false, true)) {
            return 0;
        }
        long t0 = System.nanoTime();
        try {
            ExternalPsk psk = new ExternalPsk("warm-up".getBytes(StandardCharsets.US_ASCII), new byte[32], false);
            TlsServerProtocol server = new TlsServerProtocol();
            TlsClientProtocol client = new TlsClientProtocol();
            TlsPskHandler sh = new TlsPskHandler(server, offered -> psk, null);
            TlsPskHandler ch = new TlsPskHandler(client, null, psk);
            server.accept(new PskTlsPeers.Server(PskTlsPeers.CRYPTO, offered -> psk, sh));
            client.connect(new PskTlsPeers.Client(PskTlsPeers.CRYPTO, psk, ch));
            byte[] buf = new byte[COPY * 2];
            for (int round = 0; round < 8 && (client.isHandshaking() || server.isHandshaking()); round++) {
                shuttle(client, server, buf);
                shuttle(server, client, buf);
            }
            client.writeApplicationData(buf, 0, 4096);
            shuttle(client, server, buf);
            server.writeApplicationData(buf, 0, 4096);
            shuttle(server, client, buf);
        } catch (IOException | RuntimeException e) {
            LOG.debug("TLS warm-up: {}", e.toString()); // only a warm-up: the first real handshake pays instead
        }
        return System.nanoTime() - t0;
    }

    private static void shuttle(TlsProtocol from, TlsProtocol to, byte[] buf) throws IOException {
        int n;
        while ((n = from.readOutput(buf, 0, buf.length)) > 0) {
            to.offerInput(buf, 0, n);
        }
    }

    private static final java.lang.reflect.Field KEY_UPDATE_ENABLED = keyUpdateField();

    /** Failed handshakes are logged one each, but at most 20 a minute (anyone who reaches a listener can make them). */
    static final io.nvmeof.netty.LogAllowance FAILURE_LOG = new io.nvmeof.netty.LogAllowance();

    private static java.lang.reflect.Field keyUpdateField() {
        try {
            java.lang.reflect.Field f = TlsProtocol.class.getDeclaredField("keyUpdateEnabled");
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("TLS: cannot turn BouncyCastle's TLS 1.3 KeyUpdate off ({}); a connection past 2^20 records"
                    + " will rekey, which Linux's kTLS peers do not take", e.toString());
            return null;
        }
    }

    /**
     * No KeyUpdate: BouncyCastle sends one after 2^20 records, and Linux's NVMe/TCP host and nvmet (kTLS behind
     * tlshd) cannot rekey: a handshake record on their side fails the queue. Linux's own side never rekeys either.
     */
    static void disableKeyUpdate(TlsProtocol p) {
        if (KEY_UPDATE_ENABLED != null) {
            try {
                KEY_UPDATE_ENABLED.setBoolean(p, false);
            } catch (IllegalAccessException e) {
                // logged when the field could not be opened; nothing else to do
            }
        }
    }

    /** Whether {@code p} would send a KeyUpdate (for tests). */
    static boolean keyUpdateEnabled(TlsProtocol p) throws IllegalAccessException {
        return KEY_UPDATE_ENABLED.getBoolean(p);
    }

    /** The server end: keys found through {@code lookup} by the identities the client offers. */
    public static TlsPskHandler server(ExternalPskLookup lookup) {
        return new TlsPskHandler(new TlsServerProtocol(), lookup, null);
    }

    /** The client end, offering {@code psk}. */
    public static TlsPskHandler client(ExternalPsk psk) {
        return new TlsPskHandler(new TlsClientProtocol(), null, psk);
    }

    /** Completes with the PSK agreed once the handshake is done, or fails saying why it did not. */
    public Future<ExternalPsk> handshakeFuture() {
        return handshake;
    }

    /** The TLS protocol state machine (tests look at it). */
    TlsProtocol protocol() {
        return protocol;
    }

    /** The PSK agreed; null until the handshake completed. */
    public ExternalPsk agreedPsk() {
        return completed ? selected : null;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.handshake = ctx.executor().newPromise();
        if (ctx.channel().isActive()) {
            start();
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        start();
        super.channelActive(ctx);
    }

    private void start() {
        if (started) {
            return;
        }
        started = true;
        try {
            if (protocol instanceof TlsServerProtocol s) {
                s.accept(new PskTlsPeers.Server(PskTlsPeers.CRYPTO, lookup, this));
            } else {
                ((TlsClientProtocol) protocol).connect(new PskTlsPeers.Client(PskTlsPeers.CRYPTO, clientPsk, this));
            }
        } catch (IOException e) {
            fail(e);
            return;
        }
        drainOutput(ctx.voidPromise());
        ctx.flush();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf in)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            while (in.isReadable() && !failed) {
                byte[] copy = INBOUND.get();
                int n = Math.min(in.readableBytes(), copy.length);
                in.readBytes(copy, 0, n);
                protocol.offerInput(copy, 0, n);
            }
        } catch (IOException e) {
            fail(e);
            return;
        } finally {
            ReferenceCountUtil.release(in);
        }
        drainOutput(ctx.voidPromise());
        ctx.flush();
        if (completed && !announced) {
            announced = true;
            staged = new byte[RECORD];
            disableKeyUpdate(protocol);
            handshake.trySuccess(selected);
            writeWaiting();
        }
        int available = protocol.getAvailableInputBytes();
        if (available > 0) {
            ByteBuf plain = ctx.alloc().directBuffer(available);
            protocol.readInput(plain.internalNioBuffer(0, available), available);
            plain.writerIndex(available);
            ctx.fireChannelRead(plain);
        }
        if (protocol.isClosed() && ctx.channel().isOpen()) {
            ctx.close(); // the peer's close_notify
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof ByteBuf b)) {
            ReferenceCountUtil.release(msg);
            promise.tryFailure(new IllegalArgumentException("only bytes go through TLS, not " + msg.getClass()));
            return;
        }
        if (failed || !ctx.channel().isActive()) {
            ReferenceCountUtil.release(b);
            promise.tryFailure(new IOException("the TLS connection is closed"));
            return;
        }
        if (!announced) {
            waitingWrites.add(new Object[] {b, promise});
            return;
        }
        stage(b, promise);
    }

    /**
     * Gathers written bytes into one TLS record until a flush (or a full record): a queue writes a read's PDU header,
     * its data and the response capsule one by one, and each write as its own record cost a cipher set-up and a tag
     * apiece.
     */
    private void stage(ByteBuf b, ChannelPromise promise) {
        try {
            while (b.isReadable() && !failed) {
                int n = Math.min(b.readableBytes(), RECORD - stagedLength);
                b.readBytes(staged, stagedLength, n);
                stagedLength += n;
                if (stagedLength == RECORD) {
                    seal();
                }
            }
        } finally {
            ReferenceCountUtil.release(b);
        }
        if (failed) {
            promise.tryFailure(new IOException("the TLS connection failed"));
        } else if (!promise.isVoid()) {
            stagedPromises.add(promise);
        }
    }

    /** Encrypts what is staged as one record and hands it on; the staged writes' promises follow that write. */
    private void seal() {
        if (stagedLength == 0 && stagedPromises.isEmpty()) {
            return;
        }
        try {
            if (stagedLength > 0) {
                protocol.writeApplicationData(staged, 0, stagedLength);
            }
        } catch (IOException e) {
            stagedLength = 0;
            failPromises(e);
            fail(e);
            return;
        }
        stagedLength = 0;
        if (stagedPromises.isEmpty()) {
            drainOutput(ctx.voidPromise());
            return;
        }
        List<ChannelPromise> waiting = new java.util.ArrayList<>(stagedPromises);
        stagedPromises.clear();
        ChannelPromise p = ctx.newPromise();
        p.addListener(f -> {
            for (ChannelPromise w : waiting) {
                if (f.isSuccess()) {
                    w.trySuccess();
                } else {
                    w.tryFailure(f.cause());
                }
            }
        });
        drainOutput(p);
    }

    private void failPromises(Throwable why) {
        for (ChannelPromise w : stagedPromises) {
            w.tryFailure(why);
        }
        stagedPromises.clear();
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        if (announced) {
            seal();
        }
        ctx.flush();
    }

    private void writeWaiting() {
        Object[] w;
        while ((w = waitingWrites.poll()) != null) {
            stage((ByteBuf) w[0], (ChannelPromise) w[1]);
        }
        seal();
        ctx.flush();
    }

    /** What the protocol has to send: handshake messages, records, alerts. */
    private void drainOutput(ChannelPromise promise) {
        int n = protocol.getAvailableOutputBytes();
        if (n == 0) {
            promise.trySuccess();
            return;
        }
        ByteBuf out = ctx.alloc().directBuffer(n);
        protocol.readOutput(out.internalNioBuffer(0, n), n);
        out.writerIndex(n);
        ctx.write(out, promise);
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) throws Exception {
        if (started && !failed && !protocol.isClosed()) {
            try {
                if (announced) {
                    seal(); // what was written before the close goes out before close_notify
                }
                protocol.close(); // close_notify
                drainOutput(ctx.voidPromise());
                ctx.flush();
            } catch (IOException e) {
                // closing anyway
            }
        }
        ctx.close(promise);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        failWaiting(new IOException("connection closed"));
        failPromises(new IOException("connection closed"));
        stagedLength = 0;
        handshake.tryFailure(new IOException(refusal != null ? refusal
                : alert != null ? alert : "the connection closed during the TLS handshake"));
        super.channelInactive(ctx);
    }

    private void failWaiting(Throwable why) {
        Object[] w;
        while ((w = waitingWrites.poll()) != null) {
            ReferenceCountUtil.release(w[0]);
            ((ChannelPromise) w[1]).tryFailure(why);
        }
    }

    /** The handshake or a record failed: the alert goes out, then the connection ends. Logged once. */
    private void fail(IOException e) {
        if (failed) {
            return;
        }
        failed = true;
        String why = refusal != null ? refusal : alert != null ? alert : e.getMessage();
        long suppressed = FAILURE_LOG.admit();
        if (suppressed >= 0) {
            String more = io.nvmeof.netty.LogAllowance.leftOut(suppressed, "failures");
            if (!completed) {
                LOG.warn("TLS handshake with {} failed: {}{}", ctx.channel().remoteAddress(), why, more);
            } else {
                LOG.warn("TLS connection with {} failed: {}{}", ctx.channel().remoteAddress(), why, more);
            }
        }
        handshake.tryFailure(new IOException(why, e));
        failWaiting(e);
        failPromises(e);
        drainOutput(ctx.voidPromise());
        ctx.flush();
        ctx.close();
    }

    /** From the peer object, inside the protocol (event loop). */
    void handshakeComplete() {
        completed = true;
    }

    void alert(boolean raised, short description, String message) {
        if (description == AlertDescription.close_notify) {
            return;
        }
        alert = (raised ? "sent alert " : "peer sent alert ") + AlertDescription.getText(description)
                + (message != null ? " (" + message + ")" : "");
    }

    /** The identities offered, for a log line: the first three, printable ASCII only, each cut short. */
    static String describe(List<byte[]> identities) {
        StringBuilder sb = new StringBuilder();
        for (byte[] id : identities.subList(0, Math.min(3, identities.size()))) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            String s = new String(id, 0, Math.min(id.length, 160), StandardCharsets.US_ASCII);
            sb.append('\'').append(s.replaceAll("[^\\x20-\\x7e]", "?")).append('\'');
        }
        return sb.toString();
    }
}

package io.nvmeof.conformance;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP relay between one host and the target on loopback whose connections a test can cut at any moment, as a
 * network that fails would (both ends see the connection reset), and which can refuse new connections for a while
 * (a target that is down). Blocking sockets, two threads per connection: a test harness, not a data path.
 */
final class CuttableProxy implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private volatile boolean refusing;
    private volatile boolean closed;
    private final AtomicLong cuts = new AtomicLong();

    CuttableProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        Thread t = new Thread(this::accept, "proxy-accept-" + port());
        t.setDaemon(true);
        t.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Cuts every connection now (RST on both sides). */
    void cut() {
        cuts.incrementAndGet();
        for (Socket s : open) {
            abort(s);
        }
    }

    /** While set, new connections are closed at once, as a target that is down refuses them. */
    void refuse(boolean on) {
        refusing = on;
    }

    long cuts() {
        return cuts.get();
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return;
            }
            if (refusing) {
                abort(client);
                continue;
            }
            try {
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress("127.0.0.1", targetPort), 5000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                open.add(client);
                open.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                abort(client);
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 << 10];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                }
            } catch (IOException e) {
                // cut, or the other side closed
            } finally {
                abort(from);
                abort(to);
            }
        }, "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private void abort(Socket s) {
        open.remove(s);
        try {
            s.setSoLinger(true, 0); // a reset, not an orderly close: what a failed network looks like
            s.close();
        } catch (IOException e) {
            // closed already
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        cut();
    }
}

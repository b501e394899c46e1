package io.nvmeof.rdma;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The RDMA check that needs a real verbs device: run inside the conformance guest on Soft-RoCE (rxe0) by
 * native/src/test/guest/rdma-smoke.sh. One process plays both sides over RDMA CM on the guest's own address: a
 * listener and two client connections (pairs A and B) with private data verified both ways, a rejected connection
 * with reject private data, batched RDMA WRITE and READ, SEND/RECV with pre-posted receives (busy-polled on one side,
 * event-driven on the other), an RDMA WRITE to an rkey nobody registered (remote access error on A; B keeps working),
 * a registration over 4 GiB when the guest has the memory, then disconnect and teardown.
 * Prints PASS/FAIL/SKIP lines; exits 1 when anything failed.
 *
 * <pre>java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp ... io.nvmeof.rdma.RdmaSmokeCheck
 *      [--address 10.0.2.15] [--device rxe0] [--big-mr]</pre>
 */
public final class RdmaSmokeCheck {
    static final int TIMEOUT_MS = 20_000;
    static final int BLOCK = 4096;
    static final int BATCH = 16;
    static final int MSG = 256;
    static final int RECVS = 32;
    static final long REGION = 1 << 20;

    private int passes;
    private int fails;
    private final String address;
    private final String deviceName;
    private final boolean bigMr;

    private RdmaDevice device;
    private ProtectionDomain pd;
    private MemoryRegion serverMr;
    private MemoryRegion clientMr;
    private MemoryRegion clientMsgMr;
    private CmEventChannel serverCh;
    private CmEventChannel clientCh;
    private CmId listener;
    private final CompletionBatch completions = new CompletionBatch(32);
    private final SendBatch send = new SendBatch(SendBatch.MAX_BATCH);
    private final RecvBatch recv = new RecvBatch(RecvBatch.MAX_BATCH);

    /** One connection: both ends, each with its own CQ (and completion channel) and QP. */
    static final class Pair {
        final String name;
        CmId clientId;
        CmId serverId;
        QueuePair clientQp;
        QueuePair serverQp;
        CompletionQueue clientCq;
        CompletionQueue serverCq;
        CompletionChannel clientCompCh;
        CompletionChannel serverCompCh;
        /** Where each side's receive buffers start inside its message region (RECVS * MSG bytes). */
        long clientRecvBase;
        long serverRecvBase;
        /** The peer's buffer as announced in private data. */
        long remoteAddrForClient;
        int remoteRkeyForClient;
        int remoteLenForClient;

        Pair(String name) {
            this.name = name;
        }
    }

    record Wc(long wrId, int status, int opcode, int byteLen, int qpNum) {
    }

    RdmaSmokeCheck(String address, String deviceName, boolean bigMr) {
        this.address = address;
        this.deviceName = deviceName;
        this.bigMr = bigMr;
    }

    public static void main(String[] args) {
        String address = "10.0.2.15";
        String dev = null;
        boolean big = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--address" -> address = args[++i];
                case "--device" -> dev = args[++i];
                case "--big-mr" -> big = true;
                default -> {
                    System.err.println("unknown argument " + args[i]);
                    System.exit(2);
                }
            }
        }
        RdmaSmokeCheck c = new RdmaSmokeCheck(address, dev, big);
        try {
            c.run();
        } catch (Throwable t) {
            c.fail("unexpected " + t);
            t.printStackTrace(System.out);
        }
        System.out.println(c.passes + " passed, " + c.fails + " failed");
        System.exit(c.fails == 0 && c.passes > 0 ? 0 : 1);
    }

    void pass(String what) {
        passes++;
        System.out.println("PASS " + what);
    }

    void fail(String what) {
        fails++;
        System.out.println("FAIL " + what);
    }

    void check(boolean ok, String what) {
        if (ok) {
            pass(what);
        } else {
            fail(what);
        }
    }

    void run() throws Exception {
        if (!RdmaLibrary.isAvailable()) {
            fail("RDMA available: " + RdmaLibrary.unavailableReason());
            return;
        }
        pass("RDMA available: devices " + RdmaLibrary.deviceNames());
        device = RdmaDevice.open(deviceName);
        DeviceAttributes attrs = device.attributes();
        PortAttributes port = device.port(1);
        check(port.isActive(), device.name() + " port 1 ACTIVE (mtu " + port.activeMtuBytes() + ", link layer "
                + port.linkLayer() + "); max_qp_wr " + attrs.maxQpWr() + ", max_sge " + attrs.maxSge()
                + ", max_mr_size 0x" + Long.toHexString(attrs.maxMrSize()) + ", max_qp_rd_atom " + attrs.maxQpRdAtom()
                + ", max_qp_init_rd_atom " + attrs.maxQpInitRdAtom());
        pd = device.allocateProtectionDomain();
        serverMr = pd.allocateRegistered(REGION, Access.LOCAL_AND_REMOTE, false);
        clientMr = pd.allocateRegistered(REGION, Access.LOCAL_AND_REMOTE, false);
        // Message buffers registered from a plain direct ByteBuffer (the initiator's case).
        // Slots of RECVS * MSG bytes: pair A receives in 0 (client) and 1 (server), pair B in 2 and 3; 4 is the send source.
        clientMsgMr = pd.register(ByteBuffer.allocateDirect(5 * RECVS * MSG), Access.LOCAL_WRITE);
        check(serverMr.length() == REGION && clientMsgMr.buffer() != null && clientMsgMr.lkey() != 0,
                "memory registered: " + serverMr + ", " + clientMr + ", " + clientMsgMr);

        serverCh = CmEventChannel.create();
        clientCh = CmEventChannel.create();
        listener = serverCh.createId();
        listener.bind(new InetSocketAddress(address, 0));
        listener.listen(8);
        int lport = listener.localPort();
        check(lport > 0 && device.equals(listener.device()), "listening on " + address + ":" + lport + " ("
                + listener.device() + ")");

        Pair a = connect("A", lport, 0);
        Pair b = connect("B", lport, 2);
        rejectCheck(lport);

        writeCheck(a, 0);
        readCheck(a, 0);
        sendRecvCheck(a, 0);
        remoteAccessErrorCheck(a);
        int failsBefore = fails;
        writeCheck(b, 2);
        readCheck(b, 2);
        sendRecvCheck(b, 2);
        check(fails == failsBefore && b.clientQp.state() == QueuePair.STATE_RTS
                && b.serverQp.state() == QueuePair.STATE_RTS, "pair B works after pair A's remote access error");
        if (bigMr) {
            bigRegionCheck(b);
        } else {
            System.out.println("SKIP registration over 4 GiB (run with --big-mr in a guest with more than 5 GiB)");
        }
        disconnect(a, true);
        disconnect(b, false);
        teardown(a, b);
        closedWrappersCheck();
    }

    /**
     * Wrappers used after close answer with an exception, never by handing C a destroyed handle (fd() and a wait on a
     * closed completion channel crashed the JVM in nvr_wait_comp_channel); a second close is a no-op; the device's
     * asynchronous events can be read without blocking.
     */
    void closedWrappersCheck() throws Exception {
        CompletionChannel ch = device.createCompletionChannel();
        CompletionQueue cq = device.createCompletionQueue(16, ch, 0);
        cq.close();
        cq.close();
        ch.close();
        ch.close();
        String fd;
        try {
            fd = "returned " + ch.fd();
        } catch (IllegalStateException e) {
            fd = "refused";
        }
        String waited;
        try {
            waited = "returned " + ch.waitForEvent(10);
        } catch (IllegalStateException e) {
            waited = "refused";
        }
        check("refused".equals(fd) && "refused".equals(waited), "a closed completion channel: fd() " + fd
                + ", waitForEvent " + waited + " (no native call on a destroyed channel); second closes are no-ops");
        Wakeup w = Wakeup.create();
        w.close();
        w.signal();
        w.close();
        pass("a closed wakeup: signal() is a no-op, close() again too");
        java.util.List<AsyncEvent> events = new java.util.ArrayList<>();
        AsyncEvent e;
        long t0 = System.nanoTime();
        while ((e = device.pollAsyncEvent(0)) != null) {
            events.add(e);
        }
        AsyncEvent none = device.pollAsyncEvent(50);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        if (none != null) {
            events.add(none);
        }
        check(ms < 2000, "the device's asynchronous events read without blocking (" + ms + " ms): " + events);
    }

    // ---- connection setup ----

    Pair connect(String name, int lport, int slot) throws Exception {
        Pair p = new Pair(name);
        p.clientId = clientCh.createId();
        p.clientId.resolve(new InetSocketAddress(address, lport), 5000);
        check(device.equals(p.clientId.device()), name + ": address and route resolved on " + p.clientId.device());
        p.clientCompCh = device.createCompletionChannel();
        p.clientCq = device.createCompletionQueue(128, p.clientCompCh, 0);
        p.clientQp = p.clientId.createQueuePair(pd, QueuePairConfig.of(p.clientCq, 64, RECVS).withInlineData(64));
        p.clientRecvBase = clientMsgMr.address() + (long) slot * RECVS * MSG;
        postReceives(p.clientQp, p.clientRecvBase, clientMsgMr.lkey());

        // Client → server private data: magic, the client's buffer (address, length, rkey), the pair's name.
        byte[] hello = privateData("NVR-HELLO-C", clientMr, name);
        p.clientId.connect(ConnectionParameters.forConnect(hello, 4, 4));

        CmEvent req = serverCh.expect(CmEventType.CONNECT_REQUEST, null, TIMEOUT_MS);
        p.serverId = req.id();
        boolean reqData = req.privateData().length >= hello.length
                && Arrays.equals(Arrays.copyOf(req.privateData(), hello.length), hello);
        check(reqData && req.listenId() == listener && req.responderResources() == 4 && req.initiatorDepth() == 4,
                name + ": CONNECT_REQUEST with the client's private data (" + req.privateData().length
                        + " B as received, " + hello.length + " sent), responder_resources " + req.responderResources()
                        + ", initiator_depth " + req.initiatorDepth());
        p.serverCompCh = device.createCompletionChannel();
        p.serverCq = device.createCompletionQueue(128, p.serverCompCh, 0);
        p.serverQp = p.serverId.createQueuePair(pd, QueuePairConfig.of(p.serverCq, 64, RECVS).withInlineData(64));
        // Receives go up before accept: the client may SEND the moment it sees ESTABLISHED.
        p.serverRecvBase = clientMsgMr.address() + (long) (slot + 1) * RECVS * MSG;
        postReceives(p.serverQp, p.serverRecvBase, clientMsgMr.lkey());
        byte[] welcome = privateData("NVR-HELLO-S", serverMr, name);
        p.serverId.accept(ConnectionParameters.forAccept(welcome, Math.min(req.initiatorDepth(), attrsRd()),
                Math.min(req.responderResources(), attrsRd())));

        CmEvent est = clientCh.expect(CmEventType.ESTABLISHED, p.clientId, TIMEOUT_MS);
        ByteBuffer d = ByteBuffer.wrap(est.privateData()).order(ByteOrder.LITTLE_ENDIAN);
        boolean estData = est.privateData().length >= welcome.length
                && Arrays.equals(Arrays.copyOf(est.privateData(), welcome.length), welcome);
        p.remoteAddrForClient = d.getLong(16);
        p.remoteLenForClient = d.getInt(24);
        p.remoteRkeyForClient = d.getInt(28);
        check(estData && p.remoteAddrForClient == serverMr.address() && p.remoteRkeyForClient == serverMr.rkey(),
                name + ": client ESTABLISHED with the server's accept private data (" + est.privateData().length
                        + " B as received): server buffer 0x" + Long.toHexString(p.remoteAddrForClient) + " rkey 0x"
                        + Integer.toHexString(p.remoteRkeyForClient));
        serverCh.expect(CmEventType.ESTABLISHED, p.serverId, TIMEOUT_MS);
        check(p.clientQp.state() == QueuePair.STATE_RTS && p.serverQp.state() == QueuePair.STATE_RTS,
                name + ": server ESTABLISHED; both QPs in RTS (client qpn 0x" + Integer.toHexString(p.clientQp.qpNum())
                        + ", server qpn 0x" + Integer.toHexString(p.serverQp.qpNum()) + ", max inline "
                        + p.clientQp.maxInlineData() + ")");
        return p;
    }

    int attrsRd() throws RdmaException {
        DeviceAttributes a = device.attributes();
        return Math.min(a.maxQpRdAtom(), a.maxQpInitRdAtom());
    }

    static byte[] privateData(String magic, MemoryRegion mr, String name) {
        ByteBuffer b = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
        b.put(Arrays.copyOf(magic.getBytes(StandardCharsets.US_ASCII), 16));
        b.putLong(16, mr.address()).putInt(24, (int) mr.length()).putInt(28, mr.rkey());
        b.position(32);
        b.put(Arrays.copyOf(name.getBytes(StandardCharsets.US_ASCII), 8));
        return b.array();
    }

    void postReceives(QueuePair qp, long base, int lkey) throws RdmaException {
        for (int i = 0; i < RECVS; i++) {
            recv.add(1000 + i, base + (long) i * MSG, MSG, lkey);
        }
        qp.postRecv(recv); // one call for all 32
    }

    void rejectCheck(int lport) throws Exception {
        CmId c = clientCh.createId();
        c.resolve(new InetSocketAddress(address, lport), 5000);
        CompletionQueue cq = device.createCompletionQueue(16, null, 0);
        c.createQueuePair(pd, QueuePairConfig.of(cq, 4, 4));
        c.connect(ConnectionParameters.forConnect("NVR-REJECT-ME".getBytes(StandardCharsets.US_ASCII), 1, 1));
        CmEvent req = serverCh.expect(CmEventType.CONNECT_REQUEST, null, TIMEOUT_MS);
        // NVMe/RDMA's reject private data: recfmt 0, sts 6 (no resources).
        req.id().reject(new byte[] {0, 0, 6, 0});
        CmEvent rej = clientCh.expect(CmEventType.REJECTED, c, TIMEOUT_MS);
        byte[] pd4 = Arrays.copyOf(rej.privateData(), 4);
        check(Arrays.equals(pd4, new byte[] {0, 0, 6, 0}), "reject with private data reaches the client: " + rej);
        req.id().close();
        c.close();
        cq.close();
    }

    // ---- data movement ----

    void writeCheck(Pair p, int round) throws Exception {
        long off = (long) round * BATCH * BLOCK;
        ByteBuffer src = clientMr.slice(off, BATCH * BLOCK);
        for (int i = 0; i < BATCH * BLOCK; i++) {
            src.put(i, (byte) (i * 31 + round + 7));
        }
        long calls0 = p.clientQp.postCalls() + p.clientCq.pollCalls();
        // 16 RDMA WRITEs in one post; only the last is signaled (RC executes in order, so its completion covers all).
        for (int i = 0; i < BATCH; i++) {
            send.rdmaWrite(100 + i, clientMr.address() + off + (long) i * BLOCK, BLOCK, clientMr.lkey(),
                    p.remoteAddrForClient + off + (long) i * BLOCK, p.remoteRkeyForClient,
                    i == BATCH - 1 ? SendBatch.SIGNALED : 0);
        }
        p.clientQp.postSend(send);
        List<Wc> wcs = pollUntil(p.clientCq, 1);
        long calls = p.clientQp.postCalls() + p.clientCq.pollCalls() - calls0;
        ByteBuffer dst = serverMr.slice(off, BATCH * BLOCK);
        boolean same = dst.equals(src);
        check(wcs.size() == 1 && wcs.get(0).status == 0 && wcs.get(0).opcode == CompletionBatch.WC_RDMA_WRITE
                        && wcs.get(0).wrId == 100 + BATCH - 1 && same,
                p.name + ": batched RDMA WRITE client -> server, " + BATCH + " x " + BLOCK + " B, bytes verified; "
                        + calls + " native calls for " + BATCH + " operations (1 post + " + (calls - 1) + " polls) = "
                        + fmt((double) calls / BATCH) + " per operation");
    }

    void readCheck(Pair p, int round) throws Exception {
        long off = REGION / 2 + (long) round * BATCH * BLOCK;
        ByteBuffer remote = serverMr.slice(off, BATCH * BLOCK);
        for (int i = 0; i < BATCH * BLOCK; i++) {
            remote.put(i, (byte) (i * 17 + round + 3));
        }
        long calls0 = p.clientQp.postCalls() + p.clientCq.pollCalls();
        for (int i = 0; i < BATCH; i++) {
            send.rdmaRead(200 + i, clientMr.address() + off + (long) i * BLOCK, BLOCK, clientMr.lkey(),
                    p.remoteAddrForClient + off + (long) i * BLOCK, p.remoteRkeyForClient, SendBatch.SIGNALED);
        }
        p.clientQp.postSend(send);
        List<Wc> wcs = pollUntil(p.clientCq, BATCH);
        long calls = p.clientQp.postCalls() + p.clientCq.pollCalls() - calls0;
        boolean ok = wcs.size() == BATCH;
        for (int i = 0; ok && i < BATCH; i++) {
            Wc w = wcs.get(i);
            ok = w.status == 0 && w.opcode == CompletionBatch.WC_RDMA_READ && w.wrId == 200 + i && w.byteLen == BLOCK;
        }
        boolean same = clientMr.slice(off, BATCH * BLOCK).equals(remote);
        check(ok && same, p.name + ": batched RDMA READ server -> client, " + BATCH + " x " + BLOCK
                + " B, all signaled, bytes verified; " + calls + " native calls for " + BATCH + " operations = "
                + fmt((double) calls / BATCH) + " per operation");
    }

    void sendRecvCheck(Pair p, int round) throws Exception {
        // Client → server: 16 SENDs in one post (the first 8 inline, copied into the WQE), server busy-polls.
        long msgBase = clientMsgMr.address() + 4L * RECVS * MSG;
        ByteBuffer msgs = clientMsgMr.slice(4L * RECVS * MSG, BATCH * MSG);
        for (int i = 0; i < BATCH; i++) {
            for (int j = 0; j < 64; j++) {
                msgs.put(i * MSG + j, (byte) (i + j + round));
            }
        }
        long calls0 = p.clientQp.postCalls() + p.clientCq.pollCalls() + p.serverQp.postCalls()
                + p.serverCq.pollCalls();
        for (int i = 0; i < BATCH; i++) {
            int flags = SendBatch.SIGNALED | (i < 8 && p.clientQp.maxInlineData() >= 64 ? SendBatch.INLINE : 0);
            send.send(300 + i, msgBase + (long) i * MSG, 64, clientMsgMr.lkey(), flags);
        }
        p.clientQp.postSend(send);
        List<Wc> got = pollUntil(p.serverCq, BATCH);
        boolean ok = got.size() == BATCH;
        for (int i = 0; ok && i < BATCH; i++) {
            Wc w = got.get(i);
            int slot = (int) (w.wrId - 1000);
            ByteBuffer m = clientMsgMr.slice(p.serverRecvBase - clientMsgMr.address() + (long) slot * MSG, 64);
            boolean bytes = true;
            for (int j = 0; j < 64; j++) {
                bytes &= m.get(j) == (byte) (i + j + round);
            }
            ok = w.status == 0 && w.opcode == CompletionBatch.WC_RECV && w.byteLen == 64 && bytes
                    && w.qpNum == p.serverQp.qpNum();
            recv.add(w.wrId, p.serverRecvBase + (long) slot * MSG, MSG, clientMsgMr.lkey()); // repost the same slot
        }
        p.serverQp.postRecv(recv); // replenish all with one call
        List<Wc> sent = pollUntil(p.clientCq, BATCH);
        ok &= sent.size() == BATCH && sent.stream().allMatch(w -> w.status == 0 && w.opcode == CompletionBatch.WC_SEND);

        // Server → client replies; the client waits event-driven on its completion channel.
        for (int i = 0; i < BATCH; i++) {
            send.send(400 + i, msgBase + (long) i * MSG, 32, clientMsgMr.lkey(),
                    i == BATCH - 1 ? SendBatch.SIGNALED | SendBatch.SOLICITED : 0);
        }
        // Arm first, then let the server send: the CQ is armed before any reply can land, so an event must come.
        p.clientCq.requestNotify(false);
        p.serverQp.postSend(send);
        List<Wc> replies = new ArrayList<>();
        int events = 0;
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (replies.size() < BATCH && System.currentTimeMillis() < deadline) {
            if (p.clientCq.waitForEvent(1000)) {
                events++;
                p.clientCq.requestNotify(false); // re-arm, then drain (a completion after the drain raises an event)
            }
            drain(p.clientCq, replies);
        }
        boolean repliesOk = replies.size() == BATCH
                && replies.stream().allMatch(w -> w.status == 0 && w.opcode == CompletionBatch.WC_RECV && w.byteLen == 32);
        for (Wc w : replies) {
            recv.add(w.wrId, p.clientRecvBase + (w.wrId - 1000) * MSG, MSG, clientMsgMr.lkey());
        }
        p.clientQp.postRecv(recv);
        pollUntil(p.serverCq, 1); // the signaled last reply
        long calls = p.clientQp.postCalls() + p.clientCq.pollCalls() + p.serverQp.postCalls()
                + p.serverCq.pollCalls() - calls0;
        check(ok, p.name + ": SEND/RECV client -> server, " + BATCH + " x 64 B in one post (8 inline) into pre-posted "
                + "receives, busy-polled, bytes verified, receives reposted in one call");
        check(repliesOk && events >= 1, p.name + ": SEND/RECV server -> client, " + BATCH + " replies received "
                + "event-driven (" + events + " completion-channel events); " + calls + " native calls (posts and "
                + "polls, both sides) for " + (4 * BATCH) + " work requests = " + fmt((double) calls / (4 * BATCH))
                + " per operation");
    }

    void remoteAccessErrorCheck(Pair a) throws Exception {
        // An rkey nobody holds: register a region, note its rkey, deregister it.
        MemoryRegion tmp = pd.allocateRegistered(65536, Access.LOCAL_AND_REMOTE, false);
        int staleRkey = tmp.rkey();
        long staleAddr = tmp.address();
        tmp.close();
        send.rdmaWrite(500, clientMr.address(), BLOCK, clientMr.lkey(), staleAddr, staleRkey, SendBatch.SIGNALED);
        send.rdmaWrite(501, clientMr.address(), BLOCK, clientMr.lkey(), a.remoteAddrForClient, a.remoteRkeyForClient,
                SendBatch.SIGNALED);
        a.clientQp.postSend(send);
        // The client CQ also gets its posted receives back, flushed, once the QP is in ERR: pick out 500 and 501.
        List<Wc> all = pollUntil(a.clientCq, 2 + RECVS);
        List<Wc> wcs = all.stream().filter(w -> w.wrId == 500 || w.wrId == 501).toList();
        long flushedRecvs = all.stream().filter(w -> w.wrId >= 1000 && w.status == CompletionBatch.STATUS_WR_FLUSH_ERR)
                .count();
        int state = a.clientQp.state();
        boolean ok = wcs.size() == 2 && wcs.get(0).wrId == 500
                && wcs.get(0).status == CompletionBatch.STATUS_REM_ACCESS_ERR
                && wcs.get(1).wrId == 501 && wcs.get(1).status == CompletionBatch.STATUS_WR_FLUSH_ERR;
        check(ok, "A: RDMA WRITE to an unregistered rkey 0x" + Integer.toHexString(staleRkey) + " completes with "
                + (wcs.isEmpty() ? "nothing" : CompletionBatch.statusName(wcs.get(0).status))
                + (wcs.size() > 1 ? ", the next request with " + CompletionBatch.statusName(wcs.get(1).status) : "")
                + "; " + flushedRecvs + " posted receives flushed");
        check(state == QueuePair.STATE_ERR, "A: the client QP is in ERR after the remote access error (state "
                + state + "); server QP state " + a.serverQp.state());
    }

    void bigRegionCheck(Pair b) throws Exception {
        long size = (4L << 30) + (2L << 20); // 4 GiB + 2 MiB: the length needs 33 bits
        long avail = memAvailable();
        if (avail < size + (512L << 20)) {
            System.out.println("SKIP registration over 4 GiB: MemAvailable " + (avail >> 20) + " MiB");
            return;
        }
        long t0 = System.nanoTime();
        try (MemoryRegion big = pd.allocateRegistered(size, Access.LOCAL_AND_REMOTE, true)) {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            check(big.length() == size, "registered " + size + " bytes (0x" + Long.toHexString(size) + ") in " + ms
                    + " ms: " + big);
            long off = (4L << 30) + 4096; // above 4 GiB inside the region
            ByteBuffer src = clientMr.slice(0, BLOCK);
            for (int i = 0; i < BLOCK; i++) {
                src.put(i, (byte) (i ^ 0x5A));
            }
            send.rdmaWrite(600, clientMr.address(), BLOCK, clientMr.lkey(), big.address() + off, big.rkey(),
                    SendBatch.SIGNALED);
            send.rdmaRead(601, clientMr.address() + BLOCK, BLOCK, clientMr.lkey(), big.address() + off, big.rkey(),
                    SendBatch.SIGNALED);
            b.clientQp.postSend(send);
            List<Wc> wcs = pollUntil(b.clientCq, 2);
            boolean ok = wcs.size() == 2 && wcs.get(0).status == 0 && wcs.get(1).status == 0
                    && big.slice(off, BLOCK).equals(src) && clientMr.slice(BLOCK, BLOCK).equals(src);
            check(ok, "RDMA WRITE and READ at offset 0x" + Long.toHexString(off) + " (past 4 GiB) of that region");
        }
    }

    static long memAvailable() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemAvailable:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return 0;
    }

    // ---- teardown ----

    void disconnect(Pair p, boolean clientSide) throws Exception {
        CmId initiator = clientSide ? p.clientId : p.serverId;
        CmId peer = clientSide ? p.serverId : p.clientId;
        initiator.disconnect();
        // The peer sees DISCONNECTED (the DREQ) and answers with its own disconnect (the DREP); only then does the
        // initiator's DISCONNECTED arrive (otherwise it waits for the DREQ timeout).
        CmEvent atPeer = awaitSkippingTimewait(clientSide ? serverCh : clientCh, CmEventType.DISCONNECTED, peer);
        peer.disconnect();
        CmEvent atInitiator = awaitSkippingTimewait(clientSide ? clientCh : serverCh, CmEventType.DISCONNECTED,
                initiator);
        check(atPeer != null && atInitiator != null, p.name + ": disconnect from the "
                + (clientSide ? "client" : "server") + ", the peer answers: DISCONNECTED on both sides");
    }

    static CmEvent awaitSkippingTimewait(CmEventChannel ch, CmEventType type, CmId id) throws RdmaException {
        long t0 = System.nanoTime();
        while (true) {
            CmEvent e = ch.poll(TIMEOUT_MS);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (e == null) {
                System.out.println("  no " + type + " within " + ms + " ms");
                return null;
            }
            if (e.type() == type && e.id() == id) {
                return e;
            }
            System.out.println("  skipped event after " + ms + " ms: " + e + (e.id() == id ? "" : " (another id)"));
        }
    }

    void teardown(Pair... pairs) throws Exception {
        for (Pair p : pairs) {
            p.clientId.close(); // destroys the QP, then the id
            p.serverId.close();
            p.clientCq.close();
            p.serverCq.close();
            p.clientCompCh.close();
            p.serverCompCh.close();
        }
        listener.close();
        serverCh.close();
        clientCh.close();
        serverMr.close();
        clientMr.close();
        clientMsgMr.close();
        pd.close();
        pass("teardown: ids, QPs, CQs, completion channels, MRs, PD and event channels closed without error");
    }

    // ---- polling ----

    List<Wc> pollUntil(CompletionQueue cq, int n) throws RdmaException {
        List<Wc> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (out.size() < n && System.currentTimeMillis() < deadline) {
            if (drain(cq, out) == 0) {
                Thread.onSpinWait();
            }
        }
        return out;
    }

    int drain(CompletionQueue cq, List<Wc> out) throws RdmaException {
        int got = cq.poll(completions);
        for (int i = 0; i < got; i++) {
            Wc w = new Wc(completions.wrId(i), completions.status(i), completions.opcode(i),
                    completions.byteLength(i), completions.qpNum(i));
            out.add(w);
            if (w.status != 0 && w.status != CompletionBatch.STATUS_WR_FLUSH_ERR) {
                System.out.println("  completion wr_id " + w.wrId + ": " + CompletionBatch.statusName(w.status));
            }
        }
        return got;
    }

    static String fmt(double d) {
        return String.format("%.3f", d);
    }
}

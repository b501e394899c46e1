package io.nvmeof.initiator;

import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.protocol.identify.NamespaceDescriptor;
import io.nvmeof.protocol.log.DiscoveryLogEntry;
import io.nvmeof.protocol.log.DiscoveryLogHeader;
import io.nvmeof.protocol.regs.ControllerRegisters;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A deliberately small, scripted NVMe/TCP controller on 127.0.0.1 (blocking sockets, one thread per connection).
 * It answers just enough to prove the initiator's wire behaviour and records what it saw for assertions. Written
 * independently of the initiator's code paths: raw byte offsets from the spec, the protocol flyweights only to build
 * Identify and discovery data.
 */
final class FakeTarget implements AutoCloseable {
    static final String NQN = "nqn.2024-01.io.nvmeof:fake";
    static final int BLOCK = 512;
    static final int BLOCKS = 2048;
    static final long BLACKHOLE_LBA = 999;
    /** Reads of this LBA get a C2HData PDU whose DATAO lies beyond the command's data: a protocol violation. */
    static final long CORRUPT_LBA = 998;
    /** Reads here get their first block of data in a C2HData PDU with SUCCESS, and nothing more. */
    static final long SHORT_LBA = 1000;
    /** Reads here get a successful CapsuleResp and no data at all. */
    static final long NO_DATA_LBA = 1200;
    /** Writes here get their R2T only after {@link #r2tDelayMs}: past a short command timeout. */
    static final long DELAYED_R2T_LBA = 1300;
    /** Reads here are answered only once {@link #gate} opens (the connection's thread waits for it). */
    static final long GATED_LBA = 1400;
    static final int INLINE = 8192;
    /** The in-capsule data size advertised (IOCCSZ). */
    volatile int inline = INLINE;
    /**
     * As Linux nvmet-tcp does: a write of at most the in-capsule size is taken to carry its data in the capsule, and
     * no R2T is ever sent for it (nvmet_tcp_queue_response waits for the inline data); sent without, it hangs.
     */
    volatile boolean noR2tWithinInline;

    /** One command capsule as received. */
    record Sqe(int qid, int opcode, int fctype, int flags, int cid, long nsid, int sglId, long sglLen, int cdw10,
               int cdw11, int cdw12, long value, boolean inCapsule, byte[] data) {
    }

    /** One H2CData PDU header as received. */
    record H2C(int cccid, int ttag, long datao, long datal, int flags) {
    }

    /** Namespace 1's volume; {@link #replaceVolume} puts another in its place under the same NSID. */
    volatile byte[] disk = new byte[BLOCKS * BLOCK];
    /** Namespace 1's NSZE; 0 takes it out of the active namespace list. */
    volatile long nsze = BLOCKS;
    /** Namespace 1's NGUID and EUI-64 in Identify Namespace; null reports none (zeros). */
    volatile byte[] nguid;
    volatile byte[] eui64;
    /** Namespace 1's UUID, in the Namespace Identification Descriptor list. */
    volatile java.util.UUID uuid;
    /**
     * Answers Identify CNS 03h with NGUID, EUI-64 and UUID descriptors (those set); when false it refuses it
     * (INVALID_FIELD), as a controller older than NVMe 1.3 may.
     */
    volatile boolean descriptors;
    final java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
    /** Asynchronous Event Requests received and not yet answered: the connection and the command id. */
    private final List<Object[]> asyncEvents = Collections.synchronizedList(new ArrayList<>());
    final List<Sqe> commands = Collections.synchronizedList(new ArrayList<>());
    final List<H2C> h2c = Collections.synchronizedList(new ArrayList<>());
    final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    /** FES of each H2CTermReq received. */
    final List<Integer> termReqs = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger keepAlives = new AtomicInteger();
    final AtomicInteger connections = new AtomicInteger();
    /** PDUs of I/O queues read and not answered while {@link #hung}. */
    final AtomicInteger ignoredIo = new AtomicInteger();
    volatile int maxh2cdata = 8192;
    volatile boolean readSuccessFlag;
    volatile int grantedQueues = 8;
    volatile long cc;
    volatile int negotiatedDigest = -1;
    volatile boolean discovery;
    volatile long r2tDelayMs = 800;
    /** Reads every PDU and answers none, keeping the connections open (as a SIGSTOPped target). */
    volatile boolean hung;
    /**
     * Edits admin data before it is sent, as a misbehaving controller would: called with "identify-controller",
     * "namespace-list", "identify-namespace" or "discovery-log" and the bytes (the whole log, before the requested
     * part is cut from it).
     */
    volatile java.util.function.BiConsumer<String, byte[]> edit = (what, data) -> { };
    /** The ANA log (0Ch) it answers, from offset 0 (zeros past its end); null refuses the log page. */
    volatile byte[] anaLog;
    /** Closes every new connection at once (a target that is down). */
    volatile boolean refuse;
    private final List<Conn> conns = Collections.synchronizedList(new ArrayList<>());

    private final ServerSocket server;
    private final List<Socket> sockets = Collections.synchronizedList(new ArrayList<>());
    private final Thread acceptor;

    FakeTarget() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::acceptLoop, "fake-target-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    List<Sqe> commands(int qid) {
        synchronized (commands) {
            return commands.stream().filter(c -> c.qid == qid).toList();
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        synchronized (sockets) {
            for (Socket s : sockets) {
                s.close();
            }
        }
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                if (refuse) {
                    s.close();
                    continue;
                }
                s.setTcpNoDelay(true);
                sockets.add(s);
                connections.incrementAndGet();
                Thread t = new Thread(() -> serve(s), "fake-target-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------ per connection

    /**
     * Another volume under NSID 1, as a target restarted with another backing file or an admin that deleted NSID 1
     * and added another volume as NSID 1: empty, {@code blocks} long, with the identifiers given.
     */
    void replaceVolume(int blocks, byte[] newNguid, java.util.UUID newUuid) {
        disk = new byte[blocks * BLOCK];
        nguid = newNguid;
        uuid = newUuid;
        nsze = blocks;
    }

    /** Asynchronous Event Requests waiting for an event. */
    int asyncEventsWaiting() {
        return asyncEvents.size();
    }

    /** Completes the outstanding Asynchronous Event Requests with a Namespace Attribute Changed notice. */
    void namespaceAttributeChanged() {
        List<Object[]> aers;
        synchronized (asyncEvents) {
            aers = new ArrayList<>(asyncEvents);
            asyncEvents.clear();
        }
        // DW0: type 2 (notice), information 00h (namespace attribute changed), log page 04h (changed namespaces).
        for (Object[] a : aers) {
            try {
                ((Conn) a[0]).respond((Integer) a[1], 0, 0x0004_0002L);
            } catch (IOException e) {
                // that connection is gone (its association with it)
            }
        }
    }

    /** Closes the connections of queue {@code qid} (-1: all), as a target that restarts or loses them. */
    void drop(int qid) throws IOException {
        synchronized (conns) {
            for (Conn c : conns) {
                if (qid < 0 || c.qid == qid) {
                    c.socket.close();
                }
            }
        }
    }

    /** Resets the connections of queue {@code qid} (-1: all): a TCP RST, as a target that crashes mid-stream. */
    void reset(int qid) throws IOException {
        synchronized (conns) {
            for (Conn c : conns) {
                if (qid < 0 || c.qid == qid) {
                    c.socket.setSoLinger(true, 0);
                    c.socket.close();
                }
            }
        }
    }

    private final class Conn {
        final Socket socket;
        final DataInputStream in;
        final OutputStream out;
        boolean hd;
        boolean dd;
        volatile int qid = -1;

        Conn(Socket s) throws IOException {
            socket = s;
            in = new DataInputStream(s.getInputStream());
            out = s.getOutputStream();
            conns.add(this);
        }

        byte[] readPdu() throws IOException {
            byte[] ch = new byte[8];
            try {
                in.readFully(ch);
            } catch (EOFException e) {
                return null;
            }
            int plen = le(ch).getInt(4);
            byte[] pdu = Arrays.copyOf(ch, plen);
            in.readFully(pdu, 8, plen - 8);
            return pdu;
        }

        /** Sends header (hlen bytes, common header filled here) plus optional data, with negotiated digests. */
        synchronized void send(byte[] header, int type, int flags, byte[] data, int off, int len) throws IOException {
            int hlen = header.length;
            int hdl = hd ? 4 : 0;
            boolean withData = data != null;
            int ddl = withData && dd ? 4 : 0;
            int pdo = withData ? hlen + hdl : 0;
            int plen = hlen + hdl + (withData ? len + ddl : 0);
            ByteBuffer h = le(header);
            h.put(0, (byte) type).put(1, (byte) (flags | (hd ? 1 : 0) | (ddl != 0 ? 2 : 0)))
                    .put(2, (byte) hlen).put(3, (byte) pdo).putInt(4, plen);
            out.write(header);
            if (hd) {
                out.write(leInt(crc(header, 0, hlen)));
            }
            if (withData) {
                out.write(data, off, len);
                if (ddl != 0) {
                    out.write(leInt(crc(data, off, len)));
                }
            }
            out.flush();
        }

        void respond(int cid, int status, long result) throws IOException {
            byte[] r = new byte[24];
            ByteBuffer b = le(r);
            b.putLong(8, result);
            b.putShort(8 + 8, (short) 0); // SQHD
            b.putShort(8 + 10, (short) Math.max(qid, 0));
            b.putShort(8 + 12, (short) cid);
            b.putShort(8 + 14, (short) (status << 1));
            send(r, 0x05, 0, null, 0, 0);
        }

        /** Sends {@code data} as C2HData PDUs of at most 4 KiB, then a CapsuleResp unless the SUCCESS flag is used. */
        void sendData(int cid, byte[] data, int off, int len, boolean success) throws IOException {
            for (int done = 0; done < len; ) {
                int n = Math.min(4096, len - done);
                boolean last = done + n == len;
                byte[] h = new byte[24];
                ByteBuffer b = le(h);
                b.putShort(8, (short) cid).putInt(12, done).putInt(16, n);
                send(h, 0x07, last ? (0x04 | (success ? 0x08 : 0)) : 0, data, off + done, n);
                done += n;
            }
            if (!success) {
                respond(cid, 0, 0);
            }
        }

        /** R2T for the whole length, then collects H2CData PDUs until they cover it. */
        byte[] pullData(int cid, int len) throws IOException {
            int ttag = 0x77;
            byte[] r2t = new byte[24];
            le(r2t).putShort(8, (short) cid).putShort(10, (short) ttag).putInt(12, 0).putInt(16, len);
            send(r2t, 0x09, 0, null, 0, 0);
            byte[] data = new byte[len];
            long next = 0;
            while (next < len) {
                byte[] p = readPdu();
                if (p == null || p[0] != 0x06) {
                    throw new IOException("expected H2CData, got " + (p == null ? "EOF" : "type " + p[0]));
                }
                checkHeaderDigest(p);
                ByteBuffer b = le(p);
                int flags = p[1] & 0xFF;
                int pdo = p[3] & 0xFF;
                H2C rec = new H2C(b.getShort(8) & 0xFFFF, b.getShort(10) & 0xFFFF, b.getInt(12) & 0xFFFFFFFFL,
                        b.getInt(16) & 0xFFFFFFFFL, flags);
                h2c.add(rec);
                if (rec.cccid != cid || rec.ttag != ttag || rec.datao != next || rec.datal > maxh2cdata
                        || rec.datao + rec.datal > len) {
                    errors.add("bad H2CData " + rec + " (expected cid " + cid + " datao " + next + ")");
                    throw new IOException("bad H2CData");
                }
                boolean last = rec.datao + rec.datal == len;
                if (((flags & 0x04) != 0) != last) {
                    errors.add("LAST flag wrong on " + rec);
                }
                System.arraycopy(p, pdo, data, (int) rec.datao, (int) rec.datal);
                checkDataDigest(p, pdo, (int) rec.datal, flags);
                next += rec.datal;
            }
            return data;
        }

        void checkHeaderDigest(byte[] p) {
            boolean flag = (p[1] & 1) != 0;
            if (flag != hd) {
                errors.add("header digest flag " + flag + " on type " + p[0] + " but negotiated " + hd);
            } else if (hd) {
                int hlen = p[2] & 0xFF;
                if (le(p).getInt(hlen) != crc(p, 0, hlen)) {
                    errors.add("bad header digest on type " + p[0]);
                }
            }
        }

        void checkDataDigest(byte[] p, int pdo, int len, int flags) {
            boolean flag = (flags & 2) != 0;
            if (flag != dd) {
                errors.add("data digest flag " + flag + " but negotiated " + dd);
            } else if (dd && le(p).getInt(pdo + len) != crc(p, pdo, len)) {
                errors.add("bad data digest");
            }
        }
    }

    private void serve(Socket s) {
        try {
            Conn c = new Conn(s);
            byte[] icreq = c.readPdu();
            if (icreq == null || icreq[0] != 0 || icreq.length != 128 || (icreq[2] & 0xFF) != 128) {
                errors.add("bad ICReq");
                s.close();
                return;
            }
            int digest = icreq[11] & 3;
            negotiatedDigest = digest;
            c.hd = (digest & 1) != 0;
            c.dd = (digest & 2) != 0;
            byte[] icresp = new byte[128];
            ByteBuffer b = le(icresp);
            b.put(0, (byte) 0x01).put(2, (byte) 128).putInt(4, 128).putShort(8, (short) 0).put(10, (byte) 0)
                    .put(11, (byte) digest).putInt(12, maxh2cdata);
            c.out.write(icresp);
            c.out.flush();
            byte[] p;
            while ((p = c.readPdu()) != null) {
                if (hung) {
                    if (c.qid > 0) {
                        ignoredIo.incrementAndGet();
                    }
                    continue;
                }
                if (p[0] == 0x02) {
                    if ((p[2] & 0xFF) != 24 || p.length > 24 + 128) {
                        errors.add("malformed H2CTermReq");
                    }
                    termReqs.add(le(p).getShort(8) & 0xFFFF);
                    break;
                }
                if (p[0] != 0x04) {
                    errors.add("unexpected PDU type " + p[0]);
                    break;
                }
                c.checkHeaderDigest(p);
                handleCommand(c, p);
            }
        } catch (IOException e) {
            // connection closed
        } finally {
            try {
                s.close();
            } catch (IOException ignored) {
                // nothing
            }
        }
    }

    private void handleCommand(Conn c, byte[] p) throws IOException {
        ByteBuffer b = le(p);
        int pdo = p[3] & 0xFF;
        int plen = p.length;
        int sqe = 8;
        int opcode = p[sqe] & 0xFF;
        int flags = p[sqe + 1] & 0xFF;
        int cid = b.getShort(sqe + 2) & 0xFFFF;
        long nsid = b.getInt(sqe + 4) & 0xFFFFFFFFL;
        int sglId = p[sqe + 24 + 15] & 0xFF;
        long sglLen = b.getInt(sqe + 24 + 8) & 0xFFFFFFFFL;
        int cdw10 = b.getInt(sqe + 40);
        int cdw11 = b.getInt(sqe + 44);
        int cdw12 = b.getInt(sqe + 48);
        long value = b.getLong(sqe + 48);
        byte[] data = null;
        if (pdo != 0) {
            int ddl = (p[1] & 2) != 0 ? 4 : 0;
            int len = plen - pdo - ddl;
            data = Arrays.copyOfRange(p, pdo, pdo + len);
            c.checkDataDigest(p, pdo, len, p[1]);
            if (sglId != 0x01 || sglLen != len) {
                errors.add("in-capsule data of " + len + " bytes with SGL id " + sglId + " len " + sglLen);
            }
        }
        int fctype = opcode == 0x7F ? p[sqe + 4] & 0xFF : -1;
        int qid = c.qid;
        if (fctype == 1) {
            qid = b.getShort(sqe + 42) & 0xFFFF;
        }
        commands.add(new Sqe(qid, opcode, fctype, flags, cid, nsid, sglId, sglLen, cdw10, cdw11, cdw12, value, pdo != 0, data));
        if ((flags & 0xC0) != 0x40) {
            errors.add("PSDT is not 01b in opcode " + opcode);
        }

        if (opcode == 0x7F) {
            fabrics(c, fctype, cid, b, data);
        } else if (c.qid == 0) {
            admin(c, opcode, cid, nsid, cdw10, cdw11, b);
        } else {
            io(c, opcode, cid, b, sglId, (int) sglLen, data);
        }
    }

    private void fabrics(Conn c, int fctype, int cid, ByteBuffer b, byte[] data) throws IOException {
        switch (fctype) {
            case 0x01: { // Connect
                c.qid = b.getShort(8 + 42) & 0xFFFF;
                ByteBuffer d = le(data);
                String subnqn = cstr(data, 256);
                String hostnqn = cstr(data, 512);
                int wantCntlid = d.getShort(16) & 0xFFFF;
                if (!subnqn.equals(discovery ? Nqn.DISCOVERY : NQN)) {
                    c.respond(cid, Status.CONNECT_INVALID_PARAMETERS, 0);
                } else if (hostnqn.isEmpty() || (c.qid == 0) != (wantCntlid == 0xFFFF)) {
                    c.respond(cid, Status.CONNECT_INVALID_HOST, 0);
                } else {
                    c.respond(cid, 0, 1); // CNTLID 1
                }
                break;
            }
            case 0x04: { // Property Get
                int ofst = b.getInt(8 + 44);
                long v;
                if (ofst == ControllerRegisters.CAP) {
                    v = ControllerRegisters.cap(128, 2);
                } else if (ofst == ControllerRegisters.VS) {
                    v = ControllerRegisters.VERSION_1_3;
                } else if (ofst == ControllerRegisters.CC) {
                    v = cc;
                } else if (ofst == ControllerRegisters.CSTS) {
                    v = (cc & 1) | (ControllerRegisters.ccShn(cc) != 0 ? ControllerRegisters.SHST_COMPLETE << 2 : 0);
                } else {
                    c.respond(cid, Status.INVALID_FIELD | Status.DNR, 0);
                    return;
                }
                c.respond(cid, 0, v);
                break;
            }
            case 0x00: // Property Set
                if (b.getInt(8 + 44) == ControllerRegisters.CC) {
                    cc = b.getLong(8 + 48) & 0xFFFFFFFFL;
                }
                c.respond(cid, 0, 0);
                break;
            default:
                c.respond(cid, Status.INVALID_OPCODE | Status.DNR, 0);
        }
    }

    private void admin(Conn c, int opcode, int cid, long nsid, int cdw10, int cdw11, ByteBuffer b) throws IOException {
        switch (opcode) {
            case 0x06: { // Identify
                byte[] d = new byte[4096];
                UnsafeBuffer u = new UnsafeBuffer(d);
                int cns = cdw10 & 0xFF;
                if (cns == 1) {
                    IdentifyController id = new IdentifyController().wrap(u, 0);
                    id.vid(0x1b36).ssvid(0x1af4).serialNumber("FAKE123").modelNumber("Fake NVMe").firmwareRevision("1.0")
                            .mdts(5).cntlid(1).version(ControllerRegisters.VERSION_1_3).maxcmd(128).nn(1)
                            .ioccsz((64 + inline) / 16).iorcsz(1).icdoff(0).kas(1).oncs(IdentifyController.ONCS_DSM)
                            .sgls(IdentifyController.SGLS_SUPPORTED | IdentifyController.SGLS_OFFSET)
                            .controllerType(discovery ? IdentifyController.CNTRLTYPE_DISCOVERY : IdentifyController.CNTRLTYPE_IO)
                            .subnqn(discovery ? Nqn.DISCOVERY : NQN);
                } else if (cns == 2) {
                    if (nsid < 1 && nsze > 0) {
                        le(d).putInt(0, 1);
                    }
                } else if (cns == 0 && nsid == 1 && nsze > 0) {
                    IdentifyNamespace ns = new IdentifyNamespace().wrap(u, 0);
                    long n = nsze;
                    ns.nsze(n).ncap(n).nuse(n).nlbaf(0).flbas(0).lbaf(0, 0, 9, 0);
                    byte[] g = nguid;
                    byte[] e = eui64;
                    if (g != null) {
                        ns.nguid(g);
                    }
                    if (e != null) {
                        ns.eui64(e);
                    }
                } else if (cns == 3 && nsid == 1 && nsze > 0 && descriptors) {
                    NamespaceDescriptor nd = new NamespaceDescriptor();
                    int at = 0;
                    byte[] e = eui64;
                    byte[] g = nguid;
                    java.util.UUID id = uuid;
                    if (e != null) {
                        at += nd.<NamespaceDescriptor>wrap(u, at).write(1, e);
                    }
                    if (g != null) {
                        at += nd.<NamespaceDescriptor>wrap(u, at).write(2, g);
                    }
                    if (id != null) {
                        byte[] raw = ByteBuffer.allocate(16).putLong(id.getMostSignificantBits())
                                .putLong(id.getLeastSignificantBits()).array();
                        at += nd.<NamespaceDescriptor>wrap(u, at).write(3, raw);
                    }
                    nd.<NamespaceDescriptor>wrap(u, at).write(4, new byte[] {0}); // CSI: NVM
                } else {
                    c.respond(cid, Status.INVALID_FIELD | Status.DNR, 0);
                    return;
                }
                edit.accept(cns == 1 ? "identify-controller" : cns == 2 ? "namespace-list"
                        : cns == 3 ? "namespace-descriptors" : "identify-namespace", d);
                c.sendData(cid, d, 0, d.length, readSuccessFlag);
                break;
            }
            case 0x09: // Set Features
                if ((cdw10 & 0xFF) == 0x07) {
                    int n = Math.min(grantedQueues, (cdw11 & 0xFFFF) + 1);
                    c.respond(cid, 0, (n - 1) | (long) (n - 1) << 16);
                } else {
                    c.respond(cid, 0, 0);
                }
                break;
            case 0x0A: // Get Features: only FID 0x42 is "unsupported", to produce an error status
                c.respond(cid, (cdw10 & 0xFF) == 0x42 ? Status.INVALID_FIELD | Status.DNR : 0, 0x1234);
                break;
            case 0x0C: // Asynchronous Event Request: answered by namespaceAttributeChanged()
                asyncEvents.add(new Object[] {c, cid});
                break;
            case 0x18:
                keepAlives.incrementAndGet();
                c.respond(cid, 0, 0);
                break;
            case 0x02: { // Get Log Page
                int lid = cdw10 & 0xFF;
                long numd = ((cdw10 >>> 16) & 0xFFFF) | ((long) (cdw11 & 0xFFFF) << 16);
                int len = (int) ((numd + 1) * 4);
                long off = b.getLong(8 + 48);
                if (lid == 0x04) { // Changed Namespace List: NSID 1
                    byte[] out = new byte[len];
                    if (off == 0 && len >= 4) {
                        le(out).putInt(0, 1);
                    }
                    c.sendData(cid, out, 0, len, readSuccessFlag);
                    return;
                }
                byte[] ana = anaLog;
                if (lid == 0x0C && ana != null) {
                    byte[] out = new byte[len];
                    if (off < ana.length) {
                        System.arraycopy(ana, (int) off, out, 0, (int) Math.min(len, ana.length - off));
                    }
                    c.sendData(cid, out, 0, len, readSuccessFlag);
                    return;
                }
                if (lid != 0x70) {
                    c.respond(cid, Status.INVALID_LOG_PAGE | Status.DNR, 0);
                    return;
                }
                byte[] log = new byte[DiscoveryLogHeader.LENGTH + 2 * DiscoveryLogEntry.LENGTH];
                UnsafeBuffer u = new UnsafeBuffer(log);
                new DiscoveryLogHeader().<DiscoveryLogHeader>wrap(u, 0).genctr(5).numrec(2).recfmt(0);
                for (int i = 0; i < 2; i++) {
                    DiscoveryLogEntry e = new DiscoveryLogEntry().wrap(u, DiscoveryLogHeader.entryOffset(i));
                    e.trtype(DiscoveryLogEntry.TRTYPE_TCP).adrfam(DiscoveryLogEntry.ADRFAM_IPV4)
                            .subtype(i == 0 ? DiscoveryLogEntry.SUBTYPE_CURRENT_DISCOVERY : DiscoveryLogEntry.SUBTYPE_NVM)
                            .treq(DiscoveryLogEntry.TREQ_NOT_REQUIRED).portid(1).cntlid(0xFFFF).asqsz(32)
                            .trsvcid(i == 0 ? "8009" : "4420").traddr("127.0.0.1")
                            .subnqn(i == 0 ? Nqn.DISCOVERY : NQN);
                }
                edit.accept("discovery-log", log);
                byte[] out = new byte[len];
                if (off < log.length) {
                    System.arraycopy(log, (int) off, out, 0, (int) Math.min(len, log.length - off));
                }
                c.sendData(cid, out, 0, len, readSuccessFlag);
                break;
            }
            default:
                c.respond(cid, Status.INVALID_OPCODE | Status.DNR, 0);
        }
    }

    private void io(Conn c, int opcode, int cid, ByteBuffer b, int sglId, int sglLen, byte[] inCapsule) throws IOException {
        long slba = b.getLong(8 + 40);
        int nlb = (b.getInt(8 + 48) & 0xFFFF) + 1;
        int len = nlb * BLOCK;
        byte[] disk = this.disk; // the volume at the time the command arrived
        long blocks = disk.length / BLOCK;
        switch (opcode) {
            case 0x02: // Read
                if (slba == BLACKHOLE_LBA) {
                    return; // never answered: drives the initiator's timeout
                }
                if (slba + nlb > blocks) {
                    c.respond(cid, Status.LBA_RANGE | Status.DNR, 0);
                    return;
                }
                if (slba == GATED_LBA) {
                    try {
                        gate.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (slba == CORRUPT_LBA) {
                    byte[] h = new byte[24];
                    le(h).putShort(8, (short) cid).putInt(12, len).putInt(16, BLOCK);
                    c.send(h, 0x07, 0x04, disk, 0, BLOCK);
                    return;
                }
                if (slba == SHORT_LBA) {
                    c.sendData(cid, disk, (int) slba * BLOCK, BLOCK, true); // 1 block, LAST | SUCCESS
                    return;
                }
                if (slba == NO_DATA_LBA) {
                    c.respond(cid, 0, 0);
                    return;
                }
                if (sglId != 0x5A || sglLen != len) {
                    errors.add("read SGL id " + sglId + " len " + sglLen);
                }
                c.sendData(cid, disk, (int) slba * BLOCK, len, readSuccessFlag);
                break;
            case 0x01: { // Write
                if (slba == DELAYED_R2T_LBA && inCapsule == null) {
                    try {
                        Thread.sleep(r2tDelayMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (noR2tWithinInline && inCapsule == null && len <= inline) {
                    errors.add("write of " + len + " bytes within the in-capsule size " + inline + " sent without its data");
                    return; // nvmet-tcp waits for data that never comes
                }
                byte[] data = inCapsule != null ? inCapsule : c.pullData(cid, len);
                if (data.length != len) {
                    errors.add("write of " + nlb + " blocks carried " + data.length + " bytes");
                }
                if (slba + nlb > blocks) {
                    c.respond(cid, Status.LBA_RANGE | Status.DNR, 0);
                    return;
                }
                System.arraycopy(data, 0, disk, (int) slba * BLOCK, len);
                c.respond(cid, 0, 0);
                break;
            }
            case 0x00: // Flush
            case 0x09: // Dataset Management (recorded only)
                c.respond(cid, 0, 0);
                break;
            default:
                c.respond(cid, Status.INVALID_OPCODE | Status.DNR, 0);
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    static ByteBuffer le(byte[] a) {
        return ByteBuffer.wrap(a).order(ByteOrder.LITTLE_ENDIAN);
    }

    static byte[] leInt(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }

    static int crc(byte[] a, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(a, off, len);
        return (int) c.getValue();
    }

    static String cstr(byte[] a, int off) {
        int n = 0;
        while (n < 256 && a[off + n] != 0) {
            n++;
        }
        return new String(a, off, n, StandardCharsets.US_ASCII);
    }
}

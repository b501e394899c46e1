package io.nvmeof.conformance;

import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import io.nvmeof.protocol.regs.ControllerRegisters;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.Crc32c;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.ICReqPdu;
import io.nvmeof.protocol.tcp.PduHeader;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A deliberately simple NVMe/TCP host on a blocking socket, written from the spec independently of the initiator
 * library, so tests can send exactly the bytes they mean: well-formed ones and broken ones.
 */
final class RawTcpHost implements AutoCloseable {
    static final String HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-1111-2222-3333-444444444444";
    static final byte[] HOSTID = new byte[16];

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    boolean headerDigest;
    boolean dataDigest;
    int cid;
    /** The controller an admin queue connected to (for its I/O queues' Connect); set by whoever connected it. */
    int cntlid;
    private final Crc32c crc = new Crc32c();

    RawTcpHost(int port) throws IOException {
        this(port, 0);
    }

    /** With {@code receiveBuffer} > 0, the socket's receive buffer is that small (a host that reads slowly or never). */
    RawTcpHost(int port, int receiveBuffer) throws IOException {
        this(null, port, receiveBuffer);
    }

    /**
     * From source address {@code from} (another loopback address, 127.0.0.2 say: Linux answers for all of 127/8), so
     * a test can be two machines to the target's per-source limits.
     */
    RawTcpHost(String from, int port) throws IOException {
        this(from, port, 0);
    }

    RawTcpHost(String from, int port, int receiveBuffer) throws IOException {
        socket = new Socket();
        if (receiveBuffer > 0) {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        if (from != null) {
            socket.bind(new java.net.InetSocketAddress(from, 0));
        }
        socket.connect(new java.net.InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(5000);
        socket.setTcpNoDelay(true);
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    /**
     * A host over streams of the caller's (an in-memory connection): the PDU methods work; the socket ones
     * ({@link #shutdownOutput}, {@link #drainUntilClosed}, {@link #closedByTarget}) do not.
     */
    RawTcpHost(java.io.InputStream in, OutputStream out) {
        this.socket = null;
        this.in = new DataInputStream(in);
        this.out = out;
    }

    /** A host with no connection, for encoding PDUs only (fuzz seeds), with the given digests. */
    static RawTcpHost encoder(boolean headerDigest, boolean dataDigest) {
        RawTcpHost h = new RawTcpHost();
        h.headerDigest = headerDigest;
        h.dataDigest = dataDigest;
        return h;
    }

    private RawTcpHost() {
        socket = null;
        in = null;
        out = null;
    }

    void send(byte[] pdu) throws IOException {
        out.write(pdu);
        out.flush();
    }

    /** Sends bytes, and stops quietly when the target has closed the connection meanwhile (it may, on bad input). */
    void sendQuietly(byte[] bytes) {
        try {
            send(bytes);
        } catch (IOException e) {
            // closed or reset by the target: what follows reads that
        }
    }

    /** Closes this host's sending half: the target sees the end of the stream. */
    void shutdownOutput() {
        try {
            socket.shutdownOutput();
        } catch (IOException e) {
            // already closed by the target
        }
    }

    /** Reads and drops whatever the target sends until it closes; false if it is still open after {@code ms}. */
    boolean drainUntilClosed(long ms) throws IOException {
        long deadline = System.nanoTime() + ms * 1_000_000;
        byte[] sink = new byte[64 << 10];
        try {
            while (true) {
                int left = (int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                socket.setSoTimeout(left);
                if (in.read(sink) < 0) {
                    return true;
                }
                if (System.nanoTime() > deadline) {
                    return false;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    /** Reads one whole PDU, or throws EOFException when the target closed the connection. */
    byte[] readPdu() throws IOException {
        byte[] ch = new byte[8];
        in.readFully(ch);
        long plen = new UnsafeBuffer(ch).getInt(4, ByteOrder.LITTLE_ENDIAN) & 0xFFFFFFFFL;
        if (plen < 8 || plen > (64 << 20)) {
            throw new IOException("target sent PLEN " + plen);
        }
        byte[] pdu = Arrays.copyOf(ch, (int) plen);
        in.readFully(pdu, 8, (int) plen - 8);
        return pdu;
    }

    /** Reads PDUs until none comes for {@code quietMs}; returns how many were R2Ts (others are dropped). */
    int countR2Ts(int quietMs) throws IOException {
        int n = 0;
        socket.setSoTimeout(quietMs);
        try {
            while (true) {
                if (readPdu()[0] == PduHeader.TYPE_R2T) {
                    n++;
                }
            }
        } catch (SocketTimeoutException e) {
            return n;
        } finally {
            socket.setSoTimeout(5000);
        }
    }

    /** How long reads wait (5 s unless set). */
    void soTimeout(int ms) throws IOException {
        socket.setSoTimeout(ms);
    }

    /** True when the target closed the connection (EOF within the timeout). */
    boolean closedByTarget() throws IOException {
        try {
            while (true) {
                if (in.read() < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    static byte[] icReq(int pfv, int digest) {
        return icReq(pfv, digest, 0);
    }

    /** An ICReq asking for data PDUs aligned to {@code (hpda + 1) * 4} bytes. */
    static byte[] icReq(int pfv, int digest, int hpda) {
        byte[] b = new byte[ICReqPdu.LENGTH];
        new ICReqPdu().<ICReqPdu>wrap(new UnsafeBuffer(b), 0).init().pfv(pfv).hpda(hpda).digest(digest).maxr2t(0);
        return b;
    }

    /** ICReq/ICResp exchange; returns the ICResp. */
    byte[] initialize(int digest) throws IOException {
        return initialize(digest, 0);
    }

    /** ICReq/ICResp exchange with the host's PDU data alignment; returns the ICResp. */
    byte[] initialize(int digest, int hpda) throws IOException {
        send(icReq(0, digest, hpda));
        byte[] resp = readPdu();
        headerDigest = (digest & 1) != 0;
        dataDigest = (digest & 2) != 0;
        return resp;
    }

    /** A command capsule PDU around {@code sqe}, with optional in-capsule data and the negotiated digests. */
    byte[] capsule(byte[] sqe, byte[] data) {
        int hd = headerDigest ? 4 : 0;
        int dd = dataDigest && data != null ? 4 : 0;
        int pdo = data != null ? CapsuleCommandPdu.HEADER_LENGTH + hd : 0;
        int plen = CapsuleCommandPdu.HEADER_LENGTH + hd + (data != null ? data.length + dd : 0);
        byte[] b = new byte[plen];
        UnsafeBuffer u = new UnsafeBuffer(b);
        new PduHeader().wrap(u, 0);
        int flags = (headerDigest ? PduHeader.FLAG_HDGST : 0) | (dd > 0 ? PduHeader.FLAG_DDGST : 0);
        new PduHeader().<PduHeader>wrap(u, 0).header(PduHeader.TYPE_CAPSULE_CMD, flags, CapsuleCommandPdu.HEADER_LENGTH, pdo, plen);
        u.putBytes(8, sqe);
        if (headerDigest) {
            u.putInt(72, crc.of(u, 0, 72), ByteOrder.LITTLE_ENDIAN);
        }
        if (data != null) {
            u.putBytes(pdo, data);
            if (dd > 0) {
                u.putInt(pdo + data.length, crc.of(u, pdo, data.length), ByteOrder.LITTLE_ENDIAN);
            }
        }
        return b;
    }

    byte[] h2cData(int cccid, int ttag, int datao, byte[] data, boolean last) {
        int hd = headerDigest ? 4 : 0;
        int dd = dataDigest ? 4 : 0;
        int pdo = 24 + hd;
        int plen = pdo + data.length + dd;
        byte[] b = new byte[plen];
        UnsafeBuffer u = new UnsafeBuffer(b);
        int flags = (last ? PduHeader.FLAG_DATA_LAST : 0) | (headerDigest ? PduHeader.FLAG_HDGST : 0)
                | (dataDigest ? PduHeader.FLAG_DDGST : 0);
        new DataPdu().<DataPdu>wrap(u, 0).init(PduHeader.TYPE_H2C_DATA, flags, pdo, plen).cccid(cccid).ttag(ttag).datao(datao)
                .datal(data.length);
        if (headerDigest) {
            u.putInt(24, crc.of(u, 0, 24), ByteOrder.LITTLE_ENDIAN);
        }
        u.putBytes(pdo, data);
        if (dataDigest) {
            u.putInt(pdo + data.length, crc.of(u, pdo, data.length), ByteOrder.LITTLE_ENDIAN);
        }
        return b;
    }

    static byte[] sqe() {
        byte[] b = new byte[64];
        new Command().<Command>wrap(new UnsafeBuffer(b), 0).psdt(Command.PSDT_SGL);
        return b;
    }

    static Command cmd(byte[] sqe) {
        return new Command().wrap(new UnsafeBuffer(sqe), 0);
    }

    static SglDescriptor sgl(byte[] sqe) {
        return new SglDescriptor().wrap(new UnsafeBuffer(sqe), Command.DPTR);
    }

    static byte[] connectSqe(int qid, int sqsize, long kato) {
        byte[] b = sqe();
        FabricsCommand f = new FabricsCommand().wrap(new UnsafeBuffer(b), 0);
        f.opcode(Opcodes.FABRICS);
        f.fctype(Opcodes.FCTYPE_CONNECT).recfmt(0).qid(qid).sqsize(sqsize).kato(kato);
        sgl(b).inCapsule(0, ConnectData.LENGTH);
        return b;
    }

    static byte[] connectData(int cntlid, String subnqn, String hostnqn) {
        byte[] d = new byte[ConnectData.LENGTH];
        new ConnectData().<ConnectData>wrap(new UnsafeBuffer(d), 0).hostId(HOSTID).cntlid(cntlid).subnqn(subnqn).hostnqn(hostnqn);
        return d;
    }

    /** Sends a command and reads PDUs until its response capsule; returns the CQE (C2H data is dropped). */
    Completion execute(byte[] sqe, byte[] inCapsule) throws IOException {
        cmd(sqe).cid(++cid);
        send(capsule(sqe, inCapsule));
        return awaitResponse();
    }

    /** Sends a command whose data the target is to ask for (no in-capsule data) and returns the R2T's transfer tag. */
    int sendForR2T(byte[] sqe) throws IOException {
        send(capsule(sqe, null));
        byte[] pdu = readPdu();
        if (pdu[0] != PduHeader.TYPE_R2T) {
            throw new IOException("expected an R2T, got " + PduHeader.typeName(pdu[0]));
        }
        return new io.nvmeof.protocol.tcp.R2TPdu().<io.nvmeof.protocol.tcp.R2TPdu>wrap(new UnsafeBuffer(pdu), 0).ttag();
    }

    Completion awaitResponse() throws IOException {
        while (true) {
            byte[] pdu = readPdu();
            if (pdu[0] == PduHeader.TYPE_CAPSULE_RESP) {
                byte[] cqe = Arrays.copyOfRange(pdu, 8, 24);
                return new Completion().wrap(new UnsafeBuffer(cqe), 0);
            }
            if (pdu[0] == PduHeader.TYPE_C2H_TERM_REQ) {
                throw new IOException("target sent C2HTermReq FES " + (pdu[8] & 0xFF));
            }
        }
    }

    /** A command's completion and the data its C2HData PDUs carried (placed at their DATAO). */
    record Reply(Completion cqe, byte[] data) {
    }

    /** Sends a command that returns {@code length} bytes and collects them with its completion (no digests). */
    Reply executeForData(byte[] sqe, int length) throws IOException {
        cmd(sqe).cid(++cid);
        send(capsule(sqe, null));
        return readReply(length);
    }

    /** Reads the data PDUs and the response of the next command that completes, {@code length} bytes of data at most. */
    Reply readReply(int length) throws IOException {
        byte[] data = new byte[length];
        while (true) {
            byte[] pdu = readPdu();
            if (pdu[0] == PduHeader.TYPE_C2H_DATA) {
                DataPdu d = new DataPdu().wrap(new UnsafeBuffer(pdu), 0);
                System.arraycopy(pdu, d.pdo(), data, (int) d.datao(), (int) d.datal());
            } else if (pdu[0] == PduHeader.TYPE_CAPSULE_RESP) {
                return new Reply(new Completion().wrap(new UnsafeBuffer(Arrays.copyOfRange(pdu, 8, 24)), 0), data);
            } else {
                throw new IOException("unexpected PDU type " + PduHeader.typeName(pdu[0]));
            }
        }
    }

    Completion connect(int qid, int sqsize, int cntlid, String subnqn, String hostnqn, long kato) throws IOException {
        return execute(connectSqe(qid, sqsize, kato), connectData(cntlid, subnqn, hostnqn));
    }

    Completion propertySet(int offset, long value) throws IOException {
        byte[] b = sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_PROPERTY_SET)
                .propertySize(4).propertyOffset(offset).propertyValue(value).opcode(Opcodes.FABRICS);
        return execute(b, null);
    }

    Completion propertyGet(int offset, int size) throws IOException {
        byte[] b = sqe();
        new FabricsCommand().<FabricsCommand>wrap(new UnsafeBuffer(b), 0).fctype(Opcodes.FCTYPE_PROPERTY_GET)
                .propertySize(size).propertyOffset(offset).opcode(Opcodes.FABRICS);
        return execute(b, null);
    }

    /** Admin queue bring-up: ICReq, Connect, CC.EN; returns the controller ID. */
    int bringUpAdmin(String subnqn) throws IOException {
        initialize(0);
        Completion c = connect(0, 31, 0xFFFF, subnqn, HOSTNQN, 0);
        if (c.status() != 0) {
            throw new IOException("admin connect failed: status 0x" + Integer.toHexString(c.status()));
        }
        int cntlid = c.dw0() & 0xFFFF;
        Completion en = propertySet(ControllerRegisters.CC, ControllerRegisters.CC_ENABLE_DEFAULT);
        if (en.status() != 0) {
            throw new IOException("CC.EN failed");
        }
        return cntlid;
    }

    static byte[] identifySqe(int cns, long nsid) {
        byte[] b = sqe();
        cmd(b).opcode(Opcodes.ADMIN_IDENTIFY).nsid(nsid).cdw10(cns);
        sgl(b).transportBlock(4096);
        return b;
    }

    /** Dataset Management with the deallocate attribute, {@code ranges} ranges in the capsule (see {@link #ranges}). */
    static byte[] deallocateSqe(long nsid, int ranges) {
        byte[] sqe = sqe();
        cmd(sqe).opcode(Opcodes.IO_DATASET_MANAGEMENT).nsid(nsid).cdw10(ranges - 1).cdw11(0x4);
        sgl(sqe).inCapsule(0, ranges * io.nvmeof.protocol.DatasetRange.LENGTH);
        return sqe;
    }

    /** Dataset Management ranges: pairs of starting LBA and block count. */
    static byte[] ranges(long... slbaAndBlocks) {
        int n = slbaAndBlocks.length / 2;
        byte[] b = new byte[n * io.nvmeof.protocol.DatasetRange.LENGTH];
        io.nvmeof.protocol.DatasetRange r = new io.nvmeof.protocol.DatasetRange();
        for (int i = 0; i < n; i++) {
            r.<io.nvmeof.protocol.DatasetRange>wrap(new UnsafeBuffer(b), i * io.nvmeof.protocol.DatasetRange.LENGTH)
                    .slba(slbaAndBlocks[2 * i]).blocks(slbaAndBlocks[2 * i + 1]);
        }
        return b;
    }

    /** Reads PDUs until {@code n} responses have come; returns them by CID (a CID completed twice is an error). */
    java.util.Map<Integer, Completion> responses(int n) throws IOException {
        java.util.Map<Integer, Completion> out = new java.util.HashMap<>();
        while (out.size() < n) {
            byte[] pdu = readPdu();
            if (pdu[0] == PduHeader.TYPE_CAPSULE_RESP) {
                Completion c = new Completion().wrap(new UnsafeBuffer(Arrays.copyOfRange(pdu, 8, 24)), 0);
                if (out.put(c.cid(), c) != null) {
                    throw new IOException("CID " + c.cid() + " completed twice");
                }
            }
        }
        return out;
    }

    static byte[] rwSqe(int opcode, long nsid, long slba, int blocks, int sglLength, boolean inCapsule) {
        byte[] b = sqe();
        cmd(b).opcode(opcode).nsid(nsid).slba(slba).blockCount(blocks);
        if (inCapsule) {
            sgl(b).inCapsule(0, sglLength);
        } else {
            sgl(b).transportBlock(sglLength);
        }
        return b;
    }

    @Override
    public void close() throws IOException {
        if (onClose != null) {
            onClose.close();
        }
        if (socket == null) {
            return; // an encoder
        }
        socket.close();
    }

    /** What {@link #close} closes besides (the TLS session and socket under a host over streams). */
    java.io.Closeable onClose;
}

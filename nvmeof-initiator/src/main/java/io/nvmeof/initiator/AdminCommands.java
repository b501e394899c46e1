package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.fabrics.ConnectData;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The admin and Fabrics command set of one controller: builds each command's SQE (Identify, Get Log Page, Get/Set
 * Features, Property Get/Set, Fabrics Connect) and runs it synchronously, so every admin command is built in one place.
 * Not on the data path: reads and writes are built by {@link NamespaceHandle}.
 */
final class AdminCommands {
    /** Identify returns one 4 KiB page, whatever the CNS. */
    static final int IDENTIFY_LENGTH = 4096;

    private final NvmeofController ctrl;

    AdminCommands(NvmeofController ctrl) {
        this.ctrl = ctrl;
    }

    /** Raw 4096-byte Identify data for {@code cns} (CDW10 bits 7:0) and {@code nsid}. */
    byte[] identify(int cns, long nsid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_IDENTIFY).nsid(nsid).cdw10(cns & 0xFF);
        byte[] data = new byte[IDENTIFY_LENGTH];
        execute(ctrl.admin, "Identify (CNS 0x" + Integer.toHexString(cns) + ", nsid " + nsid + ")", sqe,
                HostQueue.DIR_C2H, ByteBuffer.wrap(data), data.length);
        return data;
    }

    /**
     * Get Log Page: {@code length} bytes of log {@code lid} from byte {@code offset} (dword aligned). Transfers larger
     * than MDTS are split.
     */
    byte[] getLogPage(int lid, long nsid, int length, long offset) {
        if (length <= 0) {
            throw new IllegalArgumentException("log page length must be positive, got " + length);
        }
        if ((offset & 3) != 0 || offset < 0) {
            throw new IllegalArgumentException("log page offset must be a non-negative multiple of 4, got " + offset);
        }
        int padded = (length + 3) & ~3;
        byte[] data = new byte[padded];
        ByteBuffer buf = ByteBuffer.wrap(data);
        long maxTransfer = ctrl.maxTransfer;
        int chunkMax = (int) Math.min(Integer.MAX_VALUE & ~3, maxTransfer > 0 ? maxTransfer : ctrl.transport.maxTransferCap());
        for (int done = 0; done < padded; ) {
            int n = Math.min(chunkMax, padded - done);
            UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
            new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_GET_LOG_PAGE).nsid(nsid).logPage(lid, n, offset + done);
            execute(ctrl.admin, "Get Log Page (LID 0x" + Integer.toHexString(lid) + ", " + n + " bytes at " + (offset + done) + ")",
                    sqe, HostQueue.DIR_C2H, buf, done, n);
            done += n;
        }
        return padded == length ? data : Arrays.copyOf(data, length);
    }

    /** Get Features (current value, SEL 0); returns completion DW0. */
    int getFeature(int fid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_GET_FEATURES).cdw10(fid & 0xFF);
        return (int) execute(ctrl.admin, "Get Features (FID 0x" + Integer.toHexString(fid) + ")", sqe, HostQueue.DIR_NONE, null, 0);
    }

    /** Set Features (not saved); returns completion DW0. */
    int setFeature(int fid, int cdw11) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        new Command().<Command>wrap(sqe, 0).opcode(Opcodes.ADMIN_SET_FEATURES).cdw10(fid & 0xFF).cdw11(cdw11);
        return (int) execute(ctrl.admin, "Set Features (FID 0x" + Integer.toHexString(fid) + ")", sqe, HostQueue.DIR_NONE, null, 0);
    }

    /** Fabrics Property Get; {@code size} 4 or 8 bytes. */
    long propertyGet(int offset, int size) {
        checkPropertySize(size);
        long v = execute(ctrl.admin, "Property Get (offset 0x" + Integer.toHexString(offset) + ")",
                propertyGetCommand(offset, size), HostQueue.DIR_NONE, null, 0);
        return size == 4 ? v & 0xFFFF_FFFFL : v;
    }

    /** Fabrics Property Set; {@code size} 4 or 8 bytes. */
    void propertySet(int offset, int size, long value) {
        checkPropertySize(size);
        execute(ctrl.admin, "Property Set (offset 0x" + Integer.toHexString(offset) + ")", propertySetCommand(offset, size, value),
                HostQueue.DIR_NONE, null, 0);
    }

    static UnsafeBuffer propertyGetCommand(int offset, int size) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_PROPERTY_GET).propertySize(size).propertyOffset(offset);
        return sqe;
    }

    static UnsafeBuffer propertySetCommand(int offset, int size, long value) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_PROPERTY_SET).propertySize(size).propertyOffset(offset)
                .propertyValue(size == 4 ? value & 0xFFFF_FFFFL : value);
        return sqe;
    }

    private static void checkPropertySize(int size) {
        if (size != 4 && size != 8) {
            throw new IllegalArgumentException("property size must be 4 or 8 bytes, got " + size);
        }
    }

    /** Fabrics Connect on {@code q}; returns completion DW0 (CNTLID in bits 15:0). */
    int fabricsConnect(HostQueue q, int qid, int sqsize, int katoMs, int wantCntlid) {
        UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
        FabricsCommand c = new FabricsCommand().<FabricsCommand>wrap(sqe, 0);
        c.opcode(Opcodes.FABRICS);
        c.fctype(Opcodes.FCTYPE_CONNECT).recfmt(0).qid(qid).sqsize(sqsize).cattr(0).kato(katoMs);
        byte[] data = new byte[ConnectData.LENGTH];
        ConnectData cd = new ConnectData().wrap(new UnsafeBuffer(data), 0);
        cd.hostId(uuidBytes(ctrl.options.hostId())).cntlid(wantCntlid).subnqn(ctrl.id.subnqn()).hostnqn(ctrl.options.hostNqn());
        String what = "Fabrics Connect (qid " + qid + ", sqsize " + sqsize + ") to " + ctrl.id;
        int dw0 = (int) execute(q, what, sqe, HostQueue.DIR_H2C, ByteBuffer.wrap(data), data.length);
        int authreq = (dw0 >>> 16) & 0x6;
        if ((authreq & AUTHREQ_ASCR) != 0) {
            throw new NvmeofException(what + ": the controller requires a secure channel (AUTHREQ.ASCR, TLS with"
                    + " secure concatenation), which this initiator does not offer", ErrorKind.NVME_STATUS_DO_NOT_RETRY);
        }
        if ((authreq & AUTHREQ_ATR) == 0 && ctrl.options.dhchapCtrlSecret() != null) {
            // A host that holds the controller's secret wants proof; a controller that never asks to authenticate
            // gives none (an impostor would simply not ask). The Linux host lets this pass; here it is refused.
            throw new NvmeofException(what + ": the controller did not ask for DH-HMAC-CHAP, so it cannot prove the"
                    + " controller secret this host was given (dhchapCtrlSecret); refusing it. Check that the target"
                    + " has a secret for host " + ctrl.options.hostNqn() + ", or connect without the controller secret",
                    ErrorKind.NVME_STATUS_DO_NOT_RETRY);
        }
        if ((authreq & AUTHREQ_ATR) != 0) {
            InBandAuthentication.run(authChannel(q, qid), "queue " + qid + " of " + ctrl.id, ctrl.options,
                    ctrl.id.subnqn(), authTransactions.getAndIncrement() & 0xFFFF);
        }
        return dw0;
    }

    /** Connect response DW0 bits 17 and 18, shifted down 16: authentication, secure channel required. */
    static final int AUTHREQ_ATR = 0x2;
    static final int AUTHREQ_ASCR = 0x4;
    /** T_ID of the next DH-HMAC-CHAP transaction, per controller as the Linux host counts them. */
    private final java.util.concurrent.atomic.AtomicInteger authTransactions = new java.util.concurrent.atomic.AtomicInteger();

    /** Authentication Send and Receive on {@code q}. */
    private InBandAuthentication.Channel authChannel(HostQueue q, int qid) {
        return new InBandAuthentication.Channel() {
            @Override
            public void send(byte[] message) {
                UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
                new FabricsCommand().<FabricsCommand>wrap(sqe, 0).fctype(Opcodes.FCTYPE_AUTH_SEND).auth(message.length)
                        .opcode(Opcodes.FABRICS);
                execute(q, "Authentication Send on queue " + qid + " of " + ctrl.id, sqe, HostQueue.DIR_H2C,
                        ByteBuffer.wrap(message), message.length);
            }

            @Override
            public byte[] receive(int allocationLength) {
                UnsafeBuffer sqe = new UnsafeBuffer(new byte[Command.LENGTH]);
                new FabricsCommand().<FabricsCommand>wrap(sqe, 0).fctype(Opcodes.FCTYPE_AUTH_RECEIVE)
                        .auth(allocationLength).opcode(Opcodes.FABRICS);
                ByteBuffer buf = ByteBuffer.allocate(allocationLength);
                execute(q, "Authentication Receive on queue " + qid + " of " + ctrl.id, sqe, HostQueue.DIR_C2H, buf,
                        allocationLength);
                byte[] out = new byte[allocationLength];
                buf.get(0, out);
                return out;
            }
        };
    }

    private static byte[] uuidBytes(UUID u) {
        // Host ID: the UUID's 16 bytes in network (big-endian) order, as nvme-cli writes /etc/nvme/hostid.
        return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits()).array();
    }

    /** Runs a command without data on the admin queue, failing when {@code deadline} (System.nanoTime) has passed. */
    long executeUntil(String what, UnsafeBuffer sqe, long deadline) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new NvmeofTimeoutException(what + ": no time left for the shutdown");
        }
        return execute(ctrl.admin, what, sqe, HostQueue.DIR_NONE, null, 0, 0, left);
    }

    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int length) {
        return execute(q, what, sqe, dir, data, 0, length);
    }

    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int start, int length) {
        // The queue's timeout scan normally answers first.
        return execute(q, what, sqe, dir, data, start, length, ctrl.options.commandTimeout().toMillis() + 5000);
    }

    /** Runs one command synchronously, waiting at most {@code waitMs}; returns CQE DW0|DW1<<32 or throws. */
    private long execute(HostQueue q, String what, UnsafeBuffer sqe, int dir, ByteBuffer data, int start, int length,
                         long waitMs) {
        if (ctrl.onEventLoop()) {
            throw new IllegalStateException(what + ": synchronous admin commands cannot run on the I/O event loop"
                    + " (e.g. inside an I/O callback); hand the work to another thread");
        }
        ControllerState st = ctrl.state.get();
        if (!q.isOpen() && st != ControllerState.CONNECTED) {
            if (st == ControllerState.CLOSED) {
                throw new NvmeofException(what + ": the controller " + ctrl.id + " was closed by this host",
                        ErrorKind.CLOSED_BY_CALLER);
            }
            throw new NvmeofException(what + ": the controller " + ctrl.id + " is " + st.name().toLowerCase()
                    + " after losing its connection (" + ctrl.lastFailure() + ")", ErrorKind.CONNECTION_LOST);
        }
        Sync sync = new Sync();
        q.submit(sqe, dir, data, start, length, null, 0, sync);
        try {
            if (!sync.latch.await(waitMs, TimeUnit.MILLISECONDS)) {
                throw new NvmeofTimeoutException(what + " on " + q.label() + " got no answer within " + waitMs + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NvmeofException(what + " interrupted", e);
        }
        if (sync.status != 0) {
            boolean connect = (sqe.getByte(0) & 0xFF) == io.nvmeof.protocol.Opcodes.FABRICS
                    && sqe.getByte(4) == io.nvmeof.protocol.Opcodes.FCTYPE_CONNECT;
            throw Errors.failure(what, sync.status, connect ? io.nvmeof.protocol.Status.SET_CONNECT
                    : io.nvmeof.protocol.Status.SET_ADMIN, q, ctrl.options.commandTimeout());
        }
        return sync.result;
    }

    private static final class Sync implements CompletionListener {
        final CountDownLatch latch = new CountDownLatch(1);
        volatile int status;
        volatile long result;

        @Override
        public void onCompletion(int status, long result) {
            this.status = status;
            this.result = result;
            latch.countDown();
        }
    }
}

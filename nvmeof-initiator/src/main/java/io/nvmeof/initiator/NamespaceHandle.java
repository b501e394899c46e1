package io.nvmeof.initiator;

import io.nvmeof.initiator.transport.CompletionListener;
import io.nvmeof.initiator.transport.HostQueue;
import io.nvmeof.initiator.transport.NamespaceRef;
import io.nvmeof.protocol.DatasetRange;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.log.AnaState;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Block I/O on one namespace. Thread-safe; each call picks the less loaded of two open I/O queues.
 *
 * <p>Buffers follow {@link ByteBuffer} conventions: the transfer covers {@code blocks * blockSize()} bytes from the
 * buffer's <em>position</em>, which must be within its <em>limit</em> ({@link ByteBuffer#remaining()}); position and
 * limit are never modified, and the buffer must not be touched until the operation completes. Data moves directly
 * between the transport and the buffer: the socket over TCP (direct or heap buffers), the NIC over RDMA (direct
 * buffers; see {@link NvmeofController#allocateBuffer}). Requests larger than {@link #maxBlocksPerIo()} are refused
 * with the size to use; split them.
 *
 * <p>Completion runs on the queue's I/O thread (futures complete there too), or on a library thread when that is
 * gone; never on the submitting thread inside the call. Do not block in callbacks or {@code thenAccept} stages. When
 * every slot of the chosen queue is busy the request waits, in submission order, in a bounded overflow queue; it
 * never blocks the caller ({@link NvmeofController#awaitRoom} waits for room explicitly).
 *
 * <p>Futures: the I/O cannot be withdrawn from the controller, so cancelling a returned future, or completing it from
 * outside (as {@code orTimeout} does), takes effect only when the command is done with the buffer: the future then
 * completes with that cancellation or exception. After it completes, however, nothing writes into the buffer.
 *
 * <p>Identity: a handle stands for one namespace, told apart by its identifiers ({@link #nguid()}, {@link #eui64()},
 * {@link #uuid()}), not for whatever its NSID names. It stays valid across reconnects and rescans while the controller
 * reports the same identifiers and block size under its NSID (a grown namespace keeps its handle; {@link #blockCount()}
 * follows). When the namespace is removed, or another volume appears under the NSID (its identifiers changed; for a
 * controller that reports no identifiers, its size or block size changed), as the Linux host removes such a
 * namespace, the controller <em>retires</em> the handle: {@link #isCurrent()} turns false, its
 * {@link ControllerStateListener#namespacesChanged} report follows, and every request of this handle that
 * is not on the wire yet (new ones, ones waiting for a queue slot, ones held or handed back while reconnecting) fails
 * with {@link ErrorKind#NAMESPACE_GONE} ({@link IoCallback#ERR_NAMESPACE_GONE}) instead of reaching the new volume.
 * Take {@link NvmeofController#namespace(long)} again after checking it is the volume you expect.
 *
 * <p>What the host cannot control: requests already sent when the target replaced the namespace, and those sent
 * between that and the host noticing it (the next reconnect, or the Namespace Attribute Changed event's rescan),
 * reach whatever the target serves under the NSID then. Compare the identifiers after a change to be sure.
 */
public final class NamespaceHandle implements NamespaceRef {
    private static final int MAX_BLOCKS = 65536; // NLB is a 16-bit 0-based field
    /** CDW12 bit 30 of Read and Write: Force Unit Access. */
    static final int CDW12_FUA = 1 << 30;

    private final NvmeofController ctrl;
    private final long nsid;
    /** NSZE: volatile, as a rescan or reconnect updates it when the namespace grows (same identifiers). */
    private volatile long blockCount;
    private final int blockSize;
    private final NamespaceIdentifiers ids;
    /**
     * Null while this is the namespace its NSID names; once retired, why (removed, or replaced and how). Written once,
     * by the controller's scan; read on every send ({@link #isCurrent()}).
     */
    private volatile String retiredBecause;
    /**
     * The namespace's ANA state through this controller: OPTIMIZED for a controller that does not report ANA. Written
     * by the housekeeping thread (the ANA log), and by an I/O thread when a command met a path status (until the log
     * is read again); read by every multipath path choice, so one volatile read.
     */
    private volatile AnaState anaState = AnaState.OPTIMIZED;
    /** ANAGRPID from Identify Namespace (0: none reported). */
    private volatile long anaGroup;
    private volatile boolean anaFromLog;
    /**
     * This namespace as a multipath namespace sends on it: the same NSID and identity check, but a request the
     * controller cannot send now (connection lost, reconnecting) fails at once instead of being held, so the multipath
     * namespace can send it on another path.
     */
    final NamespaceRef failoverRef = new NamespaceRef() {
        @Override
        public long nsid() { return nsid; }

        @Override
        public boolean isCurrent() { return retiredBecause == null; }

        @Override
        public boolean failsOver() { return true; }

        @Override
        public String toString() { return "nsid " + nsid + " (multipath)"; }
    };

    NamespaceHandle(NvmeofController ctrl, long nsid, long blockCount, int blockSize, NamespaceIdentifiers ids) {
        this.ctrl = ctrl;
        this.nsid = nsid;
        this.blockCount = blockCount;
        this.blockSize = blockSize;
        this.ids = ids;
    }

    /**
     * The namespace's Asymmetric Namespace Access state through this controller, as of the last ANA log read (at
     * connect, reconnect, rescan and each ANA Change notice) or the last path status an I/O met since:
     * {@link AnaState#OPTIMIZED} when the controller does not report ANA. A volatile read.
     */
    public AnaState anaState() { return anaState; }

    /** The namespace's ANA group (ANAGRPID of Identify Namespace); 0 when the controller reports none. */
    public long anaGroup() { return anaGroup; }

    @Override
    public long nsid() { return nsid; }

    /** Namespace size in logical blocks (NSZE), as of the last scan: it follows a namespace that grows. */
    public long blockCount() { return blockCount; }

    public int blockSize() { return blockSize; }

    public long sizeBytes() { return blockCount * blockSize; }

    /** The namespace's NGUID (16 bytes, a copy), when the controller reports one (not all zeros). */
    public Optional<byte[]> nguid() { return Optional.ofNullable(ids.nguid()); }

    /** The namespace's IEEE EUI-64 (8 bytes, a copy), when the controller reports one (not all zeros). */
    public Optional<byte[]> eui64() { return Optional.ofNullable(ids.eui64()); }

    /**
     * The namespace's UUID, when the controller reports one in its Namespace Identification Descriptor list (Identify
     * CNS 03h, NVMe 1.3 and later; a controller that refuses it reports none).
     */
    public Optional<UUID> uuid() { return Optional.ofNullable(ids.uuid()); }

    /**
     * True while this handle's namespace is the one its NSID names on the controller; false once it was removed or
     * replaced (see the class comment): every later request fails with {@link ErrorKind#NAMESPACE_GONE}.
     */
    @Override
    public boolean isCurrent() { return retiredBecause == null; }

    /** Why this handle was retired (removed, or replaced and which identifiers changed); empty while current. */
    public Optional<String> retiredBecause() { return Optional.ofNullable(retiredBecause); }

    /** Largest {@code blocks} one read or write may carry (MDTS / block size, at most 65536). */
    public int maxBlocksPerIo() {
        return (int) Math.min(MAX_BLOCKS, ctrl.maxTransfer() / blockSize);
    }

    public NvmeofController controller() { return ctrl; }

    // ------------------------------------------------------------------------------------ CompletableFuture flavour

    public CompletableFuture<Void> read(long lba, int blocks, ByteBuffer dst) {
        int len = checkData(blocks, dst, true);
        IoFuture f = new IoFuture(this, "Read", lba, blocks);
        submitRw(Opcodes.IO_READ, lba, blocks, HostQueue.DIR_C2H, dst, len, null, 0, f);
        return f;
    }

    public CompletableFuture<Void> write(long lba, int blocks, ByteBuffer src) {
        int len = checkData(blocks, src, false);
        IoFuture f = new IoFuture(this, "Write", lba, blocks);
        submitRw(Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src, len, null, 0, f);
        return f;
    }

    /**
     * Write with Force Unit Access: completes only once the data is durable (in the target's file or device, past any
     * volatile write cache), not merely accepted. A plain {@link #write} is durable after a later {@link #flush}
     * completes.
     */
    public CompletableFuture<Void> writeFua(long lba, int blocks, ByteBuffer src) {
        int len = checkData(blocks, src, false);
        IoFuture f = new IoFuture(this, "Write (FUA)", lba, blocks);
        submitRw(Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src, len, null, 0, f, CDW12_FUA);
        return f;
    }

    /** Compare: completes exceptionally with {@link NvmeStatusException} COMPARE_FAILED when the data differ. */
    public CompletableFuture<Void> compare(long lba, int blocks, ByteBuffer src) {
        int len = checkData(blocks, src, false);
        IoFuture f = new IoFuture(this, "Compare", lba, blocks);
        submitRw(Opcodes.IO_COMPARE, lba, blocks, HostQueue.DIR_H2C, src, len, null, 0, f);
        return f;
    }

    public CompletableFuture<Void> flush() {
        IoFuture f = new IoFuture(this, "Flush", -1, 0);
        HostQueue q = ctrl.pickQueue();
        f.queue = q;
        q.submit(Opcodes.IO_FLUSH, this, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, null, 0, f);
        return f;
    }

    public CompletableFuture<Void> writeZeroes(long lba, int blocks) {
        checkBlocks(blocks);
        IoFuture f = new IoFuture(this, "Write Zeroes", lba, blocks);
        HostQueue q = ctrl.pickQueue();
        f.queue = q;
        q.submit(Opcodes.IO_WRITE_ZEROES, this, (int) lba, (int) (lba >>> 32), blocks - 1, 0, 0, 0,
                HostQueue.DIR_NONE, null, 0, 0, null, 0, f);
        return f;
    }

    /** Dataset Management with one range and AD=1 (deallocate / TRIM). */
    public CompletableFuture<Void> deallocate(long lba, int blocks) {
        if (blocks <= 0) {
            throw new IllegalArgumentException("blocks must be positive, got " + blocks);
        }
        byte[] range = new byte[DatasetRange.LENGTH];
        new DatasetRange().<DatasetRange>wrap(new UnsafeBuffer(range), 0).set(lba, blocks & 0xFFFF_FFFFL);
        IoFuture f = new IoFuture(this, "Deallocate", lba, blocks);
        HostQueue q = ctrl.pickQueue();
        f.queue = q;
        // CDW10 NR = 0 (one range, 0-based); CDW11 bit 2 = AD.
        q.submit(Opcodes.IO_DATASET_MANAGEMENT, this, 0, 0x4, 0, 0, 0, 0, HostQueue.DIR_H2C,
                ByteBuffer.wrap(range), 0, range.length, null, 0, f);
        return f;
    }

    /** Reservation Register, Acquire, Release and Report on this namespace. */
    public NamespaceReservations reservations() {
        return new NamespaceReservations(this);
    }

    /** A reservation command: host data ({@code toTarget}) or a report into {@code data}. */
    CompletableFuture<Void> submitReservation(String op, int opcode, int cdw10, int cdw11, ByteBuffer data,
            boolean toTarget) {
        IoFuture f = new IoFuture(this, op, -1, 0);
        HostQueue q = ctrl.pickQueue();
        f.queue = q;
        q.submit(opcode, this, cdw10, cdw11, 0, 0, 0, 0, toTarget ? HostQueue.DIR_H2C : HostQueue.DIR_C2H, data, 0,
                data.capacity(), null, 0, f);
        return f;
    }

    // ------------------------------------------------------------------------------------ zero-allocation flavour

    /** Read into {@code dst}; {@code cb} gets {@code context} and the status (0 = success, negative = transport error). */
    public void read(long lba, int blocks, ByteBuffer dst, IoCallback cb, long context) {
        int len = checkData(blocks, dst, true);
        submitRw(Opcodes.IO_READ, lba, blocks, HostQueue.DIR_C2H, dst, len, requireCallback(cb), context, null);
    }

    /** Write from {@code src}; {@code cb} gets {@code context} and the status (0 = success, negative = transport error). */
    public void write(long lba, int blocks, ByteBuffer src, IoCallback cb, long context) {
        int len = checkData(blocks, src, false);
        submitRw(Opcodes.IO_WRITE, lba, blocks, HostQueue.DIR_H2C, src, len, requireCallback(cb), context, null);
    }

    // ------------------------------------------------------------------------------------ multipath

    /**
     * A read, write or flush of a multipath namespace through this path ({@code blocks} 0 for a flush): as the
     * callback flavour, but through {@link #failoverRef}, so a request this controller cannot send now fails with
     * {@link IoCallback#ERR_TRANSPORT} at once instead of waiting for its reconnect. The caller checked the sizes.
     */
    void submitForPath(int opcode, long lba, int blocks, int dir, ByteBuffer buf, int offset, int len,
                       int cdw12Flags, IoCallback cb, long ctx) {
        HostQueue q = ctrl.pickQueue();
        if (blocks == 0) {
            q.submit(opcode, failoverRef, 0, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0, cb, ctx, null);
        } else {
            q.submit(opcode, failoverRef, (int) lba, (int) (lba >>> 32), (blocks - 1) | cdw12Flags, 0, 0, 0, dir, buf,
                    offset, len, cb, ctx, null);
        }
    }

    /** The ANA log (or Identify Namespace) says so. */
    void anaState(long group, AnaState state) {
        anaGroup = group;
        anaState = state;
        anaFromLog = true;
    }

    /** Whether an ANA log gave this handle its state (a handle no log listed yet has none of its own). */
    boolean anaFromLog() { return anaFromLog; }

    /** Identify Namespace names the group; the ANA log, read next, gives its state. */
    void anaGroupIdentified(long group) {
        anaGroup = group;
    }

    /** An I/O met the path status of {@code state}: take it until the ANA log is read again. */
    void anaStateSeen(AnaState state) {
        anaState = state;
    }

    // ------------------------------------------------------------------------------------ internals

    private void submitRw(int opcode, long lba, int blocks, int dir, ByteBuffer buf, int len, IoCallback cb, long ctx,
                          IoFuture f) {
        submitRw(opcode, lba, blocks, dir, buf, len, cb, ctx, f, 0);
    }

    private void submitRw(int opcode, long lba, int blocks, int dir, ByteBuffer buf, int len, IoCallback cb, long ctx,
                          IoFuture f, int cdw12Flags) {
        HostQueue q = ctrl.pickQueue();
        if (f != null) {
            f.queue = q;
        }
        // SLBA in CDW10-11, NLB (0-based) in CDW12 15:0, flags (FUA) above it.
        q.submit(opcode, this, (int) lba, (int) (lba >>> 32), (blocks - 1) | cdw12Flags, 0, 0, 0, dir, buf,
                buf.position(), len, cb, ctx, f);
    }

    private static IoCallback requireCallback(IoCallback cb) {
        if (cb == null) {
            throw new NullPointerException("callback");
        }
        return cb;
    }

    private void checkBlocks(int blocks) {
        if (blocks <= 0 || blocks > MAX_BLOCKS) {
            throw new IllegalArgumentException("blocks must be in [1, " + MAX_BLOCKS + "], got " + blocks);
        }
    }

    private int checkData(int blocks, ByteBuffer buf, boolean intoBuffer) {
        checkBlocks(blocks);
        long len = (long) blocks * blockSize;
        if (len > ctrl.maxTransfer()) {
            throw new IllegalArgumentException(blocks + " blocks (" + len + " bytes) exceed the controller's maximum"
                    + " transfer of " + ctrl.maxTransfer() + " bytes; split the I/O (maxBlocksPerIo() = " + maxBlocksPerIo() + ")");
        }
        checkBuffer(buf, len, intoBuffer);
        return (int) len;
    }

    /** {@code buf} has {@code len} bytes from its position, and can be written when {@code intoBuffer}. */
    static void checkBuffer(ByteBuffer buf, long len, boolean intoBuffer) {
        if (len > buf.remaining()) {
            throw new IllegalArgumentException("buffer has " + buf.remaining() + " bytes between its position "
                    + buf.position() + " and limit " + buf.limit() + ", the I/O needs " + len);
        }
        if (intoBuffer && buf.isReadOnly()) {
            throw new IllegalArgumentException("cannot read into a read-only buffer");
        }
    }

    /** Same namespace as far as the controller tells: see {@link NvmeofController}'s scan. */
    NamespaceIdentifiers identifiers() { return ids; }

    /** The scan found the namespace grown (or shrunk) under the same identifiers. */
    void resize(long blocks) {
        blockCount = blocks;
    }

    /**
     * The controller's scan found this namespace removed or replaced. The write is volatile and comes before the
     * controller publishes anything that lets a request of this handle be sent on a new association (see
     * NamespaceScanner.identifyNamespaces); every send reads it just before the command goes on the wire.
     */
    void retire(String why) {
        if (retiredBecause == null) {
            retiredBecause = why;
        }
    }

    /** The message a request of a retired handle fails with: which NSID, why, and what to do. */
    String goneMessage(String what) {
        return what + " not sent: " + retiredBecause + "; this handle sends no more I/O. Take controller.namespace("
                + nsid + ") again after checking it is the volume you expect (nguid(), uuid())";
    }

    @Override
    public String toString() {
        String why = retiredBecause;
        return "NamespaceHandle[nsid " + nsid + ", " + blockCount + " x " + blockSize + " B, " + ids
                + (why != null ? ", retired: " + why : "") + "]";
    }

    /** The future handed to callers; it is its own completion listener, so one object per I/O. */
    private static final class IoFuture extends BufferSafeFuture implements CompletionListener {
        private final NamespaceHandle ns;
        private final long lba;
        private final int blocks;
        volatile HostQueue queue;

        IoFuture(NamespaceHandle ns, String op, long lba, int blocks) {
            super(op);
            this.ns = ns;
            this.lba = lba;
            this.blocks = blocks;
        }

        @Override
        public void onCompletion(int status, long result) {
            if (status == 0) {
                ioDone(null);
                return;
            }
            String what = lba < 0 ? op + " (nsid " + ns.nsid + ")"
                    : op + " (nsid " + ns.nsid + ", lba " + lba + ", " + blocks + " blocks)";
            ioDone(status == IoCallback.ERR_NAMESPACE_GONE
                    ? new NvmeofException(ns.goneMessage(what), ErrorKind.NAMESPACE_GONE)
                    : Errors.failure(what, status, io.nvmeof.protocol.Status.SET_IO, queue, ns.ctrl.commandTimeout()));
        }
    }
}

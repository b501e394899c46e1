package io.nvmeof.tgt.core;

import io.netty.buffer.ByteBuf;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Completion;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.fabrics.FabricsCommand;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One command in flight on a queue. Requests are preallocated per queue and reused, so the data path allocates no
 * request objects; the SQE and CQE live in the request's own small buffers. The core owns the lifecycle
 * ({@link TargetCore#submit} to {@link TargetCore#complete}); the transport fills in data and sends the response.
 */
public final class Request {
    public static final int DIR_NONE = 0;
    public static final int DIR_HOST_TO_CONTROLLER = 1;
    public static final int DIR_CONTROLLER_TO_HOST = 2;

    private final int slot;
    private final SubmissionQueue sq;

    // Views of a slab the queue allocates for many slots at once (SubmissionQueue.grow): a direct buffer of its own
    // per slot was a native allocation each at Connect (512 for a queue of 128) and as many cleaners for the JDK's one
    // reference thread at disconnect, which fell behind under connection churn. Direct, so the transports' SQE and CQE
    // copies stay native-to-native as before (heap arrays were no faster: same target CPU per 4 KiB I/O within noise).
    private final UnsafeBuffer sqeBuffer;
    private final UnsafeBuffer cqeBuffer;
    public final Command cmd;
    public final FabricsCommand fabrics;
    public final SglDescriptor sgl;
    public final Completion cqe;
    private final UnsafeBuffer dataView = new UnsafeBuffer(new byte[0]);

    /** Chosen by the parse step. */
    public RequestHandler execute;
    public Namespace ns;
    /** Bytes of data the command moves, as the command itself implies (blocks x block size, 4096 for Identify...). */
    public int transferLength;
    public int direction;

    /** Command data: host data (after it arrived) or data to send to the host. Pooled; released by the transport. */
    public ByteBuf data;
    /** Compare through the io_uring: what the namespace holds, read beside the host's {@link #data}; released with it. */
    public ByteBuf storedData;
    /** True when host data came in the command capsule. */
    public boolean dataInCapsule;
    /**
     * Zero-copy reads: the namespace's own memory the transport sends the data from, instead of {@link #data}
     * (set by the transport's allocateReadData when the backend offers a pinned region; see BlockBackend).
     */
    public ByteBuffer sourceRegion;
    /**
     * Writes: the transport has stored the host's data in the namespace as it arrived (NVMe/TCP H2CData, see its
     * fetchData), so there is no {@link #data} and the write has nothing left to copy.
     */
    public boolean dataInNamespace;
    /** Native address of the read's first byte inside {@link #sourceRegion}. */
    public long sourceAddress;
    /** The transport's local key for {@link #sourceRegion}. */
    public long sourceKey;

    /** NVMe status ({@link Status}) and command-specific result (CQE DW0/DW1). */
    public int status;
    /** When the core took the command (System.nanoTime), for latency statistics. */
    public long startNanos;
    public long result;
    /** Set by the error log: the byte offset of the field in error, or 0xFFFF. */
    public int errorLocation;

    /** Free for the transport's per-command state (TCP: bytes received so far; RDMA: work request state). */
    public long transportOffset;
    public int transportState;

    public boolean inUse;
    /** Data bytes charged against the memory limits for this command; given back when it is released. */
    int chargedBytes;
    /** The part of {@link #chargedBytes} charged while the queue's host had proved nothing (the untrusted allowance). */
    int untrustedBytes;
    /**
     * Set while this request's work is with a backend lane (queued or running): an Abort, or the queue's close, can
     * still withdraw it while it waits; its completion is dropped once the queue let the request go.
     */
    BackendTicket backendTicket;
    /**
     * Device I/O through the poll group's io_uring ({@link StorageRing}): the ring while the request is in it or waits
     * for it (else null), its tag in the ring (-1 while only waiting), and what to ask of the kernel.
     */
    StorageRing ring;
    int ringTag = -1;
    byte ringOp;
    int ringFd;
    long ringAddress;
    int ringLength;
    long ringOffset;
    int ringFlags;
    StorageRing.Done ringDone;
    /** Its namespace's share of the ring, while counted in it (a namespace with a queue depth of its own). */
    StorageRing.NamespaceShare ringShare;
    /** Its queue closed while the kernel had it: released, with the counts below given back, at its completion. */
    boolean ringOrphan;
    Namespace ringOrphanNs;
    Controller ringOrphanController;
    /** An admin Connect held for the host's earlier association (System.nanoTime when first held), else 0. */
    long connectHeldSince;
    /** Disconnect: the transport closes the queue once this response is on the wire. */
    public boolean closeQueueAfterResponse;

    /** {@code sqe} and {@code cqe}: this slot's {@link Command#LENGTH} and {@link Completion#LENGTH} bytes. */
    Request(SubmissionQueue sq, int slot, UnsafeBuffer sqe, UnsafeBuffer cqe) {
        this.sq = sq;
        this.slot = slot;
        this.sqeBuffer = sqe;
        this.cqeBuffer = cqe;
        this.cmd = new Command().wrap(sqe, 0);
        this.fabrics = new FabricsCommand().wrap(sqe, 0);
        this.sgl = new SglDescriptor().wrap(sqe, Command.DPTR);
        this.cqe = new Completion().wrap(cqe, 0);
    }

    public int slot() { return slot; }
    public SubmissionQueue sq() { return sq; }

    /** The SQE bytes, for the transport to copy a capsule into. */
    public UnsafeBuffer sqeBuffer() { return sqeBuffer; }

    /** The CQE bytes, for the transport to send. */
    public UnsafeBuffer cqeBuffer() { return cqeBuffer; }

    /** Resets per-command state when the transport takes the request for a new capsule. */
    public void reset() {
        execute = null;
        ns = null;
        transferLength = 0;
        direction = DIR_NONE;
        data = null;
        storedData = null;
        dataInCapsule = false;
        sourceRegion = null;
        dataInNamespace = false;
        sourceAddress = 0;
        sourceKey = 0;
        status = Status.SUCCESS;
        result = 0;
        errorLocation = 0xFFFF;
        transportOffset = 0;
        transportState = 0;
        closeQueueAfterResponse = false;
        backendTicket = null;
        ring = null;
        ringTag = -1;
        ringDone = null;
        ringShare = null;
        connectHeldSince = 0;
        holdsAuthentication = false;
    }

    /**
     * This is its queue's one authentication command (parsed, not yet answered): its queue takes no other until it
     * completes, whichever way (TargetCore.complete lets go).
     */
    public boolean holdsAuthentication;

    /** Length in SGL1: the 24-bit field of a keyed descriptor, else the 32-bit one. */
    public long sglLength() {
        return sgl.type() == SglDescriptor.TYPE_KEYED_DATA_BLOCK ? sgl.keyedLength() : sgl.dataLength();
    }

    /**
     * The data buffer for {@link #transferLength} bytes, optionally zeroed (admin data is partly filled): the one the
     * transport placed for a controller-to-host transfer, else a new one from the transport's allocator.
     */
    public ByteBuf allocateData(boolean zero) {
        ByteBuf b = data != null ? data : sq.transport().allocator().directBuffer(transferLength, transferLength);
        if (zero) {
            b.setZero(0, transferLength);
        }
        b.writerIndex(transferLength);
        data = b;
        return b;
    }

    /** A flyweight-ready view of the data buffer (no copy). */
    public UnsafeBuffer dataView() {
        if (data.hasMemoryAddress()) {
            dataView.wrap(data.memoryAddress() + data.readerIndex(), data.readableBytes());
        } else {
            dataView.wrap(data.array(), data.arrayOffset() + data.readerIndex(), data.readableBytes());
        }
        return dataView;
    }

    /** The data as an NIO buffer for backend I/O, shared and reused by the buffer (no allocation). */
    public ByteBuffer dataNio() {
        return data.internalNioBuffer(data.readerIndex(), data.readableBytes());
    }

    public void releaseData() {
        if (data != null) {
            data.release();
            data = null;
        }
        if (storedData != null) {
            storedData.release();
            storedData = null;
        }
    }

    /** Completes the command with {@code status}; the core fills the CQE and hands it to the transport. */
    public void complete(int status) {
        this.status = status;
        sq.core().complete(this);
    }

    /** Completes with success and a result for CQE DW0 (and DW1). */
    public void completeWithResult(long result) {
        this.result = result;
        complete(Status.SUCCESS);
    }

    /** Called by the transport when host data has arrived: runs the command. */
    public void dataReady() {
        sq.core().execute(this);
    }

    /** A Flush with NSID FFFFFFFFh: it touches every namespace of the subsystem. */
    boolean flushesAllNamespaces() {
        return cmd.opcode() == io.nvmeof.protocol.Opcodes.IO_FLUSH && cmd.nsid() == 0xFFFF_FFFFL && sq.qid() > 0;
    }

    public boolean isAdminQueue() {
        return sq.qid() == 0;
    }
}

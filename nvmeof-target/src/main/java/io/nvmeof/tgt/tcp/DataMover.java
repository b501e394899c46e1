package io.nvmeof.tgt.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.nvmeof.netty.BorrowedMemoryBuf;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.SglDescriptor;
import io.nvmeof.protocol.Status;
import io.nvmeof.protocol.tcp.CapsuleCommandPdu;
import io.nvmeof.protocol.tcp.DataPdu;
import io.nvmeof.protocol.tcp.TermReqPdu;
import io.nvmeof.tgt.backend.DirectBuffers;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.core.TargetCore;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.agrona.BufferUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a target queue's data moves: in-capsule data and H2CData into buffers or straight into the namespace, and a
 * read's data out behind its C2HData header, from a buffer or from namespace memory (zero copy). It also checks a command's SGL against the transport and picks where its data lives.
 */
final class DataMover {
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueue.class);

    /** Request states (Request.transportState). */
    static final int STATE_NONE = 0;
    static final int STATE_AWAIT_H2C = 1;

    private final TcpQueue q;
    /**
     * Views of memory owned elsewhere, reused once released; all made so far: RAM-namespace memory that read data is
     * sent from (zero copy), and the receive buffer that a Write's in-capsule data is copied from into the namespace.
     */
    private final List<BorrowedMemoryBuf> views = new ArrayList<>();
    private static final int VIEWS_EXPECTED = 128;

    /**
     * Free views, one list per kind of memory: a view keeps the NIO view it made for the first region it was given
     * and re-points it at regions of the same capacity (namespace chunks; receive-buffer chunks). Sized for the Linux
     * host's 128 commands in flight: a list that grows under the first busy host runs a branch its compiled code
     * never saw, and that code is thrown away and made again (issue 53).
     */
    private final ArrayDeque<BorrowedMemoryBuf> freeReadViews = new ArrayDeque<>(VIEWS_EXPECTED);
    private final ArrayDeque<BorrowedMemoryBuf> freeWriteViews = new ArrayDeque<>(VIEWS_EXPECTED);
    private final Consumer<BorrowedMemoryBuf> recycleReadView = v -> recycleView(freeReadViews, v);
    private final Consumer<BorrowedMemoryBuf> recycleWriteView = v -> recycleView(freeWriteViews, v);
    /** Statistics, read by the queue's getters: see there. */
    long zeroCopyReads;
    long writesFromReceiveBuffer;
    long h2cDataIntoNamespace;

    DataMover(TcpQueue q) {
        this.q = q;
    }

    // ---- from the host ----

    /** A command capsule, framed and checked by {@link PduFramer}: its SQE and in-capsule data go to a request. */
    void handleCapsule(int pdo, int dataLength, ByteBuf buf, int start) {
        Request req = q.sq.acquire();
        if (req == null) {
            q.pdus.fatal(TermReqPdu.FES_PDU_SEQUENCE_ERROR, 0, buf, start,
                    "more commands outstanding than the queue holds (" + q.sq.poolSize() + ")");
            return;
        }
        req.sqeBuffer().putBytes(0, q.pdus.in, CapsuleCommandPdu.SQE, Command.LENGTH);
        ByteBuf lent = null;
        if (dataLength > 0) {
            lent = lendInCapsuleWrite(req, buf, start + pdo, dataLength);
            ByteBuf data = lent;
            if (data == null) {
                data = q.ctx.alloc().directBuffer(dataLength, dataLength);
                data.writeBytes(buf, start + pdo, dataLength);
                q.sq.chargeDataArrived(req, dataLength);
            }
            req.data = data;
            req.transportOffset = dataLength;
            if (!q.pdus.dataDigestOk(buf, start, pdo, dataLength)) {
                // Framing is intact, so the queue survives; the host may retry (SPDK's behaviour).
                req.complete(Status.TRANSIENT_TRANSPORT_ERROR);
                return;
            }
        }
        q.core.submit(req);
        if (lent != null && req.inUse && req.data == lent) {
            // Not done with its data yet (a write runs at once, so this is a safety net): give it a copy of its own
            // before the receive buffer moves on.
            ByteBuf own = q.ctx.alloc().directBuffer(dataLength, dataLength);
            own.writeBytes(lent, 0, dataLength);
            req.data = own;
            lent.release();
        }
    }

    /**
     * A view of an I/O queue Write's in-capsule data where it arrived (the receive buffer), or null to copy it as
     * for any other command: the write copies it into the namespace directly, one copy and no buffer allocated.
     * WHY only Write: it runs on this thread before {@link TargetCore#submit} returns, whatever the backend (writes
     * never go to a backend lane), so the view is never read after the receive buffer moves on; commands that
     * may be handed to another thread (Dataset Management's ranges, Connect's data) get a copy.
     */
    private ByteBuf lendInCapsuleWrite(Request req, ByteBuf buf, int index, int length) {
        if (q.sq.qid() == 0 || req.cmd.opcode() != Opcodes.IO_WRITE || !buf.isDirect()
                || buf.nioBufferCount() != 1) {
            return null;
        }
        ByteBuffer region = buf.internalNioBuffer(index, length);
        writesFromReceiveBuffer++;
        return takeView(freeWriteViews, recycleWriteView).borrow(q, region, region.position(), length);
    }

    /** One H2CData PDU's data of a write, straight from the receive buffer into the namespace at its place. */
    private void storeInNamespace(Request req, long datao, ByteBuf buf, int index, int length) {
        if (req.status != Status.SUCCESS) {
            return; // an earlier part failed: the write fails, the rest is not stored
        }
        try {
            long offset = (req.cmd.slba() << req.ns.blockShift()) + datao;
            if (buf.nioBufferCount() == 1) {
                req.ns.backend().write(offset, buf.internalNioBuffer(index, length)); // a view the buffer keeps
            } else {
                req.ns.backend().write(offset, buf.nioBuffer(index, length)); // a composite cumulation: rare
            }
            h2cDataIntoNamespace++;
        } catch (java.io.IOException e) {
            LOG.warn("write to namespace {} failed: {}", req.ns.nsid(), e.toString());
            req.status = Status.WRITE_FAULT;
        }
    }

    /** An H2CData PDU (framed and checked by {@link PduFramer}): its data where the R2T's command keeps it. */
    void handleH2CData(int flags, int pdo, int dataLength, ByteBuf buf, int start) {
        DataPdu dataPdu = q.pdus.dataPdu;
        dataPdu.wrap(q.pdus.in, 0);
        Request req = q.sq.request(dataPdu.ttag());
        if (req == null || !req.inUse || req.transportState != STATE_AWAIT_H2C || req.cmd.cid() != dataPdu.cccid()) {
            q.pdus.fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.TTAG, buf, start,
                    "H2CData for no outstanding R2T (ttag " + dataPdu.ttag() + ", cccid " + dataPdu.cccid() + ")");
            return;
        }
        long datao = dataPdu.datao();
        long datal = dataPdu.datal();
        if (datal != dataLength) {
            q.pdus.fatal(TermReqPdu.FES_INVALID_HEADER_FIELD, DataPdu.DATAL, buf, start, "DATAL " + datal + " disagrees with PLEN");
            return;
        }
        if (datao != req.transportOffset || datao + datal > req.transferLength) {
            q.pdus.fatal(TermReqPdu.FES_DATA_OUT_OF_RANGE, DataPdu.DATAO, buf, start, "H2CData at " + datao + "+" + datal
                    + " outside the R2T window (expected offset " + req.transportOffset + " of " + req.transferLength + ")");
            return;
        }
        if (req.dataInNamespace) {
            storeInNamespace(req, datao, buf, start + pdo, dataLength);
        } else {
            req.data.setBytes((int) datao, buf, start + pdo, dataLength);
        }
        if (!q.pdus.dataDigestOk(buf, start, pdo, dataLength)) {
            req.status = Status.TRANSIENT_TRANSPORT_ERROR;
        }
        req.transportOffset += datal;
        if (req.transportOffset == req.transferLength) {
            req.transportState = STATE_NONE;
            if (req.status != Status.SUCCESS) {
                req.complete(req.status);
            } else {
                req.dataReady();
            }
        }
    }

    // ---- TransportQueue: where data lives, and R2T ----

    int mapData(Request req) {
        SglDescriptor sgl = req.sgl;
        boolean capsuleData = req.data != null && req.transportOffset > 0;
        long length = sgl.dataLength();
        if (req.transferLength == 0) {
            // A command without data: a zero-length descriptor of any type (as Linux accepts) and no in-capsule data.
            return length == 0 && !capsuleData ? Status.SUCCESS : Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        int id = sgl.identifier();
        if (id != SglDescriptor.ID_IN_CAPSULE && id != SglDescriptor.ID_TCP_TRANSPORT) {
            return Status.SGL_INVALID_TYPE | Status.DNR;
        }
        if (length != req.transferLength) {
            return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
        }
        switch (sgl.identifier()) {
            case SglDescriptor.ID_IN_CAPSULE:
                if (req.direction != Request.DIR_HOST_TO_CONTROLLER) {
                    return Status.SGL_INVALID_TYPE | Status.DNR;
                }
                if (sgl.address() != 0) {
                    return Status.SGL_INVALID_OFFSET | Status.DNR; // ICDOFF is 0
                }
                if (!capsuleData || req.transportOffset != length) {
                    return Status.SGL_INVALID_DATA_LENGTH | Status.DNR;
                }
                req.dataInCapsule = true;
                return Status.SUCCESS;
            case SglDescriptor.ID_TCP_TRANSPORT:
                return capsuleData ? Status.SGL_INVALID_TYPE | Status.DNR : Status.SUCCESS;
            default:
                return Status.SGL_INVALID_TYPE | Status.DNR;
        }
    }

    boolean allocateReadData(Request req) {
        if (!q.pdus.dataDigest && req.ns != null && !req.isAdminQueue() && req.cmd.opcode() == Opcodes.IO_READ) {
            // A RAM namespace's own memory: the socket sends the data from there, with no copy into a buffer of ours.
            // Not under a data digest: it is taken before the socket copies the bytes, and a write landing in between
            // would make it wrong (the copy below is a consistent snapshot).
            long offset = req.cmd.slba() << req.ns.blockShift();
            ByteBuffer region = req.ns.backend().readableRegion(offset, req.transferLength);
            if (region != null) {
                req.sourceRegion = region;
                req.sourceAddress = BufferUtil.address(region) + req.ns.backend().pinnedRegionOffset(offset);
                return true;
            }
        }
        if (!q.flow.chargeOrWait(req, FlowControl.WAIT_READ_BUFFER, false)) {
            return false; // resumes through dataReady() once memory is given back
        }
        placeReadBuffer(req);
        return true;
    }

    void placeReadBuffer(Request req) {
        if (servedByRing(req)) {
            req.data = DirectBuffers.allocate(req.transferLength); // the device DMAs into it, the socket sends from it
            return;
        }
        req.data = q.ctx.alloc().directBuffer(req.transferLength, req.transferLength);
        req.data.writerIndex(req.transferLength);
    }

    /** The buffer a write's H2CData goes into: for a namespace served direct, one the device can read as it is. */
    void placeWriteBuffer(Request req) {
        if (servedByRing(req)) {
            req.data = DirectBuffers.allocate(req.transferLength);
        } else {
            req.allocateData(false);
        }
    }

    /** A command of a file or block namespace served through this poll group's io_uring. */
    private boolean servedByRing(Request req) {
        return req.ns != null && req.ns.backend().ringFile() != null && q.storageRing() != null;
    }

    void fetchData(Request req) {
        if (q.closing) {
            q.sq.release(req);
            return;
        }
        if (!q.pdus.dataDigest && q.sq.qid() != 0 && req.ns != null && req.cmd.opcode() == Opcodes.IO_WRITE
                && !req.ns.backend().ioMayBlock() && req.ns.backend().ringFile() == null) {
            // Each H2CData PDU's data goes from the receive buffer into the namespace as it arrives: no buffer for the
            // whole transfer, one copy fewer. Not under a data digest, which must be checked before the namespace
            // changes. A write the host does not finish leaves its blocks partly written, which NVMe allows for a
            // command that does not complete successfully (the host retries it or reports it failed). Never for a
            // backend with a ring descriptor, whatever it says of its write(): a buffered write beside the ring's
            // O_DIRECT ones leaves stale pages the kernel cannot drop, and it fails the file's next fsync with EIO.
            req.dataInNamespace = true;
        } else {
            if (!q.flow.chargeOrWait(req, FlowControl.WAIT_WRITE_BUFFER, false)) {
                return; // its R2T goes once memory is given back
            }
            placeWriteBuffer(req);
        }
        sendR2T(req);
    }

    /** Asks the host for a write's data: its H2CData is taken from here on. */
    void sendR2T(Request req) {
        req.transportState = STATE_AWAIT_H2C;
        req.transportOffset = 0;
        q.pdus.writeR2T(req);
        q.flow.flushSoon();
    }

    // ---- to the host ----

    void queueResponse(Request req) {
        if (q.closing) {
            q.sq.release(req);
            return;
        }
        boolean hasData = Status.isSuccess(req.status) && req.direction == Request.DIR_CONTROLLER_TO_HOST
                && (req.data != null || req.sourceRegion != null) && req.transferLength > 0;
        if (hasData) {
            // With SQ flow control off, the C2HData SUCCESS flag replaces the response capsule (Linux does the same).
            boolean success = q.sq.flowControlDisabled() && !req.closeQueueAfterResponse;
            // A host that proved nothing keeps its data counted until it has read it (see detachCharge).
            long held = q.sq.untrusted() ? q.sq.detachCharge(req) : 0;
            writeC2HData(req, success, held);
            if (success) {
                q.sq.release(req);
                q.flow.flushSoon();
                return;
            }
        }
        q.pdus.writeCapsuleResponse(req);
        boolean close = req.closeQueueAfterResponse;
        q.sq.release(req);
        if (close) {
            q.closing = true;
            q.ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        q.flow.flushSoon();
    }

    /** A read's data in one C2HData PDU: the header, the data from wherever it lives, the digest. */
    private void writeC2HData(Request req, boolean success, long heldCharge) {
        PduFramer pdus = q.pdus;
        int length = req.transferLength;
        pdus.writeC2HDataHeader(req, success);
        ChannelHandlerContext ctx = q.ctx;
        ByteBuf data = req.sourceRegion != null ? borrowView(req) : req.data;
        int digest = 0;
        if (pdus.dataDigest) {
            digest = pdus.digest(data, data.readerIndex(), length);
        }
        req.data = null; // ownership passes to the channel, which releases it once written
        if (heldCharge != 0) {
            io.nvmeof.tgt.core.SubmissionQueue sq = q.sq;
            ctx.write(data).addListener(f -> sq.releaseCharge(heldCharge)); // on this loop: written or failed
        } else {
            ctx.write(data, ctx.voidPromise());
        }
        if (pdus.dataDigest) {
            pdus.writeDataDigest(digest);
        }
    }

    /** A view of the read's bytes in the namespace's memory; the channel releases it (back to us) once written. */
    private ByteBuf borrowView(Request req) {
        BorrowedMemoryBuf v = takeView(freeReadViews, recycleReadView);
        zeroCopyReads++;
        int offset = (int) (req.sourceAddress - BufferUtil.address(req.sourceRegion));
        return v.borrow(req.ns, req.sourceRegion, offset, req.transferLength);
    }

    private BorrowedMemoryBuf takeView(ArrayDeque<BorrowedMemoryBuf> free, Consumer<BorrowedMemoryBuf> recycler) {
        BorrowedMemoryBuf v = free.pollFirst();
        if (v == null) {
            v = new BorrowedMemoryBuf(recycler);
            views.add(v);
        }
        return v;
    }

    private <T> void recycleView(ArrayDeque<T> free, T v) {
        ChannelHandlerContext ctx = q.ctx;
        if (ctx == null || ctx.executor().inEventLoop()) {
            free.addFirst(v);
            return;
        }
        try {
            ctx.executor().execute(() -> free.addFirst(v)); // released off the loop (not by Netty's writes)
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the loop has ended: the queue with it
        }
    }

    boolean sendsFrom(Namespace ns) {
        for (BorrowedMemoryBuf v : views) {
            if (v.holder() == ns) {
                return true;
            }
        }
        return false;
    }
}

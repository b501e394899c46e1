package io.nvmeof.tgt.cmd;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.nvmeof.protocol.Command;
import io.nvmeof.protocol.DatasetRange;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.Status;
import io.nvmeof.tgt.core.Namespace;
import io.nvmeof.tgt.core.Request;
import io.nvmeof.tgt.backend.DirectBuffers;
import io.nvmeof.tgt.backend.RingFile;
import io.nvmeof.tgt.core.StorageRing;
import io.nvmeof.tgt.core.SubmissionQueue;
import io.nvmeof.tgt.core.TargetCore;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVM command set on block backends (Linux nvmet io-cmd-file.c / io-cmd-bdev.c): parse checks the namespace,
 * the LBA range and the transfer size; the execute steps run the backend I/O on the queue's thread, hand it to the
 * poll group's io_uring (file and block namespaces served direct: reads, writes, flushes; see {@link StorageRing}),
 * or (work that may block) run it in the namespace's backend lanes.
 */
public final class IoCommands {
    private static final Logger LOG = LoggerFactory.getLogger(IoCommands.class);
    private static final long NSID_ALL = 0xFFFF_FFFFL;

    private IoCommands() {
    }

    public static int parse(Request req) {
        Command cmd = req.cmd;
        int opcode = cmd.opcode();
        if (opcode == Opcodes.IO_FLUSH && cmd.nsid() == NSID_ALL) {
            req.execute = IoCommands::executeFlushAll;
            return Status.SUCCESS;
        }
        Namespace ns = req.sq().controller().subsystem().namespace(cmd.nsid());
        if (ns == null) {
            req.errorLocation = Command.NSID;
            return Status.INVALID_NAMESPACE | Status.DNR;
        }
        req.ns = ns;
        // Through a port where the namespace's ANA group is inaccessible, lost or changing: a path error without DNR,
        // which a multipathing host retries on another path (nvmet_check_ana_state).
        int ana = req.sq().controller().anaStates().ioStatus(ns.anaGroup());
        if (ana != Status.SUCCESS) {
            return ana;
        }
        // Then the reservation (nvmet checks ANA first, then nvmet_pr_check_cmd_access).
        int access = ns.reservations().checkAccess(req.sq().controller().hostUuid(), opcode, req.startNanos);
        if (access != Status.SUCCESS) {
            req.errorLocation = Command.OPCODE;
            return access;
        }
        switch (opcode) {
            case Opcodes.IO_READ:
                req.execute = IoCommands::executeRead;
                return blockRange(req, ns, Request.DIR_CONTROLLER_TO_HOST);
            case Opcodes.IO_WRITE:
                req.execute = IoCommands::executeWrite;
                return blockRange(req, ns, Request.DIR_HOST_TO_CONTROLLER);
            case Opcodes.IO_COMPARE:
                req.execute = IoCommands::executeCompare;
                return blockRange(req, ns, Request.DIR_HOST_TO_CONTROLLER);
            case Opcodes.IO_WRITE_ZEROES:
                req.execute = IoCommands::executeWriteZeroes;
                return blockRange(req, ns, Request.DIR_NONE);
            case Opcodes.IO_FLUSH:
                req.execute = IoCommands::executeFlush;
                return Status.SUCCESS;
            case Opcodes.IO_DATASET_MANAGEMENT: {
                // Like Linux, accept an SGL longer than the ranges (hosts may send a whole page).
                int needed = cmd.rangeCount() * DatasetRange.LENGTH;
                long sgl = req.sglLength();
                req.transferLength = sgl > needed && sgl <= 4096 ? (int) sgl : needed;
                req.direction = Request.DIR_HOST_TO_CONTROLLER;
                req.execute = IoCommands::executeDatasetManagement;
                return Status.SUCCESS;
            }
            case Opcodes.IO_RESERVATION_REGISTER:
            case Opcodes.IO_RESERVATION_REPORT:
            case Opcodes.IO_RESERVATION_ACQUIRE:
            case Opcodes.IO_RESERVATION_RELEASE:
                if (ReservationCommands.unavailable(req)) {
                    req.errorLocation = Command.OPCODE;
                    return Status.INVALID_OPCODE | Status.DNR;
                }
                return ReservationCommands.parse(req);
            default:
                req.errorLocation = Command.OPCODE;
                return Status.INVALID_OPCODE | Status.DNR;
        }
    }

    /** Checks SLBA + NLB against the namespace and the transfer size against MDTS. */
    private static int blockRange(Request req, Namespace ns, int direction) {
        long slba = req.cmd.slba();
        int blocks = req.cmd.blockCount();
        if (slba < 0 || slba > ns.blockCount() - blocks) {
            req.errorLocation = Command.CDW10;
            return Status.LBA_RANGE | Status.DNR;
        }
        if (direction == Request.DIR_NONE) {
            return Status.SUCCESS;
        }
        long bytes = (long) blocks << ns.blockShift();
        if (bytes > req.sq().core().limits().maxTransferSize()) {
            req.errorLocation = Command.CDW12;
            return Status.INVALID_FIELD | Status.DNR;
        }
        req.transferLength = (int) bytes;
        req.direction = direction;
        return Status.SUCCESS;
    }

    private static long byteOffset(Request req) {
        return req.cmd.slba() << req.ns.blockShift();
    }

    static void executeRead(Request req) {
        if (req.sourceRegion != null) {
            // The transport sends straight from the namespace's memory: nothing to copy here.
            req.sq().countRead(req.transferLength);
            req.complete(Status.SUCCESS);
            return;
        }
        req.allocateData(false);
        if (startRing(req, StorageRing.Op.READ)) {
            return; // completes in readDone
        }
        if (req.ns.backend().ioMayBlock()) { // a file with no ring to take it: a backend thread reads it
            req.sq().core().executeOffPollGroup(req, TargetCore.BackendKind.DATA, BLOCKING_READ,
                    Status.UNRECOVERED_READ_ERROR);
            return;
        }
        try {
            req.ns.backend().read(byteOffset(req), req.dataNio());
        } catch (IOException e) {
            LOG.warn("read of namespace {} failed: {}", req.ns.nsid(), e.toString());
            req.complete(Status.UNRECOVERED_READ_ERROR);
            return;
        }
        SubmissionQueue sq = req.sq();
        sq.countRead(req.transferLength);
        req.complete(Status.SUCCESS);
    }

    static void executeWrite(Request req) {
        if (!req.dataInNamespace && startRing(req, StorageRing.Op.WRITE)) {
            return; // completes in writeDone
        }
        if (!req.dataInNamespace && req.ns.backend().ioMayBlock()) { // a file with no ring: a backend thread writes
            ownData(req);
            req.sq().core().executeOffPollGroup(req, TargetCore.BackendKind.DATA, BLOCKING_WRITE, Status.WRITE_FAULT);
            return;
        }
        try {
            if (!req.dataInNamespace) { // else the transport has stored it as it arrived
                req.ns.backend().write(byteOffset(req), req.dataNio());
            }
        } catch (IOException e) {
            LOG.warn("write to namespace {} failed: {}", req.ns.nsid(), e.toString());
            req.complete(Status.WRITE_FAULT);
            return;
        }
        req.sq().countWrite(req.transferLength);
        if (req.cmd.fua() || !req.sq().controller().writeCacheEnabled()) {
            // Durable before it completes: the data is stored (above, on this thread, while the transport's buffer
            // is still valid), so only the flush is left; it goes to the namespace's flush lane where it may block (a
            // file's fdatasync), and the buffer is given back now rather than held across it.
            req.releaseData();
            run(req, req.ns.backend().mayBlock(0), TargetCore.BackendKind.FLUSH_OF_STORED_WRITE, IoCommands::flush);
            return;
        }
        req.complete(Status.SUCCESS);
    }

    static void executeCompare(Request req) {
        RingFile dio = req.ns.backend().ringFile();
        StorageRing ring = dio != null ? req.sq().transport().storageRing() : null;
        if (ring != null && dio.fits(0, byteOffset(req), req.transferLength)) {
            // What the namespace holds is read through the ring beside the host's data, then compared.
            ownData(req);
            req.storedData = DirectBuffers.allocate(req.transferLength);
            ring.read(req, dio.fd(), req.storedData.memoryAddress(), req.transferLength, byteOffset(req),
                    IoCommands::compareDone);
            return;
        }
        if (req.ns.backend().ioMayBlock()) {
            ownData(req);
            req.sq().core().executeOffPollGroup(req, TargetCore.BackendKind.DATA, IoCommands::compareStored,
                    Status.UNRECOVERED_READ_ERROR);
            return;
        }
        req.complete(compareStored(req));
    }

    /** Reads what the namespace holds and compares the host's data with it; returns the status. */
    private static int compareStored(Request req) {
        // Scratch memory, not the transport's: over RDMA that is the registered pool, which data transfers need.
        ByteBuf stored = ByteBufAllocator.DEFAULT.directBuffer(req.transferLength, req.transferLength);
        try {
            ByteBuffer nio = stored.internalNioBuffer(0, req.transferLength);
            req.ns.backend().read(byteOffset(req), nio);
            stored.writerIndex(req.transferLength);
            boolean same = io.netty.buffer.ByteBufUtil.equals(stored, 0, req.data, req.data.readerIndex(), req.transferLength);
            return same ? Status.SUCCESS : Status.COMPARE_FAILED | Status.DNR;
        } catch (IOException e) {
            if (e instanceof io.nvmeof.tgt.backend.PastEndOfStorageException && pastEnd(req)) {
                return Status.LBA_RANGE | Status.DNR;
            }
            LOG.warn("read of namespace {} for a compare failed: {}", req.ns.nsid(), e.toString());
            return Status.UNRECOVERED_READ_ERROR;
        } finally {
            stored.release();
        }
    }

    /**
     * A read or write of a file with no ring to take it (io_uring unavailable), on a backend thread of the
     * namespace's data lane; counted on the queue's thread as it completes.
     */
    private static final TargetCore.BackendCall BLOCKING_READ = new TargetCore.BackendCall() {
        @Override
        public int run(Request req) {
            try {
                req.ns.backend().read(byteOffset(req), req.dataNio());
                return Status.SUCCESS;
            } catch (IOException e) {
                return blockingIoFailed(req, e, Status.UNRECOVERED_READ_ERROR);
            }
        }

        @Override
        public void completing(Request req, int status) {
            if (status == Status.SUCCESS) {
                req.sq().countRead(req.transferLength);
            }
        }
    };

    private static final TargetCore.BackendCall BLOCKING_WRITE = new TargetCore.BackendCall() {
        @Override
        public int run(Request req) {
            try {
                req.ns.backend().write(byteOffset(req), req.dataNio());
                io.nvmeof.tgt.core.Controller c = req.sq().controller();
                if (req.cmd.fua() || c != null && !c.writeCacheEnabled()) {
                    req.ns.backend().flush(); // durable before it completes, on the same thread
                }
                return Status.SUCCESS;
            } catch (IOException e) {
                return blockingIoFailed(req, e, Status.WRITE_FAULT);
            }
        }

        @Override
        public void completing(Request req, int status) {
            if (status == Status.SUCCESS) {
                req.sq().countWrite(req.transferLength);
            }
        }
    };

    /** A device that failed a read or write on a backend thread: logged once per namespace, as the ring's failures. */
    private static int blockingIoFailed(Request req, IOException e, int failure) {
        if ((e instanceof io.nvmeof.tgt.backend.PastEndOfStorageException || failure == Status.WRITE_FAULT)
                && pastEnd(req)) {
            return Status.LBA_RANGE | Status.DNR;
        }
        if (req.ns.noteDeviceError()) {
            LOG.error("namespace {} ({}): the device failed a command: {}; further failures are counted, not logged",
                    req.ns.nsid(), req.ns.backend().describe(), e.toString());
        }
        return failure;
    }

    /**
     * NVMe/TCP in-capsule data may be a view of the receive buffer, valid only until the capsule's command has been
     * submitted: work that reads it later (the kernel, a backend thread) needs a copy of its own. RDMA's buffers stay
     * the request's.
     */
    private static void ownData(Request req) {
        if (req.dataInCapsule && !req.sq().transport().keyedSgls()) {
            io.netty.buffer.ByteBuf own = DirectBuffers.allocate(req.transferLength);
            own.setBytes(0, req.data, req.data.readerIndex(), req.transferLength);
            req.data.release();
            req.data = own;
        }
    }

    // Flush and Write Zeroes go through non-capturing method references (one shared instance each): no allocation per
    // command, and the same step whether it runs here or in a backend lane.

    static void executeWriteZeroes(Request req) {
        long bytes = (long) req.cmd.blockCount() << req.ns.blockShift();
        run(req, req.ns.backend().mayBlock(bytes), TargetCore.BackendKind.SPACE, IoCommands::writeZeroes);
    }

    private static int writeZeroes(Request req) throws IOException {
        long length = (long) req.cmd.blockCount() << req.ns.blockShift();
        if (req.cmd.deallocateHint()) {
            req.ns.backend().deallocate(byteOffset(req), length);
        } else {
            req.ns.backend().writeZeroes(byteOffset(req), length);
        }
        return Status.SUCCESS;
    }

    static void executeFlush(Request req) {
        RingFile dio = req.ns.backend().ringFile();
        StorageRing ring = dio != null ? req.sq().transport().storageRing() : null;
        if (ring != null) {
            ring.flush(req, dio.fd(), IoCommands::flushDone);
            return;
        }
        run(req, req.ns.backend().mayBlock(0), TargetCore.BackendKind.FLUSH, IoCommands::flush);
    }

    private static int flush(Request req) throws IOException {
        req.ns.backend().flush();
        return Status.SUCCESS;
    }

    static void executeFlushAll(Request req) {
        boolean mayBlock = false;
        for (Namespace ns : req.sq().controller().subsystem().namespaces()) {
            mayBlock |= ns.backend().mayBlock(0);
        }
        run(req, mayBlock, TargetCore.BackendKind.FLUSH, IoCommands::flushAll);
    }

    private static int flushAll(Request req) throws IOException {
        for (Namespace ns : req.sq().controller().subsystem().namespaces()) {
            ns.flushBackend(); // skips one removed and closed since the list was taken
        }
        return Status.SUCCESS;
    }

    static void executeDatasetManagement(Request req) {
        if (!req.cmd.deallocateAttribute()) {
            // Only the deallocate attribute changes anything; hints are accepted and ignored.
            req.complete(Status.SUCCESS);
            return;
        }
        Namespace ns = req.ns;
        UnsafeBuffer view = req.dataView();
        DatasetRange range = new DatasetRange();
        int count = req.cmd.rangeCount();
        // Every range is checked before any is deallocated: a bad one changes nothing.
        long[] offsets = new long[count];
        long[] lengths = new long[count];
        long total = 0;
        for (int i = 0; i < count; i++) {
            range.wrap(view, i * DatasetRange.LENGTH);
            long slba = range.slba();
            long blocks = range.blocks();
            if (slba < 0 || blocks > ns.blockCount() || slba > ns.blockCount() - blocks) {
                req.errorLocation = Command.DPTR;
                req.complete(Status.LBA_RANGE | Status.DNR);
                return;
            }
            offsets[i] = slba << ns.blockShift();
            lengths[i] = blocks << ns.blockShift();
            total += lengths[i];
        }
        run(req, ns.backend().mayBlock(total), TargetCore.BackendKind.SPACE, r -> {
            for (int i = 0; i < count; i++) {
                r.ns.backend().deallocate(offsets[i], lengths[i]);
            }
            return Status.SUCCESS;
        });
    }

    /**
     * Hands a read or write of a file or block namespace to the poll group's io_uring; false (nothing done) when the
     * namespace has no descriptor for it or the transport has no ring. A buffer direct I/O cannot use (not aligned as
     * the device needs) is first replaced by an aligned one, with the write's data copied into it.
     */
    private static boolean startRing(Request req, StorageRing.Op op) {
        RingFile dio = req.ns.backend().ringFile();
        if (dio == null) {
            return false;
        }
        StorageRing ring = req.sq().transport().storageRing();
        if (ring == null) {
            return false;
        }
        long offset = byteOffset(req);
        int length = req.transferLength;
        boolean keyed = req.sq().transport().keyedSgls();
        // NVMe/TCP in-capsule data may be a view of the receive buffer, valid only until the capsule's command has
        // been submitted; the kernel reads the buffer later: always a copy of its own.
        boolean lent = req.dataInCapsule && !keyed;
        if (lent || !req.data.hasMemoryAddress()
                || !dio.fits(req.data.memoryAddress() + req.data.readerIndex(), offset, length)) {
            if (keyed || !dio.fits(0, offset, length)) {
                return false; // RDMA's registered buffer must stay the request's; an odd block size stays buffered
            }
            io.netty.buffer.ByteBuf aligned = DirectBuffers.allocate(length);
            if (op == StorageRing.Op.WRITE) {
                aligned.setBytes(0, req.data, req.data.readerIndex(), length);
            }
            req.data.release();
            req.data = aligned;
        }
        long address = req.data.memoryAddress() + req.data.readerIndex();
        if (op == StorageRing.Op.READ) {
            ring.read(req, dio.fd(), address, length, offset, IoCommands::readDone);
        } else {
            io.nvmeof.tgt.core.Controller c = req.sq().controller();
            boolean durable = req.cmd.fua() || c != null && !c.writeCacheEnabled();
            ring.write(req, dio.fd(), address, length, offset, durable ? io.nvmeof.uring.IoUring.RWF_DSYNC : 0,
                    IoCommands::writeDone);
        }
        return true;
    }

    private static void readDone(Request req, int result) {
        if (result == req.transferLength) {
            req.sq().countRead(req.transferLength);
            req.complete(Status.SUCCESS);
            return;
        }
        // Cut short: the file or device ends before the namespace does (it shrank underneath). Never zeroes with
        // success, as nvmet and SPDK fail a short transfer.
        req.complete(pastEnd(req) ? Status.LBA_RANGE | Status.DNR
                : deviceError(req, result < 0 ? -result : EIO, Status.UNRECOVERED_READ_ERROR));
    }

    private static final int EIO = 5;

    /**
     * After a read or write the storage cut short or refused: measures the storage again (an error path: one
     * {@code fstat} or size ioctl), shrinking the namespace and telling its hosts when it shrank underneath
     * ({@link io.nvmeof.tgt.core.Subsystem#revalidate}); true when the command's blocks are past the namespace's end
     * now, so it completes with LBA Out of Range, as I/O there is refused from now on.
     */
    private static boolean pastEnd(Request req) {
        io.nvmeof.tgt.core.Controller c = req.sq().controller();
        if (c != null) {
            c.subsystem().revalidate(req.ns);
        }
        if (req.cmd.slba() + req.cmd.blockCount() > req.ns.blockCount()) {
            req.errorLocation = Command.CDW10;
            return true;
        }
        return false;
    }

    private static void compareDone(Request req, int result) {
        io.netty.buffer.ByteBuf stored = req.storedData;
        req.storedData = null;
        try {
            if (result < 0) {
                req.complete(deviceError(req, -result, Status.UNRECOVERED_READ_ERROR));
                return;
            }
            if (result < req.transferLength) {
                req.complete(pastEnd(req) ? Status.LBA_RANGE | Status.DNR
                        : deviceError(req, EIO, Status.UNRECOVERED_READ_ERROR));
                return;
            }
            boolean same = io.netty.buffer.ByteBufUtil.equals(stored, 0, req.data, req.data.readerIndex(),
                    req.transferLength);
            req.complete(same ? Status.SUCCESS : Status.COMPARE_FAILED | Status.DNR);
        } finally {
            stored.release();
        }
    }

    private static void writeDone(Request req, int result) {
        if (result == req.transferLength) {
            req.sq().countWrite(req.transferLength);
            req.complete(Status.SUCCESS);
            return;
        }
        // A short direct write: the device or file system stopped part way (out of space, as a rule), or a device that
        // shrank underneath ends before it.
        req.complete(pastEnd(req) ? Status.LBA_RANGE | Status.DNR
                : deviceError(req, result < 0 ? -result : 28, Status.WRITE_FAULT));
    }

    private static void flushDone(Request req, int result) {
        req.complete(result == 0 ? Status.SUCCESS : deviceError(req, -result, Status.WRITE_FAULT));
    }

    /**
     * The NVMe status for a failed device request (as nvmet's errno_to_nvme_status): out of space is Capacity
     * Exceeded, anything else the media error {@code failure}. Logged once per namespace, not per I/O: a device that
     * went away fails every command after it.
     */
    private static int deviceError(Request req, int errno, int failure) {
        if (req.ns.noteDeviceError()) {
            LOG.error("namespace {} ({}): the device failed a command with errno {}; further failures are counted, not"
                    + " logged", req.ns.nsid(), req.ns.backend().describe(), errno);
        }
        return errno == 28 ? Status.CAPACITY_EXCEEDED | Status.DNR : failure;
    }

    /** Runs a backend step here, or off the poll group in its namespace's lane for {@code kind} when it may block. */
    private static void run(Request req, boolean mayBlock, TargetCore.BackendKind kind, TargetCore.BackendCall call) {
        if (mayBlock) {
            req.sq().core().executeOffPollGroup(req, kind, call, Status.WRITE_FAULT);
            return;
        }
        int status;
        try {
            status = call.run(req);
        } catch (IOException e) {
            LOG.warn("namespace {}: {}", req.ns != null ? req.ns.nsid() : 0, e.toString());
            status = Status.WRITE_FAULT;
        }
        req.complete(status);
    }
}

package io.nvmeof.initiator;

import io.nvmeof.protocol.Status;
import java.nio.ByteBuffer;

/**
 * One request of a {@link MultipathNamespace}: what to send, and where it failed this round. It is the completion
 * callback of each path it is sent on, so failing over allocates nothing. Owned by one thread at a time (the
 * submitter, then the I/O thread of the path it is on, or the waiting queue), handed on through the queues; the
 * callback flavour's are preallocated and used again once their caller was told.
 */
final class MultipathIo implements IoCallback {
    private final MultipathNamespace owner;
    /** Returned to the owner's pool when done (the callback flavour's preallocated requests). */
    private final boolean pooled;

    String op;
    int opcode;
    long lba;
    /** 0 for a flush. */
    int blocks;
    int dir;
    ByteBuffer buf;
    /** The buffer's position when submitted: every path transfers from there, whatever the buffer's position now. */
    int bufOffset;
    int length;
    int cdw12Flags;
    private IoCallback callback;
    private long context;
    private BufferSafeFuture future;

    /** The path it is sent on now. */
    int path;
    /** The paths that failed it this round (bit p: path p). */
    long failedPaths;
    /**
     * The paths whose lost association it may still run on (bit p: path p): it changes the media and failed with that
     * association, so it goes nowhere before each one's {@link NvmeofController#fencedAtNanos()}.
     */
    long fencedPaths;
    /** Whether its present wait for {@link #fencedPaths} is counted in {@link MultipathNamespace#fencedWaits()}. */
    boolean fenceWaitCounted;
    /** When it stops waiting for a usable path (System.nanoTime); 0 while it has not waited. */
    long deadline;
    /** The last path failure's status, returned when no path serves it in time. */
    int lastStatus;
    /** A path that refused it outright says why. */
    String lastPathFailure;

    MultipathIo(MultipathNamespace owner, boolean pooled) {
        this.owner = owner;
        this.pooled = pooled;
    }

    void prepare(String op, int opcode, long lba, int blocks, int dir, ByteBuffer buf, int length, int cdw12Flags,
                 IoCallback callback, long context, BufferSafeFuture future) {
        this.op = op;
        this.opcode = opcode;
        this.lba = lba;
        this.blocks = blocks;
        this.dir = dir;
        this.buf = buf;
        this.bufOffset = buf != null ? buf.position() : 0;
        this.length = length;
        this.cdw12Flags = cdw12Flags;
        this.callback = callback;
        this.context = context;
        this.future = future;
        this.path = -1;
        this.failedPaths = 0;
        this.fencedPaths = 0;
        this.fenceWaitCounted = false;
        this.deadline = 0;
        this.lastStatus = 0;
        this.lastPathFailure = null;
    }

    /** The path's completion (its I/O thread). */
    @Override
    public void onComplete(long ignored, int status) {
        owner.completed(this, status);
    }

    /** Tells the caller: {@code status} as a path returned it, or why no path served it ({@code why}). */
    void finish(int status, String why) {
        IoCallback cb = callback;
        long ctx = context;
        BufferSafeFuture f = future;
        Throwable failure = status == 0 || f == null ? null : failure(status, why);
        buf = null;
        callback = null;
        future = null;
        if (pooled) {
            owner.recycle(this); // before the callback: it may submit the next request at once
        }
        if (cb != null) {
            cb.onComplete(ctx, status);
        } else {
            f.ioDone(failure);
        }
    }

    private NvmeofException failure(int status, String why) {
        String what = blocks == 0 ? op + " (nsid " + owner.nsid() + ", multipath)"
                : op + " (nsid " + owner.nsid() + ", lba " + lba + ", " + blocks + " blocks, multipath)";
        String where = path >= 0 ? " through " + owner.pathName(path) : "";
        if (why == null && status > 0) {
            return new NvmeStatusException(what + where, status, Status.SET_IO);
        }
        String text = what + " failed" + (why != null ? ": " + why : where) + "; last path failure: "
                + IoCallback.describe(status) + (lastPathFailure != null ? " (" + lastPathFailure + ")" : "");
        ErrorKind kind = ErrorKind.of(status);
        return new NvmeofException(text, kind != null ? kind : ErrorKind.OTHER);
    }
}

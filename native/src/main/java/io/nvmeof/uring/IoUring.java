package io.nvmeof.uring;

import org.agrona.UnsafeApi;

/**
 * One io_uring, used by one thread (a poll group's): requests are written straight into the kernel's mapped submission
 * ring, handed over in batches by {@link #submit()} (one {@code io_uring_enter} per batch) and their completions read
 * straight from the completion ring by {@link #reap} (no native call at all). Nothing here allocates or locks per
 * request.
 *
 * <p>Capacity: a request is only accepted while both rings have room for it ({@link #capacity()}): the submission ring
 * for what is prepared and not yet taken by the kernel, the completion ring for everything not yet reaped, so the
 * kernel never has a completion it cannot post. A full ring refuses ({@code false}); the caller keeps the request
 * waiting in its own order and tries again after a {@link #reap}.
 *
 * <p>Completions come in any order (a flush's may come before a write's submitted earlier); each carries the 64-bit
 * {@code userData} its request was given. Memory a request reads or writes must stay valid until its completion is
 * reaped.
 *
 * <p>Not thread-safe: every method but {@link #eventFd()} and {@link #wake()} belongs to the thread that uses the ring.
 */
public final class IoUring implements AutoCloseable {
    /** The kernel's {@code struct io_uring_sqe} and {@code struct io_uring_cqe} sizes. */
    static final int SQE_SIZE = 64;
    static final int CQE_SIZE = 16;

    // Opcodes (include/uapi/linux/io_uring.h; fixed by the kernel's ABI).
    static final byte OP_NOP = 0;
    static final byte OP_FSYNC = 3;
    static final byte OP_FALLOCATE = 17;
    static final byte OP_READ = 22;
    static final byte OP_WRITE = 23;

    /** {@code RWF_DSYNC}: a write that is durable when it completes (NVMe FUA). */
    public static final int RWF_DSYNC = 0x2;
    /** {@code FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE}. */
    public static final int FALLOC_PUNCH_HOLE = 0x01 | 0x02;
    /** {@code FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE}. */
    public static final int FALLOC_ZERO_RANGE = 0x01 | 0x10;
    private static final int FSYNC_DATASYNC = 1;

    // struct io_uring_sqe offsets
    private static final int SQE_OPCODE = 0;
    private static final int SQE_FD = 4;
    private static final int SQE_OFF = 8;
    private static final int SQE_ADDR = 16;
    private static final int SQE_LEN = 24;
    private static final int SQE_RW_FLAGS = 28;
    private static final int SQE_USER_DATA = 32;

    // Indexes of nvu_setup's long[] (nvmeof_uring.c)
    private static final int RING_FD = 0;
    private static final int RING_SQ_ENTRIES = 1;
    private static final int RING_CQ_ENTRIES = 2;
    private static final int RING_SQ_HEAD = 4;
    private static final int RING_SQ_TAIL = 5;
    private static final int RING_SQ_MASK = 6;
    private static final int RING_SQES = 8;
    private static final int RING_CQ_HEAD = 9;
    private static final int RING_CQ_TAIL = 10;
    private static final int RING_CQ_MASK = 11;
    private static final int RING_CQES = 12;
    private static final int RING_CQ_FLAGS = 19;
    /** IORING_CQ_EVENTFD_DISABLED (kernel 5.8). */
    private static final int CQ_EVENTFD_DISABLED = 1;

    private static final int EINTR = 4;
    private static final int EAGAIN = 11;
    private static final int EBUSY = 16;

    /** Receives one completion: the request's {@code userData} and the kernel's result (bytes, 0, or -errno). */
    @FunctionalInterface
    public interface Completions {
        void complete(long userData, int result);
    }

    private final long[] info;
    private final int ringFd;
    private final int sqEntries;
    private final int cqEntries;
    private final long sqHead;
    private final long sqTail;
    private final int sqMask;
    private final long sqes;
    private final long cqHead;
    private final long cqTail;
    private final int cqMask;
    private final long cqes;
    /** The CQ ring's flags word, or 0 where the kernel has none. */
    private final long cqFlags;

    /** The submission tail as this thread has written it; published to the kernel by {@link #submit()}. */
    private int tail;
    /** Prepared and not yet taken by the kernel. */
    private int prepared;
    /** Taken by the kernel and not yet reaped. */
    private int inFlight;
    private volatile int eventFd = -1;
    private boolean closed;

    private IoUring(long[] info) {
        this.info = info;
        this.ringFd = (int) info[RING_FD];
        this.sqEntries = (int) info[RING_SQ_ENTRIES];
        this.cqEntries = (int) info[RING_CQ_ENTRIES];
        this.sqHead = info[RING_SQ_HEAD];
        this.sqTail = info[RING_SQ_TAIL];
        this.sqMask = (int) info[RING_SQ_MASK];
        this.sqes = info[RING_SQES];
        this.cqHead = info[RING_CQ_HEAD];
        this.cqTail = info[RING_CQ_TAIL];
        this.cqMask = (int) info[RING_CQ_MASK];
        this.cqes = info[RING_CQES];
        this.cqFlags = info[RING_CQ_FLAGS];
        this.tail = UnsafeApi.getIntAcquire(null, sqTail);
    }

    /**
     * Sets up a ring of {@code entries} submissions (a power of two is used; the kernel clamps it to its maximum) and
     * a completion ring twice that size.
     */
    public static IoUring open(int entries) throws UringException {
        if (entries < 1) {
            throw new IllegalArgumentException("a ring needs at least one entry, not " + entries);
        }
        UringLibrary.requireAvailable();
        long[] info = new long[UringNative.nvu_ring_info_length()];
        int r = UringNative.nvu_setup(entries, 0, info);
        if (r < 0) {
            throw new UringException("io_uring_setup(" + entries + ")", -r);
        }
        return new IoUring(info);
    }

    /** Submission entries the kernel gave this ring. */
    public int submissionEntries() {
        return sqEntries;
    }

    /** How many more requests this ring takes now (see the class comment). */
    public int capacity() {
        int sqFree = sqEntries - (tail - UnsafeApi.getIntAcquire(null, sqHead));
        int cqFree = cqEntries - inFlight - prepared;
        return Math.min(sqFree, cqFree);
    }

    /** Requests prepared and not yet submitted. */
    public int prepared() {
        return prepared;
    }

    /** Requests submitted whose completion has not been reaped. */
    public int inFlight() {
        return inFlight;
    }

    /** Prepares a read of {@code length} bytes at {@code offset} of {@code fd} into memory at {@code address}. */
    public boolean read(int fd, long address, int length, long offset, long userData) {
        return prepare(OP_READ, fd, offset, address, length, 0, userData);
    }

    /** Prepares a write; {@code rwFlags} {@link #RWF_DSYNC} makes it durable before it completes. */
    public boolean write(int fd, long address, int length, long offset, int rwFlags, long userData) {
        return prepare(OP_WRITE, fd, offset, address, length, rwFlags, userData);
    }

    /**
     * Prepares an {@code fdatasync} of {@code fd}. It covers the writes that completed before it was submitted, not
     * those still in flight (io_uring does not order requests), which is what NVMe's Flush promises too.
     */
    public boolean fdatasync(int fd, long userData) {
        return prepare(OP_FSYNC, fd, 0, 0, 0, FSYNC_DATASYNC, userData);
    }

    /** Prepares a {@code fallocate} ({@link #FALLOC_PUNCH_HOLE}, {@link #FALLOC_ZERO_RANGE}) of a range of a file. */
    public boolean fallocate(int fd, int mode, long offset, long length, long userData) {
        // As the kernel reads IORING_OP_FALLOCATE: the length travels in addr, the mode in len.
        return prepare(OP_FALLOCATE, fd, offset, length, mode, 0, userData);
    }

    /** Prepares a request that does nothing but complete (result 0): a wake-up, or a test of the ring. */
    public boolean nop(long userData) {
        return prepare(OP_NOP, -1, 0, 0, 0, 0, userData);
    }

    /** Writes one submission entry at the tail, or refuses (false) when the rings have no room for it. */
    private boolean prepare(byte opcode, int fd, long off, long addr, int len, int rwFlags, long userData) {
        if (closed) {
            throw new IllegalStateException("the ring is closed");
        }
        if (capacity() <= 0) {
            return false;
        }
        long sqe = sqes + (long) (tail & sqMask) * SQE_SIZE;
        tail++;
        prepared++;
        fill(sqe, opcode, fd, off, addr, len, rwFlags, userData);
        return true;
    }

    private static void fill(long sqe, byte opcode, int fd, long off, long addr, int len, int rwFlags, long userData) {
        UnsafeApi.putLong(sqe, 0L); // opcode, flags, ioprio, fd
        UnsafeApi.putByte(sqe + SQE_OPCODE, opcode);
        UnsafeApi.putInt(sqe + SQE_FD, fd);
        UnsafeApi.putLong(sqe + SQE_OFF, off);
        UnsafeApi.putLong(sqe + SQE_ADDR, addr);
        UnsafeApi.putInt(sqe + SQE_LEN, len);
        UnsafeApi.putInt(sqe + SQE_RW_FLAGS, rwFlags);
        UnsafeApi.putLong(sqe + SQE_USER_DATA, userData);
        UnsafeApi.putLong(sqe + 40, 0L); // buf_index, personality, splice_fd_in
        UnsafeApi.putLong(sqe + 48, 0L); // addr3
        UnsafeApi.putLong(sqe + 56, 0L);
    }

    /**
     * Hands every prepared request to the kernel with one {@code io_uring_enter}, without waiting. Returns how many it
     * took; 0 when the kernel is short of memory for now (EAGAIN, EBUSY): they stay prepared for the next call.
     */
    public int submit() throws UringException {
        return enter(0);
    }

    /**
     * Submits what is prepared and waits until at least {@code minComplete} completions are ready to reap (for
     * blocking users: tests, a drain at close; never on a poll group).
     */
    public int submitAndWait(int minComplete) throws UringException {
        return enter(minComplete);
    }

    private int enter(int minComplete) throws UringException {
        if (prepared == 0 && minComplete == 0) {
            return 0;
        }
        // The entries' stores above happen before the kernel can see the new tail.
        UnsafeApi.putIntRelease(null, sqTail, tail);
        int r;
        do {
            r = UringNative.nvu_enter(ringFd, prepared, minComplete);
        } while (r == -EINTR);
        if (r == -EAGAIN || r == -EBUSY) {
            return 0;
        }
        if (r < 0) {
            throw new UringException("io_uring_enter", -r);
        }
        prepared -= r;
        inFlight += r;
        return r;
    }

    /**
     * Hands every completion the kernel has posted to {@code completions}, oldest first, and returns how many. Makes
     * no system call. {@code completions} may prepare new requests, but must not reap.
     */
    public int reap(Completions completions) {
        int head = UnsafeApi.getInt(cqHead);
        int end = UnsafeApi.getIntAcquire(null, cqTail);
        int n = 0;
        try {
            while (head != end) {
                long cqe = cqes + (long) (head & cqMask) * CQE_SIZE;
                long userData = UnsafeApi.getLong(cqe);
                int res = UnsafeApi.getInt(cqe + 8);
                head++;
                inFlight--;
                n++;
                completions.complete(userData, res);
            }
        } finally {
            // The slots are the kernel's again only after their contents were read.
            UnsafeApi.putIntRelease(null, cqHead, head);
        }
        return n;
    }

    /** Whether completions are waiting to be reaped (one memory read). */
    public boolean hasCompletions() {
        return UnsafeApi.getInt(cqHead) != UnsafeApi.getIntAcquire(null, cqTail);
    }

    /**
     * The ring's eventfd (set up on first call): the kernel signals it whenever it posts a completion, so an idle
     * thread can sleep in {@link #awaitCompletion} (or its own poll on the descriptor) instead of spinning.
     */
    public int eventFd() throws UringException {
        int efd = eventFd;
        if (efd < 0) {
            synchronized (this) {
                efd = eventFd;
                if (efd < 0) {
                    efd = UringNative.nvu_register_eventfd(ringFd);
                    if (efd < 0) {
                        throw new UringException("registering the ring's eventfd", -efd);
                    }
                    eventFd = efd;
                }
            }
        }
        return efd;
    }

    /**
     * Sleeps until the ring's eventfd is signaled (a completion was posted, or {@link #wake()}) or {@code timeoutMs}
     * passes, and clears it. True when it was signaled. Check {@link #hasCompletions()} before sleeping: a completion
     * posted before the eventfd was set up signaled nothing.
     */
    public boolean awaitCompletion(int timeoutMs) throws UringException {
        int r = UringNative.nvu_wait_eventfd(eventFd(), timeoutMs);
        if (r < 0) {
            throw new UringException("waiting on the ring's eventfd", -r);
        }
        return r > 0;
    }

    /**
     * Turns the kernel's eventfd signal on or off (IORING_CQ_EVENTFD_DISABLED): off while this thread polls the ring
     * anyway, so a thread waiting on the eventfd is not woken for every completion; on before it stops polling. On a
     * kernel before 5.8 the eventfd always fires. Only from the ring's thread.
     */
    public void eventFdEnabled(boolean on) {
        if (cqFlags == 0) {
            return;
        }
        int flags = UnsafeApi.getInt(cqFlags);
        int next = on ? flags & ~CQ_EVENTFD_DISABLED : flags | CQ_EVENTFD_DISABLED;
        if (next != flags) {
            UnsafeApi.putIntVolatile(null, cqFlags, next); // ordered before the check for completions that follows
        }
    }

    /** Signals the eventfd from any thread, ending an {@link #awaitCompletion} early. */
    public void wake() {
        int efd = eventFd;
        if (efd >= 0) {
            UringNative.nvu_signal_eventfd(efd);
        }
    }

    /** Caps the kernel's worker threads for this ring's work that cannot complete inline (fsync, fallocate). */
    public void limitWorkers(int bounded, int unbounded) throws UringException {
        int r = UringNative.nvu_max_workers(ringFd, bounded, unbounded);
        if (r < 0) {
            throw new UringException("IORING_REGISTER_IOWQ_MAX_WORKERS", -r);
        }
    }

    /**
     * Waits for every request in flight (their memory may still be written by the kernel until then), dropping their
     * completions, then releases the ring. A caller that must learn of them reaps until {@link #inFlight()} is 0
     * first.
     */
    @Override
    public void close() throws UringException {
        if (closed) {
            return;
        }
        try {
            while (prepared > 0 || inFlight > 0) {
                enter(inFlight + prepared > 0 ? 1 : 0);
                reap((u, r) -> { });
            }
        } finally {
            closed = true;
            if (eventFd >= 0) {
                UringNative.nvu_close(eventFd);
            }
            int r = UringNative.nvu_teardown(info);
            if (r < 0) {
                throw new UringException("closing the ring", -r);
            }
        }
    }
}

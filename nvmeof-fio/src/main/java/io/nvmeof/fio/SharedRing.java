package io.nvmeof.fio;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The memory the fio engine (C) and its job (Java) share, allocated by the engine, one per fio job. The engine writes
 * submissions and calls {@link FioJob#submit} once per batch; the job's completion callbacks write completions that
 * the engine's {@code getevents} reads without calling into Java. Layout (native byte order, offsets in bytes;
 * {@code native/src/main/fio/io_path.c} has the same):
 *
 * <pre>
 *     0  u64 tail        completions claimed so far (callbacks, fetch-and-add)
 *    64  u32 sleeping    set to 1 by the engine before it sleeps on the futex below; cleared by the one completer
 *                        that wakes it (or by the engine when it does not sleep after all)
 *    68  u32 futex       bumped by {@link FioJob#wake} before FUTEX_WAKE
 *    72  u32 wake at batch end   set by the engine before the first I/O: 1 to wake it once the I/O thread's batch of
 *                        completions is delivered, 0 to wake it at the first completion
 *   128  u32 ring capacity (power of two, at least twice fio's iodepth)
 *   132  u32 submission capacity
 *   192  completions: ring capacity x 16 bytes { u64 seq (position + 1 once written), u32 io_u index, i32 status }
 *        submissions: submission capacity x 32 bytes
 *                     { u8 op, 3 pad, u32 io_u index, u64 lba, u32 blocks, u32 fio file index (the job's
 *                       namespace), u64 offset in the I/O memory }
 * </pre>
 *
 * A completion is claimed by a fetch-and-add on {@code tail}, written, then published by a volatile store of its
 * {@code seq}; the engine takes entries in order while {@code seq == head + 1}. At most iodepth commands are
 * outstanding, so an entry is never overwritten before it is read.
 */
final class SharedRing {
    static final int TAIL = 0;
    static final int SLEEPING = 64;
    static final int FUTEX = 68;
    static final int WAKE_AT_BATCH_END = 72;
    static final int RING_CAPACITY = 128;
    static final int SUBMIT_CAPACITY = 132;
    static final int ENTRIES = 192;
    static final int ENTRY = 16;
    static final int SUBMISSION = 32;

    static final int OP_READ = 1;
    static final int OP_WRITE = 2;
    static final int OP_FLUSH = 3;
    static final int OP_TRIM = 4;

    final UnsafeBuffer buf;
    final int ringMask;
    final int submitCapacity;
    final int submissions;
    final long futexAddress;

    SharedRing(ByteBuffer shared) {
        if (!shared.isDirect()) {
            throw new IllegalArgumentException("the shared ring must be direct memory");
        }
        this.buf = new UnsafeBuffer(shared.order(ByteOrder.nativeOrder()));
        int ring = buf.getInt(RING_CAPACITY);
        if (Integer.bitCount(ring) != 1) {
            throw new IllegalArgumentException("ring capacity " + ring + " is not a power of two");
        }
        this.ringMask = ring - 1;
        this.submitCapacity = buf.getInt(SUBMIT_CAPACITY);
        this.submissions = ENTRIES + ring * ENTRY;
        if (submissions + (long) submitCapacity * SUBMISSION > buf.capacity()) {
            throw new IllegalArgumentException("the shared ring of " + buf.capacity() + " bytes is smaller than its layout");
        }
        this.futexAddress = buf.addressOffset() + FUTEX;
    }

    /** Publishes a completion (any thread). */
    void complete(int index, int status) {
        long pos = buf.getAndAddLong(TAIL, 1);
        int e = ENTRIES + (int) (pos & ringMask) * ENTRY;
        buf.putInt(e + 8, index);
        buf.putInt(e + 12, status);
        buf.putLongVolatile(e, pos + 1);
    }

    /**
     * After completions were published: true if the engine sleeps and this caller must wake it. The caller that
     * wakes it clears {@code sleeping} (compare-and-set), so one wake-up (a JNI call and a futex syscall) serves
     * however many completions arrived meanwhile. The volatile load follows the volatile stores of the completions'
     * {@code seq}, and the engine sets {@code sleeping} before it looks at the ring again: one side sees the other.
     */
    boolean takeWakeUp() {
        return buf.getIntVolatile(SLEEPING) != 0 && buf.compareAndSetInt(SLEEPING, 1, 0);
    }

    /** Whether the engine wants its wake-up at the end of the I/O thread's batch rather than at the first completion. */
    boolean wakesAtBatchEnd() {
        return buf.getInt(WAKE_AT_BATCH_END) != 0;
    }

    int op(int i) { return buf.getByte(submissions + i * SUBMISSION); }

    int index(int i) { return buf.getInt(submissions + i * SUBMISSION + 4); }

    long lba(int i) { return buf.getLong(submissions + i * SUBMISSION + 8); }

    int blocks(int i) { return buf.getInt(submissions + i * SUBMISSION + 16); }

    int file(int i) { return buf.getInt(submissions + i * SUBMISSION + 20); }

    long offset(int i) { return buf.getLong(submissions + i * SUBMISSION + 24); }
}

package io.nvmeof.fio;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The memory the fio engine (C) and its job (Java) share, allocated by the engine, one per fio job. The engine writes
 * submissions and calls {@link FioJob#submit} once per batch; the job's completion callbacks write completions that
 * the engine's {@code getevents} reads without calling into Java. Layout (native byte order, offsets in bytes;
 * {@code native/src/main/fio/nvmeof_fio.c} has the same):
 *
 * <pre>
 *     0  u64 tail        completions claimed so far (callbacks, fetch-and-add)
 *    64  u32 sleeping    1 while the engine sleeps on the futex below
 *    68  u32 futex       bumped by {@link FioJob#wake} before FUTEX_WAKE
 *   128  u32 ring capacity (power of two, at least twice fio's iodepth)
 *   132  u32 submission capacity
 *   192  completions: ring capacity x 16 bytes { u64 seq (position + 1 once written), u32 io_u index, i32 status }
 *        submissions: submission capacity x 32 bytes
 *                     { u8 op, 3 pad, u32 io_u index, u64 lba, u32 blocks, u32 pad, u64 offset in the I/O memory }
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

    /** Publishes a completion (any thread); true if the engine sleeps and must be woken. */
    boolean complete(int index, int status) {
        long pos = buf.getAndAddLong(TAIL, 1);
        int e = ENTRIES + (int) (pos & ringMask) * ENTRY;
        buf.putInt(e + 8, index);
        buf.putInt(e + 12, status);
        // A volatile store, so the load of "sleeping" below cannot be ordered before it (the engine sets sleeping,
        // then looks at the ring: one of the two sides sees the other).
        buf.putLongVolatile(e, pos + 1);
        return buf.getIntVolatile(SLEEPING) != 0;
    }

    int op(int i) { return buf.getByte(submissions + i * SUBMISSION); }

    int index(int i) { return buf.getInt(submissions + i * SUBMISSION + 4); }

    long lba(int i) { return buf.getLong(submissions + i * SUBMISSION + 8); }

    int blocks(int i) { return buf.getInt(submissions + i * SUBMISSION + 16); }

    long offset(int i) { return buf.getLong(submissions + i * SUBMISSION + 24); }
}

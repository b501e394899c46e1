package io.nvmeof.rdma;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

/**
 * A batch of send-queue work requests (SEND, SEND with invalidate, RDMA WRITE, RDMA READ), written as compact 48-byte
 * descriptors into a direct buffer and posted with ONE native call ({@link QueuePair#postSend(SendBatch)}).
 * Reusable and allocation-free: fill, post (which clears it), fill again. Not thread-safe: one per poller thread.
 *
 * <p>Descriptor layout (little-endian; the contract with nvmeof_rdma.h, which checks it with static asserts):
 * <pre>
 *   0 u64 wr_id     8 u64 local_addr   16 u64 remote_addr   24 u32 length   28 u32 lkey
 *  32 u32 rkey     36 u32 invalidate_rkey   40 u8 opcode   41 u8 flags   42..47 reserved (0)
 * </pre>
 * Order matters on an RC queue pair: work requests execute in posting order, so RDMA WRITEs added before the SEND of
 * a response are placed before it (the NVMe/RDMA read path), and only the last one needs {@link #SIGNALED}.
 */
public final class SendBatch {
    public static final int DESCRIPTOR_SIZE = 48;
    /** Most work requests one call posts (the helper builds the chain on its stack). */
    public static final int MAX_BATCH = 64;

    public static final int WR_ID_OFFSET = 0;
    public static final int LOCAL_ADDR_OFFSET = 8;
    public static final int REMOTE_ADDR_OFFSET = 16;
    public static final int LENGTH_OFFSET = 24;
    public static final int LKEY_OFFSET = 28;
    public static final int RKEY_OFFSET = 32;
    public static final int INVALIDATE_RKEY_OFFSET = 36;
    public static final int OPCODE_OFFSET = 40;
    public static final int FLAGS_OFFSET = 41;

    public static final int OP_SEND = 0;
    public static final int OP_SEND_WITH_INV = 1;
    public static final int OP_RDMA_WRITE = 2;
    public static final int OP_RDMA_READ = 3;

    /** Produce a completion for this work request (the QP is created with sq_sig_all = 0). */
    public static final int SIGNALED = 1;
    /** Wait for earlier RDMA READs on this QP to finish before starting this one. */
    public static final int FENCE = 2;
    /** Copy the payload into the work request: the buffer is free after posting and needs no lkey. */
    public static final int INLINE = 4;
    /** Raise a solicited event at the receiver (for an event-driven peer). */
    public static final int SOLICITED = 8;

    /** Owns the native memory the UnsafeBuffer points at (the UnsafeBuffer keeps only its address). */
    private final ByteBuffer memory;
    private final UnsafeBuffer buffer;
    private final int capacity;
    private final long address;
    private final long badIndexAddress;
    private int size;

    public SendBatch(int capacity) {
        if (capacity < 1 || capacity > MAX_BATCH) {
            throw new IllegalArgumentException("capacity must be 1.." + MAX_BATCH + ": " + capacity);
        }
        this.capacity = capacity;
        // 64-byte aligned (a cache line); 8 more bytes hold the index of a rejected descriptor after a failed post.
        this.memory = BufferUtil.allocateDirectAligned(capacity * DESCRIPTOR_SIZE + 64, 64);
        this.buffer = new UnsafeBuffer(memory);
        this.address = buffer.addressOffset();
        this.badIndexAddress = address + (long) capacity * DESCRIPTOR_SIZE;
    }

    public SendBatch send(long wrId, long localAddr, int length, int lkey, int flags) {
        return add(OP_SEND, wrId, localAddr, length, lkey, 0, 0, 0, flags);
    }

    /** SEND that also invalidates {@code invalidateRkey} at the receiver (NVMe/RDMA keyed SGL subtype 0xF). */
    public SendBatch sendWithInvalidate(long wrId, long localAddr, int length, int lkey, int invalidateRkey, int flags) {
        return add(OP_SEND_WITH_INV, wrId, localAddr, length, lkey, 0, 0, invalidateRkey, flags);
    }

    /** Local [localAddr, +length) → remote [remoteAddr, +length) under the peer's rkey. */
    public SendBatch rdmaWrite(long wrId, long localAddr, int length, int lkey, long remoteAddr, int rkey, int flags) {
        return add(OP_RDMA_WRITE, wrId, localAddr, length, lkey, remoteAddr, rkey, 0, flags);
    }

    /** Remote [remoteAddr, +length) under the peer's rkey → local [localAddr, +length). */
    public SendBatch rdmaRead(long wrId, long localAddr, int length, int lkey, long remoteAddr, int rkey, int flags) {
        return add(OP_RDMA_READ, wrId, localAddr, length, lkey, remoteAddr, rkey, 0, flags);
    }

    public SendBatch add(int opcode, long wrId, long localAddr, int length, int lkey, long remoteAddr, int rkey,
                         int invalidateRkey, int flags) {
        if (size == capacity) {
            throw new IllegalStateException("send batch full (" + capacity + "); post it first");
        }
        int o = size * DESCRIPTOR_SIZE;
        // Native byte order is little-endian here (RdmaLibrary refuses big-endian CPUs).
        buffer.putLong(o + WR_ID_OFFSET, wrId);
        buffer.putLong(o + LOCAL_ADDR_OFFSET, localAddr);
        buffer.putLong(o + REMOTE_ADDR_OFFSET, remoteAddr);
        buffer.putInt(o + LENGTH_OFFSET, length);
        buffer.putInt(o + LKEY_OFFSET, lkey);
        buffer.putInt(o + RKEY_OFFSET, rkey);
        buffer.putInt(o + INVALIDATE_RKEY_OFFSET, invalidateRkey);
        // opcode, flags and the 6 reserved bytes in one store
        buffer.putLong(o + OPCODE_OFFSET, (opcode & 0xFFL) | (flags & 0xFFL) << 8);
        size++;
        return this;
    }

    public int size() {
        return size;
    }

    public int capacity() {
        return capacity;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    public boolean isFull() {
        return size == capacity;
    }

    public void clear() {
        size = 0;
    }

    /** The descriptors, for inspection and tests. */
    public UnsafeBuffer buffer() {
        return buffer;
    }

    public long wrId(int i) {
        return buffer.getLong(i * DESCRIPTOR_SIZE + WR_ID_OFFSET);
    }

    public int opcode(int i) {
        return buffer.getByte(i * DESCRIPTOR_SIZE + OPCODE_OFFSET) & 0xFF;
    }

    public int flags(int i) {
        return buffer.getByte(i * DESCRIPTOR_SIZE + FLAGS_OFFSET) & 0xFF;
    }

    long address() {
        return address;
    }

    long badIndexAddress() {
        return badIndexAddress;
    }

    int badIndex() {
        return buffer.getInt(capacity * DESCRIPTOR_SIZE);
    }
}

package io.nvmeof.rdma;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

/**
 * A batch of receive buffers (24-byte descriptors) posted to a queue pair or a shared receive queue with ONE native
 * call. Reusable and allocation-free; posting clears it.
 *
 * <p>Layout (little-endian): {@code 0 u64 wr_id, 8 u64 addr, 16 u32 length, 20 u32 lkey}.
 */
public final class RecvBatch {
    public static final int DESCRIPTOR_SIZE = 24;
    public static final int MAX_BATCH = SendBatch.MAX_BATCH;
    public static final int WR_ID_OFFSET = 0;
    public static final int ADDR_OFFSET = 8;
    public static final int LENGTH_OFFSET = 16;
    public static final int LKEY_OFFSET = 20;

    private final ByteBuffer memory;
    private final UnsafeBuffer buffer;
    private final int capacity;
    private final long address;
    private final long badIndexAddress;
    private int size;

    public RecvBatch(int capacity) {
        if (capacity < 1 || capacity > MAX_BATCH) {
            throw new IllegalArgumentException("capacity must be 1.." + MAX_BATCH + ": " + capacity);
        }
        this.capacity = capacity;
        this.memory = BufferUtil.allocateDirectAligned(capacity * DESCRIPTOR_SIZE + 64, 64);
        this.buffer = new UnsafeBuffer(memory);
        this.address = buffer.addressOffset();
        this.badIndexAddress = address + (long) capacity * DESCRIPTOR_SIZE;
    }

    public RecvBatch add(long wrId, long addr, int length, int lkey) {
        if (size == capacity) {
            throw new IllegalStateException("receive batch full (" + capacity + "); post it first");
        }
        int o = size * DESCRIPTOR_SIZE;
        buffer.putLong(o + WR_ID_OFFSET, wrId);
        buffer.putLong(o + ADDR_OFFSET, addr);
        buffer.putInt(o + LENGTH_OFFSET, length);
        buffer.putInt(o + LKEY_OFFSET, lkey);
        size++;
        return this;
    }

    public int size() {
        return size;
    }

    public int capacity() {
        return capacity;
    }

    public boolean isFull() {
        return size == capacity;
    }

    public void clear() {
        size = 0;
    }

    public UnsafeBuffer buffer() {
        return buffer;
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

    ByteBuffer memory() {
        return memory;
    }
}

package io.nvmeof.rdma;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;

/**
 * Completions polled from a {@link CompletionQueue} with ONE native call, read in place (a flyweight over 32-byte
 * records in a reusable direct buffer; no allocation per completion).
 *
 * <p>Record layout (little-endian): {@code 0 u64 wr_id, 8 u32 status, 12 u32 opcode, 16 u32 byte_len,
 * 20 u32 wc_flags, 24 u32 imm_or_invalidated_rkey, 28 u32 qp_num}. After an error completion, {@link #opcode(int)}
 * is not meaningful (the verbs spec leaves it undefined); identify the request by its wr_id.
 */
public final class CompletionBatch {
    public static final int RECORD_SIZE = 32;
    public static final int WR_ID_OFFSET = 0;
    public static final int STATUS_OFFSET = 8;
    public static final int OPCODE_OFFSET = 12;
    public static final int BYTE_LEN_OFFSET = 16;
    public static final int WC_FLAGS_OFFSET = 20;
    public static final int IMM_OR_INVALIDATED_RKEY_OFFSET = 24;
    public static final int QP_NUM_OFFSET = 28;

    // enum ibv_wc_opcode
    public static final int WC_SEND = 0;
    public static final int WC_RDMA_WRITE = 1;
    public static final int WC_RDMA_READ = 2;
    public static final int WC_RECV = 128;
    public static final int WC_RECV_RDMA_WITH_IMM = 129;
    // enum ibv_wc_status (the ones callers test for)
    public static final int STATUS_SUCCESS = 0;
    public static final int STATUS_LOC_LEN_ERR = 1;
    public static final int STATUS_LOC_PROT_ERR = 4;
    public static final int STATUS_WR_FLUSH_ERR = 5;
    public static final int STATUS_REM_ACCESS_ERR = 10;
    public static final int STATUS_RETRY_EXC_ERR = 12;
    public static final int STATUS_RNR_RETRY_EXC_ERR = 13;
    // enum ibv_wc_flags
    public static final int WC_WITH_IMM = 2;
    public static final int WC_WITH_INV = 8;

    private final ByteBuffer memory;
    private final UnsafeBuffer buffer;
    private final int capacity;
    private final long address;
    private int count;

    public CompletionBatch(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
        this.memory = BufferUtil.allocateDirectAligned(capacity * RECORD_SIZE, 64);
        this.buffer = new UnsafeBuffer(memory);
        this.address = buffer.addressOffset();
    }

    /** Completions from the last poll. */
    public int count() {
        return count;
    }

    public int capacity() {
        return capacity;
    }

    public long wrId(int i) {
        return buffer.getLong(i * RECORD_SIZE + WR_ID_OFFSET);
    }

    public int status(int i) {
        return buffer.getInt(i * RECORD_SIZE + STATUS_OFFSET);
    }

    public boolean isSuccess(int i) {
        return status(i) == STATUS_SUCCESS;
    }

    public int opcode(int i) {
        return buffer.getInt(i * RECORD_SIZE + OPCODE_OFFSET);
    }

    public int byteLength(int i) {
        return buffer.getInt(i * RECORD_SIZE + BYTE_LEN_OFFSET);
    }

    public int wcFlags(int i) {
        return buffer.getInt(i * RECORD_SIZE + WC_FLAGS_OFFSET);
    }

    /** The rkey a SEND with invalidate invalidated (when {@code wcFlags & WC_WITH_INV}), or the immediate data. */
    public int immOrInvalidatedRkey(int i) {
        return buffer.getInt(i * RECORD_SIZE + IMM_OR_INVALIDATED_RKEY_OFFSET);
    }

    public int qpNum(int i) {
        return buffer.getInt(i * RECORD_SIZE + QP_NUM_OFFSET);
    }

    /** libibverbs' name for a status (ibv_wc_status_str), e.g. "remote access error". */
    public static String statusName(int status) {
        if (RdmaLibrary.isHelperLoaded()) {
            return IbvNative.ibv_wc_status_str(status) + " (" + status + ")";
        }
        return "status " + status;
    }

    public UnsafeBuffer buffer() {
        return buffer;
    }

    long address() {
        return address;
    }

    void count(int n) {
        count = n;
    }

    ByteBuffer memory() {
        return memory;
    }
}

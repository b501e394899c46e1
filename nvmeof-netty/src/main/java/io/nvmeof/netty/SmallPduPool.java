package io.nvmeof.netty;

import io.netty.util.concurrent.EventExecutor;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;

/**
 * Memory for a connection's small outbound PDUs (capsule responses, R2Ts, data PDU headers, data digests) without an
 * allocation per PDU: the connection writes each PDU into a fixed-size slot of memory it keeps and sends the slot as a
 * {@link BorrowedMemoryBuf}; when the channel has written that buffer and released it, the slot is free again.
 *
 * <p>WHY: each such PDU used to be a pooled Netty buffer of its own, and the pooled allocator's allocate and free were
 * the largest part of the target's Java time per 4 KiB write (a JFR profile of the poll group under writes). Fixed
 * slots rather than a ring: Netty releases written buffers in order, but a write to a channel that is closing is
 * released when it fails, and slots do not depend on any order. The slots a connection keeps grow to the most PDUs it
 * has had waiting in its socket at once, which the target bounds (a queue stops reading commands while the host does
 * not take what it was sent, so PDUs waiting are at most a few per request slot).
 *
 * <p>Memory comes from the JDK ({@link ByteBuffer#allocateDirect}) in slabs of {@value #SLOTS_PER_SLAB} slots and is
 * freed when the pool and every buffer over it are unreachable, so a buffer still held by a closed channel stays valid.
 *
 * <p>One event loop takes slots and writes them; a release from another thread is handed to that loop.
 */
public final class SmallPduPool {
    /**
     * The largest PDU a slot holds: a data PDU header padded to the largest data alignment a host may ask for
     * (HPDA 31: 128 bytes). Every other small PDU is 24 to 28 bytes.
     */
    public static final int SLOT_BYTES = 128;
    static final int SLOTS_PER_SLAB = 32;

    private final EventExecutor loop;
    /**
     * Room for 1,024 slots from the start: a list that grows under the first busy host runs a branch its compiled
     * code never saw, and that code is thrown away and made again (issue 53). 4 KiB of references per poll group.
     */
    private final ArrayDeque<Slot> free = new ArrayDeque<>(1024);
    private int slots;

    /** {@code loop} is the event loop that takes slots; releases made elsewhere are run there. */
    public SmallPduPool(EventExecutor loop) {
        this.loop = loop;
    }

    /**
     * A slot of {@code length} bytes, readable from index 0, with a reference count of 1. Its bytes are whatever the
     * slot held last: write all of them, through {@link BorrowedMemoryBuf#memoryAddress()}, before sending it (the
     * buffer itself is read-only to the channel).
     */
    public BorrowedMemoryBuf take(int length) {
        if (length <= 0 || length > SLOT_BYTES) {
            throw new IllegalArgumentException("a small PDU is 1 to " + SLOT_BYTES + " bytes, not " + length);
        }
        Slot s = free.pollFirst();
        if (s == null) {
            grow();
            s = free.pollFirst();
        }
        return s.view.borrow(this, s.slab, s.offset, length);
    }

    /** Slots made so far (in use or free), for tests and statistics. */
    public int slots() {
        return slots;
    }

    /** Slots free now, for tests. */
    public int freeSlots() {
        return free.size();
    }

    private void grow() {
        ByteBuffer slab = ByteBuffer.allocateDirect(SLOTS_PER_SLAB * SLOT_BYTES);
        for (int i = 0; i < SLOTS_PER_SLAB; i++) {
            free.addLast(new Slot(slab, i * SLOT_BYTES));
        }
        slots += SLOTS_PER_SLAB;
    }

    private void release(Slot s) {
        if (loop.inEventLoop()) {
            free.addFirst(s); // the most recently used slot is the one most likely still in cache
            return;
        }
        try {
            loop.execute(() -> free.addFirst(s));
        } catch (RejectedExecutionException e) {
            // the loop has ended, and the connection with it: nothing will take a slot again
        }
    }

    /** A slot and the one buffer that sends it, made together and kept together. */
    private final class Slot {
        final ByteBuffer slab;
        final int offset;
        final BorrowedMemoryBuf view;

        Slot(ByteBuffer slab, int offset) {
            this.slab = slab;
            this.offset = offset;
            this.view = new BorrowedMemoryBuf(v -> release(this));
        }
    }
}

package io.nvmeof.initiator.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.IoCallback;
import io.nvmeof.protocol.Opcodes;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * The transport-independent queue logic with a transport that records what it is asked to send and completes
 * commands when the test says so: slots, command identifiers, overflow order, back-pressure, failure of waiting work.
 */
class SlotQueueTest {
    static final class Slot extends QueueSlot {
        Slot(int index) {
            super(index, new UnsafeBuffer(new byte[64]));
        }
    }

    /** A transport whose "wire" is a list; the I/O thread is the test thread ({@link #runIoThread}). */
    static final class FakeQueue extends SlotQueue<Slot> {
        final List<Integer> wire = new ArrayList<>();
        int handOvers;
        boolean full;

        FakeQueue(int slots) {
            super(1, "fake queue", new Slot[slots], 1_000_000_000L);
            for (int i = 0; i < slots; i++) {
                this.slots[i] = new Slot(i);
            }
            freeAllSlots();
        }

        @Override
        protected void prepare(Slot r) {
            if (r.dataLength < 0) {
                throw new IllegalArgumentException("negative length");
            }
        }

        @Override
        protected void handOver() {
            handOvers++;
        }

        @Override
        protected void start(Slot r) {
            r.state = QueueSlot.INFLIGHT;
            wire.add((int) r.cmd.cdw10());
        }

        @Override
        protected boolean canStart() {
            return !full;
        }

        @Override
        protected boolean outstanding(Slot r) {
            return r.state == QueueSlot.INFLIGHT;
        }

        void runIoThread() {
            Slot r;
            while (canStart() && (r = submitted.poll()) != null) {
                start(r);
            }
            startPending();
        }

        void answer(int cid, int status) {
            Slot r = lookup(cid);
            releaseAndDeliver(r, status, 0);
        }

        Slot slot(int i) {
            return slots[i];
        }

        @Override
        public void close() {
            state = CLOSED;
            failSubmitted(IoCallback.ERR_CLOSED);
            failPending(IoCallback.ERR_CLOSED);
        }
    }

    static void submit(FakeQueue q, int tag, List<String> log) {
        q.submit(Opcodes.IO_READ, 1, tag, 0, 0, 0, 0, 0, HostQueue.DIR_NONE, null, 0, 0,
                (ctx, status) -> log.add(ctx + ":" + status), tag, null);
    }

    @Test
    void commandsBeyondTheSlotsWaitInOrderAndStartAsSlotsFree() {
        FakeQueue q = new FakeQueue(2);
        List<String> log = new ArrayList<>();
        for (int tag = 1; tag <= 5; tag++) {
            submit(q, tag, log);
        }
        q.runIoThread();
        assertEquals(List.of(1, 2), q.wire, "two slots: two commands on the wire");
        q.answer(q.slot(0).cid, 0);
        q.runIoThread();
        q.answer(q.slot(1).cid, 0);
        q.runIoThread();
        assertEquals(List.of(1, 2, 3, 4), q.wire, "waiting commands start in submission order");
        assertEquals(List.of("1:0", "2:0"), log);
        q.close();
        assertEquals(List.of("1:0", "2:0", "5:" + IoCallback.ERR_CLOSED), log, "a waiting command fails at close");
        submit(q, 6, log);
        assertEquals("6:" + IoCallback.ERR_CLOSED, log.get(log.size() - 1), "a closed queue fails new commands at once");
    }

    @Test
    void commandIdsChangeWithEachUseAndStaleOnesAreNotFound() {
        FakeQueue q = new FakeQueue(1);
        List<String> log = new ArrayList<>();
        submit(q, 1, log);
        q.runIoThread();
        int first = q.slot(0).cid;
        assertSame(q.slot(0), q.lookup(first));
        q.answer(first, 0);
        assertNull(q.lookup(first), "answered: no longer outstanding");
        submit(q, 2, log);
        q.runIoThread();
        int second = q.slot(0).cid;
        assertNotEquals(first, second, "the same slot carries a new generation");
        assertNull(q.lookup(first), "a late answer to the old command id is not taken for the new command");
        assertSame(q.slot(0), q.lookup(second));
        assertNull(q.lookup(second ^ 0x100), "a forged id");
    }

    @Test
    void backPressureHoldsCommandsUntilTheTransportCanSend() {
        FakeQueue q = new FakeQueue(8);
        List<String> log = new ArrayList<>();
        q.full = true;
        submit(q, 1, log);
        submit(q, 2, log);
        q.runIoThread();
        assertTrue(q.wire.isEmpty(), "nothing sent while the transport is full");
        q.full = false;
        q.runIoThread();
        assertEquals(List.of(1, 2), q.wire);
    }

    @Test
    void aSubmissionTheTransportRefusesFreesItsSlot() {
        FakeQueue q = new FakeQueue(1);
        List<String> log = new ArrayList<>();
        assertThrows(IllegalArgumentException.class, () -> q.submit(Opcodes.IO_READ, 1, 9, 0, 0, 0, 0, 0,
                HostQueue.DIR_NONE, null, 0, -1, (c, s) -> log.add("called"), 0, null));
        submit(q, 3, log);
        q.runIoThread();
        assertEquals(List.of(3), q.wire, "the only slot was given back");
        assertTrue(log.isEmpty(), "the refused submission's callback never runs");
    }

    @Test
    void slotCountsOutsideTheCommandIdSpaceAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> SlotQueue.checkSlotCount(0));
        assertThrows(IllegalArgumentException.class, () -> SlotQueue.checkSlotCount(65536));
        assertEquals(65535, SlotQueue.checkSlotCount(65535));
    }
}

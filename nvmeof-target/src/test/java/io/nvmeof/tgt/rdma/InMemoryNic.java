package io.nvmeof.tgt.rdma;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A reliable-connected queue pair simulated in memory, for testing the RDMA transport's protocol logic on machines
 * without RDMA: the "host" registers buffers under rkeys; the target's READs, WRITEs and SENDs move bytes by address
 * exactly as a NIC would, check keys and bounds, and produce completions. After the first failed work request the
 * queue pair is in error and flushes the rest, as verbs do.
 */
final class InMemoryNic implements RdmaChannel, MemoryRegistrar {
    record Region(long address, int length) {
    }

    record Wr(char op, long wrId, long local, int length, long remote, long key, boolean invalidate) {
    }

    record Completion(long wrId, boolean success, String status, int byteLength) {
    }

    final Map<Long, Region> hostKeys = new HashMap<>();
    final ArrayDeque<Wr> receives = new ArrayDeque<>();
    final List<Wr> posted = new ArrayList<>();
    /** Makes register() fail, as ibv_reg_mr does when the locked-memory limit is reached. */
    boolean refuseRegistrations;
    /** Makes deregister() fail, as ibv_dereg_mr can: the memory must then stay allocated. */
    boolean refuseDeregistrations;
    /** Every work request the target ever posted (except receives), in order. */
    final List<Wr> history = new ArrayList<>();
    final ArrayDeque<Completion> completions = new ArrayDeque<>();
    final List<byte[]> responses = new ArrayList<>();
    final List<Long> invalidated = new ArrayList<>();
    int flushes;
    int maxReadsPerFlush;
    boolean error;
    boolean disconnected;
    private long nextKey = 0x1000;

    // ---- the host's side ----

    long hostRegister(ByteBuffer buf) {
        long key = nextKey++;
        hostKeys.put(key, new Region(new UnsafeBuffer(buf).addressOffset(), buf.capacity()));
        return key;
    }

    static long address(ByteBuffer buf) {
        return new UnsafeBuffer(buf).addressOffset();
    }

    /** The host SENDs a capsule: it lands in the target's next posted receive. */
    void hostSend(byte[] capsule) {
        if (disconnected) {
            // Its receives may point at memory the target has freed since: a real NIC's queue pair takes nothing more.
            throw new IllegalStateException("queue pair disconnected");
        }
        Wr r = receives.poll();
        if (r == null) {
            throw new IllegalStateException("receiver not ready: no receive posted (RNR)");
        }
        if (capsule.length > r.length()) {
            completions.add(new Completion(r.wrId(), false, "LOC_LEN_ERR", 0));
            return;
        }
        new UnsafeBuffer(r.local(), r.length()).putBytes(0, capsule);
        completions.add(new Completion(r.wrId(), true, "SUCCESS", capsule.length));
    }

    // ---- the target's side ----

    @Override
    public long register(ByteBuffer direct) {
        if (refuseRegistrations) {
            throw new IllegalStateException("registration refused (test)");
        }
        return 7;
    }

    @Override
    public boolean deregister(ByteBuffer direct) {
        return !refuseDeregistrations;
    }

    @Override
    public void postRecv(long wrId, long address, int length, long lkey) {
        receives.add(new Wr('V', wrId, address, length, 0, 0, false));
    }

    @Override
    public void postRead(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey) {
        posted.add(new Wr('R', wrId, localAddress, length, remoteAddress, rkey, false));
    }

    @Override
    public void postWrite(long wrId, long localAddress, int length, long lkey, long remoteAddress, long rkey) {
        posted.add(new Wr('W', wrId, localAddress, length, remoteAddress, rkey, false));
    }

    @Override
    public void postSend(long wrId, long localAddress, int length, long lkey, boolean invalidate, long invalidateRkey) {
        posted.add(new Wr('S', wrId, localAddress, length, 0, invalidateRkey, invalidate));
    }

    private boolean remoteOk(Wr w) {
        Region r = hostKeys.get(w.key());
        return r != null && w.remote() >= r.address() && w.remote() + w.length() <= r.address() + r.length();
    }

    @Override
    public void flush() {
        flushes++;
        int reads = 0;
        for (Wr w : posted) {
            if (w.op() == 'R') {
                reads++;
            }
            if (error) {
                completions.add(new Completion(w.wrId(), false, "WR_FLUSH_ERR", 0));
                continue;
            }
            switch (w.op()) {
                case 'R':
                case 'W':
                    if (!remoteOk(w)) {
                        error = true;
                        completions.add(new Completion(w.wrId(), false, "REM_ACCESS_ERR", 0));
                        break;
                    }
                    UnsafeBuffer local = new UnsafeBuffer(w.local(), w.length());
                    UnsafeBuffer remote = new UnsafeBuffer(w.remote(), w.length());
                    if (w.op() == 'R') {
                        local.putBytes(0, remote, 0, w.length());
                        completions.add(new Completion(w.wrId(), true, "SUCCESS", w.length()));
                    } else {
                        remote.putBytes(0, local, 0, w.length());
                    }
                    break;
                default:
                    byte[] msg = new byte[w.length()];
                    new UnsafeBuffer(w.local(), w.length()).getBytes(0, msg);
                    responses.add(msg);
                    if (w.invalidate()) {
                        invalidated.add(w.key());
                        hostKeys.remove(w.key());
                    }
                    completions.add(new Completion(w.wrId(), true, "SUCCESS", w.length()));
            }
        }
        maxReadsPerFlush = Math.max(maxReadsPerFlush, reads);
        history.addAll(posted);
        posted.clear();
    }

    @Override
    public void disconnect() {
        disconnected = true;
    }

    /** Delivers completions to the poll group until nothing is left to do. */
    void run(RdmaPollGroup group) {
        for (int round = 0; round < 1000; round++) {
            int work = 0;
            Completion c;
            while ((c = completions.poll()) != null) {
                group.dispatch(c.wrId(), c.success(), c.status(), c.byteLength());
                work++;
            }
            work += group.afterBatch();
            if (work == 0 && completions.isEmpty()) {
                return;
            }
        }
        throw new IllegalStateException("no quiescence");
    }
}

package io.nvmeof.conformance;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * What every block of one volume may hold, from the operations hosts issued to it, and the check of what a read
 * returned: the model the integrity checker ({@link IntegrityModelTest}) holds reads to.
 *
 * <p>Each block keeps the writes, Write Zeroes and Deallocates (these two read as zeroes afterwards) that covered it,
 * each with the clock tick before it was submitted and the tick at which it is known to have ended. An operation that
 * completed successfully ended when its host learned so, and certainly took effect; one that failed (a timeout, a lost
 * connection, a replaced namespace) may or may not have taken effect, and its end is known only once its host has
 * completed a later command: the host's next association waits for the old one's work ({@code TargetCore.holdConnect}),
 * so nothing of it can land after that. Until then it may land at any time.
 *
 * <p>A read may return the value of an operation submitted before the read ended that is not overwritten for it: an
 * operation is overwritten when another one certainly took effect, wholly after it ended and before the read began.
 * That is what NVMe allows (no order between commands in flight together, each block written atomically); anything
 * else is a lost or misdirected write, a late one, or bytes no operation wrote.
 *
 * <p>Block contents: the volume, the LBA and the operation's number, then bytes derived from the three, so a block
 * written for another volume or another LBA, or torn, is recognised.
 */
final class BlockModel {
    static final long OPEN = Long.MAX_VALUE;

    /** One operation on a range of blocks. */
    static final class Op {
        final long id;
        final boolean zeroes;
        final String what;
        final long submitted;
        long ended = OPEN;
        boolean certain;

        Op(long id, boolean zeroes, String what, long submitted) {
            this.id = id;
            this.zeroes = zeroes;
            this.what = what;
            this.submitted = submitted;
        }

        @Override
        public String toString() {
            return "#" + id + " " + what + " [" + submitted + ", " + (ended == OPEN ? "open" : ended) + "]"
                    + (certain ? "" : " (failed: may or may not have landed)");
        }
    }

    final long volume;
    final int blockSize;
    private final List<Op>[] ops;
    /** Start ticks of reads in flight (a multiset): operations they may still return are kept. */
    private final TreeMap<Long, Integer> readsInFlight = new TreeMap<>();

    @SuppressWarnings("unchecked")
    BlockModel(long volume, int blockSize, int blocks, long createdAt) {
        this.volume = volume;
        this.blockSize = blockSize;
        this.ops = new List[blocks];
        Op created = new Op(0, true, "volume " + volume + " created (zeroes)", 0);
        created.ended = createdAt;
        created.certain = true;
        for (int b = 0; b < blocks; b++) {
            ops[b] = new ArrayList<>(4);
            ops[b].add(created);
        }
    }

    int blocks() {
        return ops.length;
    }

    synchronized Op begin(long id, boolean zeroes, String what, long lba, int blocks, long now) {
        Op op = new Op(id, zeroes, what, now);
        for (long b = lba; b < lba + blocks; b++) {
            ops[(int) b].add(op);
        }
        return op;
    }

    synchronized void succeeded(Op op, long lba, int blocks, long now) {
        op.ended = now;
        op.certain = true;
        long floor = readsInFlight.isEmpty() ? now : Math.min(now, readsInFlight.firstKey());
        for (long b = lba; b < lba + blocks; b++) {
            prune(ops[(int) b], floor);
        }
    }

    /** A failed operation ended at the latest at {@code t} (its host completed a later command by then). */
    synchronized void endedBy(Op op, long t) {
        op.ended = Math.min(op.ended, t);
    }

    /** Drops what no read starting from {@code floor} on may return. */
    private static void prune(List<Op> list, long floor) {
        long after = overwrittenBefore(list, floor);
        list.removeIf(o -> o.ended < after);
    }

    /**
     * The latest submission of an operation that certainly took effect and ended before {@code t}: an operation that
     * ended before that is overwritten for every read beginning at {@code t} or later.
     */
    private static long overwrittenBefore(List<Op> list, long t) {
        long latest = Long.MIN_VALUE;
        for (Op p : list) {
            if (p.certain && p.ended < t && p.submitted > latest) {
                latest = p.submitted;
            }
        }
        return latest;
    }

    synchronized void readStarted(long t) {
        readsInFlight.merge(t, 1, Integer::sum);
    }

    synchronized void readEnded(long t) {
        readsInFlight.computeIfPresent(t, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Checks what a read of {@code blocks} from {@code lba} returned; null when allowed, else what is wrong. */
    synchronized String check(long lba, int blocks, ByteBuffer data, long readStart, long readEnd) {
        for (int i = 0; i < blocks; i++) {
            long b = lba + i;
            String wrong = checkBlock(b, data, i * blockSize, readStart, readEnd);
            if (wrong != null) {
                return "volume " + volume + " LBA " + b + " (read [" + readStart + ", " + readEnd + "]): " + wrong
                        + "; operations kept for it: " + ops[(int) b];
            }
        }
        return null;
    }

    private String checkBlock(long lba, ByteBuffer data, int at, long readStart, long readEnd) {
        List<Op> list = ops[(int) lba];
        long after = overwrittenBefore(list, readStart);
        if (isZero(data, at, blockSize)) {
            for (Op o : list) {
                if (o.zeroes && o.submitted < readEnd && o.ended >= after) {
                    return null;
                }
            }
            return "reads zeroes, but every Write Zeroes or Deallocate of it was overwritten before the read";
        }
        long vol = data.getLong(at);
        long forLba = data.getLong(at + 8);
        long id = data.getLong(at + 16);
        if (!matches(data, at, blockSize, vol, forLba, id)) {
            if (tornByAWriteInFlight(list, lba, data, at, after, readStart, readEnd)) {
                tornReads++;
                return null;
            }
            return "holds bytes no operation wrote (torn or corrupt)";
        }
        if (vol != volume) {
            return "holds operation #" + id + "'s data for volume " + vol + ": it landed in the wrong volume";
        }
        if (forLba != lba) {
            return "holds operation #" + id + "'s data for LBA " + forLba + ": a misdirected write";
        }
        for (Op o : list) {
            if (o.id == id) {
                if (o.submitted >= readEnd) {
                    return "holds operation #" + id + ", submitted after the read ended";
                }
                if (o.ended < after) {
                    return "holds operation #" + id + ", overwritten before the read began";
                }
                return null;
            }
        }
        return "holds operation #" + id + ", which is not one of this block's (never issued to it, or long overwritten)";
    }

    /**
     * Reads that returned a block mixing values the read may return, one of them a write still in flight during the
     * read. A buffered file's page cache and a RAM namespace's memory copy a write into the block while a read copies
     * out of it, with nothing between them (as Linux nvmet's buffered_io file backend and SPDK's malloc bdev): such a
     * read is counted, not failed, as is a block that a failed write (one cut short with its connection) left mixed,
     * which NVMe allows. A mix seen when no write was in flight or failed is a torn write that stayed: a violation.
     */
    private long tornReads;

    synchronized long tornReads() {
        return tornReads;
    }

    /**
     * Whether every 8-byte word of the block is that of one operation the read may return, one of them in flight during
     * the read or failed.
     */
    private boolean tornByAWriteInFlight(List<Op> list, long lba, ByteBuffer data, int at, long after, long readStart,
            long readEnd) {
        List<ByteBuffer> candidates = new ArrayList<>();
        boolean inFlight = false;
        for (Op o : list) {
            if (o.submitted < readEnd && o.ended >= after) {
                ByteBuffer b = ByteBuffer.allocate(blockSize);
                if (!o.zeroes) {
                    fill(b, 0, lba, o.id);
                }
                candidates.add(b);
                // In flight during the read, or failed: a write cut short may leave its blocks in any mix (NVMe).
                inFlight |= o.ended > readStart || !o.certain;
            }
        }
        if (!inFlight) {
            return false;
        }
        for (int i = 0; i < blockSize; i += 8) {
            long word = data.getLong(at + i);
            boolean someone = false;
            for (ByteBuffer c : candidates) {
                someone |= c.getLong(i) == word;
            }
            if (!someone) {
                return false;
            }
        }
        return true;
    }

    /** Fills block {@code index} of {@code buf} with what operation {@code id} writes to {@code lba} of this volume. */
    void fill(ByteBuffer buf, int index, long lba, long id) {
        int at = index * blockSize;
        buf.putLong(at, volume);
        buf.putLong(at + 8, lba);
        buf.putLong(at + 16, id);
        long x = seed(volume, lba, id);
        for (int i = 24; i < blockSize; i += 8) {
            x = next(x);
            buf.putLong(at + i, x);
        }
    }

    private static boolean matches(ByteBuffer data, int at, int blockSize, long vol, long lba, long id) {
        long x = seed(vol, lba, id);
        for (int i = 24; i < blockSize; i += 8) {
            x = next(x);
            if (data.getLong(at + i) != x) {
                return false;
            }
        }
        return true;
    }

    private static long seed(long vol, long lba, long id) {
        return (vol * 0x9E3779B97F4A7C15L ^ lba * 0xC2B2AE3D27D4EB4FL ^ id) | 1;
    }

    private static long next(long x) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        return x;
    }

    private static boolean isZero(ByteBuffer data, int at, int n) {
        for (int i = 0; i < n; i += 8) {
            if (data.getLong(at + i) != 0) {
                return false;
            }
        }
        return true;
    }
}

package io.nvmeof.netty;

import io.netty.channel.FileRegion;
import io.netty.util.AbstractReferenceCounted;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.util.function.Consumer;

/**
 * A range of a file that someone else owns (a file namespace), sent by the channel with {@code sendfile} straight from
 * the page cache, so the bytes are never copied into a buffer of ours. Reusable, as {@link BorrowedMemoryBuf} is:
 * {@link #borrow} points it at a range with a reference count of 1, and the owner's recycler gets it back once the
 * channel has sent it and released it.
 *
 * <p>WHY its own class: Netty's {@code DefaultFileRegion} is a new object per send, garbage per I/O on the data path,
 * and it fails a send that finds the file shorter than the range, which ends the connection. A file cut short behind
 * the namespace's back reads as zeroes past its end (as a read through a copy does, {@code FileChannel} reading
 * nothing there), so here the rest of the range is sent as zeroes: the host gets the bytes the PDU promised, the same
 * for every read size, and the connection stays.
 *
 * <p>Single-threaded: borrowed, sent and released on one event loop.
 */
public final class BorrowedFileRegion extends AbstractReferenceCounted implements FileRegion {
    private static final ByteBuffer ZEROES = ByteBuffer.allocateDirect(64 << 10).asReadOnlyBuffer();
    private final Consumer<BorrowedFileRegion> recycler;
    private FileChannel file;
    private long position;
    private long count;
    private long transferred;
    private Object holder;

    /** {@code recycler} gets the region back once its reference count has dropped to 0. */
    public BorrowedFileRegion(Consumer<BorrowedFileRegion> recycler) {
        this.recycler = recycler;
        setRefCnt(0);
    }

    /** Points this region at {@code count} bytes of {@code file} from {@code position}, on behalf of {@code holder}. */
    public BorrowedFileRegion borrow(Object holder, FileChannel file, long position, long count) {
        if (position < 0 || count <= 0) {
            throw new IllegalArgumentException("not a file range: " + position + "+" + count);
        }
        if (refCnt() > 0) {
            throw new IllegalStateException("borrowed again before its release");
        }
        this.file = file;
        this.position = position;
        this.count = count;
        this.transferred = 0;
        this.holder = holder;
        setRefCnt(1);
        return this;
    }

    /** What the range belongs to, or null when the region is not borrowed. */
    public Object holder() {
        return holder;
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    @Deprecated
    public long transfered() {
        return transferred;
    }

    @Override
    public long transferred() {
        return transferred;
    }

    @Override
    public long count() {
        return count;
    }

    @Override
    public long transferTo(WritableByteChannel target, long from) throws IOException {
        long left = count - from;
        if (left < 0 || from < 0) {
            throw new IllegalArgumentException("position out of range: " + from + " (expected: 0 - " + count + ")");
        }
        if (left == 0) {
            return 0;
        }
        long written = file.transferTo(position + from, left, target);
        if (written == 0 && file.size() <= position + from) {
            // Past the end of a file cut short: zeroes (0 from transferTo is otherwise a full socket: try later).
            ByteBuffer z = ZEROES.duplicate();
            z.limit((int) Math.min(left, z.capacity()));
            written = target.write(z);
        }
        if (written > 0) {
            transferred += written;
        }
        return written;
    }

    @Override
    protected void deallocate() {
        file = null;
        holder = null;
        recycler.accept(this);
    }

    @Override
    public BorrowedFileRegion retain() {
        super.retain();
        return this;
    }

    @Override
    public BorrowedFileRegion retain(int increment) {
        super.retain(increment);
        return this;
    }

    @Override
    public BorrowedFileRegion touch() {
        return this;
    }

    @Override
    public BorrowedFileRegion touch(Object hint) {
        return this;
    }
}

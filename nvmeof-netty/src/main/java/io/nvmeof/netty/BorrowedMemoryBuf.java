package io.nvmeof.netty;

import io.netty.buffer.AbstractReferenceCountedByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;
import java.util.function.Consumer;
import org.agrona.BufferUtil;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A read-only {@link ByteBuf} over direct memory that someone else owns (a RAM namespace's chunk), so that a channel
 * can send those bytes without copying them into a buffer of its own. Reusable: {@link #borrow} points it at a range
 * and sets its reference count to 1; when the channel has written it and released it, the owner's recycler gets it
 * back, to be pointed at the next range. A buffer in use keeps the memory's {@link ByteBuffer} reachable, so memory
 * that is freed when unreachable (direct buffers, mappings with a cleaner) stays valid until it is released.
 *
 * <p>WHY its own class: Netty's wrapping buffers ({@code Unpooled.wrappedBuffer}, slices) are new objects each time,
 * and the NIO transport writes a buffer through its {@link #internalNioBuffer}, a {@link ByteBuffer} that a wrapper
 * would also make anew: two objects per read response, the garbage per I/O the data path must not have. This one
 * keeps one {@link ByteBuffer} for its whole life and re-points it at each range's memory (its address field set
 * through Unsafe, as Agrona and Netty do for their own views of native memory).
 *
 * <p>Single-threaded, as a channel's outbound buffer is: borrowed, written and released on one event loop.
 */
public final class BorrowedMemoryBuf extends AbstractReferenceCountedByteBuf {
    private final Consumer<BorrowedMemoryBuf> recycler;
    private final UnsafeBuffer memory = new UnsafeBuffer(0, 0);
    /** The region this buffer's bytes lie in, kept reachable while borrowed. */
    private ByteBuffer region;
    /** A view with the region's capacity, re-pointed at each region; its position and limit are set per use. */
    private ByteBuffer nio;
    /** Offset of this buffer's first byte in {@link #region}. */
    private int base;
    private int length;
    private Object holder;

    /** {@code recycler} gets the buffer back once its reference count has dropped to 0. */
    public BorrowedMemoryBuf(Consumer<BorrowedMemoryBuf> recycler) {
        super(0);
        this.recycler = recycler;
    }

    /**
     * Points this buffer at {@code length} bytes of {@code region} (a direct buffer) from {@code offset}, readable from
     * index 0, with a reference count of 1; {@code holder} names what the bytes belong to until it is released.
     */
    public BorrowedMemoryBuf borrow(Object holder, ByteBuffer region, int offset, int length) {
        if (!region.isDirect() || offset < 0 || length < 0 || offset + length > region.capacity()) {
            throw new IllegalArgumentException("not a range of a direct buffer: " + offset + "+" + length + " of "
                    + region);
        }
        if (refCnt() > 0 && this.region != null) {
            throw new IllegalStateException("borrowed again before its release");
        }
        long address = BufferUtil.address(region);
        if (nio == null || nio.capacity() != region.capacity()) {
            nio = region.duplicate(); // once per buffer (every chunk of a namespace has the same capacity)
        } else {
            UnsafeApi.putLong(nio, BufferUtil.BYTE_BUFFER_ADDRESS_FIELD_OFFSET, address);
        }
        this.region = region;
        this.base = offset;
        this.length = length;
        this.holder = holder;
        memory.wrap(address + offset, length);
        maxCapacity(length);
        setIndex(0, length);
        resetRefCnt();
        return this;
    }

    /** What the borrowed bytes belong to, or null when the buffer is not borrowed. */
    public Object holder() {
        return holder;
    }

    @Override
    protected void deallocate() {
        region = null;
        holder = null;
        memory.wrap(0, 0);
        recycler.accept(this);
    }

    @Override
    public int capacity() {
        return length;
    }

    @Override
    public ByteBuf capacity(int newCapacity) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public ByteBufAllocator alloc() {
        return ByteBufAllocator.DEFAULT;
    }

    @Override
    @Deprecated
    public ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    @Override
    public ByteBuf unwrap() {
        return null;
    }

    @Override
    public boolean isDirect() {
        return true;
    }

    @Override
    public boolean isReadOnly() {
        return true;
    }

    @Override
    public boolean isContiguous() {
        return true;
    }

    @Override
    protected byte _getByte(int index) {
        return memory.getByte(index);
    }

    @Override
    protected short _getShort(int index) {
        return memory.getShort(index, ByteOrder.BIG_ENDIAN);
    }

    @Override
    protected short _getShortLE(int index) {
        return memory.getShort(index, ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    protected int _getUnsignedMedium(int index) {
        return (memory.getByte(index) & 0xFF) << 16 | (memory.getByte(index + 1) & 0xFF) << 8
                | memory.getByte(index + 2) & 0xFF;
    }

    @Override
    protected int _getUnsignedMediumLE(int index) {
        return memory.getByte(index) & 0xFF | (memory.getByte(index + 1) & 0xFF) << 8
                | (memory.getByte(index + 2) & 0xFF) << 16;
    }

    @Override
    protected int _getInt(int index) {
        return memory.getInt(index, ByteOrder.BIG_ENDIAN);
    }

    @Override
    protected int _getIntLE(int index) {
        return memory.getInt(index, ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    protected long _getLong(int index) {
        return memory.getLong(index, ByteOrder.BIG_ENDIAN);
    }

    @Override
    protected long _getLongLE(int index) {
        return memory.getLong(index, ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int len) {
        checkDstIndex(index, len, dstIndex, dst.capacity());
        if (dst.hasMemoryAddress()) {
            UnsafeApi.copyMemory(memory.addressOffset() + index, dst.memoryAddress() + dstIndex, len);
        } else if (dst.hasArray()) {
            memory.getBytes(index, dst.array(), dst.arrayOffset() + dstIndex, len);
        } else {
            byte[] copy = new byte[len];
            memory.getBytes(index, copy);
            dst.setBytes(dstIndex, copy);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int len) {
        checkDstIndex(index, len, dstIndex, dst.length);
        memory.getBytes(index, dst, dstIndex, len);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        int len = dst.remaining();
        checkIndex(index, len);
        memory.getBytes(index, dst, dst.position(), len);
        dst.position(dst.position() + len);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int len) throws IOException {
        checkIndex(index, len);
        byte[] copy = new byte[len];
        memory.getBytes(index, copy);
        out.write(copy);
        return this;
    }

    @Override
    public int getBytes(int index, GatheringByteChannel out, int len) throws IOException {
        return len == 0 ? 0 : out.write(internalNioBuffer(index, len));
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int len) throws IOException {
        return len == 0 ? 0 : out.write(internalNioBuffer(index, len), position);
    }

    @Override
    public ByteBuf copy(int index, int len) {
        checkIndex(index, len);
        ByteBuf copy = alloc().directBuffer(len, len);
        copy.writeBytes(this, index, len);
        return copy;
    }

    @Override
    public int nioBufferCount() {
        return 1;
    }

    /** The shared view, positioned on the range: what the NIO transport writes from. */
    @Override
    public ByteBuffer internalNioBuffer(int index, int len) {
        checkIndex(index, len);
        nio.clear().position(base + index).limit(base + index + len);
        return nio;
    }

    @Override
    public ByteBuffer nioBuffer(int index, int len) {
        return internalNioBuffer(index, len).slice().asReadOnlyBuffer();
    }

    @Override
    public ByteBuffer[] nioBuffers(int index, int len) {
        return new ByteBuffer[] {nioBuffer(index, len)};
    }

    @Override
    public boolean hasArray() {
        return false;
    }

    @Override
    public byte[] array() {
        throw new UnsupportedOperationException("direct memory has no array");
    }

    @Override
    public int arrayOffset() {
        throw new UnsupportedOperationException("direct memory has no array");
    }

    @Override
    public boolean hasMemoryAddress() {
        return true;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        return memory.addressOffset();
    }

    @Override
    protected void _setByte(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setShort(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setShortLE(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setMedium(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setMediumLE(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setInt(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setIntLE(int index, int value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setLong(int index, long value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    protected void _setLongLE(int index, long value) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int len) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int len) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public int setBytes(int index, InputStream in, int len) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int len) {
        throw new ReadOnlyBufferException();
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int len) {
        throw new ReadOnlyBufferException();
    }
}

package io.nvmeof.tgt.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class RegisteredBufferPoolTest {
    static RegisteredBufferPool pool() {
        return new RegisteredBufferPool(ByteBuffer.allocateDirect(2 * 4096 + 65536), new int[] {4096, 65536}, new int[] {2, 1});
    }

    @Test
    void buffersAreSlicesOfTheRegionAndComeBackOnRelease() {
        RegisteredBufferPool p = pool();
        ByteBuf a = p.tryAllocate(512);
        ByteBuf b = p.tryAllocate(4096);
        assertNotNull(a);
        assertNotNull(b);
        assertTrue(a.hasMemoryAddress());
        long start = p.regionAddress();
        long end = start + p.region().capacity();
        assertTrue(a.memoryAddress() >= start && a.memoryAddress() + a.capacity() <= end, "inside the registered region");
        assertNotSame(a, b);
        assertEquals(0, p.available(0));
        a.writeBytes(new byte[100]);
        a.release();
        assertEquals(1, p.available(0));
        ByteBuf again = p.tryAllocate(100);
        assertSame(a, again, "the same buffer object is reused: no allocation per I/O");
        assertEquals(1, again.refCnt());
        assertEquals(0, again.writerIndex(), "reset for reuse");
    }

    @Test
    void largerClassServesWhenSmallerIsExhaustedThenNone() {
        RegisteredBufferPool p = pool();
        p.tryAllocate(10);
        p.tryAllocate(10);
        ByteBuf third = p.tryAllocate(10);
        assertEquals(65536, third.capacity(), "spilled into the 64 KiB class");
        assertNull(p.tryAllocate(10), "exhausted: the transport must wait");
        assertThrows(IllegalStateException.class, () -> p.directBuffer(10, 10));
        third.release();
        assertNotNull(p.directBuffer(60000, 60000));
        assertNull(p.tryAllocate(70000), "nothing that large");
    }

    @Test
    void regionTooSmallOrClassesOutOfOrderAreRefused() {
        assertThrows(IllegalArgumentException.class,
                () -> new RegisteredBufferPool(ByteBuffer.allocateDirect(4096), new int[] {4096}, new int[] {2}));
        assertThrows(IllegalArgumentException.class,
                () -> new RegisteredBufferPool(ByteBuffer.allocateDirect(1 << 20), new int[] {8192, 4096}, new int[] {1, 1}));
        assertThrows(IllegalArgumentException.class,
                () -> new RegisteredBufferPool(ByteBuffer.allocate(4096), new int[] {4096}, new int[] {1}));
    }
}

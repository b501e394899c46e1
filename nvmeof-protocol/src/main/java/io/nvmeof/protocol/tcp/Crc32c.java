package io.nvmeof.protocol.tcp;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;
import org.agrona.DirectBuffer;

/**
 * NVMe/TCP header and data digests: CRC32C (Castagnoli), carried little endian. The JDK's {@link CRC32C} uses the
 * CPU's CRC instruction; one instance per thread is reused so digests allocate nothing.
 */
public final class Crc32c {
    private final CRC32C crc = new CRC32C();
    private final byte[] scratch = new byte[4096];

    public int of(DirectBuffer buffer, int index, int length) {
        crc.reset();
        update(buffer, index, length);
        return (int) crc.getValue();
    }

    public void reset() {
        crc.reset();
    }

    public void update(DirectBuffer buffer, int index, int length) {
        if (length == 0) {
            return;
        }
        ByteBuffer bb = buffer.byteBuffer();
        byte[] array = buffer.byteArray();
        int base = buffer.wrapAdjustment() + index;
        if (array != null) {
            // Heap memory: wrapAdjustment() is relative to the array (it includes a heap ByteBuffer's arrayOffset).
            crc.update(array, base, length);
        } else if (bb != null) {
            // Direct ByteBuffer: wrapAdjustment() is relative to the ByteBuffer's own index 0.
            crc.update(bb.duplicate().clear().position(base).limit(base + length));
        } else {
            // Memory wrapped by raw address (registered regions): go through a scratch copy, allocated once.
            for (int done = 0; done < length; ) {
                int n = Math.min(scratch.length, length - done);
                buffer.getBytes(index + done, scratch, 0, n);
                crc.update(scratch, 0, n);
                done += n;
            }
        }
    }

    public void update(ByteBuffer buffer) {
        crc.update(buffer);
    }

    public int value() {
        return (int) crc.getValue();
    }
}

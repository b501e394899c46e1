package io.nvmeof.tgt.cmd;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.Namespace;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Issue 32: a block device's physical block size and discard granularity reach the host in Identify Namespace, as
 * nvmet's bdev backend reports them: NSFEAT bit 4 (OPTPERF), NPWG/NPWA at bytes 65:64 and 67:66, NPDG/NPDA at 69:68
 * and 71:70, each a 0-based number of logical blocks (NVMe Base 2.0, Figure 280). Read here at the spec's offsets.
 */
class IdentifyNamespaceGranularityTest {
    /** A device of 4 KiB physical blocks that discards in 1 MiB units (a typical SSD's, or an SMR disk's). */
    private static BlockBackend device(int physical, int discard) {
        return new BlockBackend() {
            @Override public long sizeBytes() { return 64L << 20; }
            @Override public void read(long offset, ByteBuffer dst) { }
            @Override public void write(long offset, ByteBuffer src) { }
            @Override public void flush() { }
            @Override public void writeZeroes(long offset, long length) { }
            @Override public void deallocate(long offset, long length) { }
            @Override public String describe() { return "test device"; }
            @Override public void close() { }
            @Override public int physicalBlockSize() { return physical; }
            @Override public int discardGranularity() { return discard; }
        };
    }

    private static ByteBuffer identify(Namespace ns) {
        ByteBuffer bytes = ByteBuffer.allocateDirect(IdentifyNamespace.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        AdminCommands.fillIdentifyNamespace(ns, new IdentifyNamespace().wrap(new UnsafeBuffer(bytes), 0));
        return bytes;
    }

    @Test
    void aDevicesPhysicalBlockAndDiscardGranularityAreReportedInBlocks() {
        ByteBuffer id = identify(new Namespace(1, device(4096, 1 << 20), 512, UUID.randomUUID()));
        assertEquals(0x10, id.get(24) & 0x10, "NSFEAT OPTPERF");
        assertEquals(7, id.getShort(64), "NPWG: 8 blocks of 512 bytes, 0-based");
        assertEquals(7, id.getShort(66), "NPWA");
        assertEquals(2047, id.getShort(68), "NPDG: 1 MiB in 512-byte blocks, 0-based");
        assertEquals(2047, id.getShort(70), "NPDA");

        ByteBuffer same = identify(new Namespace(1, device(4096, 4096), 4096, UUID.randomUUID()));
        assertEquals(0, same.getShort(64), "one 4 KiB block per physical block");
        assertEquals(0, same.getShort(68));
    }

    @Test
    void withoutADeviceThereIsNothingToReport() {
        ByteBuffer id = identify(new Namespace(1, new RamBackend(1 << 20), 512, UUID.randomUUID()));
        assertEquals(0, id.get(24) & 0x10, "no OPTPERF");
        for (int offset = 64; offset < 74; offset += 2) {
            assertEquals(0, id.getShort(offset), "byte " + offset);
        }
    }
}

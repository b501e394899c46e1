package io.nvmeof.tgt.cmd;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.nvmeof.protocol.identify.IdentifyNamespace;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.core.Namespace;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.UUID;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Issue 35: a namespace reached through two controllers (two listeners of one subsystem) is one namespace to the
 * Linux host's native multipath only if Identify Namespace says it may be attached to several controllers (NMIC bit
 * 0, byte 30; NVMe Base 2.0, Figure 280), as nvmet and SPDK say for every namespace. Without it Linux 6.1 took the
 * namespace as private, refused the second controller's ("duplicate IDs in subsystem for nsid 1"), and a multipath
 * device had one path only: removing the listener that carried it failed fio with ENOLINK instead of failing over.
 */
class IdentifySharingTest {
    @Test
    void everyNamespaceMayBeAttachedToSeveralControllers() {
        ByteBuffer bytes = ByteBuffer.allocateDirect(IdentifyNamespace.LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        AdminCommands.fillIdentifyNamespace(new Namespace(1, new RamBackend(1 << 20), 512, UUID.randomUUID()),
                new IdentifyNamespace().wrap(new UnsafeBuffer(bytes), 0));
        assertEquals(1, bytes.get(30) & 1, "NMIC bit 0: shared namespace");
    }
}

package io.nvmeof.tgt.rdma;

import java.nio.ByteBuffer;

/** Registers memory with the NIC (control path only: once per queue or per pool, never per I/O). */
public interface MemoryRegistrar {
    /** Registers direct memory for local access; returns its lkey. */
    long register(ByteBuffer direct);

    /**
     * Deregisters memory; true when the NIC can no longer reach it (deregistered, or never registered), false when
     * deregistration failed: the memory must then stay allocated (a leak, never pages the NIC may still write).
     */
    boolean deregister(ByteBuffer direct);
}

package io.nvmeof.target.rdma;

import java.nio.ByteBuffer;

/** Registers memory with the NIC (control path only: once per queue or per pool, never per I/O). */
public interface MemoryRegistrar {
    /** Registers direct memory for local access; returns its lkey. */
    long register(ByteBuffer direct);

    void deregister(ByteBuffer direct);
}

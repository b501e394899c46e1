package io.nvmeof.tgt.rdma;

/**
 * Sees every one-sided operation the target posts toward a host: where in the host's memory an RDMA WRITE (a read's
 * data) lands or an RDMA READ (a write's data) comes from. For tracing and for tests that prove zero copy; it runs on
 * poll-group threads, so it must be quick and must not block.
 */
public interface DataPathObserver {
    void rdmaWrite(long remoteAddress, int length, long rkey);

    void rdmaRead(long remoteAddress, int length, long rkey);
}

package io.nvmeof.rdma;

/** Exported librdmacm functions bound directly (JNA direct mapping to librdmacm.so.1). */
final class RdmaCmNative {
    private RdmaCmNative() {
    }

    /** {@code struct ibv_context **rdma_get_devices(int *num_devices)}: the contexts librdmacm itself opened. */
    static native long rdma_get_devices(int[] numDevices);
    static native void rdma_free_devices(long list);
    static native void rdma_destroy_event_channel(long channel);
    static native String rdma_event_str(int event);
}

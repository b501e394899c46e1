package io.nvmeof.rdma;

/**
 * Exported libibverbs functions bound directly (JNA direct mapping to libibverbs.so.1): the ones that are real
 * symbols and need no struct access. Everything inline or struct-shaped goes through {@link NvrNative}.
 */
final class IbvNative {
    private IbvNative() {
    }

    /** {@code struct ibv_device **ibv_get_device_list(int *num_devices)}; NULL with errno on failure. */
    static native long ibv_get_device_list(int[] numDevices);
    static native void ibv_free_device_list(long list);
    static native String ibv_get_device_name(long device);
    static native String ibv_wc_status_str(int status);
    static native String ibv_event_type_str(int event);
}

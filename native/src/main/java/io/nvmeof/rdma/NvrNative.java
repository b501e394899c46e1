package io.nvmeof.rdma;

/**
 * JNA direct mapping of the C helper, libnvmeofrdma.so (native/src/main/c: nvmeof_rdma.h documents the record
 * layouts, nvmeof_rdma.c and the rdma_*.c files every function). Registered by {@link RdmaLibrary}; calling any method before that throws
 * UnsatisfiedLinkError, which is why every public entry point goes through {@link RdmaLibrary#requireAvailable()}.
 *
 * <p>WHY direct mapping with {@code long} for every pointer: a direct-mapped native method with only primitive
 * arguments costs one JNI transition and no argument conversion or allocation (no {@code Pointer} objects, no
 * varargs arrays), which is what the data path (post, poll) needs. Control-path calls use {@code long[]} outputs and
 * {@code byte[]} inputs, which JNA copies; they are not on the data path.
 */
final class NvrNative {
    private NvrNative() {
    }

    // housekeeping
    static native int nvr_abi_version();
    static native int nvr_send_desc_size();
    static native int nvr_recv_desc_size();
    static native int nvr_wc_size();
    static native int nvr_max_batch();
    static native int nvr_noop();
    static native long nvr_add(long a, long b);
    static native String nvr_strerror(int errnum);

    // data path: one call per batch
    static native int nvr_post_send(long qp, long descs, int n, long badOut);
    static native int nvr_post_recv(long qp, long descs, int n, long badOut);
    static native int nvr_post_srq_recv(long srq, long descs, int n, long badOut);
    static native int nvr_poll_cq(long cq, int max, long out);
    static native int nvr_req_notify_cq(long cq, int solicitedOnly);

    // test hooks (same encoders, no device)
    static native int nvr_debug_decode_send(long descs, int n, long[] out);
    static native int nvr_debug_decode_recv(long descs, int n, long[] out);
    static native int nvr_debug_fill_wc(long out, int n, long base);

    // devices, PDs, memory
    static native long nvr_context_device(long context);
    static native int nvr_query_device(long context, long[] out);
    static native int nvr_query_port(long context, int port, long[] out);
    static native int nvr_alloc_pd(long context, long[] out);
    static native int nvr_dealloc_pd(long pd);
    static native int nvr_reg_mr(long pd, long addr, long length, int access, long[] out);
    static native int nvr_dereg_mr(long mr);
    static native int nvr_mr_lkey(long mr);
    static native int nvr_mr_rkey(long mr);
    static native long nvr_mr_addr(long mr);
    static native long nvr_mr_length(long mr);
    static native int nvr_alloc_pages(long length, int huge, long[] out);
    static native int nvr_free_pages(long addr, long length);

    // completion queues and channels
    static native int nvr_create_comp_channel(long context, long[] out);
    static native int nvr_destroy_comp_channel(long channel);
    static native int nvr_create_cq(long context, int cqe, long channel, int compVector, long[] out);
    static native int nvr_destroy_cq(long cq);
    static native int nvr_wait_comp_channel(long channel, int timeoutMs, long[] cqOut);
    static native void nvr_ack_cq_events(long cq, int n);
    static native int nvr_comp_channel_fd(long channel);
    static native int nvr_get_async_event(long context, int timeoutMs, long[] out);
    static native int nvr_wakeup_create();
    static native int nvr_wakeup_signal(int fd);
    static native int nvr_wakeup_close(int fd);
    static native int nvr_wait_comp_channel_or_wakeup(long channel, int wakeFd, int timeoutMs, long[] cqOut);

    // SRQs and QPs
    static native int nvr_create_srq(long pd, int maxWr, long[] out);
    static native int nvr_destroy_srq(long srq);
    static native int nvr_create_qp(long id, long pd, long sendCq, long recvCq, long srq, int maxSendWr,
                                    int maxRecvWr, int maxInlineData, long[] out);
    static native int nvr_qp_state(long qp);
    static native int nvr_qp_to_error(long qp);

    // RDMA CM
    static native int nvr_create_event_channel(long[] out);
    static native int nvr_event_channel_fd(long channel);
    static native int nvr_create_id(long channel, long context, long[] out);
    static native int nvr_destroy_id(long id);
    static native int nvr_bind_addr(long id, byte[] sockaddr);
    static native int nvr_listen(long id, int backlog);
    static native int nvr_resolve_addr(long id, byte[] src, byte[] dst, int timeoutMs);
    static native int nvr_resolve_route(long id, int timeoutMs);
    static native int nvr_id_src_port(long id);
    static native int nvr_id_dst_port(long id);
    static native int nvr_id_dst_addr(long id, byte[] out16);
    static native long nvr_id_verbs(long id);
    static native long nvr_id_qp(long id);
    static native long nvr_id_pd(long id);
    static native int nvr_id_port_num(long id);
    static native void nvr_destroy_qp(long id);
    static native int nvr_connect(long id, byte[] pdata, int pdataLen, int responderResources, int initiatorDepth,
                                  int retryCount, int rnrRetryCount);
    static native int nvr_accept(long id, byte[] pdata, int pdataLen, int responderResources, int initiatorDepth,
                                 int retryCount, int rnrRetryCount);
    static native int nvr_reject(long id, byte[] pdata, int pdataLen);
    static native int nvr_disconnect(long id);
    static native int nvr_wait_cm_event(long channel, int timeoutMs, long[] eventOut);
    static native int nvr_ack_cm_event(long event);
    static native int nvr_cm_event_info(long event, long[] out);
}

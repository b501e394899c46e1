package io.nvmeof.uring;

/**
 * JNA direct mapping of libnvmeofuring.so (native/src/main/uring/nvmeof_uring.c documents each function). Registered by
 * {@link UringLibrary}; every public entry point checks {@link UringLibrary#requireAvailable()} first (the file calls
 * of {@link OpenFile}: {@link UringLibrary#helperReady()}, which holds where io_uring itself is refused).
 *
 * <p>Only primitive arguments on what runs per batch ({@link #nvu_enter}): one JNI transition, no conversion. The
 * control path uses {@code long[]} outputs, which JNA copies.
 */
final class UringNative {
    private UringNative() {
    }

    static native int nvu_abi_version();
    static native int nvu_ring_info_length();
    static native int nvu_file_info_length();
    static native int nvu_sqe_size();
    static native int nvu_cqe_size();
    static native String nvu_strerror(int errnum);

    static native int nvu_setup(int entries, int flags, long[] out);
    static native int nvu_teardown(long[] info);
    static native int nvu_enter(int ringFd, int toSubmit, int minComplete);
    static native int nvu_max_workers(int ringFd, int bounded, int unbounded);
    static native int nvu_register_eventfd(int ringFd);
    static native int nvu_wait_eventfd(int eventFd, int timeoutMs);
    static native int nvu_signal_eventfd(int eventFd);
    static native int nvu_close(int fd);

    static native int nvu_open(String path, int how, long[] out);
    static native int nvu_space(int fd, int op, long offset, long length);
}

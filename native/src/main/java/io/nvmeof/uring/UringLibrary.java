package io.nvmeof.uring;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import java.nio.ByteOrder;

/**
 * Loads the io_uring helper once and says whether io_uring can be used here and, if not, why: no helper in this jar
 * (built without a C compiler or {@code linux-libc-dev}), a kernel without io_uring (before 5.6: ENOSYS), or io_uring
 * switched off ({@code /proc/sys/kernel/io_uring_disabled}, a container's seccomp profile: EPERM). The check sets a
 * small ring up and tears it down. Nothing here throws; callers fall back to blocking I/O off their poll groups and
 * log {@link #unavailableReason()} once.
 */
public final class UringLibrary {
    /** Must match NVU_ABI_VERSION in nvmeof_uring.c. */
    static final int ABI_VERSION = 2;
    static final String HELPER_NAME = "nvmeofuring";

    private static final Object LOCK = new Object();
    private static volatile String reason;
    private static volatile boolean loaded;
    private static volatile boolean registered;
    /** The helper is loaded and matches this jar: its file calls ({@link OpenFile}) work with or without io_uring. */
    private static volatile boolean helperReady;
    /** {@code -Dnvmeof.uring.disabled=true}: serve as where the kernel refuses io_uring (read when asked, not cached). */
    public static final String DISABLED_PROPERTY = "nvmeof.uring.disabled";

    private UringLibrary() {
    }

    /** True when the helper is loaded and this kernel lets this process set up an io_uring. */
    public static boolean isAvailable() {
        return unavailableReason() == null;
    }

    /** Why io_uring cannot be used here, saying what to do; null when it can. */
    public static String unavailableReason() {
        if (Boolean.getBoolean(DISABLED_PROPERTY)) {
            return "switched off with -D" + DISABLED_PROPERTY;
        }
        ensureLoaded();
        return reason;
    }

    /**
     * True when the helper's file calls ({@link OpenFile}: open with O_DIRECT or exclusively, the device's block sizes,
     * fallocate and discard) can be used, even where io_uring itself is refused.
     */
    public static boolean helperReady() {
        ensureLoaded();
        return helperReady;
    }

    private static void ensureLoaded() {
        if (!loaded) {
            synchronized (LOCK) {
                if (!loaded) {
                    reason = load();
                    loaded = true;
                }
            }
        }
    }

    /** Throws {@link UringException} (ENOSYS) with {@link #unavailableReason()} unless {@link #isAvailable()}. */
    public static void requireAvailable() throws UringException {
        String why = unavailableReason();
        if (why != null) {
            throw new UringException("io_uring is unavailable (" + why + ")", 38);
        }
    }

    /** "EBUSY (Device or resource busy)" for 16: the name and the C library's text. */
    static String describeErrno(int errno) {
        String text = registered ? UringNative.nvu_strerror(errno) : null;
        String name = switch (errno) {
            case 1 -> "EPERM";
            case 2 -> "ENOENT";
            case 5 -> "EIO";
            case 9 -> "EBADF";
            case 12 -> "ENOMEM";
            case 13 -> "EACCES";
            case 16 -> "EBUSY";
            case 19 -> "ENODEV";
            case 22 -> "EINVAL";
            case 28 -> "ENOSPC";
            case 30 -> "EROFS";
            case 38 -> "ENOSYS";
            case 40 -> "ELOOP";
            case 95 -> "EOPNOTSUPP";
            default -> "errno " + errno;
        };
        return text == null ? name : name + " (" + text + ")";
    }

    private static String load() {
        if (!Platform.isLinux()) {
            return "io_uring needs Linux; this is " + System.getProperty("os.name");
        }
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            return "the io_uring helper writes the rings with native-order stores and is built for little-endian CPUs";
        }
        try {
            // JNA looks in jna.library.path, the system paths, then the class path (linux-x86-64/libnvmeofuring.so).
            Native.register(UringNative.class, NativeLibrary.getInstance(HELPER_NAME));
            registered = true;
        } catch (Throwable t) {
            return "the io_uring helper libnvmeofuring.so is not in this build (it was built without gcc or the kernel "
                    + "headers, linux-libc-dev): " + t.getMessage();
        }
        int abi = UringNative.nvu_abi_version();
        if (abi != ABI_VERSION) {
            return "the io_uring helper has ABI version " + abi + ", this jar needs " + ABI_VERSION
                    + " (a stale libnvmeofuring.so on jna.library.path?)";
        }
        if (UringNative.nvu_sqe_size() != IoUring.SQE_SIZE || UringNative.nvu_cqe_size() != IoUring.CQE_SIZE) {
            return "the io_uring helper was built with other entry sizes (" + UringNative.nvu_sqe_size() + ", "
                    + UringNative.nvu_cqe_size() + ")";
        }
        helperReady = true;
        long[] info = new long[UringNative.nvu_ring_info_length()];
        int r = UringNative.nvu_setup(2, 0, info);
        if (r < 0) {
            int errno = -r;
            return switch (errno) {
                case 38 -> "this kernel has no io_uring (ENOSYS; it needs Linux 5.6 or later)";
                case 1, 13 -> "io_uring is switched off for this process (" + describeErrno(errno)
                        + "): see /proc/sys/kernel/io_uring_disabled, or the container's seccomp profile";
                default -> "setting up an io_uring failed: " + describeErrno(errno);
            };
        }
        UringNative.nvu_teardown(info);
        return null;
    }
}

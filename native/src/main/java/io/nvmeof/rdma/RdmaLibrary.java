package io.nvmeof.rdma;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads rdma-core and the helper once, and says whether RDMA can be used here and, if not, why.
 *
 * <p>Three levels, each needing the one before:
 * <ol>
 *   <li>run-time libraries: libibverbs.so.1 and librdmacm.so.1 (packages {@code libibverbs1 librdmacm1
 *       ibverbs-providers});</li>
 *   <li>the helper, libnvmeofrdma.so, inside this jar (built only where {@code libibverbs-dev librdmacm-dev} were
 *       installed at build time) — {@link #isHelperLoaded()};</li>
 *   <li>at least one RDMA device — {@link #isAvailable()}.</li>
 * </ol>
 * Nothing here throws: a machine without any of it keeps running everything TCP, and the RDMA transport reports
 * {@link #unavailableReason()}. Loading happens on first use, never at class-load time of callers.
 */
public final class RdmaLibrary {
    /** Run-time packages (Debian/Ubuntu names). */
    public static final String RUNTIME_PACKAGES = "libibverbs1 librdmacm1 ibverbs-providers";
    /** Build-time packages for the helper. */
    public static final String BUILD_PACKAGES = "libibverbs-dev librdmacm-dev";
    /** Must match NVR_ABI_VERSION in nvmeof_rdma.h. */
    static final int ABI_VERSION = 3;
    static final String HELPER_NAME = "nvmeofrdma";

    private static final Object LOCK = new Object();
    private static volatile State state;
    /** Set as soon as the helper is registered, so error paths inside {@link #load()} can use nvr_strerror. */
    static volatile boolean helperRegistered;

    private record State(boolean helperLoaded, boolean available, String reason, List<String> devices) {
    }

    private RdmaLibrary() {
    }

    /** True when the libraries and the helper are loaded and at least one RDMA device exists. */
    public static boolean isAvailable() {
        return state().available;
    }

    /** True when libibverbs, librdmacm and the helper are loaded (a device may still be missing). */
    public static boolean isHelperLoaded() {
        return state().helperLoaded;
    }

    /** Why RDMA cannot be used here, naming what to install or set up; null when {@link #isAvailable()}. */
    public static String unavailableReason() {
        return state().reason;
    }

    /** RDMA device names libibverbs sees (empty when none or when the libraries are missing). */
    public static List<String> deviceNames() {
        return state().devices;
    }

    /** Throws {@link RdmaUnavailableException} with {@link #unavailableReason()} unless {@link #isAvailable()}. */
    public static void requireAvailable() throws RdmaUnavailableException {
        State s = state();
        if (!s.available) {
            throw new RdmaUnavailableException(s.reason);
        }
    }

    /** Like {@link #requireAvailable()} but only needs the helper (for device-free uses: tests, benchmarks). */
    public static void requireHelper() throws RdmaUnavailableException {
        State s = state();
        if (!s.helperLoaded) {
            throw new RdmaUnavailableException(s.reason);
        }
    }

    private static State state() {
        State s = state;
        if (s == null) {
            synchronized (LOCK) {
                s = state;
                if (s == null) {
                    s = load();
                    state = s;
                }
            }
        }
        return s;
    }

    private static State load() {
        if (!Platform.isLinux()) {
            return new State(false, false, "RDMA needs Linux with rdma-core; this is " + System.getProperty("os.name"),
                    List.of());
        }
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            // The descriptor records are little-endian and written with native-order stores.
            return new State(false, false, "RDMA support needs a little-endian CPU", List.of());
        }
        try {
            // Versioned names: the unversioned libibverbs.so link exists only with the -dev packages.
            Native.register(IbvNative.class, NativeLibrary.getInstance("libibverbs.so.1"));
        } catch (Throwable t) {
            return new State(false, false, missingRuntime("libibverbs.so.1", t), List.of());
        }
        try {
            Native.register(RdmaCmNative.class, NativeLibrary.getInstance("librdmacm.so.1"));
        } catch (Throwable t) {
            return new State(false, false, missingRuntime("librdmacm.so.1", t), List.of());
        }
        try {
            // JNA looks in jna.library.path, the system paths, then the class path under Platform.RESOURCE_PREFIX
            // (linux-x86-64/libnvmeofrdma.so in this jar), extracting it to a temporary file when needed.
            Native.register(NvrNative.class, NativeLibrary.getInstance(HELPER_NAME));
            helperRegistered = true;
        } catch (Throwable t) {
            return new State(false, false, missingHelper(t), List.of());
        }
        int abi = NvrNative.nvr_abi_version();
        if (abi != ABI_VERSION) {
            return new State(false, false, "the RDMA helper libnvmeofrdma.so has ABI version " + abi + ", this jar needs "
                    + ABI_VERSION + " (a stale copy on jna.library.path or the system library path?)", List.of());
        }
        List<String> devices;
        try {
            devices = listDevices();
        } catch (RdmaException e) {
            // ENOSYS: the kernel has no user verbs at all (no /sys/class/infiniband_verbs).
            String why = e.errno() == 38 ? "the kernel offers no RDMA verbs (ib_uverbs not loaded, "
                    + "no /sys/class/infiniband_verbs)" : e.getMessage();
            return new State(true, false, "no RDMA device: " + why + noDeviceHint(), List.of());
        }
        if (devices.isEmpty()) {
            return new State(true, false, "no RDMA device: libibverbs found none" + noDeviceHint(), List.of());
        }
        return new State(true, true, null, List.copyOf(devices));
    }

    static String missingRuntime(String library, Throwable t) {
        return "RDMA is unavailable: " + library + " cannot be loaded (" + firstLine(t)
                + "). Install the rdma-core run-time packages: apt-get install " + RUNTIME_PACKAGES;
    }

    static String missingHelper(Throwable t) {
        String resource = Platform.RESOURCE_PREFIX + "/" + System.mapLibraryName(HELPER_NAME);
        if (RdmaLibrary.class.getClassLoader().getResource(resource) == null) {
            return "RDMA is unavailable: this build of nvmeof-native carries no RDMA helper for " + Platform.RESOURCE_PREFIX
                    + " (" + resource + "): it was built without rdma-core's headers. Rebuild after: apt-get install "
                    + BUILD_PACKAGES;
        }
        return "RDMA is unavailable: the RDMA helper " + resource + " does not load (" + firstLine(t)
                + "). It needs the rdma-core run-time packages: apt-get install " + RUNTIME_PACKAGES;
    }

    static String noDeviceHint() {
        return ". There is no RDMA NIC, or its driver is not loaded; without one, Soft-RoCE provides a device "
                + "(modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <interface>). The user-space drivers are in "
                + "the package ibverbs-providers.";
    }

    private static String firstLine(Throwable t) {
        String m = String.valueOf(t.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    private static List<String> listDevices() throws RdmaException {
        int[] num = new int[1];
        long list = IbvNative.ibv_get_device_list(num);
        if (list == 0) {
            // rdma-core returns NULL (ENOSYS) when the kernel has no verbs support at all.
            throw RdmaException.fromErrno("ibv_get_device_list", Native.getLastError());
        }
        try {
            List<String> names = new ArrayList<>(num[0]);
            Pointer p = new Pointer(list);
            for (int i = 0; i < num[0]; i++) {
                names.add(IbvNative.ibv_get_device_name(p.getLong(8L * i)));
            }
            return names;
        } finally {
            IbvNative.ibv_free_device_list(list);
        }
    }

    /** Throws {@link RdmaException} for a negative errno return of the helper; returns rc otherwise. */
    static int check(int rc, String operation) throws RdmaException {
        if (rc < 0) {
            throw RdmaException.fromErrno(operation, -rc);
        }
        return rc;
    }
}

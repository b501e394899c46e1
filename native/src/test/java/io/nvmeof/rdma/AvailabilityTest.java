package io.nvmeof.rdma;

import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * RDMA must report itself unavailable, with a reason a person can act on, wherever something is missing; never
 * crash. The build and CI machines have rdma-core but no RDMA device, so there the reason is "no RDMA device".
 */
class AvailabilityTest {

    @Test
    void availabilityIsConsistentAndExplained() {
        if (RdmaLibrary.isAvailable()) {
            assertNull(RdmaLibrary.unavailableReason());
            assertFalse(RdmaLibrary.deviceNames().isEmpty());
            return;
        }
        String reason = RdmaLibrary.unavailableReason();
        assertNotNull(reason);
        assertTrue(reason.contains("no RDMA device") || reason.contains(RdmaLibrary.RUNTIME_PACKAGES)
                || reason.contains(RdmaLibrary.BUILD_PACKAGES) || reason.contains("Linux"), reason);
        assertTrue(RdmaLibrary.deviceNames().isEmpty());
        RdmaUnavailableException e = assertThrows(RdmaUnavailableException.class, RdmaLibrary::requireAvailable);
        assertEquals(reason, e.getMessage());
        // Every entry point refuses the same way instead of touching unloaded native code.
        assertEquals(reason, assertThrows(RdmaUnavailableException.class, () -> RdmaDevice.open(null)).getMessage());
        assertEquals(reason, assertThrows(RdmaUnavailableException.class, CmEventChannel::create).getMessage());
    }

    @Test
    void onAMachineWithRdmaCoreButNoDeviceTheReasonSaysSo() {
        // The build machines: helper built (headers present), libraries present, no /sys/class/infiniband device.
        if (RdmaLibrary.isHelperLoaded() && !RdmaLibrary.isAvailable()) {
            String reason = RdmaLibrary.unavailableReason();
            assertTrue(reason.startsWith("no RDMA device"), reason);
            assertTrue(reason.contains("rdma_rxe") && reason.contains("ibverbs-providers"), reason);
        }
    }

    @Test
    void messagesNameThePackages() {
        String runtime = RdmaLibrary.missingRuntime("libibverbs.so.1",
                new UnsatisfiedLinkError("libibverbs.so.1: cannot open shared object file\nmore"));
        assertTrue(runtime.contains("libibverbs1 librdmacm1 ibverbs-providers"), runtime);
        assertTrue(runtime.contains("cannot open shared object file") && !runtime.contains("more"), runtime);
        // In this build the helper resource exists (it was compiled), so a load failure points at the run-time
        // packages; without the resource the message names the build-time ones.
        String helper = RdmaLibrary.missingHelper(new UnsatisfiedLinkError("x"));
        assertTrue(helper.contains(RdmaLibrary.RUNTIME_PACKAGES) || helper.contains(RdmaLibrary.BUILD_PACKAGES), helper);
    }

    @Test
    void errnoTextComesFromStrerror() {
        RdmaException e = RdmaException.fromErrno("ibv_reg_mr", 12);
        assertEquals(12, e.errno());
        assertTrue(e.getMessage().startsWith("ibv_reg_mr failed: "), e.getMessage());
        if (RdmaLibrary.isHelperLoaded()) {
            assertTrue(e.getMessage().contains("Cannot allocate memory"), e.getMessage());
        }
    }

    @Test
    void socketAddressEncoding() throws Exception {
        byte[] v4 = SocketAddresses.encode(new InetSocketAddress("10.0.2.15", 4420));
        assertArrayEquals(new byte[] {2, 0, 0x11, 0x44, 10, 0, 2, 15, 0, 0, 0, 0, 0, 0, 0, 0}, v4);
        byte[] v6 = SocketAddresses.encode(new InetSocketAddress("::1", 4420));
        assertEquals(28, v6.length);
        assertEquals(10, v6[0]);
        assertEquals(1, v6[23]);
    }

    @Test
    void connectionParametersAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> ConnectionParameters.forConnect(new byte[197], 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new ConnectionParameters(null, 1, 1, 8, 7));
        assertEquals(7, ConnectionParameters.forAccept(null, 16, 16).rnrRetryCount());
        assertEquals(0, ConnectionParameters.forAccept(null, 16, 16).privateData().length);
        assertEquals(CmEventType.TIMEWAIT_EXIT, CmEventType.of(15));
        assertEquals(CmEventType.UNKNOWN, CmEventType.of(99));
    }
}

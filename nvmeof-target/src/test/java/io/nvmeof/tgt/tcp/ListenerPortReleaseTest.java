package io.nvmeof.tgt.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * A listener that has been removed has given its port back by the time the removal returns: an admin who removes a
 * port and adds it again at once, or another program that binds it, must not be told it is in use. (The JDK closes
 * a selector-registered socket only at the selector's next select, after Netty's close future has completed.)
 */
class ListenerPortReleaseTest {

    @Test
    void aRemovedListenersPortIsFreeAtOnce() throws Exception {
        try (NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null))) {
            LiveConfiguration live = target.live();
            int port;
            try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
                port = probe.getLocalPort();
            }
            for (int round = 0; round < 200; round++) {
                ListenerConfig added = live.addListener(new ListenerConfig(9, "tcp", "127.0.0.1", port, null, null, null));
                assertEquals(port, added.port());
                live.removeListener(9);
                try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
                    assertEquals(port, s.getLocalPort(), "round " + round);
                }
            }
        }
    }
}

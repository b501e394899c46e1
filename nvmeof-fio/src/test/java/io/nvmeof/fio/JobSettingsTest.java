package io.nvmeof.fio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.TransportId;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class JobSettingsTest {
    static final String A = "namespace=tcp\t127.0.0.1\t4420\tnqn.2026-11.io.nvmeof:a\t1";
    static final String A7 = "namespace=tcp\t127.0.0.1\t4420\tnqn.2026-11.io.nvmeof:a\t7";
    static final String B = "namespace=rdma\t10.0.0.5\t4421\tnqn.2026-11.io.nvmeof:b\t1";

    @Test
    void reconnectSettingsAreNvmeCliSecondsWithMinusOneForOff() {
        JobSettings s = JobSettings.parse(new String[] {"ctrl_loss_tmo=-1", "fast_io_fail_tmo=3", "reconnect_delay=2",
            "io_queues=4", "queue_depth=33", "hdgst=1", "ddgst=0", "busy_poll_us=50", A});
        assertEquals(ConnectOptions.OFF, s.options.ctrlLossTimeout());
        assertEquals(Duration.ofSeconds(3), s.options.fastIoFailTimeout());
        assertEquals(Duration.ofSeconds(2), s.options.reconnectDelay());
        assertEquals(4, s.options.ioQueues());
        assertEquals(33, s.options.queueDepth());
        assertTrue(s.options.headerDigest() && !s.options.dataDigest());
        JobSettings zero = JobSettings.parse(new String[] {"ctrl_loss_tmo=0", "fast_io_fail_tmo=-1", A});
        assertEquals(Duration.ZERO, zero.options.ctrlLossTimeout());
        assertEquals(ConnectOptions.OFF, zero.options.fastIoFailTimeout());
    }

    @Test
    void namespacesKeepFioFileOrderAndShareATargetsController() {
        JobSettings s = JobSettings.parse(new String[] {A7, B, A});
        assertEquals(3, s.namespaces.size());
        assertEquals(7, s.namespaces.get(0).nsid());
        assertEquals(new TransportId("rdma", "10.0.0.5", 4421, "nqn.2026-11.io.nvmeof:b"), s.namespaces.get(1).target());
        assertEquals(s.namespaces.get(0).target(), s.namespaces.get(2).target());
    }

    @Test
    void aSettingItDoesNotKnowIsRefusedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JobSettings.parse(new String[] {"rate_limit=3", A}));
        assertTrue(e.getMessage().contains("rate_limit"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> JobSettings.parse(new String[] {"io_queues=1"}));
        assertThrows(IllegalArgumentException.class, () -> JobSettings.parse(new String[] {"namespace=tcp\tx\t1"}));
    }
}

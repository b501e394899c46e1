package io.nvmeof.target;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.target.LiveConfiguration.ConfigurationException;
import io.nvmeof.target.config.TargetConfig;
import io.nvmeof.target.config.TargetConfig.NamespaceConfig;
import io.nvmeof.target.config.TargetConfig.SubsystemConfig;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Live changes to a running target, and the configuration document kept in step with them. */
class LiveConfigurationTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:live";

    @TempDir
    Path dir;

    @Test
    void changesApplyLiveAndTheExportRestoresTheSameTarget() throws Exception {
        TargetConfig exported;
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null))) {
            LiveConfiguration live = t.live();
            long genctr = t.core().discoveryGeneration();
            SubsystemConfig s = live.createSubsystem(new SubsystemConfig(NQN, null, "model-x", 8, null, null, null));
            assertEquals(16, s.serial().length(), "a serial is derived");
            assertTrue(s.allowAnyHost());
            assertNotNull(t.core().subsystem(NQN));
            assertTrue(t.core().discoveryGeneration() > genctr, "discoverable change bumps GENCTR");

            NamespaceConfig a = live.addNamespace(NQN, new NamespaceConfig(null, "ram", "1MiB", 4096, null, null));
            assertEquals(1L, a.nsid(), "lowest free nsid");
            NamespaceConfig b = live.addNamespace(NQN, new NamespaceConfig(5L, "file", "2MiB", 512,
                    dir.resolve("ns5.img").toString(), "11111111-2222-3333-4444-555555555555"));
            assertEquals("11111111-2222-3333-4444-555555555555", b.uuid());
            assertEquals("2097152", b.size());
            assertEquals(2, t.core().subsystem(NQN).namespaces().size());

            ConfigurationException dup = assertThrows(ConfigurationException.class,
                    () -> live.addNamespace(NQN, new NamespaceConfig(5L, "ram", "1MiB", 512, null, null)));
            assertEquals(ConfigurationException.Kind.CONFLICT, dup.kind());
            assertEquals(ConfigurationException.Kind.INVALID, assertThrows(ConfigurationException.class,
                    () -> live.addNamespace(NQN, new NamespaceConfig(9L, "ram", "1MiB", 512, null, null))).kind(),
                    "nsid beyond maxNamespaces 8");
            assertEquals(ConfigurationException.Kind.INVALID, assertThrows(ConfigurationException.class,
                    () -> live.addNamespace(NQN, new NamespaceConfig(null, "ram", "1MiB", 1000, null, null))).kind(),
                    "block size");
            assertEquals(ConfigurationException.Kind.NOT_FOUND, assertThrows(ConfigurationException.class,
                    () -> live.removeNamespace(NQN, 3)).kind());
            assertEquals(ConfigurationException.Kind.INVALID, assertThrows(ConfigurationException.class,
                    () -> live.createSubsystem(new SubsystemConfig("not an nqn", null, null, null, null, null, null))).kind());
            assertEquals(ConfigurationException.Kind.CONFLICT, assertThrows(ConfigurationException.class,
                    () -> live.createSubsystem(new SubsystemConfig(NQN, null, null, null, null, null, null))).kind());
            assertEquals(2, t.core().subsystem(NQN).namespaces().size(), "refused changes changed nothing");

            live.addHost(NQN, "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001");
            SubsystemConfig closed = live.setAllowAnyHost(NQN, false);
            assertEquals(List.of("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"), closed.hosts());
            live.removeNamespace(NQN, 1);
            assertNull(t.core().subsystem(NQN).namespace(1));
            exported = live.export();
        }
        // The export starts the same target: same subsystem, serial, namespaces, UUIDs, hosts.
        try (NvmeTarget again = NvmeTarget.start(exported)) {
            assertEquals(exported.subsystems(), again.live().export().subsystems());
            assertEquals(java.util.UUID.fromString("11111111-2222-3333-4444-555555555555"),
                    again.core().subsystem(NQN).namespace(5).uuid());
            assertTrue(!again.core().subsystem(NQN).allowAnyHost());
            again.live().deleteSubsystem(NQN);
            assertNull(again.core().subsystem(NQN));
        }
    }
}

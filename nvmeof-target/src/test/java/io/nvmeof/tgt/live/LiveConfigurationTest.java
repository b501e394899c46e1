package io.nvmeof.tgt.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
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

    /**
     * The target takes at most 1024 subsystems (SPDK's default max_subsystems), however they come: created, imported,
     * or in the configuration it starts from. Each change saves the whole document, so the cap also bounds what a
     * change costs.
     */
    @Test
    void theNumberOfSubsystemsIsCapped() throws Exception {
        int max = 1024;
        List<SubsystemConfig> full = new java.util.ArrayList<>();
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null))) {
            LiveConfiguration live = t.live();
            for (int i = 2; i <= max; i++) {
                live.createSubsystem(new SubsystemConfig(NQN + i, null, null, null, null, null, null));
            }
            assertEquals(max, live.subsystems().size());
            ConfigurationException refused = assertThrows(ConfigurationException.class,
                    () -> live.createSubsystem(new SubsystemConfig(NQN + "-over", null, null, null, null, null, null)));
            assertEquals(ConfigurationException.Kind.CONFLICT, refused.kind());
            assertTrue(refused.getMessage().contains("1024"), refused.getMessage());

            TargetConfig now = live.export();
            full.addAll(now.subsystems());
            full.add(new SubsystemConfig(NQN + "-over", null, null, null, null, null, null));
            ConfigurationException merge = assertThrows(ConfigurationException.class, () -> live.importConfiguration(
                    now.withContents(now.listeners(), List.of(full.get(max))), LiveConfiguration.ImportMode.MERGE,
                    false, n -> { }));
            assertEquals(ConfigurationException.Kind.CONFLICT, merge.kind());
            assertTrue(merge.getMessage().contains("1024"), merge.getMessage());
            assertEquals(now, live.export(), "the refused import changed nothing");
            LiveConfiguration.ImportResult swap = live.importConfiguration(now.withContents(now.listeners(),
                    full.subList(1, max + 1)), LiveConfiguration.ImportMode.REPLACE, false, n -> { });
            assertEquals(2, swap.changes().size(), "one subsystem deleted, one created: " + swap.changes());
            assertEquals(max, live.subsystems().size());
        }
        TargetConfig tooMany = TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null);
        IllegalArgumentException start = assertThrows(IllegalArgumentException.class,
                () -> NvmeTarget.start(tooMany.withContents(tooMany.listeners(), full)).close());
        assertTrue(start.getMessage().contains("1024"), start.getMessage());
    }

    /**
     * Issue 29, finding 2 (the target's half): hosts take a namespace whose identifiers are unchanged for the same
     * volume, so another volume under the same NSID must not have the same ones. Before, both were derived from the
     * subsystem NQN and NSID alone: another file added live as NSID 1, or a RAM namespace made anew (empty) by a
     * restart, looked to every host like the volume it had been writing to.
     */
    @Test
    void anotherVolumeUnderTheSameNsidHasOtherIdentifiersAndTheSameFileKeepsItsOwn() throws Exception {
        TargetConfig config = new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new TargetConfig.ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 128 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 8, true, null, List.of(
                        new NamespaceConfig(1L, "file", "1MiB", 512, dir.resolve("a.img").toString(), null),
                        new NamespaceConfig(2L, "ram", "1MiB", 512, null, null)))));
        java.util.UUID fileA;
        java.util.UUID ram;
        byte[] ramNguid;
        try (NvmeTarget t = NvmeTarget.start(config)) {
            fileA = t.core().subsystem(NQN).namespace(1).uuid();
            ram = t.core().subsystem(NQN).namespace(2).uuid();
            ramNguid = t.core().subsystem(NQN).namespace(2).nguid();
            SubsystemConfig exported = t.live().export().subsystems().get(0);
            assertEquals(fileA.toString(), exported.namespaces().get(0).uuid(), "a file's identity is exported");
            assertNull(exported.namespaces().get(1).uuid(), "a RAM namespace's is not: restored, it would be empty");

            t.live().removeNamespace(NQN, 1);
            t.live().addNamespace(NQN, new NamespaceConfig(1L, "file", "1MiB", 512, dir.resolve("b.img").toString(),
                    null));
            assertTrue(!fileA.equals(t.core().subsystem(NQN).namespace(1).uuid()), "another file, another namespace");
            t.live().removeNamespace(NQN, 2);
            t.live().addNamespace(NQN, new NamespaceConfig(2L, "ram", "1MiB", 512, null, null));
            assertTrue(!ram.equals(t.core().subsystem(NQN).namespace(2).uuid()), "a new RAM volume, a new namespace");
        }
        try (NvmeTarget again = NvmeTarget.start(config)) {
            assertEquals(fileA, again.core().subsystem(NQN).namespace(1).uuid(), "the same file keeps its identity");
            assertTrue(!ram.equals(again.core().subsystem(NQN).namespace(2).uuid()), "a restarted RAM namespace is empty:"
                    + " not the namespace hosts knew");
            assertTrue(!java.util.Arrays.equals(ramNguid, again.core().subsystem(NQN).namespace(2).nguid()));
        }
    }
}

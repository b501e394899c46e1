package io.nvmeof.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.target.NvmeTarget;
import io.nvmeof.target.config.TargetConfig;
import io.nvmeof.target.config.TargetConfig.NamespaceConfig;
import io.nvmeof.target.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every accepted change is saved atomically; a restart from the state restores the same target. */
class StateFileTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:state";

    @TempDir
    Path dir;

    @Test
    void aRestartFromTheStateRestoresEverything() throws Exception {
        StateFile state = new StateFile(dir.resolve("state"));
        TargetConfig saved;
        try (NvmeTarget t = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "4MiB", 512, null))) {
            t.live().onChange(doc -> {
                try {
                    state.save(doc);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            t.live().createSubsystem(new SubsystemConfig(NQN, "SERIAL-1", null, 16, false,
                    List.of("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"), null));
            String first = Files.readString(state.path());
            t.live().addNamespace(NQN, new NamespaceConfig(3L, "file", "1MiB", 4096, dir.resolve("ns3.img").toString(), null));
            assertEquals(first, Files.readString(state.previous()), "the replaced document is kept");
            assertFalse(Files.exists(dir.resolve("state/config.json.tmp")), "no temporary file left");
            saved = t.live().export();
        }
        assertEquals(saved, state.load(), "the state file is the live configuration");
        try (NvmeTarget again = NvmeTarget.start(state.load())) {
            assertEquals(saved.subsystems(), again.live().export().subsystems(), "same NQNs, serials, NSIDs, UUIDs, hosts");
            assertEquals("SERIAL-1", again.core().subsystem(NQN).serial());
            assertEquals(4096, again.core().subsystem(NQN).namespace(3).blockSize());
        }
    }

    @Test
    void aCorruptStateFileIsRefusedNamingTheLastGoodCopy() throws Exception {
        StateFile state = new StateFile(dir);
        state.save(TargetConfig.defaults("127.0.0.1", 4420, "1MiB", 512, null));
        state.save(TargetConfig.defaults("127.0.0.1", 4421, "1MiB", 512, null));
        String whole = Files.readString(state.path());
        Files.writeString(state.path(), whole.substring(0, whole.length() / 2)); // truncated, as by a failing disk
        IOException e = assertThrows(IOException.class, state::load);
        assertTrue(e.getMessage().contains(state.path().toString()), e.getMessage());
        assertTrue(e.getMessage().contains(state.previous().toString()), e.getMessage());
        assertEquals(4420, TargetConfig.load(state.previous()).listeners().get(0).port(), "the last good copy is intact");
        assertEquals(whole.length() / 2, Files.readString(state.path()).length(), "the corrupt file is left for inspection");
    }
}

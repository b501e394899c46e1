package io.nvmeof.tgt.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A configuration file that does not fit is refused in the admin API's words: the field's path, the name likely
 * meant and the names that belong there. Before: 'Unrecognized field "blocksize" (class
 * io.nvmeof.tgt.config.TargetConfig$NamespaceConfig), not marked as ignorable (11 known properties: ...'.
 */
class ConfigFileErrorsTest {
    @TempDir
    Path dir;

    String refusal(String json) throws IOException {
        Path f = dir.resolve("target.json");
        Files.writeString(f, json);
        String m = assertThrows(IOException.class, () -> TargetConfig.load(f)).getMessage();
        assertFalse(m.contains("io.nvmeof") || m.contains("class ") || m.contains("java."), m);
        return m.substring(("config " + f + " is not valid: ").length());
    }

    @Test
    void anUnknownFieldIsNamedWithItsPathAndTheOneLikelyMeant() throws Exception {
        String m = refusal("{\"subsystems\": [{\"nqn\": \"nqn.2026-12.io.nvmeof:a\",\n"
                + "  \"namespaces\": [{\"nsid\": 1, \"blocksize\": 4096}]}]}");
        assertEquals("subsystems[0].namespaces[0]: unknown field 'blocksize'; did you mean 'blockSize'? (the fields"
                + " here: anaGroup, backend, blockSize, bufferedIo, nguid, nsid, path, queueDepth, size, sparse, uuid)"
                + " (line 2)", m);
        assertEquals("the document: unknown field 'listener'; did you mean 'listeners'? (the fields here: busyPollUs,"
                + " hosts, listeners, maxConnectionMemory, maxIoQueues, maxMemory, maxQueueSize, maxSparseMemory,"
                + " maxTransferSize, pollGroupCpus, pollGroups, referrals, subsystems) (line 1)",
                refusal("{\"listener\": []}"));
    }

    @Test
    void aValueOfTheWrongKindSaysWhatBelongsThere() throws Exception {
        assertEquals("subsystems[0].maxNamespaces: must be an integer, got many (line 1)",
                refusal("{\"subsystems\": [{\"nqn\": \"nqn.2026-12.io.nvmeof:a\", \"maxNamespaces\": \"many\"}]}"));
    }
}

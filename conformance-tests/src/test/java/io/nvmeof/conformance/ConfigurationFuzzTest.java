package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the configuration document (issue 15): the bytes of a file given to {@code --config} or
 * to the admin API's import, parsed, then imported into a running target in both modes.
 *
 * <p>Invariants, after every input: parsing fails only with a parse error that says where; an import fails only with a
 * {@code ConfigurationException} (invalid, not found, conflict) whose cause, if any, is an I/O error or an argument
 * refused with a message, never a bug (a NullPointerException, a ClassCastException...); a failed or dry-run import
 * changes nothing (the export is the same before and after); a successful import is idempotent (importing its own
 * export again changes nothing), and importing the starting document afterwards brings the target back to it.
 *
 * <p>The harness imports for real only what stays in this sandbox: listeners on 127.0.0.1 and RAM namespaces of at most
 * 16 MiB (the vetting hook the admin API uses for its directory policy refuses the rest); anything else is only
 * planned (a dry run).
 */
class ConfigurationFuzzTest {
    private static final long MAX_RAM = 16 << 20;
    private static NvmeTarget target;
    private static LiveConfiguration live;
    private static TargetConfig base;

    /** The harness's own refusal (outside the sandbox), told apart from the target's. */
    static final class OutsideSandbox extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OutsideSandbox(String why) {
            super(why);
        }
    }

    private static final Consumer<NamespaceConfig> SANDBOX = n -> {
        if (n.path() != null || (n.backend() != null && !"ram".equals(n.backend()))) {
            throw new OutsideSandbox("only RAM namespaces are imported here");
        }
        long size;
        try {
            size = n.size() == null ? Long.MAX_VALUE : TargetConfig.parseSize(n.size());
        } catch (IllegalArgumentException e) {
            return; // the target refuses it with its own message
        }
        if (size > MAX_RAM) {
            throw new OutsideSandbox("RAM namespaces of at most 16 MiB here");
        }
    };

    @BeforeAll
    static void start() throws IOException {
        target = NvmeTarget.start(new TargetConfig(1, 4, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null)),
                List.of(new SubsystemConfig("nqn.2026-12.io.nvmeof:config-fuzz", null, null, 8, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null))))));
        live = target.live();
        base = live.export();
    }

    @AfterAll
    static void stop() {
        target.close();
    }

    @FuzzTest(maxDuration = "24h") // as long as ./test --fuzz allows (Jazzer 0.24 takes no override)
    void document(byte[] input) throws Exception {
        TargetConfig doc;
        try {
            doc = TargetConfig.parse(new String(input, java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException e) {
            assertTrue(e.getMessage() != null && !e.getMessage().isEmpty(), "a parse error says what is wrong");
            return;
        } catch (IllegalArgumentException e) {
            // the document's own checks (TargetConfig's constructor): refused with a message
            assertTrue(e.getMessage() != null && !e.getMessage().isEmpty(), "a refusal says what is wrong");
            return;
        }
        if (doc == null) {
            return; // "null" parses to nothing
        }
        for (ImportMode mode : ImportMode.values()) {
            importOnce(doc, mode, true);
        }
        boolean sandboxed = doc.listeners() == null || doc.listeners().stream()
                .allMatch(l -> l != null && "127.0.0.1".equals(l.address()));
        if (sandboxed) {
            for (ImportMode mode : ImportMode.values()) {
                if (importOnce(doc, mode, false)) {
                    TargetConfig after = live.export();
                    assertEquals(List.of(), live.importConfiguration(after, ImportMode.REPLACE, true, SANDBOX).changes(),
                            "importing the export of an import changes nothing");
                    assertTrue(importOnce(base, ImportMode.REPLACE, false), "back to the starting document");
                    assertEquals(base, live.export(), "the starting document restored");
                }
            }
        }
    }

    /** One import; true when it was made. A refusal must be a clean one and change nothing. */
    private static boolean importOnce(TargetConfig doc, ImportMode mode, boolean dryRun) {
        TargetConfig before = live.export();
        try {
            live.importConfiguration(doc, mode, dryRun, SANDBOX);
            if (dryRun) {
                assertEquals(before, live.export(), "a dry run changes nothing");
            }
            return !dryRun;
        } catch (OutsideSandbox e) {
            assertEquals(before, live.export(), "refused by the vetting hook: nothing changed");
            return false;
        } catch (ConfigurationException e) {
            assertTrue(e.getMessage() != null && !e.getMessage().isEmpty(), "a refusal says what to change");
            Throwable cause = e.getCause();
            assertTrue(cause == null || cause instanceof IOException || cause instanceof IllegalArgumentException
                    || cause instanceof IllegalStateException || cause instanceof UnsupportedOperationException,
                    () -> "an import failed on a bug: " + stackTrace(cause));
            assertEquals(before, live.export(), "a refused import changes nothing: " + e.getMessage());
            return false;
        }
    }

    private static String stackTrace(Throwable t) {
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }

    /** Writes the seeds: {@code -Dtest=ConfigurationFuzzSeeds -Dfuzz.writeSeeds=true}. */
    static void writeSeeds(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("merge-subsystem"), """
                {"subsystems":[{"nqn":"nqn.2026-12.io.nvmeof:b","serial":"SN1","model":"m","maxNamespaces":4,
                "allowAnyHost":false,"hosts":["nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"],
                "namespaces":[{"nsid":1,"backend":"ram","size":"1MiB","blockSize":4096,"sparse":true},
                {"backend":"ram","size":"2m","blockSize":512,"uuid":"11111111-2222-3333-4444-555555555555"}]}]}""");
        Files.writeString(dir.resolve("listener"), """
                {"listeners":[{"id":7,"transport":"tcp","address":"127.0.0.1","port":0,"inlineDataSize":4096,
                "maxH2CData":65536,"subsystems":["nqn.2026-12.io.nvmeof:config-fuzz"]}]}""");
        Files.writeString(dir.resolve("globals"), """
                {"pollGroups":2,"maxIoQueues":8,"maxQueueSize":256,"maxTransferSize":131072,"busyPollUs":50,
                "subsystems":[{"nqn":"nqn.2026-12.io.nvmeof:config-fuzz","namespaces":[{"nsid":2,"backend":"ram",
                "size":"4k","blockSize":512,"nguid":"00112233445566778899aabbccddeeff"}]}]}""");
        Files.writeString(dir.resolve("bad-values"), """
                {"subsystems":[{"nqn":"not an nqn","namespaces":[{"nsid":0,"backend":"tape","size":"-1","blockSize":3}]}],
                "listeners":[{"transport":"carrier-pigeon","address":"127.0.0.1","port":70000}]}""");
    }
}

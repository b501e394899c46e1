package io.nvmeof.tgt.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.live.LiveConfiguration.ImportResult;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Importing a whole configuration document into a running target: replace and merge, all or nothing. */
class ConfigurationImportTest {
    private static final String A = "nqn.2026-12.io.nvmeof:a";
    private static final String B = "nqn.2026-12.io.nvmeof:b";

    @TempDir
    Path dir;

    private NvmeTarget target;
    private LiveConfiguration live;

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(new TargetConfig(1, null, null, null,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null)),
                List.of(new SubsystemConfig(A, null, null, null, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null))))));
        live = target.live();
    }

    @AfterEach
    void stop() {
        target.close();
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private TargetConfig doc(List<ListenerConfig> listeners, SubsystemConfig... subs) {
        return new TargetConfig(null, null, null, null, listeners, List.of(subs));
    }

    /**
     * A document's hosts set or rotate their DH-HMAC-CHAP settings, saved once with the rest; hosts the document does
     * not name keep theirs, in replace mode too (exports carry no secrets, so importing one must not strip them). A bad
     * entry is refused and changes nothing. (Until issue 34 such a document was refused whole: nothing could carry the
     * secrets into the running target.)
     */
    @Test
    void aDocumentsHostsSetTheirSecretsAndTheOtherHostsKeepTheirs() {
        String kept = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-00000000000b";
        String imported = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-00000000000c";
        String keptKey = io.nvmeof.protocol.auth.DhchapSecret.of(new byte[32], null).representation();
        byte[] other = new byte[32];
        java.util.Arrays.fill(other, (byte) 1);
        String importedKey = io.nvmeof.protocol.auth.DhchapSecret.of(other, null).representation();
        live.hostSecrets().setHostAuthentication(new TargetConfig.HostConfig(kept, keptKey, null, null, null));
        List<String> saved = new ArrayList<>();
        live.saveChangesWith(d -> saved.add(d.toJson()));
        TargetConfig before = live.export();

        TargetConfig bad = before.withHosts(List.of(new TargetConfig.HostConfig(imported, importedKey, importedKey,
                null, null)));
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> live.importConfiguration(bad, ImportMode.REPLACE, false, n -> { }));
        assertEquals(ConfigurationException.Kind.INVALID, e.kind());
        assertTrue(e.getMessage().contains("hosts[0]") && e.getMessage().contains("dhchapCtrlKey"), e.getMessage());
        assertTrue(!e.getMessage().contains("DHHC-1:00:AQEB"), e.getMessage());
        assertEquals(List.of(), saved, "nothing saved");
        assertNull(target.core().hostAuth().lookup(imported));

        ImportResult r = live.importConfiguration(before.withHosts(List.of(new TargetConfig.HostConfig(imported,
                importedKey, null, null, "ffdhe2048"))), ImportMode.REPLACE, false, n -> { });
        assertEquals(List.of("set the security settings of host " + imported + " (DH-HMAC-CHAP sha256, group ffdhe2048)"),
                r.changes());
        assertNull(r.config().hosts(), "the answer carries no secret");
        assertEquals(1, saved.size(), "saved once");
        assertTrue(saved.get(0).contains(keptKey) && saved.get(0).contains(importedKey), saved.get(0));
        assertNotNull(target.core().hostAuth().lookup(kept), "the host the document does not name keeps its key");
        assertNotNull(target.core().hostAuth().lookup(imported));
        assertEquals(before, live.export());
    }

    /**
     * Review finding H4: a host's settings are kept per kind. Setting only DH-HMAC-CHAP (a PUT, an nvmetcli import)
     * keeps the host's TLS key, and setting only a TLS key keeps its DH-HMAC-CHAP secret; before, either silently
     * removed the other, and a host whose TLS key went could connect in plain TCP again.
     */
    @Test
    void settingOneKindOfAHostsSecurityKeepsTheOther() {
        String host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-00000000000d";
        String dhchap = io.nvmeof.protocol.auth.DhchapSecret.of(new byte[32], null).representation();
        String tls = io.nvmeof.protocol.tls.ConfiguredPsk.format(io.nvmeof.protocol.tls.TlsPskHash.SHA256, new byte[32]);
        live.hostSecrets().setHostAuthentication(new TargetConfig.HostConfig(host, null, null, null, null, tls, "legacy"));
        HostSecrets.HostAuthenticationView v = live.hostSecrets().setHostAuthentication(
                new TargetConfig.HostConfig(host, dhchap, null, null, null));
        assertTrue(v.tlsKeySet() && v.dhchapKeySet(), v.toString());
        assertEquals("legacy", v.tlsKeyDerivation());
        assertNotNull(target.core().tlsKeys().lookup(host), "the TLS key stays in force");
        byte[] other = new byte[32];
        other[0] = 9;
        String newTls = io.nvmeof.protocol.tls.ConfiguredPsk.format(io.nvmeof.protocol.tls.TlsPskHash.SHA256, other);
        live.importConfiguration(live.export().withHosts(List.of(new TargetConfig.HostConfig(host, null, null, null,
                null, newTls, null))), ImportMode.MERGE, false, n -> { });
        assertNotNull(target.core().hostAuth().lookup(host), "a TLS key imported alone keeps the DH-HMAC-CHAP secret");
        assertEquals("standard", live.hostSecrets().hostAuthentication(host).tlsKeyDerivation(), "the new key's own derivation");
    }

    /** Review finding H3: an import that changes only a listener's TLS changes the listener (it was ignored). */
    @Test
    void anImportThatChangesAListenersTlsChangesTheListener() {
        TargetConfig doc = live.export();
        ListenerConfig l = doc.listeners().get(0);
        ListenerConfig secured = new ListenerConfig(l.id(), l.transport(), l.address(), l.port(), l.inlineDataSize(),
                l.maxH2CData(), l.subsystems(), "required");
        ImportResult r = live.importConfiguration(new TargetConfig(doc.pollGroups(), doc.maxIoQueues(),
                doc.maxQueueSize(), doc.maxTransferSize(), List.of(secured), doc.subsystems()), ImportMode.REPLACE,
                false, n -> { });
        assertFalse(r.changes().isEmpty(), "the TLS change was planned");
        assertEquals("required", live.listeners().get(0).tls(), r.changes().toString());
    }

    @Test
    void exportThenReplaceIsANoOp() {
        TargetConfig before = live.export();
        ImportResult r = live.importConfiguration(before, ImportMode.REPLACE, false, n -> { });
        assertEquals(List.of(), r.changes());
        assertEquals(before, live.export());
    }

    @Test
    void replaceMakesTheTargetTheDocumentAndKeepsUnchangedNamespacesWithTheirData() throws Exception {
        Namespace ns1 = target.core().subsystem(A).namespace(1);
        ns1.backend().write(0, ByteBuffer.wrap(new byte[] {7, 7, 7}));
        int port = target.tcpPort(0);
        int port2 = freePort();
        List<String> saved = new ArrayList<>();
        live.saveChangesWith(d -> saved.add(d.toJson()));
        long genctr = target.core().discoveryGeneration();
        TargetConfig want = doc(List.of(new ListenerConfig(1, "tcp", "127.0.0.1", port, null, null, null),
                        new ListenerConfig(7, "tcp", "127.0.0.1", port2, null, null, List.of(B))),
                new SubsystemConfig(A, null, null, null, false, List.of("nqn.2026-12.io.example:host1"),
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null),
                                new NamespaceConfig(3L, "file", "2MiB", 4096, dir.resolve("a3.img").toString(), null))),
                new SubsystemConfig(B, "SERIALB", null, 4, null, null,
                        List.of(new NamespaceConfig(null, null, "1MiB", null, null, null))));
        ImportResult r = live.importConfiguration(want, ImportMode.REPLACE, false, n -> { });
        assertTrue(r.changes().contains("add namespace 3 of " + A + " (file " + dir.resolve("a3.img") + ", 2MiB)"), r.changes().toString());
        assertTrue(r.changes().contains("create subsystem " + B + " with 1 namespace"), r.changes().toString());
        assertTrue(r.changes().contains("add listener 7 (tcp://127.0.0.1:" + port2 + ")"), r.changes().toString());
        assertTrue(r.changes().contains("allow host nqn.2026-12.io.example:host1 on " + A), r.changes().toString());
        assertEquals(1, saved.size(), "one import, one save");
        assertTrue(target.core().discoveryGeneration() > genctr);

        assertSame(ns1, target.core().subsystem(A).namespace(1), "an unchanged namespace is kept, not reopened");
        ByteBuffer back = ByteBuffer.allocate(3);
        ns1.backend().read(0, back);
        assertEquals(7, back.get(2));
        assertEquals(4096, target.core().subsystem(A).namespace(3).blockSize());
        assertEquals("SERIALB", target.core().subsystem(B).serial());
        assertTrue(!target.core().subsystem(A).allowAnyHost());
        assertEquals(2, live.listeners().size());
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", port2)) {
            assertTrue(s.isConnected(), "the new listener takes connections");
        }
        TargetConfig after = live.export();
        assertEquals(after, live.importConfiguration(after, ImportMode.REPLACE, true, n -> { }).config());
        assertEquals(List.of(), live.importConfiguration(after, ImportMode.REPLACE, false, n -> { }).changes(),
                "importing the export changes nothing");

        // Now replace with only B: A goes, the listener of B stays, listener 1 goes.
        TargetConfig onlyB = doc(List.of(new ListenerConfig(7, "tcp", "127.0.0.1", port2, null, null, List.of(B))),
                new SubsystemConfig(B, null, null, null, null, null, null));
        ImportResult dry = live.importConfiguration(onlyB, ImportMode.REPLACE, true, n -> { });
        assertTrue(dry.dryRun());
        assertTrue(dry.changes().contains("delete subsystem " + A + " (its hosts are disconnected)"), dry.changes().toString());
        assertNotNull(target.core().subsystem(A), "a dry run changes nothing");
        live.importConfiguration(onlyB, ImportMode.REPLACE, false, n -> { });
        assertNull(target.core().subsystem(A));
        assertEquals(1, target.core().subsystem(B).namespaces().size(), "namespaces left out of the document stay");
        assertEquals(List.of(7), live.listeners().stream().map(ListenerConfig::id).toList());
    }

    /**
     * A document that changes only a namespace's queueDepth sets it on the live namespace, which is not reopened (a
     * block device is held exclusively by it: a reopen fails). One that changes bufferedIo of the same file is refused,
     * saying to remove and add the namespace, and changes nothing. Before, both imports were taken as no change.
     */
    @Test
    void queueDepthChangesInPlaceAndBufferedIoIsRefused() throws Exception {
        String image = dir.resolve("q.img").toString();
        java.util.function.BiFunction<Boolean, Integer, TargetConfig> withFile = (buffered, depth) -> doc(
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", target.tcpPort(0), null, null, null)),
                new SubsystemConfig(A, null, null, null, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null),
                                new NamespaceConfig(2L, "file", "1MiB", 512, image, null, null, null, buffered,
                                        depth))));
        live.importConfiguration(withFile.apply(null, null), ImportMode.REPLACE, false, n -> { });
        Namespace file = target.core().subsystem(A).namespace(2);
        assertEquals(0, file.deviceQueueDepth());
        ImportResult deeper = live.importConfiguration(withFile.apply(null, 8), ImportMode.MERGE, false, n -> { });
        assertEquals(List.of("set the queue depth of namespace 2 of " + A + " to 8"), deeper.changes());
        assertSame(file, target.core().subsystem(A).namespace(2), "not reopened");
        assertEquals(8, file.deviceQueueDepth(), "the live namespace has it");
        assertEquals(8, live.export().subsystems().get(0).namespaces().get(1).queueDepth(), "and the document");
        assertEquals(List.of(), live.importConfiguration(withFile.apply(null, 8), ImportMode.REPLACE, false, n -> { })
                .changes(), "the same document again changes nothing");
        ConfigurationException bad = assertThrows(ConfigurationException.class,
                () -> live.importConfiguration(withFile.apply(null, 0), ImportMode.REPLACE, false, n -> { }));
        assertTrue(bad.getMessage().contains("queueDepth must be 1 to 65535"), bad.getMessage());

        TargetConfig before = live.export();
        ConfigurationException refused = assertThrows(ConfigurationException.class,
                () -> live.importConfiguration(withFile.apply(true, 8), ImportMode.REPLACE, false, n -> { }));
        assertEquals(ConfigurationException.Kind.CONFLICT, refused.kind());
        assertTrue(refused.getMessage().contains("remove the namespace and add it again"), refused.getMessage());
        assertSame(file, target.core().subsystem(A).namespace(2), "nothing changed");
        assertEquals(before, live.export());
        assertEquals(8, file.deviceQueueDepth());
    }

    @Test
    void aFailureAnywhereChangesNothing() throws Exception {
        TargetConfig before = live.export();
        int port2 = freePort();
        try (ServerSocket occupied = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            TargetConfig want = doc(List.of(before.listeners().get(0),
                            new ListenerConfig(2, "tcp", "127.0.0.1", port2, null, null, null),
                            new ListenerConfig(3, "tcp", "127.0.0.1", occupied.getLocalPort(), null, null, null)),
                    new SubsystemConfig(A, null, null, null, null, null,
                            List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null),
                                    new NamespaceConfig(2L, "ram", "1MiB", 512, null, null))),
                    new SubsystemConfig(B, null, null, null, null, null,
                            List.of(new NamespaceConfig(1L, "file", "1MiB", 512, dir.resolve("b1.img").toString(), null))));
            ConfigurationException e = assertThrows(ConfigurationException.class,
                    () -> live.importConfiguration(want, ImportMode.MERGE, false, n -> { }));
            assertEquals(ConfigurationException.Kind.CONFLICT, e.kind(), e.getMessage());
            assertTrue(e.getMessage().startsWith("nothing was changed"), e.getMessage());
        }
        assertEquals(before, live.export());
        assertNull(target.core().subsystem(B));
        assertEquals(1, target.core().subsystem(A).namespaces().size());
        try (ServerSocket s = new ServerSocket(port2, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            assertTrue(s.isBound(), "the listener bound before the failure was closed again");
        }

        // A path the caller's policy refuses: refused before anything opens.
        TargetConfig outside = doc(before.listeners(), new SubsystemConfig(B, null, null, null, null, null,
                List.of(new NamespaceConfig(1L, "file", "1MiB", 512, "/etc/passwd", null))));
        assertThrows(IllegalStateException.class, () -> live.importConfiguration(outside, ImportMode.MERGE, false, n -> {
            throw new IllegalStateException("outside the allowed directories");
        }));
        assertEquals(before, live.export());
    }

    /** A malformed size for a namespace that exists is refused as invalid, saying which; it used to escape raw. */
    @Test
    void aMalformedSizeOfAnExistingNamespaceIsRefusedAsInvalid() {
        TargetConfig before = live.export();
        for (ImportMode mode : ImportMode.values()) {
            ConfigurationException e = assertThrows(ConfigurationException.class, () -> live.importConfiguration(
                    doc(before.listeners(), new SubsystemConfig(A, null, null, null, null, null,
                            List.of(new NamespaceConfig(1L, "ram", "1M4-5", 512, null, null)))), mode, false, n -> { }));
            assertEquals(ConfigurationException.Kind.INVALID, e.kind(), e.getMessage());
            assertTrue(e.getMessage().contains("namespace 1") && e.getMessage().contains("1M4-5"), e.getMessage());
            assertEquals(before, live.export());
        }
    }

    @Test
    void mergeAddsAndRefusesClashes() {
        TargetConfig before = live.export();
        int port = target.tcpPort(0);
        ConfigurationException clash = assertThrows(ConfigurationException.class, () -> live.importConfiguration(
                doc(List.of(), new SubsystemConfig(A, null, null, null, null, null,
                        List.of(new NamespaceConfig(1L, "ram", "2MiB", 512, null, null)))), ImportMode.MERGE, false, n -> { }));
        assertEquals(ConfigurationException.Kind.CONFLICT, clash.kind());
        assertTrue(clash.getMessage().contains("namespace 1 of " + A + " exists and differs"), clash.getMessage());
        assertEquals(ConfigurationException.Kind.CONFLICT, assertThrows(ConfigurationException.class,
                () -> live.importConfiguration(doc(List.of(new ListenerConfig(1, "tcp", "127.0.0.1", port, 0, null, null))),
                        ImportMode.MERGE, false, n -> { })).kind(), "same port, other settings");
        assertEquals(ConfigurationException.Kind.INVALID, assertThrows(ConfigurationException.class,
                () -> live.importConfiguration(doc(List.of(), new SubsystemConfig("bad nqn", null, null, null, null, null,
                        null)), ImportMode.MERGE, false, n -> { })).kind());
        assertEquals(before, live.export());

        ImportResult r = live.importConfiguration(doc(List.of(), new SubsystemConfig(A, null, null, null, null,
                List.of("nqn.2026-12.io.example:host2"), List.of(new NamespaceConfig(2L, "ram", "1MiB", 512, null, null))),
                new SubsystemConfig(B, null, null, null, null, null, null)), ImportMode.MERGE, false, n -> { });
        assertEquals(List.of("add namespace 2 of " + A + " (ram, 1MiB)",
                "allow host nqn.2026-12.io.example:host2 on " + A, "create subsystem " + B + " with 0 namespaces"),
                r.changes());
        assertEquals(2, target.core().subsystem(A).namespaces().size(), "merge keeps namespace 1");
        assertEquals(1, live.listeners().size(), "merge keeps the listener");
    }

    @Test
    void replacingASerialRecreatesTheSubsystemAndMovesItsNamespaces() {
        Namespace ns1 = target.core().subsystem(A).namespace(1);
        TargetConfig want = live.export();
        SubsystemConfig a = want.subsystems().get(0);
        TargetConfig changed = new TargetConfig(null, null, null, null, want.listeners(),
                List.of(new SubsystemConfig(A, "NEWSERIAL", a.model(), a.maxNamespaces(), a.allowAnyHost(), a.hosts(),
                        a.namespaces())));
        ImportResult r = live.importConfiguration(changed, ImportMode.REPLACE, false, n -> { });
        assertEquals(1, r.changes().size(), r.changes().toString());
        assertTrue(r.changes().get(0).startsWith("recreate subsystem " + A));
        assertEquals("NEWSERIAL", target.core().subsystem(A).serial());
        assertSame(ns1, target.core().subsystem(A).namespace(1));
        assertEquals("NEWSERIAL", live.subsystem(A).serial());

        ImportResult settings = live.importConfiguration(new TargetConfig(4, null, 64, null, want.listeners(),
                List.of(), 50), ImportMode.MERGE, false, n -> { });
        assertEquals(3, settings.notApplied().size(), settings.notApplied().toString());
        assertTrue(settings.notApplied().get(0).startsWith("pollGroups 4: fixed while the target runs"));
        assertTrue(settings.notApplied().get(1).startsWith("busyPollUs 50: fixed while the target runs"),
                settings.notApplied().toString());
        // 0 is the default spelled out: not a change.
        ImportResult zero = live.importConfiguration(new TargetConfig(null, null, null, null, want.listeners(),
                List.of(), 0), ImportMode.MERGE, false, n -> { });
        assertEquals(List.of(), zero.notApplied());
    }

    /**
     * Issue 30, finding 21, for imports: the namespaces the target would have after the import are checked as a whole.
     * Two of them on one file, or with one NGUID, are refused with nothing changed; a file (and an identifier) that
     * moves from a namespace the import removes to one it adds is no clash.
     */
    @Test
    void anImportThatWouldShareAFileOrAnIdentifierIsRefusedAndOneThatMovesThemIsNot() throws Exception {
        String image = dir.resolve("moving.img").toString();
        String uuid = "22222222-3333-4444-5555-666666666666";
        live.addNamespace(A, new NamespaceConfig(2L, "file", "1MiB", 512, image, uuid));
        TargetConfig before = live.export();
        ConfigurationException twice = assertThrows(ConfigurationException.class, () -> live.importConfiguration(
                doc(before.listeners(), new SubsystemConfig(B, null, null, null, null, null,
                        List.of(new NamespaceConfig(1L, "file", null, null, image, null)))), ImportMode.MERGE, false,
                n -> { }));
        assertEquals(ConfigurationException.Kind.CONFLICT, twice.kind(), twice.getMessage());
        assertTrue(twice.getMessage().contains("namespace 2 of " + A), twice.getMessage());
        ConfigurationException sameNguid = assertThrows(ConfigurationException.class, () -> live.importConfiguration(
                doc(before.listeners(), new SubsystemConfig(B, null, null, null, null, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null, uuid.replace("-", ""))))),
                ImportMode.MERGE, false, n -> { }));
        assertEquals(ConfigurationException.Kind.CONFLICT, sameNguid.kind(), sameNguid.getMessage());
        assertEquals(before, live.export(), "refused imports changed nothing");
        assertNull(target.core().subsystem(B));

        // Replace: the file and its UUID leave A (namespace 2 is not in the document) for B.
        SubsystemConfig a = before.subsystems().get(0);
        ImportResult moved = live.importConfiguration(doc(before.listeners(),
                new SubsystemConfig(A, null, null, null, null, null, List.of(a.namespaces().get(0))),
                new SubsystemConfig(B, null, null, null, null, null,
                        List.of(new NamespaceConfig(1L, "file", null, null, image, uuid)))), ImportMode.REPLACE, false,
                n -> { });
        assertTrue(moved.changes().contains("remove namespace 2 from " + A), moved.changes().toString());
        assertNull(target.core().subsystem(A).namespace(2));
        assertEquals(java.util.UUID.fromString(uuid), target.core().subsystem(B).namespace(1).uuid());
    }

    /**
     * Issue 30, findings 21 and 24, at start: a configuration whose namespaces share a file or an identifier, or give
     * a size that is not whole blocks, does not start, and the message names them.
     */
    @Test
    void aConfigurationWithSharedFilesOrIdentifiersOrPartBlocksDoesNotStart() {
        String image = dir.resolve("shared.img").toString();
        List<ListenerConfig> listeners = List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null));
        IllegalArgumentException sharedFile = assertThrows(IllegalArgumentException.class, () -> NvmeTarget.start(
                new TargetConfig(1, null, null, null, listeners, List.of(
                        new SubsystemConfig(A, null, null, null, true, null,
                                List.of(new NamespaceConfig(1L, "file", "1MiB", 512, image, null))),
                        new SubsystemConfig(B, null, null, null, true, null,
                                List.of(new NamespaceConfig(3L, "file", null, null, image, null)))))));
        assertTrue(sharedFile.getMessage().contains("namespace 3 of " + B) && sharedFile.getMessage().contains(
                "namespace 1 of " + A), sharedFile.getMessage());
        String uuid = "33333333-4444-5555-6666-777777777777";
        IllegalArgumentException sharedUuid = assertThrows(IllegalArgumentException.class, () -> NvmeTarget.start(
                new TargetConfig(1, null, null, null, listeners, List.of(new SubsystemConfig(A, null, null, null, true,
                        null, List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, uuid),
                                new NamespaceConfig(2L, "ram", "1MiB", 512, null, uuid)))))));
        assertTrue(sharedUuid.getMessage().contains("UUID " + uuid), sharedUuid.getMessage());
        IllegalArgumentException partBlock = assertThrows(IllegalArgumentException.class, () -> NvmeTarget.start(
                new TargetConfig(1, null, null, null, listeners, List.of(new SubsystemConfig(A, null, null, null, true,
                        null, List.of(new NamespaceConfig(1L, "ram", "1000", 512, null, null)))))));
        assertTrue(partBlock.getMessage().contains("size 1000 is not a whole number of 512-byte blocks"),
                partBlock.getMessage());
        assertTrue(!java.nio.file.Files.exists(Path.of(image)), "the refused start left no file behind");
    }

    /**
     * Issue 30, finding 18: maxSparseMemory bounds what sparse RAM namespaces promise together (the default: 4 times
     * the machine's memory); one beyond it is refused saying so, and its size is free again once a sparse namespace
     * is gone. Memory up front is not counted: it is checked against what the system has.
     */
    @Test
    void sparseNamespacesTogetherPromiseAtMostMaxSparseMemory() throws Exception {
        List<ListenerConfig> listeners = List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, null, null, null));
        List<SubsystemConfig> subs = List.of(new SubsystemConfig(B, null, null, null, true, null, null));
        try (NvmeTarget t = NvmeTarget.start(new TargetConfig(1, null, null, null, listeners, subs, null, null, null,
                "10MiB"))) {
            NamespaceConfig sparse = new NamespaceConfig(null, "ram", "4MiB", 512, null, null).withSparse(true);
            t.live().addNamespace(B, sparse);
            t.live().addNamespace(B, sparse);
            ConfigurationException beyond = assertThrows(ConfigurationException.class,
                    () -> t.live().addNamespace(B, sparse));
            assertEquals(ConfigurationException.Kind.INVALID, beyond.kind());
            assertTrue(beyond.getMessage().contains("maxSparseMemory (10.0 MiB)")
                    && beyond.getMessage().contains("8.0 MiB promised already"), beyond.getMessage());
            t.live().addNamespace(B, new NamespaceConfig(null, "ram", "4MiB", 512, null, null));
            t.live().removeNamespace(B, 1);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (true) { // the removed namespace's memory is counted until its backend closes, once drained
                try {
                    t.live().addNamespace(B, sparse);
                    break;
                } catch (ConfigurationException e) {
                    assertTrue(System.nanoTime() < deadline, e.getMessage());
                    Thread.sleep(20);
                }
            }
        }
        ConfigurationException huge = assertThrows(ConfigurationException.class, () -> live.addNamespace(A,
                new NamespaceConfig(null, "ram", "64TiB", 512, null, null).withSparse(true)));
        assertTrue(huge.getMessage().contains("4 times this machine's"), huge.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> NvmeTarget.start(
                new TargetConfig(1, null, null, null, listeners, subs, null, null, null, "lots")));
        assertTrue(bad.getMessage().startsWith("maxSparseMemory"), bad.getMessage());
    }
}

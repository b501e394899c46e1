package io.nvmeof.tgt.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException;
import io.nvmeof.tgt.live.LiveConfiguration.ConfigurationException.Kind;
import io.nvmeof.tgt.live.LiveConfiguration.ImportMode;
import io.nvmeof.tgt.live.LiveConfiguration.ImportResult;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import io.nvmeof.tgt.core.DiscoveryReferral;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Referrals as configuration: checked, kept in the document (saved, exported, restarted from), changed live and by
 * imports in both modes, and what the discovery log gets from them ({@link DiscoveryReferral}).
 */
class ReferralConfigurationTest {
    private NvmeTarget target;
    private LiveConfiguration live;
    private final List<String> saved = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "1MiB", 512, null));
        live = target.live();
        live.saveChangesWith(d -> saved.add(d.toJson()));
    }

    @AfterEach
    void stop() {
        target.close();
    }

    private static ReferralConfig to(String address, Integer port) {
        return new ReferralConfig(null, null, address, port, null, null, null);
    }

    private static void refused(Kind kind, String why, Executable change) {
        ConfigurationException e = assertThrows(ConfigurationException.class, change);
        assertEquals(kind, e.kind(), e.getMessage());
        assertTrue(e.getMessage().contains(why), e.getMessage());
    }

    @Test
    void aReferralIsCheckedSavedListedAndRemoved() {
        long genctr = target.core().discoveryGeneration();
        ReferralConfig r = live.addReferral(to("10.1.2.3", null));
        assertEquals(new ReferralConfig(1, "tcp", "10.1.2.3", 8009, null, null, null), r, "defaults filled in");
        assertTrue(target.core().discoveryGeneration() > genctr, "GENCTR grows");
        assertEquals(List.of(new DiscoveryReferral(1, 3, 1, "10.1.2.3", "8009", Nqn.DISCOVERY,
                io.nvmeof.tgt.core.TlsMode.NONE, 0)), List.copyOf(target.core().referrals()));
        assertTrue(saved.get(saved.size() - 1).contains("\"referrals\""), "saved before it is live");
        assertEquals(List.of(r), live.export().referrals());
        assertEquals(4420, live.addReferral(new ReferralConfig(null, "rdma", "fe80::1", null, null, null, null)).port(),
                "RDMA's discovery port");
        assertEquals(2, target.core().referrals().stream().filter(x -> x.adrfam() == 2).findFirst().orElseThrow().id());

        int changes = saved.size();
        refused(Kind.CONFLICT, "already refers to", () -> live.addReferral(to("10.1.2.3", 8009)));
        refused(Kind.CONFLICT, "referral 1 already exists",
                () -> live.addReferral(new ReferralConfig(1, null, "10.9.9.9", null, null, null, null)));
        refused(Kind.INVALID, "transport must be tcp or rdma",
                () -> live.addReferral(new ReferralConfig(null, "fc", "10.1.2.4", null, null, null, null)));
        refused(Kind.INVALID, "port must be 1 to 65535", () -> live.addReferral(to("10.1.2.4", 70000)));
        refused(Kind.INVALID, "port must be 1 to 65535", () -> live.addReferral(to("10.1.2.4", 0)));
        refused(Kind.INVALID, "address is required", () -> live.addReferral(to(null, 4420)));
        refused(Kind.INVALID, "cannot be resolved", () -> live.addReferral(to("no-such-host.invalid", 4420)));
        refused(Kind.INVALID, "wildcard", () -> live.addReferral(to("0.0.0.0", 4420)));
        refused(Kind.INVALID, "referral subsystem",
                () -> live.addReferral(new ReferralConfig(null, null, "10.1.2.4", null, "not an nqn", null, null)));
        refused(Kind.INVALID, "tls is for NVMe/TCP",
                () -> live.addReferral(new ReferralConfig(null, "rdma", "10.1.2.4", null, null, "required", null)));
        refused(Kind.INVALID, "tls must be",
                () -> live.addReferral(new ReferralConfig(null, null, "10.1.2.4", null, null, "maybe", null)));
        refused(Kind.INVALID, "portId", () -> live.addReferral(new ReferralConfig(null, null, "10.1.2.4", null, null,
                null, 65536)));
        refused(Kind.NOT_FOUND, "referral 9 does not exist", () -> live.removeReferral(9));
        assertEquals(changes, saved.size(), "nothing refused was saved");
        assertEquals(2, live.referrals().size());

        genctr = target.core().discoveryGeneration();
        live.removeReferral(1);
        assertTrue(target.core().discoveryGeneration() > genctr);
        assertEquals(List.of(2), target.core().referrals().stream().map(DiscoveryReferral::id).toList());
    }

    /** A host following a referral to this target's own discovery service would read the same log again, forever. */
    @Test
    void aReferralToThisTargetsOwnListenerIsRefused() throws Exception {
        int port = target.tcpPort(0);
        refused(Kind.CONFLICT, "this target's own listener", () -> live.addReferral(to("127.0.0.1", port)));
        try (NvmeTarget any = NvmeTarget.start(TargetConfig.defaults("0.0.0.0", 0, "1MiB", 512, null))) {
            int anyPort = any.tcpPort(0);
            refused(Kind.CONFLICT, "own listener", () -> any.live().addReferral(to("127.0.0.1", anyPort)));
        }
        assertEquals(List.of(), live.referrals());
        assertEquals(1, live.addReferral(to("127.0.0.1", port + 1 > 65535 ? port - 1 : port + 1)).id(),
                "another port of this machine is another service");
        refused(Kind.CONFLICT, "own listener", () -> live.importConfiguration(live.export().withReferrals(
                List.of(to("127.0.0.1", port))), ImportMode.MERGE, false, n -> { }));
    }

    @Test
    void theDocumentCarriesReferralsAcrossARestart() throws Exception {
        live.addReferral(new ReferralConfig(4, "tcp", "10.1.2.3", 4420, "nqn.2026-12.io.example:remote", "required",
                12));
        TargetConfig exported = TargetConfig.parse(live.export().toJson());
        assertEquals(live.referrals(), exported.referrals());
        try (NvmeTarget again = NvmeTarget.start(exported.withContents(
                List.of(exported.listeners().get(0).withIdAndPort(1, 0)), exported.subsystems()))) {
            assertEquals(exported.referrals(), again.live().referrals());
            DiscoveryReferral r = again.core().referrals().iterator().next();
            assertEquals(4, r.id());
            assertEquals(2, r.subtype(), "a referral that names a subsystem is an NVM subsystem entry");
            assertEquals(12, r.portId());
        }
        TargetConfig twice = exported.withReferrals(List.of(to("10.1.2.3", 4420), to("10.1.2.3", 4420)))
                .withContents(List.of(exported.listeners().get(0).withIdAndPort(1, 0)), exported.subsystems());
        ConfigurationException start = assertThrows(ConfigurationException.class, () -> NvmeTarget.start(twice).close());
        assertTrue(start.getMessage().contains("twice"), start.getMessage());
    }

    @Test
    void importsReplaceOrMergeReferrals() {
        live.addReferral(to("10.1.2.3", 4420));
        live.addReferral(to("10.1.2.4", 4420));
        TargetConfig now = live.export();

        assertEquals(List.of(), live.importConfiguration(now, ImportMode.REPLACE, false, n -> { }).changes(),
                "an export imported changes nothing");
        ImportResult dry = live.importConfiguration(now.withReferrals(List.of(to("10.1.2.4", 4420),
                to("10.1.2.5", null))), ImportMode.REPLACE, true, n -> { });
        assertEquals(List.of("remove referral 1 (tcp://10.1.2.3:4420/" + Nqn.DISCOVERY + ")",
                "add referral 1 (tcp://10.1.2.5:8009/" + Nqn.DISCOVERY + ")"), dry.changes());
        assertEquals(2, target.core().referrals().size(), "a dry run changes nothing");

        long genctr = target.core().discoveryGeneration();
        live.importConfiguration(now.withReferrals(List.of(to("10.1.2.4", 4420), to("10.1.2.5", null))),
                ImportMode.REPLACE, false, n -> { });
        assertEquals(List.of("10.1.2.5", "10.1.2.4"), target.core().referrals().stream()
                .map(DiscoveryReferral::traddr).toList(), "by id: 1 given anew, 2 kept");
        assertTrue(target.core().discoveryGeneration() > genctr);

        ImportResult merged = live.importConfiguration(now.withReferrals(List.of(to("10.1.2.6", 4420))),
                ImportMode.MERGE, false, n -> { });
        assertEquals(List.of("add referral 3 (tcp://10.1.2.6:4420/" + Nqn.DISCOVERY + ")"), merged.changes());
        assertEquals(3, live.referrals().size(), "merge keeps the others");
        TargetConfig before = live.export();
        refused(Kind.CONFLICT, "exists with other settings", () -> live.importConfiguration(now.withReferrals(
                List.of(new ReferralConfig(null, null, "10.1.2.6", 4420, null, "required", null))), ImportMode.MERGE,
                false, n -> { }));
        refused(Kind.CONFLICT, "referral id 3 is taken", () -> live.importConfiguration(now.withReferrals(
                List.of(new ReferralConfig(3, null, "10.1.2.7", 4420, null, null, null))), ImportMode.MERGE, false,
                n -> { }));
        refused(Kind.INVALID, "referrals[0]", () -> live.importConfiguration(now.withReferrals(
                List.of(to("10.1.2.7", -1))), ImportMode.MERGE, false, n -> { }));
        assertEquals(before, live.export(), "refused imports changed nothing");

        live.importConfiguration(now.withReferrals(null), ImportMode.REPLACE, false, n -> { });
        assertEquals(List.of(), live.referrals(), "replace with a document without referrals removes them");
        assertEquals(List.of(), List.copyOf(target.core().referrals()));
    }
}

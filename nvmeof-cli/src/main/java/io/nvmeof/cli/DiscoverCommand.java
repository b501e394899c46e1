package io.nvmeof.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.protocol.fabrics.Nqn;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code nvme discover}: reads the discovery log page. */
@Command(name = "discover", mixinStandardHelpOptions = true, description = "List the subsystems a discovery controller offers this host.")
final class DiscoverCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions conn;

    @Option(names = "--json", description = "Print JSON")
    boolean json;

    static String trtypeName(int t) {
        switch (t) {
            case 1: return "rdma";
            case 2: return "fc";
            case 3: return "tcp";
            case 254: return "loop";
            default: return "unknown(" + t + ")";
        }
    }

    static String subtypeName(int t) {
        switch (t) {
            case 1: return "discovery subsystem referral";
            case 2: return "nvme subsystem";
            case 3: return "current discovery subsystem";
            default: return "unknown(" + t + ")";
        }
    }

    @Override
    public Integer call() throws Exception {
        List<DiscoveryEntry> entries;
        try (NvmeofController c = conn.connect(Nqn.DISCOVERY, conn.builder().build())) {
            entries = c.discoveryLog();
        }
        if (json) {
            System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(
                    java.util.Map.of("genctr_records", entries.size(), "records", entries)));
            return 0;
        }
        System.out.printf("%nDiscovery Log Number of Records %d%n", entries.size());
        int i = 0;
        for (DiscoveryEntry e : entries) {
            System.out.printf("=====Discovery Log Entry %d======%n", i++);
            System.out.printf("trtype:  %s%n", trtypeName(e.trtype()));
            System.out.printf("adrfam:  %s%n", e.adrfam() == 1 ? "ipv4" : e.adrfam() == 2 ? "ipv6" : String.valueOf(e.adrfam()));
            System.out.printf("subtype: %s%n", subtypeName(e.subtype()));
            System.out.printf("treq:    %s%n", (e.treq() & 3) == 2 ? "not required" : (e.treq() & 3) == 1 ? "required" : "not specified");
            System.out.printf("portid:  %d%n", e.portid());
            System.out.printf("trsvcid: %s%n", e.trsvcid());
            System.out.printf("subnqn:  %s%n", e.subnqn());
            System.out.printf("traddr:  %s%n", e.traddr());
        }
        long referrals = entries.stream().filter(DiscoveryEntry::isReferral).count();
        if (referrals > 0) {
            // Not followed here: the host decides which other discovery services it asks.
            System.out.printf("%n%d referral(s) to other discovery services: run discover against their traddr and"
                    + " trsvcid to list what they offer%n", referrals);
        }
        return 0;
    }
}

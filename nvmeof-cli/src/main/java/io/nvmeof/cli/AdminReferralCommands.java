package io.nvmeof.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code nvmeof admin referrals | referral-add | referral-remove}: the discovery log's referrals to other targets'
 * discovery services, as SPDK's {@code rpc.py nvmf_discovery_get_referrals / _add_referral / _remove_referral}.
 */
final class AdminReferralCommands {
    private static final ObjectMapper JSON = new ObjectMapper();

    private AdminReferralCommands() {
    }

    @Command(name = "referrals", description = "List the discovery log's referrals to other discovery services")
    static final class Referrals extends AdminCommand.Sub {
        @Override
        public Integer call() throws Exception {
            JsonNode list = admin.call("GET", "/api/v1/referrals", null);
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"ID", "TRANSPORT", "ADDRESS", "PORT", "SUBSYSTEM", "TLS"});
            for (JsonNode r : list) {
                rows.add(new String[] {r.path("id").asText(), r.path("transport").asText(), r.path("address").asText(),
                        r.path("port").asText(), r.path("subsystem").asText("discovery"), r.path("tls").asText("none")});
            }
            admin.print(list, rows);
            return 0;
        }
    }

    @Command(name = "referral-add", description = "Refer hosts to another target's discovery service (as rpc.py"
            + " nvmf_discovery_add_referral); nvme connect-all follows it")
    static final class ReferralAdd extends AdminCommand.Sub {
        @Option(names = "--address", required = true, description = "The other target's IP address") String address;
        @Option(names = "--port", description = "Its discovery port (default: 8009 for tcp, 4420 for rdma; our"
                + " targets serve discovery on every listener)") Integer port;
        @Option(names = "--transport", defaultValue = "tcp", description = "tcp or rdma") String transport;
        @Option(names = "--subsystem", paramLabel = "NQN", description = "Refer to this subsystem there instead of its"
                + " discovery service (an NVM subsystem entry, as SPDK's --subnqn)") String subsystem;
        @Option(names = "--tls", description = "none, allowed or required: how the other end takes NVMe/TCP") String tls;
        @Option(names = "--id", description = "The referral's id (default: the lowest free)") Integer id;

        @Override
        public Integer call() throws Exception {
            ObjectNode b = JSON.createObjectNode().put("address", address).put("transport", transport);
            if (port != null) {
                b.put("port", port);
            }
            if (subsystem != null) {
                b.put("subsystem", subsystem);
            }
            if (tls != null) {
                b.put("tls", tls);
            }
            if (id != null) {
                b.put("id", id);
            }
            JsonNode r = admin.call("POST", "/api/v1/referrals", b);
            admin.done("referral " + r.path("id").asText() + ": " + r.path("transport").asText() + " "
                    + r.path("address").asText() + ":" + r.path("port").asText()
                    + (r.has("subsystem") ? " (" + r.path("subsystem").asText() + ")" : ""));
            return 0;
        }
    }

    @Command(name = "referral-remove", description = "Remove a referral; hosts reading the discovery log are told")
    static final class ReferralRemove extends AdminCommand.Sub {
        @Parameters(index = "0", paramLabel = "ID") int id;

        @Override
        public Integer call() throws Exception {
            return admin.delete("/api/v1/referrals/" + id, "removed referral " + id);
        }
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.DISCOVERY_NQN;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * SPDK's {@code nvmf_discovery_add_referral} calls, in and out: {@code address} ({@code trtype}, {@code adrfam},
 * {@code traddr}, {@code trsvcid}, which SPDK requires), {@code secure_channel} (our {@code tls} required) and
 * {@code subnqn} (the discovery NQN when absent; another NQN refers to that subsystem, as our {@code subsystem}).
 */
final class SpdkReferrals {
    private static final Set<String> ADDRESS_KEYS = Set.of("trtype", "adrfam", "traddr", "trsvcid");

    private final ImportReport notMapped;
    private final List<ReferralConfig> read = new ArrayList<>();

    SpdkReferrals(ImportReport notMapped) {
        this.notMapped = notMapped;
    }

    /** One {@code nvmf_discovery_add_referral} call: a referral, or a line saying why not. */
    void readReferral(SpdkCall call) {
        JsonAt address = call.params().field("address").requireObject();
        String trtype = address.field("trtype").nonEmptyText().toLowerCase(Locale.ROOT);
        String traddr = address.field("traddr").nonEmptyText();
        String label = "nvmf_discovery_add_referral(" + trtype.toUpperCase(Locale.ROOT) + " " + traddr + ":"
                + address.field("trsvcid").display() + ")";
        if (!trtype.equals("tcp") && !trtype.equals("rdma")) {
            notMapped.add(label + ": transport " + trtype + " is not supported (tcp and rdma only); not imported");
            return;
        }
        String adrfam = address.field("adrfam").optText();
        if (adrfam != null && !adrfam.equalsIgnoreCase("IPv4") && !adrfam.equalsIgnoreCase("IPv6")) {
            notMapped.add(label + ": address family " + adrfam + " is not supported (IPv4 and IPv6 only); not imported");
            return;
        }
        int trsvcid = (int) address.field("trsvcid").integer(1, 65535);
        for (String key : address.fieldNames()) {
            if (!ADDRESS_KEYS.contains(key)) {
                notMapped.add(label + ".address." + key + "=" + address.field(key).display() + ": ignored");
            }
        }
        for (String key : call.params().fieldNames()) {
            if (!Set.of("address", "secure_channel", "subnqn").contains(key)) {
                notMapped.add(label + "." + key + "=" + call.params().field(key).display() + ": ignored");
            }
        }
        Boolean secure = call.params().field("secure_channel").optFlag();
        if (Boolean.TRUE.equals(secure) && !trtype.equals("tcp")) {
            notMapped.securityLost(label + ": secure_channel on an RDMA referral: TLS is for NVMe/TCP only");
            secure = false;
        }
        String subnqn = call.params().field("subnqn").optText();
        read.add(new ReferralConfig(null, trtype, traddr, trsvcid,
                subnqn == null || subnqn.isEmpty() || subnqn.equals(DISCOVERY_NQN) ? null : subnqn,
                Boolean.TRUE.equals(secure) ? "required" : null, null));
    }

    /** The referrals read, in order; null when none. */
    List<ReferralConfig> build() {
        return read.isEmpty() ? null : List.copyOf(read);
    }

    /** One call per referral, after the subsystems (load_config replays them in order; none depends on another). */
    static void write(List<ReferralConfig> referrals, ArrayNode nvmfConfig, List<String> notMapped) {
        for (int i = 0; referrals != null && i < referrals.size(); i++) {
            ReferralConfig r = referrals.get(i);
            String where = "referrals[" + i + "]";
            String transport = r.transport() != null ? r.transport() : "tcp";
            ObjectNode params = SpdkExport.call(nvmfConfig, "nvmf_discovery_add_referral");
            ObjectNode a = params.putObject("address");
            a.put("trtype", transport.toUpperCase(Locale.ROOT));
            a.put("adrfam", r.address().contains(":") ? "IPv6" : "IPv4");
            a.put("traddr", r.address());
            a.put("trsvcid", Integer.toString(r.port() != null ? r.port() : transport.equals("tcp") ? 8009 : 4420));
            params.put("secure_channel", "required".equals(r.tls()));
            params.put("subnqn", r.subsystem() != null ? r.subsystem() : DISCOVERY_NQN);
            if ("allowed".equals(r.tls())) {
                notMapped.add(where + ".tls=allowed: SPDK's referral says only whether a secure channel is required;"
                        + " exported as not required");
            }
            if (r.portId() != null) {
                notMapped.add(where + ".portId=" + r.portId() + ": SPDK's referrals have PORTID 0; not exported");
            }
        }
    }
}

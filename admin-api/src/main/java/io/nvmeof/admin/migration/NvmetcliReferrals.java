package io.nvmeof.admin.migration;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.config.TargetConfig.ReferralConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * nvmet's port referrals ({@code ports[i].referrals[j]}: {@code name}, {@code enable} and {@code addr} with
 * {@code trtype}, {@code adrfam}, {@code traddr}, {@code trsvcid}, {@code treq} and {@code portid}, the configfs
 * attributes of {@code ports/N/referrals/NAME}), in and out. nvmet keeps referrals per port, ours are target-wide:
 * one listed under several ports is one referral, and one under some ports only is seen on every listener here (the
 * import says so). The export writes every referral under every port, which is what hosts saw here.
 */
final class NvmetcliReferrals {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final Set<String> ADDR_KEYS = Set.of("trtype", "adrfam", "traddr", "trsvcid", "treq", "portid");

    private final ImportReport notMapped;
    /** By transport, address and port: the referral, and the ports that listed it with where it first was. */
    private final Map<String, ReferralConfig> referrals = new LinkedHashMap<>();
    private final Map<String, List<Long>> portsOf = new LinkedHashMap<>();
    private final Map<String, String> firstSeenAt = new LinkedHashMap<>();

    NvmetcliReferrals(ImportReport notMapped) {
        this.notMapped = notMapped;
    }

    /** The referrals of port {@code portid} (one that becomes a listener). */
    void readPort(JsonAt list, long portid) {
        for (JsonAt referral : list.elements()) {
            referral.requireObject();
            JsonAt addr = referral.field("addr").requireObject();
            String trtype = addr.field("trtype").text().toLowerCase(Locale.ROOT);
            String traddr = addr.field("traddr").optText();
            String name = referral.field("name").present() ? " " + referral.field("name").display() : "";
            String where = referral.path() + " (referral" + name + " to " + trtype + " " + traddr + ":"
                    + addr.field("trsvcid").display() + ")";
            Boolean enabled = referral.field("enable").optFlag();
            if (!Boolean.TRUE.equals(enabled)) {
                notMapped.add(where + ": not enabled in nvmet (enable is 0 or absent); not imported");
                continue;
            }
            if (!trtype.equals("tcp") && !trtype.equals("rdma")) {
                notMapped.add(where + ": transport " + trtype + " is not supported (tcp and rdma only); not imported");
                continue;
            }
            String adrfam = addr.field("adrfam").optText();
            if (adrfam != null && !adrfam.isEmpty() && !adrfam.equalsIgnoreCase("ipv4")
                    && !adrfam.equalsIgnoreCase("ipv6")) {
                notMapped.add(where + ": address family " + adrfam + " is not supported (ipv4 and ipv6 only); "
                        + "not imported");
                continue;
            }
            for (String key : addr.fieldNames()) {
                if (!ADDR_KEYS.contains(key)) {
                    notMapped.add(addr.field(key).path() + "=" + addr.field(key).display()
                            + ": not an nvmet referral address field; ignored");
                }
            }
            int trsvcid = (int) addr.field("trsvcid").integer(1, 65535);
            String treq = addr.field("treq").optText();
            Long remotePortId = addr.field("portid").optInteger(0, 65535);
            ReferralConfig r = new ReferralConfig(null, trtype, addr.field("traddr").nonEmptyText(), trsvcid, null,
                    "required".equals(treq) && trtype.equals("tcp") ? "required" : null,
                    remotePortId != null && remotePortId != 0 ? remotePortId.intValue() : null);
            if ("required".equals(treq) && !trtype.equals("tcp")) {
                notMapped.securityLost(addr.field("treq").path() + "=required on an " + trtype + " referral: a secure"
                        + " channel here is TLS, for NVMe/TCP only");
            }
            String key = trtype + "://" + r.address() + ":" + trsvcid;
            referrals.putIfAbsent(key, r);
            firstSeenAt.putIfAbsent(key, where);
            portsOf.computeIfAbsent(key, k -> new ArrayList<>()).add(portid);
        }
    }

    /** The referrals read, once each; {@code listenerPorts}: the ports that became listeners. Null when none. */
    List<ReferralConfig> build(List<Long> listenerPorts) {
        for (Map.Entry<String, List<Long>> e : portsOf.entrySet()) {
            if (!e.getValue().containsAll(listenerPorts)) {
                notMapped.add(firstSeenAt.get(e.getKey()) + ": nvmet lists it on port(s) " + e.getValue() + " only;"
                        + " referrals are target-wide here, so hosts see it on every listener");
            }
        }
        return referrals.isEmpty() ? null : List.copyOf(referrals.values());
    }

    /** Every referral, as each port's {@code referrals} list. */
    static ArrayNode write(List<ReferralConfig> referrals, List<String> notMapped, boolean noteOnce) {
        ArrayNode out = JSON.arrayNode();
        for (int i = 0; referrals != null && i < referrals.size(); i++) {
            ReferralConfig r = referrals.get(i);
            String where = "referrals[" + i + "]";
            if (r.subsystem() != null) {
                if (noteOnce) {
                    notMapped.add(where + ".subsystem=" + r.subsystem() + ": nvmet's referrals name discovery"
                            + " services only; not exported");
                }
                continue;
            }
            String transport = r.transport() != null ? r.transport() : "tcp";
            ObjectNode entry = out.addObject();
            ObjectNode addr = entry.putObject("addr");
            addr.put("adrfam", r.address().contains(":") ? "ipv6" : "ipv4");
            if (r.portId() != null) {
                addr.put("portid", Integer.toString(r.portId()));
            }
            addr.put("traddr", r.address());
            addr.put("treq", "required".equals(r.tls()) ? "required" : "allowed".equals(r.tls()) ? "not required"
                    : "not specified");
            addr.put("trsvcid", Integer.toString(r.port() != null ? r.port() : transport.equals("tcp") ? 8009 : 4420));
            addr.put("trtype", transport);
            entry.put("enable", 1);
            entry.put("name", "referral-" + (r.id() != null ? r.id() : i + 1));
        }
        return out;
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.orEmpty;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * One export to an SPDK save_config document ({@link SpdkFormat#write}): the "bdev" and "nvmf" subsystems, their calls
 * written by the class of each RPC family in the order load_config replays them (transports, then each subsystem
 * with its hosts, bdevs and namespaces, then listeners).
 */
final class SpdkExport {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private final TargetConfig c;
    private final List<String> notMapped = new ArrayList<>();
    private final ArrayNode bdevConfig = JSON.arrayNode();
    private final ArrayNode nvmfConfig = JSON.arrayNode();
    private final List<String> allNqns = new ArrayList<>();
    private final SpdkSubsystemExport subsystemCalls = new SpdkSubsystemExport(bdevConfig, nvmfConfig, notMapped);
    private final SpdkListenerExport listenerCalls;

    SpdkExport(TargetConfig c) {
        this.c = c;
        this.listenerCalls = new SpdkListenerExport(c, notMapped, nvmfConfig, allNqns);
    }

    Exported write() {
        if (c.pollGroups() != null) {
            notMapped.add("pollGroups=" + c.pollGroups() + ": SPDK runs a poll group per reactor (choose its "
                    + "cores with spdk_tgt -m); not exported");
        }
        if (c.busyPollUs() != null) {
            notMapped.add("busyPollUs=" + c.busyPollUs() + ": SPDK's poll groups always poll (its interrupt mode"
                    + " is spdk_tgt --interrupt-mode); not exported");
        }
        if (c.pollGroupCpus() != null) {
            notMapped.add("pollGroupCpus=" + c.pollGroupCpus() + ": SPDK's reactors run on the cores of spdk_tgt -m"
                    + " (a core mask on its command line, not in its JSON configuration); not exported");
        }
        List<SubsystemConfig> subsystems = orEmpty(c.subsystems());
        for (int i = 0; i < subsystems.size(); i++) {
            SubsystemConfig s = subsystems.get(i);
            if (s == null || s.nqn() == null) {
                throw new IllegalArgumentException("subsystems[" + i + "].nqn is missing");
            }
            allNqns.add(s.nqn());
        }
        listenerCalls.writeTransports();
        for (int i = 0; i < subsystems.size(); i++) {
            subsystemCalls.writeSubsystem(subsystems.get(i), "subsystems[" + i + "]");
        }
        listenerCalls.writeListeners();
        SpdkReferrals.write(c.referrals(), nvmfConfig, notMapped);
        ObjectNode root = JSON.objectNode();
        ArrayNode list = root.putArray("subsystems");
        list.addObject().put("subsystem", "bdev").set("config", bdevConfig);
        list.addObject().put("subsystem", "nvmf").set("config", nvmfConfig);
        return new Exported(Migration.pretty(root), notMapped);
    }

    /** Appends {@code {"method": method, "params": {}}} to {@code config} and returns the params. */
    static ObjectNode call(ArrayNode config, String method) {
        ObjectNode call = config.addObject();
        call.put("method", method);
        return call.putObject("params");
    }

    /** Puts {@code name} into {@code params} unless {@code value} is null. */
    static void putIfSet(ObjectNode params, String name, Integer value) {
        if (value != null) {
            params.put(name, value);
        }
    }
}

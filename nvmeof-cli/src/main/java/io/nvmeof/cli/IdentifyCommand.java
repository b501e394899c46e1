package io.nvmeof.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.nvmeof.initiator.ControllerInfo;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code nvme id-ctrl} and {@code nvme id-ns} in one: the controller and its namespaces. */
@Command(name = "identify", mixinStandardHelpOptions = true, description = "Print the controller's and namespaces' identify data.")
final class IdentifyCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions conn;

    @Option(names = {"-n", "--nqn"}, required = true, description = "Subsystem NQN")
    String nqn;

    @Option(names = "--json", description = "Print JSON")
    boolean json;

    @Option(names = {"-H", "--human-readable"}, description = "Decode the bit fields (ONCS, SGLS, KAS, CNTRLTYPE) and"
            + " the namespaces' ANA state and identifiers, as nvme id-ctrl -H")
    boolean human;

    @Override
    public Integer call() throws Exception {
        try (NvmeofController c = conn.connect(nqn, conn.builder().ioQueues(1).queueDepth(4).build())) {
            ControllerInfo i = c.info();
            Map<String, Object> ctrl = new LinkedHashMap<>();
            ctrl.put("vid", i.vid());
            ctrl.put("ssvid", i.ssvid());
            ctrl.put("sn", i.serial());
            ctrl.put("mn", i.model());
            ctrl.put("fr", i.firmware());
            ctrl.put("cntlid", i.cntlid());
            ctrl.put("ver", i.versionString());
            ctrl.put("mdts_bytes", i.mdts());
            ctrl.put("maxcmd", i.maxcmd());
            ctrl.put("nn", i.nn());
            ctrl.put("oncs", i.oncs());
            ctrl.put("sgls", i.sgls());
            ctrl.put("kas", i.kas());
            ctrl.put("ioccsz", i.ioccsz());
            ctrl.put("iorcsz", i.iorcsz());
            ctrl.put("icdoff", i.icdoff());
            ctrl.put("subnqn", i.subnqn());
            ctrl.put("cntrltype", i.controllerType());
            List<Map<String, Object>> nss = new ArrayList<>();
            for (NamespaceHandle ns : c.namespaces()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("nsid", ns.nsid());
                m.put("nsze", ns.blockCount());
                m.put("block_size", ns.blockSize());
                m.put("size_bytes", ns.sizeBytes());
                m.put("ana_group", ns.anaGroup());
                m.put("ana_state", ns.anaState().label());
                ns.nguid().ifPresent(g -> m.put("nguid", java.util.HexFormat.of().formatHex(g)));
                ns.uuid().ifPresent(u -> m.put("uuid", u.toString()));
                nss.add(m);
            }
            if (json) {
                Map<String, Object> all = new LinkedHashMap<>();
                all.put("controller", ctrl);
                all.put("namespaces", nss);
                System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(all));
                return 0;
            }
            System.out.println("NVME Identify Controller (" + conn.where() + ", " + nqn + "):");
            Map<String, List<String>> decoded = human ? Map.of("oncs", IdentifyFields.oncs(i.oncs()),
                    "sgls", IdentifyFields.sgls(i.sgls()), "kas", IdentifyFields.kas(i.kas()),
                    "cntrltype", IdentifyFields.controllerType(i.controllerType())) : Map.of();
            for (Map.Entry<String, Object> e : ctrl.entrySet()) {
                Object v = e.getValue();
                boolean hex = human && (e.getKey().equals("oncs") || e.getKey().equals("sgls"));
                System.out.printf("%-10s: %s%n", e.getKey(), hex ? String.format("%#x", ((Number) v).longValue()) : v);
                decoded.getOrDefault(e.getKey(), List.of()).forEach(System.out::println);
            }
            for (Map<String, Object> m : nss) {
                long size = (Long) m.get("size_bytes");
                System.out.printf("%nNVME Identify Namespace %d:%n", (Long) m.get("nsid"));
                System.out.printf("%-10s: %d%n", "nsze", (Long) m.get("nsze"));
                System.out.printf("%-10s: %d%n", "lba size", (Integer) m.get("block_size"));
                System.out.printf("%-10s: %d bytes (%.2f GiB)%n", "size", size, size / (double) (1L << 30));
                if (human) {
                    System.out.printf("%-10s: %s (ANA group %d)%n", "ana", m.get("ana_state"), (Long) m.get("ana_group"));
                    for (String id : List.of("nguid", "uuid")) {
                        if (m.containsKey(id)) {
                            System.out.printf("%-10s: %s%n", id, m.get(id));
                        }
                    }
                }
            }
            return 0;
        }
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.Migration.orEmpty;
import static io.nvmeof.admin.migration.SpdkExport.call;
import static io.nvmeof.admin.migration.SpdkExport.putIfSet;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.List;
import java.util.Locale;

/**
 * {@code nvmf_create_subsystem}, {@code nvmf_subsystem_add_host} and {@code nvmf_subsystem_add_ns} of an SPDK
 * save_config document on export: each subsystem with its hosts and its namespaces, written with their effective
 * serial, model, UUID and NGUID; each namespace's bdev comes from {@link SpdkBdevExport}.
 */
final class SpdkSubsystemExport {
    private final ArrayNode nvmfConfig;
    /** Writes the bdev each namespace names into the "bdev" subsystem's calls. */
    private final SpdkBdevExport bdevs;

    SpdkSubsystemExport(ArrayNode bdevConfig, ArrayNode nvmfConfig, List<String> notMapped) {
        this.nvmfConfig = nvmfConfig;
        this.bdevs = new SpdkBdevExport(bdevConfig, notMapped);
    }

    /** A subsystem with its hosts and namespaces; {@code where} is its location in our document. */
    void writeSubsystem(SubsystemConfig s, String where) {
        ObjectNode params = call(nvmfConfig, "nvmf_create_subsystem");
        params.put("nqn", s.nqn());
        params.put("allow_any_host", Migration.effectiveAllowAnyHost(s));
        params.put("serial_number", Migration.effectiveSerial(s));
        params.put("model_number", Migration.effectiveModel(s));
        putIfSet(params, "max_namespaces", s.maxNamespaces());
        for (String host : orEmpty(s.hosts())) {
            ObjectNode h = call(nvmfConfig, "nvmf_subsystem_add_host");
            h.put("nqn", s.nqn());
            h.put("host", host);
        }
        long next = 1;
        List<NamespaceConfig> namespaces = orEmpty(s.namespaces());
        for (int j = 0; j < namespaces.size(); j++) {
            NamespaceConfig n = namespaces.get(j);
            String at = where + ".namespaces[" + j + "]";
            if (n == null) {
                throw new IllegalArgumentException(at + " is missing");
            }
            long nsid = n.nsid() != null ? n.nsid() : next; // the target's numbering of unnumbered namespaces
            next = nsid + 1;
            writeNamespace(s.nqn(), n, nsid, at);
        }
    }

    private void writeNamespace(String nqn, NamespaceConfig n, long nsid, String where) {
        String backend = Migration.effectiveBackend(n);
        String bdevName = switch (backend) {
            case "ram" -> bdevs.writeMalloc(n, where);
            case "file", "block" -> bdevs.writeAio(n, backend, where);
            default -> throw new IllegalArgumentException(where + ".backend '" + n.backend()
                    + "' is not ram, file or block");
        };
        ObjectNode params = call(nvmfConfig, "nvmf_subsystem_add_ns");
        params.put("nqn", nqn);
        ObjectNode ns = params.putObject("namespace");
        ns.put("nsid", nsid);
        ns.put("bdev_name", bdevName);
        if ("ram".equals(backend) && n.uuid() == null && n.nguid() == null) {
            // A RAM namespace made there is a new, empty volume: SPDK gives it identifiers of its own, as the
            // target does each time it makes one (NvmeTarget.namespaceUuid).
            return;
        }
        String uuid = Migration.effectiveUuid(nqn, nsid, n, where);
        // As SPDK writes it: 32 upper-case hex digits.
        ns.put("nguid", Migration.effectiveNguid(uuid, n, where).toUpperCase(Locale.ROOT));
        ns.put("uuid", uuid);
    }
}

package io.nvmeof.admin.migration;

import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.admin.migration.SpdkListenerImport.Transport;
import io.nvmeof.tgt.live.LiveConfiguration;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One import of an SPDK save_config document ({@link SpdkFormat#read}): the state built up while reading the calls
 * in order. Each RPC family is read by its own class (bdevs, subsystems with their hosts and namespaces, transports
 * and listeners); what is left (other SPDK subsystems, other nvmf calls) is listed here.
 */
final class SpdkImport {
    private final ImportReport notMapped = new ImportReport();
    private final SpdkBdevImport bdevs = new SpdkBdevImport(notMapped);
    private final SpdkHostKeys hostKeys;
    private final SpdkSubsystemImport subsystems;
    private final SpdkListenerImport listeners;
    private final SpdkReferrals referrals = new SpdkReferrals(notMapped);

    /** {@code keyFiles} reads the files of the keyring keys hosts use (the caller's policy on paths). */
    SpdkImport(KeyFiles.Reader keyFiles) {
        hostKeys = new SpdkHostKeys(notMapped, keyFiles);
        subsystems = new SpdkSubsystemImport(notMapped, bdevs, hostKeys);
        listeners = new SpdkListenerImport(notMapped, subsystems);
    }

    Imported read(JsonAt root) {
        for (String key : root.fieldNames()) {
            if (!key.equals("subsystems")) {
                notMapped.add(key + ": not part of an SPDK configuration; ignored");
            }
        }
        JsonAt list = root.field("subsystems");
        if (!list.present()) {
            list.requireObject(); // throws "subsystems is missing"
        }
        List<SpdkCall> bdevCalls = new ArrayList<>();
        List<SpdkCall> nvmfCalls = new ArrayList<>();
        for (JsonAt subsystem : list.elements()) {
            subsystem.requireObject();
            String name = subsystem.field("subsystem").nonEmptyText();
            List<SpdkCall> calls = new ArrayList<>();
            for (JsonAt call : subsystem.field("config").elements()) {
                calls.add(SpdkCall.of(call));
            }
            switch (name) {
                case "bdev" -> bdevCalls.addAll(calls);
                case "nvmf" -> nvmfCalls.addAll(calls);
                case "keyring" -> calls.forEach(hostKeys::readKeyringCall);
                default -> listOtherSubsystem(name, calls);
            }
        }
        bdevCalls.forEach(bdevs::readBdevCall);
        readNvmf(nvmfCalls);
        bdevs.listUnused();
        return notMapped.imported(buildConfig());
    }

    private void listOtherSubsystem(String name, List<SpdkCall> calls) {
        Set<String> methods = new LinkedHashSet<>();
        calls.forEach(c -> methods.add(c.method()));
        for (String method : methods) {
            notMapped.add(name + ": " + method + ": SPDK's " + name + " settings have no equivalent here; ignored");
        }
    }

    /** Transports and subsystems first, so calls that refer to them need not come after them. */
    private void readNvmf(List<SpdkCall> calls) {
        for (SpdkCall call : calls) {
            switch (call.method()) {
                case "nvmf_create_transport" -> listeners.readTransport(call);
                case "nvmf_create_subsystem" -> subsystems.readSubsystem(call);
                default -> { }
            }
        }
        for (SpdkCall call : calls) {
            switch (call.method()) {
                case "nvmf_create_transport", "nvmf_create_subsystem" -> { }
                case "nvmf_subsystem_add_host" -> subsystems.readHost(call);
                case "nvmf_subsystem_add_ns" -> subsystems.readNamespace(call);
                case "nvmf_subsystem_add_listener" -> listeners.readListener(call);
                case "nvmf_discovery_add_referral" -> referrals.readReferral(call);
                default -> listOtherNvmfCall(call);
            }
        }
    }

    private void listOtherNvmfCall(SpdkCall call) {
        String reason = switch (call.method()) {
            case "nvmf_set_max_subsystems" -> "the limit here is fixed at " + LiveConfiguration.MAX_SUBSYSTEMS
                    + " subsystems; ignored";
            case "nvmf_set_crdt" -> "command retry delay times are not supported; ignored";
            case "nvmf_set_config" -> "target-wide SPDK options have no equivalent here; ignored";
            case "nvmf_ns_add_host" -> "per-host namespace visibility is not supported; ignored";
            default -> "no equivalent here; ignored";
        };
        String what = switch (call.method()) {
            case "nvmf_ns_add_host" -> "(" + call.params().field("nqn").display() + ", nsid "
                    + call.params().field("nsid").display() + ", " + call.params().field("host").display() + ")";
            default -> "";
        };
        notMapped.add(call.method() + what + ": " + reason);
        if (call.method().equals("nvmf_set_config")) {
            for (String key : List.of("dhchap_digests", "dhchap_dhgroups")) {
                if (call.params().field(key).present()) {
                    notMapped.add("nvmf_set_config." + key + "=" + call.params().field(key).display() + ": what hosts"
                            + " may use is set per host here (dhchapHash, dhchapDhGroup; the defaults sha256 and the"
                            + " null group); ignored");
                }
            }
        }
    }

    private TargetConfig buildConfig() {
        List<ListenerConfig> result = listeners.build();
        List<SubsystemConfig> subs = subsystems.build();
        List<TargetConfig.HostConfig> hosts = hostKeys.build();
        return new TargetConfig(null, listeners.global("max_io_qpairs_per_ctrlr", Transport::maxIoQpairs),
                listeners.global("max_queue_depth", Transport::maxQueueDepth),
                listeners.global("max_io_size", Transport::maxIoSize), result, subs)
                .withHosts(hosts.isEmpty() ? null : hosts).withReferrals(referrals.build());
    }
}

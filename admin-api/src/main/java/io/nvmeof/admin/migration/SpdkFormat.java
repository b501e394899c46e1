package io.nvmeof.admin.migration;

import io.nvmeof.admin.migration.Migration.Exported;
import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.admin.migration.Migration.JsonAt;
import io.nvmeof.tgt.config.TargetConfig;

/**
 * SPDK's saved configuration: what {@code rpc.py save_config} writes and {@code rpc.py load_config} /
 * {@code spdk_tgt -c} replays. It is a list of RPC calls per SPDK subsystem (lib/init/json_config.c;
 * lib/nvmf/nvmf.c {@code spdk_nvmf_tgt_write_config_json}; each bdev module's {@code write_config_json}):
 *
 * <pre>{@code
 * {"subsystems": [
 *   {"subsystem": "bdev", "config": [ {"method": "bdev_malloc_create", "params": {"name": "Malloc0", ...}}, ... ]},
 *   {"subsystem": "nvmf", "config": [ {"method": "nvmf_create_transport", "params": {"trtype": "TCP", ...}},
 *                                     {"method": "nvmf_create_subsystem", "params": {"nqn": ..., ...}},
 *                                     {"method": "nvmf_subsystem_add_listener", "params": {"nqn": ...,
 *                                        "listen_address": {"trtype": "TCP", "adrfam": "IPv4", "traddr", "trsvcid"}}},
 *                                     {"method": "nvmf_subsystem_add_host", ...}, {"method": "nvmf_subsystem_add_ns",
 *                                        "params": {"nqn": ...,
 *                                                   "namespace": {"nsid", "bdev_name", "uuid", "nguid"}}}]},
 *   {"subsystem": "iobuf", "config": [...]}, ... ]}
 * }</pre>
 *
 * <h2>Import</h2>
 * <ul>
 * <li>bdevs: {@code bdev_malloc_create} is a RAM namespace (size = num_blocks x block_size, written with the largest
 *     exact binary unit, e.g. {@code 64MiB}); {@code bdev_aio_create} and {@code bdev_uring_create} are a block
 *     backend for paths under {@code /dev/}, else a file (block size when given and non-zero; size null: the whole
 *     file). A bdev with a block size other than 512/4096 cannot back a namespace here. Other bdev kinds and
 *     settings are listed; so is a bdev no namespace uses.</li>
 * <li>Transports: {@code in_capsule_data_size} is the inlineDataSize of that transport's listeners;
 *     {@code max_queue_depth}, {@code max_io_qpairs_per_ctrlr} ({@code max_qpairs_per_ctrlr} - 1 for the deprecated
 *     spelling) and {@code max_io_size} are maxQueueSize, maxIoQueues and maxTransferSize, which are global here: when
 *     TCP and RDMA disagree the smaller wins and the other is listed. Every other transport parameter is listed.</li>
 * <li>Listeners: identical (trtype, traddr, trsvcid) added to several subsystems are one listener whose subsystems
 *     are those subsystems (the discovery NQN included when the discovery subsystem added it), numbered 1, 2, ... in
 *     order of first appearance.</li>
 * <li>A namespace without nsid gets the lowest free one, as SPDK does; its UUID is the namespace's, else the
 *     bdev's (SPDK's rule). NGUIDs are kept as 32 lower-case hex digits.</li>
 * <li>Other SPDK subsystems (iobuf, sock, accel, vmd, scheduler, ...) with calls: each method is listed
 *     once; empty ones are skipped.</li>
 * <li>Hosts' DH-HMAC-CHAP keys: {@code nvmf_subsystem_add_host}'s {@code dhchap_key} and {@code dhchap_ctrlr_key}
 *     name keys of the {@code keyring} subsystem's {@code keyring_file_add_key} calls, whose files are read and
 *     become the host's entry in our {@code hosts} ({@code SpdkHostKeys}); {@code nvmf_set_config}'s
 *     {@code dhchap_digests} and {@code dhchap_dhgroups} are listed.</li>
 * <li>Security this target does not have is listed in {@link Imported#securityLost()} too: a host's {@code psk}
 *     (never its value), a namespace's {@code no_auto_visible}, a listener's {@code secure_channel}, and a
 *     {@code readonly} bdev a namespace uses.</li>
 * </ul>
 * Parameters that {@code save_config} always writes and whose value means "feature off" are skipped without a line:
 * {@code nvmf_create_subsystem} {@code min_cntlid 1}, {@code max_cntlid 65519}, {@code ana_reporting false},
 * {@code max_discard_size_kib 0}, {@code max_write_zeroes_size_kib 0}, {@code passthrough false},
 * {@code enable_nssr false}; {@code nvmf_subsystem_add_ns} {@code no_auto_visible false};
 * {@code nvmf_subsystem_add_listener} {@code secure_channel false}; bdev {@code readonly}, {@code fallocate},
 * {@code nowait}, {@code md_interleave}, {@code dif_is_head_of_md} false, {@code optimal_io_boundary},
 * {@code md_size}, {@code dif_type}, {@code dif_pi_format} 0, {@code numa_id -1} and a {@code physical_block_size}
 * equal to the block size (or 0). Transport parameters are always listed, defaults or not.
 *
 * <h2>Export</h2>
 * A {@code save_config}-shaped document with the "bdev" and "nvmf" subsystems: RAM namespaces become
 * {@code bdev_malloc_create} ({@code Malloc0}, {@code Malloc1}, ...), file and block namespaces
 * {@code bdev_aio_create} ({@code AIO0}, ...; a file always gets a block_size, 512 unless set, because SPDK cannot
 * detect a regular file's); one {@code nvmf_create_transport} per transport in use; per subsystem
 * {@code nvmf_create_subsystem}, {@code nvmf_subsystem_add_host}s and {@code nvmf_subsystem_add_ns}s; then, listener by
 * listener, an {@code nvmf_subsystem_add_listener} per subsystem it exposes (all of them when its list is null or
 * empty; the discovery NQN as a discovery listener), so listener order, and with it the port IDs an import assigns,
 * is kept. Serial and model numbers, namespace UUIDs and NGUIDs are written with their effective values (the target's
 * derived defaults included) so hosts recognise controllers and namespaces on SPDK.
 *
 * <h2>Where each RPC is translated</h2>
 * {@code SpdkImport} and {@code SpdkExport} walk the document; each RPC family has a class per direction:
 * {@code bdev_*} in {@code SpdkBdevImport} / {@code SpdkBdevExport}; {@code nvmf_create_subsystem},
 * {@code nvmf_subsystem_add_host} and {@code nvmf_subsystem_add_ns} in {@code SpdkSubsystemImport} /
 * {@code SpdkSubsystemExport}; {@code nvmf_create_transport} and {@code nvmf_subsystem_add_listener} in
 * {@code SpdkListenerImport} / {@code SpdkListenerExport}. Other SPDK subsystems and nvmf calls are listed by
 * {@code SpdkImport}.
 */
public final class SpdkFormat {

    private SpdkFormat() {
    }

    /** Reads an SPDK save_config document, reading the key files its hosts use wherever they are (the command line). */
    public static Imported read(String json) {
        return read(json, KeyFiles::read);
    }

    /** Reads an SPDK save_config document; {@code keyFiles} reads the key files its hosts use. */
    public static Imported read(String json, KeyFiles.Reader keyFiles) {
        JsonAt root = Migration.parse(json);
        return new SpdkImport(keyFiles).read(root);
    }

    /** Writes our document as an SPDK save_config document. */
    public static Exported write(TargetConfig c) {
        if (c == null) {
            throw new IllegalArgumentException("the configuration is missing");
        }
        return new SpdkExport(c).write();
    }
}

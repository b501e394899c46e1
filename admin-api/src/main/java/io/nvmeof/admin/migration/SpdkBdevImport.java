package io.nvmeof.admin.migration;

import io.nvmeof.admin.migration.Migration.JsonAt;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The "bdev" subsystem of an SPDK save_config document on import: {@code bdev_malloc_create}, {@code bdev_aio_create}
 * and {@code bdev_uring_create} make the bdevs namespaces can use ({@link SpdkSubsystemImport} looks them up here);
 * every other bdev kind is listed, and so is a bdev no namespace uses.
 */
final class SpdkBdevImport {

    private static final Map<String, String> BDEV_DEFAULTS = Map.of("readonly", "false", "fallocate", "false",
            "nowait", "false", "md_interleave", "false", "dif_is_head_of_md", "false", "optimal_io_boundary", "0",
            "md_size", "0", "dif_type", "0", "dif_pi_format", "0", "numa_id", "-1");

    /** A bdev a namespace can use; {@code unusable} says why it cannot, when it cannot. */
    static final class Bdev {
        final String label; // bdev_malloc_create(Malloc0)
        final String backend;
        final String size;
        final Integer blockSize;
        final String path;
        final String uuid;
        final String unusable;
        boolean used;
        /** SPDK's readonly: hosts cannot write it; here they could. */
        boolean readonly;

        Bdev(String label, String backend, String size, Integer blockSize, String path, String uuid) {
            this.label = label;
            this.backend = backend;
            this.size = size;
            this.blockSize = blockSize;
            this.path = path;
            this.uuid = uuid;
            this.unusable = blockSize == null ? null : unusableBlockSize(blockSize);
        }
    }

    private final ImportReport notMapped;
    private final Map<String, Bdev> bdevs = new LinkedHashMap<>();
    /** Bdev names created by kinds we do not have (bdev_null_create...), to explain a namespace using one. */
    private final Map<String, String> foreignBdevs = new LinkedHashMap<>();

    SpdkBdevImport(ImportReport notMapped) {
        this.notMapped = notMapped;
    }

    /** A call of the "bdev" subsystem. */
    void readBdevCall(SpdkCall call) {
        switch (call.method()) {
            case "bdev_malloc_create" -> readMalloc(call);
            case "bdev_aio_create", "bdev_uring_create" -> readFileBdev(call);
            default -> readForeignBdevCall(call);
        }
    }

    private void readMalloc(SpdkCall call) {
        String name = call.text("name");
        String label = call.method() + "(" + name + ")";
        long blocks = call.params().field("num_blocks").integer(1, Long.MAX_VALUE);
        int blockSize = (int) call.params().field("block_size").integer(1, 1 << 20);
        String uuid = Migration.uuid(call.params().field("uuid"));
        long bytes;
        try {
            bytes = Math.multiplyExact(blocks, blockSize);
        } catch (ArithmeticException e) {
            throw call.params().field("num_blocks").invalid("is too large for block_size " + blockSize);
        }
        listExtras(call, label, Set.of("name", "num_blocks", "block_size", "uuid"), blockSize);
        addBdev(name, call, new Bdev(label, "ram", Migration.formatSize(bytes), blockSize, null, uuid));
    }

    private void readFileBdev(SpdkCall call) {
        String name = call.text("name");
        String label = call.method() + "(" + name + ")";
        String filename = call.text("filename");
        Long blockSize = call.params().field("block_size").optInteger(0, 1 << 20);
        Integer bs = blockSize == null || blockSize == 0 ? null : blockSize.intValue(); // 0: detect
        String uuid = Migration.uuid(call.params().field("uuid"));
        listExtras(call, label, Set.of("name", "filename", "block_size", "uuid"), bs);
        addBdev(name, call, new Bdev(label, Migration.backendFor(filename), null, bs, filename, uuid));
    }

    private static String unusableBlockSize(int blockSize) {
        return blockSize == 512 || blockSize == 4096 ? null
                : "has block_size " + blockSize + " (512 and 4096 only here)";
    }

    private void addBdev(String name, SpdkCall call, Bdev bdev) {
        if (bdevs.containsKey(name) || foreignBdevs.containsKey(name)) {
            throw new IllegalArgumentException(call.params().field("name").path() + ": bdev " + name
                    + " is created twice");
        }
        bdev.readonly = Boolean.TRUE.equals(call.params().field("readonly").optFlag());
        bdevs.put(name, bdev);
    }

    /**
     * Bdev parameters we do not map: listed unless they hold the value that means "off"; readonly is listed
     * where a namespace uses the bdev (a security setting only then).
     */
    private void listExtras(SpdkCall call, String label, Set<String> mapped, Integer blockSize) {
        for (String key : call.params().fieldNames()) {
            if (mapped.contains(key) || key.equals("readonly")) {
                continue;
            }
            String value = call.params().field(key).display();
            boolean off = value.equals(BDEV_DEFAULTS.get(key)) || (key.equals("physical_block_size")
                    && (value.equals("0") || value.equals(String.valueOf(blockSize))));
            if (!off) {
                notMapped.add(label + "." + key + "=" + value + ": " + bdevReason(key) + "; ignored");
            }
        }
    }

    private static String bdevReason(String key) {
        return switch (key) {
            case "md_size", "md_interleave", "dif_type", "dif_is_head_of_md", "dif_pi_format" ->
                    "metadata and protection information are not supported";
            default -> "no equivalent here";
        };
    }

    private void readForeignBdevCall(SpdkCall call) {
        JsonAt name = call.params().field("name");
        if (name.present() && name.node().isTextual()) {
            foreignBdevs.put(name.node().textValue(), call.method());
            notMapped.add(call.method() + "(" + name.display() + "): this kind of bdev has no equivalent here; "
                    + "not imported");
        } else {
            notMapped.add(call.method() + ": no equivalent here; ignored");
        }
    }

    /** The bdev {@code name} that bdev_malloc_create, bdev_aio_create or bdev_uring_create made; null if none. */
    Bdev get(String name) {
        return bdevs.get(name);
    }

    /** Why a bdev name is unknown: it comes from a bdev kind we do not have, or from nothing in the document. */
    String foreignOrigin(String bdevName) {
        if (foreignBdevs.containsKey(bdevName)) {
            return "comes from " + foreignBdevs.get(bdevName) + ", which has no equivalent here";
        }
        for (Map.Entry<String, String> e : foreignBdevs.entrySet()) {
            // bdev_nvme_attach_controller "Nvme0" creates one bdev per namespace: Nvme0n1, Nvme0n2, ...
            if (bdevName.matches(java.util.regex.Pattern.quote(e.getKey()) + "n\\d+")) {
                return "comes from " + e.getValue() + "(" + e.getKey() + "), which has no equivalent here";
            }
        }
        return "is not created by bdev_malloc_create, bdev_aio_create or bdev_uring_create";
    }

    /** After the namespaces are read: a line for each bdev none of them uses. */
    void listUnused() {
        for (Bdev b : bdevs.values()) {
            if (!b.used) {
                notMapped.add(b.label + ": not used by any namespace; not imported");
            }
        }
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.SpdkExport.call;
import static io.nvmeof.admin.migration.SpdkExport.putIfSet;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import java.util.List;
import java.util.Locale;

/**
 * The "bdev" subsystem of an SPDK save_config document on export: a RAM namespace becomes a
 * {@code bdev_malloc_create} ({@code Malloc0}, {@code Malloc1}, ...), a file or block namespace a
 * {@code bdev_aio_create} ({@code AIO0}, ...), which {@link SpdkSubsystemExport} names in the namespace's
 * {@code nvmf_subsystem_add_ns}.
 */
final class SpdkBdevExport {
    private final ArrayNode bdevConfig;
    private final List<String> notMapped;
    private int mallocs;
    private int aios;

    SpdkBdevExport(ArrayNode bdevConfig, List<String> notMapped) {
        this.bdevConfig = bdevConfig;
        this.notMapped = notMapped;
    }

    /** A bdev_malloc_create for RAM namespace {@code n}; returns the bdev's name. */
    String writeMalloc(NamespaceConfig n, String where) {
        int blockSize = n.blockSize() != null ? n.blockSize() : 512;
        long bytes;
        try {
            bytes = TargetConfig.parseSize(n.size() != null ? n.size() : "1GiB"); // the target's default
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + ".size: " + e.getMessage(), e);
        }
        long blocks = bytes / blockSize;
        if (blocks == 0) {
            throw new IllegalArgumentException(where + ".size " + n.size() + " is less than one block of "
                    + blockSize + " bytes");
        }
        if (bytes % blockSize != 0) {
            notMapped.add(where + ".size=" + n.size() + ": not a multiple of the block size " + blockSize
                    + "; exported as " + blocks + " blocks");
        }
        String name = "Malloc" + mallocs++;
        ObjectNode params = call(bdevConfig, "bdev_malloc_create");
        params.put("name", name);
        params.put("num_blocks", blocks);
        params.put("block_size", blockSize);
        if (n.uuid() != null) {
            params.put("uuid", n.uuid().toLowerCase(Locale.ROOT));
        }
        return name;
    }

    /** A bdev_aio_create for file or block namespace {@code n}; returns the bdev's name. */
    String writeAio(NamespaceConfig n, String backend, String where) {
        if (n.path() == null || n.path().isBlank()) {
            throw new IllegalArgumentException(where + ".path is missing");
        }
        if (n.size() != null) {
            notMapped.add(where + ".size=" + n.size() + ": SPDK's aio bdev serves the whole " + backend
                    + "; not exported");
        }
        String name = "AIO" + aios++;
        ObjectNode params = call(bdevConfig, "bdev_aio_create");
        params.put("name", name);
        params.put("filename", n.path());
        // A block device's logical block size is detected; a regular file's cannot be, so it is always written.
        Integer blockSize = n.blockSize() != null ? n.blockSize() : backend.equals("file") ? 512 : null;
        putIfSet(params, "block_size", blockSize);
        return name;
    }
}

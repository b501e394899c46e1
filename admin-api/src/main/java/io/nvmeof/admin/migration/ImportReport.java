package io.nvmeof.admin.migration;

import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.tgt.config.TargetConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * What an import cannot carry over, one line per item ({@link Imported#notMapped()}), and among those the security
 * settings it would drop ({@link Imported#securityLost()}): imported without them, hosts get less protection than
 * the other target gave them, which an administrator has to accept explicitly.
 */
final class ImportReport {
    private final List<String> notMapped = new ArrayList<>();
    private final List<String> securityLost = new ArrayList<>();

    /** An item with no equivalent here; the line says where it is and what became of it. */
    void add(String line) {
        notMapped.add(line);
    }

    /** A security setting with no equivalent here. The line never holds a key's value. */
    void securityLost(String line) {
        notMapped.add(line);
        securityLost.add(line);
    }

    Imported imported(TargetConfig config) {
        return new Imported(config, notMapped, securityLost);
    }
}

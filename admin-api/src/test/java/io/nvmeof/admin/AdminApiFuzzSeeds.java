package io.nvmeof.admin;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Writes {@link AdminApiFuzzTest}'s seeds: {@code ./mvnw test -pl admin-api -am -Dtest=AdminApiFuzzSeeds
 * -Dsurefire.failIfNoSpecifiedTests=false -Dfuzz.writeSeeds=true}; the files are kept in the repository, with the
 * findings minimized by hand (the fuzzer's own crash files are replaced by them).
 */
class AdminApiFuzzSeeds {
    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void write() throws Exception {
        Path dir = Path.of("src/test/resources/io/nvmeof/admin/AdminApiFuzzTestInputs/requests");
        AdminApiFuzzTest.writeSeeds(dir);
        AdminApiFuzzTest.writeFindings(dir);
    }
}

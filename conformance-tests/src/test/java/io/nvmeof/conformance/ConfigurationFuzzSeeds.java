package io.nvmeof.conformance;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Writes {@link ConfigurationFuzzTest}'s seeds: {@code ./mvnw test -pl conformance-tests -am -Dtest=ConfigurationFuzzSeeds
 * -Dsurefire.failIfNoSpecifiedTests=false -Dfuzz.writeSeeds=true}; the files are kept in the repository.
 */
class ConfigurationFuzzSeeds {
    @Test
    @EnabledIfSystemProperty(named = "fuzz.writeSeeds", matches = "true")
    void write() throws Exception {
        ConfigurationFuzzTest.writeSeeds(Path.of("src/test/resources/io/nvmeof/conformance/ConfigurationFuzzTestInputs/document"));
    }
}

package io.nvmeof.admin.migration;

import static io.nvmeof.admin.migration.NvmetcliFormatTest.resource;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.nvmeof.admin.migration.Migration.Format;
import io.nvmeof.admin.migration.Migration.Imported;
import io.nvmeof.tgt.config.TargetConfig;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

class MigrationTest {

    @Test
    void dispatchesToTheFormats() throws IOException {
        String nvmet = resource("nvmetcli-config.json");
        assertEquals(NvmetcliFormat.read(nvmet), Migration.importFrom(Format.NVMETCLI, nvmet));
        String spdk = resource("spdk-save-config.json");
        assertEquals(SpdkFormat.read(spdk), Migration.importFrom(Format.SPDK, spdk));
        TargetConfig ours = SpdkFormatTest.canonical();
        assertEquals(SpdkFormat.write(ours), Migration.exportTo(Format.SPDK, ours));
        assertEquals(NvmetcliFormat.write(ours), Migration.exportTo(Format.NVMETCLI, ours));
    }

    @Test
    void importedDocumentsAreValidConfigurationsOfOurs() throws IOException {
        for (Imported imported : List.of(Migration.importFrom(Format.NVMETCLI, resource("nvmetcli-config.json")),
                Migration.importFrom(Format.SPDK, resource("spdk-save-config.json")))) {
            // What the CLI's --config and the admin API read: no unknown fields, same values back.
            assertEquals(imported.config(), TargetConfig.parse(imported.config().toJson()));
        }
    }

    @Test
    void migratesFromTheKernelTargetToSpdkThroughOurDocument() throws IOException {
        TargetConfig ours = Migration.importFrom(Format.NVMETCLI, resource("nvmetcli-config.json")).config();
        Migration.Exported spdk = Migration.exportTo(Format.SPDK, ours);
        assertEquals(List.of(
                "listeners[2].inlineDataSize=(unset): SPDK has one in_capsule_data_size per transport; TCP uses 16384 "
                        + "(from listeners[0])",
                "listeners[2].id=4: SPDK assigns port IDs itself; not exported"), spdk.notMapped());
        JsonNode doc = new ObjectMapper().readTree(spdk.document());
        JsonNode bdevs = doc.at("/subsystems/0/config");
        assertEquals("/dev/nvme0n1", bdevs.at("/0/params/filename").asText());
        assertEquals("/srv/nvmet/db-log.img", bdevs.at("/1/params/filename").asText());
        assertEquals(512, bdevs.at("/1/params/block_size").intValue());
        Imported back = Migration.importFrom(Format.SPDK, spdk.document());
        assertEquals(ours.subsystems().get(0).namespaces().get(0), back.config().subsystems().get(0).namespaces()
                .get(0), "the block namespace, its UUID and NGUID survive both moves");
    }

    @Test
    void sizesUseTheLargestExactUnit() {
        assertEquals("1GiB", Migration.formatSize(1L << 30));
        assertEquals("64MiB", Migration.formatSize(64L << 20));
        assertEquals("1536KiB", Migration.formatSize(1536L << 10));
        assertEquals("2TiB", Migration.formatSize(2L << 40));
        assertEquals("1000", Migration.formatSize(1000));
        assertEquals(1536L << 10, TargetConfig.parseSize(Migration.formatSize(1536L << 10)));
    }

    @ParameterizedTest
    @EnumSource(Format.class)
    void malformedJsonIsAnIllegalArgumentException(Format format) {
        for (String json : List.of("", "   ", "{", "{\"a\": 1} trailing", "{\"a\": 1, \"a\": 2}", "42", "null")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Migration.importFrom(format, json), json);
            assertTrue(e.getMessage().startsWith("the document "), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Migration.exportTo(format, null));
    }
}

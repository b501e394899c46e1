package io.nvmeof.tgt.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Sizes as users of fio, SPDK, nvme-cli and coreutils write them. Before, "64MB", "64mb" and "64 MiB" all became
 * 67,108,864 bytes silently, "1.5GiB" was refused, and a refusal did not name the forms that work.
 */
class ByteSizeTest {
    @Test
    void bytesAndBinaryUnits() {
        assertEquals(4096, ByteSize.parse("4096"));
        assertEquals(4096, ByteSize.parse("4096B"));
        assertEquals(4096, ByteSize.parse("4k"));
        assertEquals(4096, ByteSize.parse("4K"));
        assertEquals(4096, ByteSize.parse("4KiB"));
        assertEquals(64L << 20, ByteSize.parse("64M"));
        assertEquals(64L << 20, ByteSize.parse("64MiB"));
        assertEquals(64L << 20, ByteSize.parse("64 MiB"));
        assertEquals(64L << 20, ByteSize.parse(" 64mib "));
        assertEquals(64L << 20, ByteSize.parse("64Mi"));
        assertEquals(2L << 30, ByteSize.parse("2G"));
        assertEquals(3L << 40, ByteSize.parse("3TiB"));
        assertEquals(1L << 50, ByteSize.parse("1PiB"));
    }

    @Test
    void fractionsThatComeToWholeBytes() {
        assertEquals(3L << 29, ByteSize.parse("1.5GiB"));
        assertEquals(1536, ByteSize.parse("1.5K"));
        assertEquals(4096, ByteSize.parse("4096.0"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("0.3KiB"));
        assertEquals("size '0.3KiB' is 307.2 bytes, not a whole number of bytes", e.getMessage());
    }

    @Test
    void decimalUnitsAreRefusedNamingBothReadings() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("64MB"));
        assertEquals("size '64MB' is ambiguous: MB is a power of 1000 to some tools and of 1024 to others; write"
                + " 64MiB (67,108,864 bytes) or 64000000 (64,000,000 bytes)", e.getMessage());
        for (String s : List.of("64mb", "64 GB", "1kb", "2TB", "1PB", "1.5GB")) {
            String m = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(s), s).getMessage();
            assertTrue(m.contains("ambiguous") && m.contains("iB (") && m.contains(" or "), m);
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("1.5GB")).getMessage()
                .contains("write 1.5GiB (1,610,612,736 bytes) or 1500000000 (1,500,000,000 bytes)"));
    }

    @Test
    void everyOtherRefusalNamesTheAcceptedForms() {
        for (String s : List.of("lots", "-1", "1e9", "64XB", "64 MiBs", "0x100", "", "1..5G")) {
            String m = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(s), s).getMessage();
            assertTrue(m.contains("give a number of bytes (4096) or a number with a binary unit"), m);
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(null)).getMessage()
                .startsWith("size is missing"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("64XB"))
                .getMessage().contains("unknown unit 'XB'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("99999999999999999999"))
                .getMessage().contains("too large"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("8193PiB"))
                .getMessage().contains("too large"));
        assertEquals(8191L << 50, ByteSize.parse("8191PiB"));
    }

    @Test
    void aConfigurationTakesAJsonNumberOfBytesAndPrintConfigChecksEverySize() throws Exception {
        TargetConfig c = TargetConfig.parse("{\"subsystems\":[{\"nqn\":\"nqn.2026-12.io.nvmeof:a\",\"namespaces\":"
                + "[{\"nsid\":1,\"backend\":\"ram\",\"size\":67108864}]}],\"maxMemory\":536870912}");
        assertEquals(64L << 20, TargetConfig.parseSize(c.subsystems().get(0).namespaces().get(0).size()));
        c.checkSizes();
        TargetConfig wrong = TargetConfig.parse("{\"subsystems\":[{\"nqn\":\"nqn.2026-12.io.nvmeof:a\",\"namespaces\":"
                + "[{\"nsid\":1,\"backend\":\"ram\",\"size\":\"1GiB\"},{\"nsid\":2,\"backend\":\"ram\",\"size\":\"64 GB\"}]}]}");
        String m = assertThrows(IllegalArgumentException.class, wrong::checkSizes).getMessage();
        assertTrue(m.startsWith("subsystems[0].namespaces[1].size: size '64 GB' is ambiguous"), m);
    }
}

package io.nvmeof.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CpuListTest {
    @Test
    void theCpulistFormOfTasksetIsReadAndWrittenBack() {
        CpuList l = CpuList.parse("0-3, 8,10-11");
        assertArrayEquals(new int[] {0, 1, 2, 3, 8, 10, 11}, l.toArray());
        assertEquals("0-3,8,10-11", l.toString());
        assertEquals(CpuList.parse("5"), CpuList.of(5));
        assertEquals("2-3", CpuList.parse("0-3").minus(CpuList.parse("0,1")).toString());
        assertTrue(CpuList.parse("1").within(CpuList.parse("0-1")));
    }

    @Test
    void whatIsNotACpuListIsRefusedNamingThePart() {
        for (String bad : new String[] {"", " ", "a", "1-", "-1", "3-1", "1,,2", "8192", "0x3", "1.5"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CpuList.parse(bad), bad);
            assertTrue(e.getMessage().contains("CPU"), e.getMessage());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CpuList.parse("3-1")).getMessage()
                .contains("backwards"));
    }
}

package io.nvmeof.protocol.regs;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** Controller registers / properties, NVMe Base "Controller Registers". */
class RegistersTest {
    @Test
    void offsets() {
        assertEquals(0x00, ControllerRegisters.CAP);
        assertEquals(0x08, ControllerRegisters.VS);
        assertEquals(0x14, ControllerRegisters.CC);
        assertEquals(0x1C, ControllerRegisters.CSTS);
        assertEquals(0x20, ControllerRegisters.NSSR);
    }

    @Test
    void capFields() {
        long cap = ControllerRegisters.cap(128, 30);
        assertEquals(127, cap & 0xFFFF, "MQES 15:0 is 0-based");
        assertEquals(1, cap >>> 16 & 1, "CQR bit 16");
        assertEquals(0, cap >>> 17 & 3, "AMS 18:17");
        assertEquals(30, cap >>> 24 & 0xFF, "TO 31:24");
        assertEquals(0, cap >>> 32 & 0xF, "DSTRD 35:32");
        assertEquals(1, cap >>> 37 & 1, "CSS bit 37: NVM command set");
        assertEquals(0x01, cap >>> 37 & 0xFF, "only NVM in CSS");
        assertEquals(0, cap >>> 48 & 0xF, "MPSMIN 51:48 = 4 KiB");
        assertEquals(0x0000_0020_1E01_007FL, cap);
        assertEquals(127, ControllerRegisters.capMqes(cap));
        assertEquals(30, ControllerRegisters.capTimeout500ms(cap));
        long max = ControllerRegisters.cap(65536, 255);
        assertEquals(0xFFFF, max & 0xFFFF);
        assertEquals(0xFF, max >>> 24 & 0xFF);
        // decode a hand-built CAP: MQES 0x3FF, TO 0x0F
        assertEquals(0x3FF, ControllerRegisters.capMqes(0x0000_0020_0F01_03FFL));
        assertEquals(0x0F, ControllerRegisters.capTimeout500ms(0x0000_0020_0F01_03FFL));
    }

    @Test
    void ccFields() {
        long cc = 1 | 0 << 4 | 0 << 7 | 1L << 14 | 6 << 16 | 4 << 20;
        assertTrue(ControllerRegisters.ccEnabled(cc));
        assertEquals(1, ControllerRegisters.ccShn(cc));
        assertEquals(6, ControllerRegisters.ccIosqes(cc));
        assertEquals(4, ControllerRegisters.ccIocqes(cc));
        assertFalse(ControllerRegisters.ccEnabled(cc & ~1L));
        assertEquals(2, ControllerRegisters.ccShn(2L << 14));
        assertEquals(3, ControllerRegisters.ccShn(0xC000));
        assertEquals(0, ControllerRegisters.ccShn(0x3FFF | 0xFFFF0000L));
        assertEquals(0xF, ControllerRegisters.ccIosqes(0xF0000));
        assertEquals(0, ControllerRegisters.ccIosqes(0xF00000));
        assertEquals(0xF, ControllerRegisters.ccIocqes(0xF00000));
        assertEquals(7, ControllerRegisters.ccCss(0x70), "CSS 6:4");
        assertEquals(0, ControllerRegisters.ccCss(0x780 | 0x8));
        assertEquals(0xF, ControllerRegisters.ccMps(0x780), "MPS 10:7");
        assertEquals(0x00460001L, ControllerRegisters.CC_ENABLE_DEFAULT);
        assertEquals(0, ControllerRegisters.SHN_NONE);
        assertEquals(1, ControllerRegisters.SHN_NORMAL);
        assertEquals(2, ControllerRegisters.SHN_ABRUPT);
    }

    @Test
    void cstsFields() {
        assertTrue(ControllerRegisters.cstsReady(1));
        assertFalse(ControllerRegisters.cstsReady(2));
        assertEquals(0x2, ControllerRegisters.CSTS_CFS);
        assertEquals(2, ControllerRegisters.cstsShst(0x8 | 1));
        assertEquals(1, ControllerRegisters.cstsShst(0x4));
        assertEquals(0, ControllerRegisters.cstsShst(0x3 | 0x10));
        assertEquals(0, ControllerRegisters.SHST_NORMAL);
        assertEquals(1, ControllerRegisters.SHST_OCCURRING);
        assertEquals(2, ControllerRegisters.SHST_COMPLETE);
    }

    @Test
    void version() {
        assertEquals(1, ControllerRegisters.VERSION_1_3 >>> 16, "MJR 31:16");
        assertEquals(3, ControllerRegisters.VERSION_1_3 >>> 8 & 0xFF, "MNR 15:8");
        assertEquals(0, ControllerRegisters.VERSION_1_3 & 0xFF, "TER 7:0");
    }
}

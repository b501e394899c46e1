package io.nvmeof.protocol.regs;

/** Controller property offsets and bit fields (NVMe Base, "Controller Registers"; NVMe-oF exposes them as properties). */
public final class ControllerRegisters {
    private ControllerRegisters() {
    }

    public static final int CAP = 0x00;
    public static final int VS = 0x08;
    public static final int CC = 0x14;
    public static final int CSTS = 0x1C;
    public static final int NSSR = 0x20;

    /** Version 1.3.0, as the Linux target reports for fabrics controllers. */
    public static final int VERSION_1_3 = 0x00010300;

    // CAP fields
    public static long capMqes(long cap) { return cap & 0xFFFF; }
    public static long capTimeout500ms(long cap) { return (cap >>> 24) & 0xFF; }

    /**
     * Builds CAP: MQES (0-based max queue entries), CQR=1 (contiguous queues required), TO (timeout in 500 ms units),
     * CSS bit 37 (NVM command set), MPSMIN=0 (4 KiB).
     */
    public static long cap(int maxQueueEntries, int timeout500ms) {
        return (maxQueueEntries - 1L) & 0xFFFF | 1L << 16 | ((long) timeout500ms & 0xFF) << 24 | 1L << 37;
    }

    // CC fields
    public static final int CC_EN = 1;
    public static boolean ccEnabled(long cc) { return (cc & CC_EN) != 0; }
    /** Shutdown notification, bits 15:14: 0 none, 1 normal, 2 abrupt. */
    public static int ccShn(long cc) { return (int) (cc >>> 14) & 0x3; }
    public static int ccIosqes(long cc) { return (int) (cc >>> 16) & 0xF; }
    public static int ccIocqes(long cc) { return (int) (cc >>> 20) & 0xF; }
    public static int ccCss(long cc) { return (int) (cc >>> 4) & 0x7; }
    public static int ccMps(long cc) { return (int) (cc >>> 7) & 0xF; }
    /** CC with EN=1, IOSQES=6 (64 B), IOCQES=4 (16 B), as hosts write it. */
    public static final long CC_ENABLE_DEFAULT = CC_EN | 6 << 16 | 4 << 20;
    public static final int SHN_NONE = 0;
    public static final int SHN_NORMAL = 1;
    public static final int SHN_ABRUPT = 2;

    // CSTS fields
    public static final int CSTS_RDY = 1;
    public static final int CSTS_CFS = 2;
    public static boolean cstsReady(long csts) { return (csts & CSTS_RDY) != 0; }
    /** Shutdown status, bits 3:2: 0 normal operation, 1 occurring, 2 complete. */
    public static int cstsShst(long csts) { return (int) (csts >>> 2) & 0x3; }
    public static final int SHST_NORMAL = 0;
    public static final int SHST_OCCURRING = 1;
    public static final int SHST_COMPLETE = 2;
}

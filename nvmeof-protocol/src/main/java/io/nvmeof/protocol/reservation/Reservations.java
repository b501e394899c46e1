package io.nvmeof.protocol.reservation;

/**
 * Fields of the reservation commands (NVMe Base 2.0 section 8.19; NVM Command Set 1.0, Reservation Register, Report,
 * Acquire and Release) and the values they carry: the actions and flags in CDW10, the reservation types, the
 * notification types and their mask bits.
 */
public final class Reservations {
    private Reservations() {
    }

    // Reservation types (RTYPE, CDW10 bits 15:8 of Acquire and Release; RTYPE of the Report).
    public static final int WRITE_EXCLUSIVE = 1;
    public static final int EXCLUSIVE_ACCESS = 2;
    public static final int WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 3;
    public static final int EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 4;
    public static final int WRITE_EXCLUSIVE_ALL_REGISTRANTS = 5;
    public static final int EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 6;

    // Reservation Register Action (RREGA, CDW10 bits 2:0).
    public static final int REGISTER = 0;
    public static final int UNREGISTER = 1;
    public static final int REPLACE = 2;

    // Change Persist Through Power Loss State (CPTPL, Register CDW10 bits 31:30).
    public static final int CPTPL_NO_CHANGE = 0;
    public static final int CPTPL_CLEAR = 2;
    public static final int CPTPL_SET = 3;

    // Reservation Acquire Action (RACQA, CDW10 bits 2:0).
    public static final int ACQUIRE = 0;
    public static final int PREEMPT = 1;
    public static final int PREEMPT_AND_ABORT = 2;

    // Reservation Release Action (RRELA, CDW10 bits 2:0).
    public static final int RELEASE = 0;
    public static final int CLEAR = 1;

    // Reservation Notification log page types (byte 8 of the log).
    public static final int NOTICE_EMPTY = 0;
    public static final int NOTICE_REGISTRATION_PREEMPTED = 1;
    public static final int NOTICE_RESERVATION_RELEASED = 2;
    public static final int NOTICE_RESERVATION_PREEMPTED = 3;

    /** Reservation Notification Mask (Set Features 82h CDW11): bit n masks notification type n. */
    public static final int MASK_ALL = 1 << NOTICE_REGISTRATION_PREEMPTED | 1 << NOTICE_RESERVATION_RELEASED
            | 1 << NOTICE_RESERVATION_PREEMPTED;

    /** Bytes of host data: Register and Acquire carry two keys (CRKEY and NRKEY or PRKEY), Release one (CRKEY). */
    public static final int TWO_KEYS_LENGTH = 16;
    public static final int ONE_KEY_LENGTH = 8;

    /** RREGA, RACQA or RRELA: CDW10 bits 2:0. */
    public static int action(int cdw10) {
        return cdw10 & 0x7;
    }

    /** Ignore Existing Key: CDW10 bit 3. */
    public static boolean ignoreExistingKey(int cdw10) {
        return (cdw10 & 0x8) != 0;
    }

    /** RTYPE of Acquire and Release: CDW10 bits 15:8. */
    public static int type(int cdw10) {
        return (cdw10 >>> 8) & 0xFF;
    }

    /** CPTPL of Register: CDW10 bits 31:30. */
    public static int changePersistThroughPowerLoss(int cdw10) {
        return cdw10 >>> 30;
    }

    /** Report: Extended Data Structure (CDW11 bit 0), the layout with 128-bit host identifiers. */
    public static boolean extendedDataStructure(int cdw11) {
        return (cdw11 & 1) != 0;
    }

    /** Report: the bytes asked for, from NUMD (CDW10, a 0-based count of dwords). */
    public static long reportLength(int cdw10) {
        return ((cdw10 & 0xFFFF_FFFFL) + 1) * 4;
    }

    public static boolean validType(int type) {
        return type >= WRITE_EXCLUSIVE && type <= EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /** Types 5 and 6: every registrant holds the reservation. */
    public static boolean allRegistrants(int type) {
        return type == WRITE_EXCLUSIVE_ALL_REGISTRANTS || type == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /** Types 3 and 4: registrants may access as the holder does, but there is one holder. */
    public static boolean registrantsOnly(int type) {
        return type == WRITE_EXCLUSIVE_REGISTRANTS_ONLY || type == EXCLUSIVE_ACCESS_REGISTRANTS_ONLY;
    }

    public static String typeName(int type) {
        switch (type) {
            case 0: return "none";
            case WRITE_EXCLUSIVE: return "Write Exclusive";
            case EXCLUSIVE_ACCESS: return "Exclusive Access";
            case WRITE_EXCLUSIVE_REGISTRANTS_ONLY: return "Write Exclusive - Registrants Only";
            case EXCLUSIVE_ACCESS_REGISTRANTS_ONLY: return "Exclusive Access - Registrants Only";
            case WRITE_EXCLUSIVE_ALL_REGISTRANTS: return "Write Exclusive - All Registrants";
            case EXCLUSIVE_ACCESS_ALL_REGISTRANTS: return "Exclusive Access - All Registrants";
            default: return "type " + type;
        }
    }
}

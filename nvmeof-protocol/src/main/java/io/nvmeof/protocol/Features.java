package io.nvmeof.protocol;

/** Encodings of the feature values this project uses (Get/Set Features CDW11 and completion DW0). */
public final class Features {
    private Features() {
    }

    /** Number of Queues: NSQR in bits 15:0, NCQR in bits 31:16, both 0-based. */
    public static int numberOfQueues(int submissionQueues, int completionQueues) {
        return ((completionQueues - 1) & 0xFFFF) << 16 | ((submissionQueues - 1) & 0xFFFF);
    }

    public static int submissionQueues(int value) {
        return (value & 0xFFFF) + 1;
    }

    public static int completionQueues(int value) {
        return ((value >>> 16) & 0xFFFF) + 1;
    }

    /** Asynchronous Event Configuration bit 8: Namespace Attribute Notices. */
    public static final int AEC_NS_ATTRIBUTE = 1 << 8;
    /** Asynchronous Event Configuration bit 11: Asymmetric Namespace Access Change Notices. */
    public static final int AEC_ANA_CHANGE = 1 << 11;
    /** Asynchronous Event Configuration bit 31: Discovery Log Page Change Notices (discovery controllers). */
    public static final int AEC_DISCOVERY_LOG_CHANGE = 1 << 31;

    // Asynchronous event completion DW0: type in bits 2:0, info in 15:8, log page in 23:16.
    public static final int AER_TYPE_NOTICE = 2;
    public static final int AER_INFO_NS_ATTRIBUTE_CHANGED = 0;
    /** Asymmetric Namespace Access Change: read the ANA log (0Ch). */
    public static final int AER_INFO_ANA_CHANGE = 0x03;
    public static final int AER_INFO_DISCOVERY_LOG_CHANGED = 0xF0;
    /** Asynchronous event type 6: I/O command specific status; info 0 says the Reservation log has an entry. */
    public static final int AER_TYPE_IO_COMMAND_SPECIFIC = 6;
    public static final int AER_INFO_RESERVATION_LOG_AVAILABLE = 0;

    public static int asyncEvent(int type, int info, int logPage) {
        return (type & 0x7) | (info & 0xFF) << 8 | (logPage & 0xFF) << 16;
    }
}

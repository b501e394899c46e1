package io.nvmeof.protocol;

/** Opcodes of the admin, NVM (I/O) and Fabrics command sets (NVMe Base 2.0, NVMe-oF 1.1). */
public final class Opcodes {
    private Opcodes() {
    }

    // Admin command set
    public static final int ADMIN_DELETE_SQ = 0x00;
    public static final int ADMIN_CREATE_SQ = 0x01;
    public static final int ADMIN_GET_LOG_PAGE = 0x02;
    public static final int ADMIN_DELETE_CQ = 0x04;
    public static final int ADMIN_CREATE_CQ = 0x05;
    public static final int ADMIN_IDENTIFY = 0x06;
    public static final int ADMIN_ABORT = 0x08;
    public static final int ADMIN_SET_FEATURES = 0x09;
    public static final int ADMIN_GET_FEATURES = 0x0A;
    public static final int ADMIN_ASYNC_EVENT_REQUEST = 0x0C;
    public static final int ADMIN_KEEP_ALIVE = 0x18;

    /** Fabrics commands share one opcode; {@code fctype} selects the command. */
    public static final int FABRICS = 0x7F;
    public static final int FCTYPE_PROPERTY_SET = 0x00;
    public static final int FCTYPE_CONNECT = 0x01;
    public static final int FCTYPE_PROPERTY_GET = 0x04;
    public static final int FCTYPE_AUTH_SEND = 0x05;
    public static final int FCTYPE_AUTH_RECEIVE = 0x06;
    public static final int FCTYPE_DISCONNECT = 0x08;

    // NVM command set
    public static final int IO_FLUSH = 0x00;
    public static final int IO_WRITE = 0x01;
    public static final int IO_READ = 0x02;
    public static final int IO_COMPARE = 0x05;
    public static final int IO_WRITE_ZEROES = 0x08;
    public static final int IO_DATASET_MANAGEMENT = 0x09;
    public static final int IO_RESERVATION_REGISTER = 0x0D;
    public static final int IO_RESERVATION_REPORT = 0x0E;
    public static final int IO_RESERVATION_ACQUIRE = 0x11;
    public static final int IO_RESERVATION_RELEASE = 0x15;

    // Identify CNS values
    public static final int CNS_NAMESPACE = 0x00;
    public static final int CNS_CONTROLLER = 0x01;
    public static final int CNS_ACTIVE_NAMESPACE_LIST = 0x02;
    public static final int CNS_NAMESPACE_DESCRIPTORS = 0x03;
    /** I/O Command Set specific Identify Namespace (CSI in CDW11). */
    public static final int CNS_CS_NAMESPACE = 0x05;
    /** I/O Command Set specific Identify Controller (CSI in CDW11). */
    public static final int CNS_CS_CONTROLLER = 0x06;
    /** Command Set Identifier of the NVM command set. */
    public static final int CSI_NVM = 0x00;

    // Log page identifiers
    public static final int LOG_ERROR_INFORMATION = 0x01;
    public static final int LOG_SMART_HEALTH = 0x02;
    public static final int LOG_FIRMWARE_SLOT = 0x03;
    public static final int LOG_CHANGED_NAMESPACE_LIST = 0x04;
    public static final int LOG_COMMAND_EFFECTS = 0x05;
    /** Asymmetric Namespace Access log. */
    public static final int LOG_ANA = 0x0C;
    public static final int LOG_DISCOVERY = 0x70;
    /** Reservation Notification log: one notice per read, from a queue the controller keeps per host association. */
    public static final int LOG_RESERVATION_NOTIFICATION = 0x80;

    // Feature identifiers
    public static final int FEAT_VOLATILE_WRITE_CACHE = 0x06;
    public static final int FEAT_NUMBER_OF_QUEUES = 0x07;
    public static final int FEAT_ASYNC_EVENT_CONFIG = 0x0B;
    public static final int FEAT_KEEP_ALIVE_TIMER = 0x0F;
    /** Host Identifier: Get returns the 128-bit host ID from Connect (CDW11 EXHID must be 1); fabrics hosts cannot set it. */
    public static final int FEAT_HOST_IDENTIFIER = 0x81;
    public static final int HOST_IDENTIFIER_LENGTH = 16;
    /** Reservation Notification Mask (per namespace; NSID FFFFFFFFh sets every namespace's). */
    public static final int FEAT_RESERVATION_NOTIFICATION_MASK = 0x82;
    /** Reservation Persistence: CDW11 / DW0 bit 0, PTPL (Persist Through Power Loss), per namespace. */
    public static final int FEAT_RESERVATION_PERSISTENCE = 0x83;

    /** The data direction an opcode implies: bits 1:0 of the opcode (NVMe Base, Figure "Opcodes"). */
    public static boolean isHostToController(int opcode) {
        return (opcode & 0x3) == 0x1;
    }

    public static boolean isControllerToHost(int opcode) {
        return (opcode & 0x3) == 0x2;
    }

    public static String adminName(int opcode) {
        switch (opcode) {
            case ADMIN_GET_LOG_PAGE: return "Get Log Page";
            case ADMIN_IDENTIFY: return "Identify";
            case ADMIN_ABORT: return "Abort";
            case ADMIN_SET_FEATURES: return "Set Features";
            case ADMIN_GET_FEATURES: return "Get Features";
            case ADMIN_ASYNC_EVENT_REQUEST: return "Asynchronous Event Request";
            case ADMIN_KEEP_ALIVE: return "Keep Alive";
            case FABRICS: return "Fabrics";
            default: return String.format("admin opcode 0x%02x", opcode);
        }
    }

    public static String ioName(int opcode) {
        switch (opcode) {
            case IO_FLUSH: return "Flush";
            case IO_WRITE: return "Write";
            case IO_READ: return "Read";
            case IO_COMPARE: return "Compare";
            case IO_WRITE_ZEROES: return "Write Zeroes";
            case IO_DATASET_MANAGEMENT: return "Dataset Management";
            case IO_RESERVATION_REGISTER: return "Reservation Register";
            case IO_RESERVATION_REPORT: return "Reservation Report";
            case IO_RESERVATION_ACQUIRE: return "Reservation Acquire";
            case IO_RESERVATION_RELEASE: return "Reservation Release";
            case FABRICS: return "Fabrics";
            default: return String.format("I/O opcode 0x%02x", opcode);
        }
    }

    public static String fabricsName(int fctype) {
        switch (fctype) {
            case FCTYPE_PROPERTY_SET: return "Property Set";
            case FCTYPE_CONNECT: return "Connect";
            case FCTYPE_PROPERTY_GET: return "Property Get";
            case FCTYPE_AUTH_SEND: return "Authentication Send";
            case FCTYPE_AUTH_RECEIVE: return "Authentication Receive";
            case FCTYPE_DISCONNECT: return "Disconnect";
            default: return String.format("fctype 0x%02x", fctype);
        }
    }
}

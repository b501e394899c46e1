package io.nvmeof.protocol;

import java.util.HashMap;
import java.util.Map;

/**
 * NVMe completion status values. A status is an {@code int}: {@code SCT << 8 | SC}, plus {@link #MORE} and
 * {@link #DNR} flags. This is the CQE status field (bits 15:1) shifted right by one, so the data path passes plain
 * ints and never allocates. {@link #name(int)} gives the spec name for messages.
 */
public final class Status {
    private Status() {
    }

    public static final int DNR = 0x4000;
    public static final int MORE = 0x2000;

    public static final int SCT_GENERIC = 0;
    public static final int SCT_COMMAND_SPECIFIC = 1;
    public static final int SCT_MEDIA = 2;
    public static final int SCT_PATH = 3;

    // Generic command status (SCT 0)
    public static final int SUCCESS = 0x000;
    public static final int INVALID_OPCODE = 0x001;
    public static final int INVALID_FIELD = 0x002;
    public static final int CMDID_CONFLICT = 0x003;
    public static final int DATA_TRANSFER_ERROR = 0x004;
    public static final int POWER_LOSS = 0x005;
    public static final int INTERNAL = 0x006;
    public static final int ABORT_REQUESTED = 0x007;
    public static final int ABORT_SQ_DELETED = 0x008;
    public static final int ABORT_FAILED_FUSED = 0x009;
    public static final int ABORT_MISSING_FUSED = 0x00A;
    public static final int INVALID_NAMESPACE = 0x00B;
    public static final int COMMAND_SEQUENCE_ERROR = 0x00C;
    public static final int SGL_INVALID_LAST = 0x00D;
    public static final int SGL_INVALID_COUNT = 0x00E;
    public static final int SGL_INVALID_DATA_LENGTH = 0x00F;
    public static final int SGL_INVALID_METADATA_LENGTH = 0x010;
    public static final int SGL_INVALID_TYPE = 0x011;
    public static final int SGL_INVALID_OFFSET = 0x016;
    public static final int HOST_ID_INCONSISTENT = 0x018;
    public static final int KEEP_ALIVE_EXPIRED = 0x019;
    public static final int KEEP_ALIVE_INVALID = 0x01A;
    /** The controller could not process the command now and the host should retry it (NVMe 1.4: overload). */
    public static final int COMMAND_INTERRUPTED = 0x021;
    /** A transport error the host may retry (NVMe/TCP data digest mismatch, as SPDK reports it). */
    public static final int TRANSIENT_TRANSPORT_ERROR = 0x022;
    public static final int LBA_RANGE = 0x080;
    public static final int CAPACITY_EXCEEDED = 0x081;
    public static final int NAMESPACE_NOT_READY = 0x082;
    /** The namespace's reservation denies this host the command (or a reservation command's key does not match). */
    public static final int RESERVATION_CONFLICT = 0x083;

    // Command specific status (SCT 1)
    public static final int INVALID_CQ = 0x100;
    public static final int INVALID_QID = 0x101;
    public static final int INVALID_QUEUE_SIZE = 0x102;
    public static final int ABORT_LIMIT = 0x103;
    public static final int ASYNC_LIMIT = 0x105;
    public static final int INVALID_LOG_PAGE = 0x109;
    public static final int FEATURE_NOT_SAVEABLE = 0x10D;
    public static final int FEATURE_NOT_CHANGEABLE = 0x10E;
    public static final int FEATURE_NOT_PER_NAMESPACE = 0x10F;
    public static final int CONNECT_INCOMPATIBLE_FORMAT = 0x180;
    public static final int CONNECT_CONTROLLER_BUSY = 0x181;
    public static final int CONNECT_INVALID_PARAMETERS = 0x182;
    public static final int CONNECT_RESTART_DISCOVERY = 0x183;
    public static final int CONNECT_INVALID_HOST = 0x184;
    /**
     * Authentication Required (SCT 1, SC 91h): a command other than Connect and the authentication commands on a
     * queue that has not completed DH-HMAC-CHAP. Its value is outside the ranges that depend on the command set.
     */
    public static final int AUTH_REQUIRED = 0x191;
    /** NVM command set specific: conflicting attributes (same value as Connect's 0x80, other command). */
    public static final int CONFLICTING_ATTRIBUTES = 0x180;

    // Media and data integrity errors (SCT 2)
    public static final int WRITE_FAULT = 0x280;
    public static final int UNRECOVERED_READ_ERROR = 0x281;
    public static final int COMPARE_FAILED = 0x285;
    public static final int ACCESS_DENIED = 0x286;

    // Path related (SCT 3)
    public static final int INTERNAL_PATH_ERROR = 0x300;
    /**
     * Asymmetric Access Persistent Loss (SCT 3, SC 01h): the namespace's ANA group is in the persistent loss state on
     * this controller's port (sent without DNR). Linux: NVME_SC_ANA_PERSISTENT_LOSS.
     */
    public static final int ANA_PERSISTENT_LOSS = 0x301;
    /** Asymmetric Access Inaccessible (SC 02h): the host tries another path. Linux: NVME_SC_ANA_INACCESSIBLE. */
    public static final int ANA_INACCESSIBLE = 0x302;
    /** Asymmetric Access Transition (SC 03h): the host retries, here or elsewhere. Linux: NVME_SC_ANA_TRANSITION. */
    public static final int ANA_TRANSITION = 0x303;

    // NVM command set specific (SCT 1, SC 80h..): the same values mean other things than Connect's.
    public static final int IO_CONFLICTING_ATTRIBUTES = 0x180;
    public static final int IO_INVALID_PROTECTION_INFO = 0x181;
    public static final int IO_WRITE_TO_READ_ONLY = 0x182;
    /** Linux's name: the command is in ONCS but the backing store cannot do it (e.g. Write Zeroes on tmpfs). */
    public static final int IO_ONCS_NOT_SUPPORTED = 0x183;

    /** Which command set a status came from, for {@link #name(int, int)}: command-specific codes overlap. */
    public static final int SET_ADMIN = 0;
    public static final int SET_IO = 1;
    public static final int SET_CONNECT = 2;

    private static final Map<Integer, String> NAMES = new HashMap<>();
    private static final Map<Integer, String> IO_NAMES = new HashMap<>();
    private static final Map<Integer, String> CONNECT_NAMES = new HashMap<>();

    static {
        NAMES.put(SUCCESS, "SUCCESS");
        NAMES.put(INVALID_OPCODE, "INVALID_OPCODE");
        NAMES.put(INVALID_FIELD, "INVALID_FIELD");
        NAMES.put(CMDID_CONFLICT, "CMDID_CONFLICT");
        NAMES.put(DATA_TRANSFER_ERROR, "DATA_TRANSFER_ERROR");
        NAMES.put(POWER_LOSS, "POWER_LOSS");
        NAMES.put(INTERNAL, "INTERNAL");
        NAMES.put(COMMAND_INTERRUPTED, "COMMAND_INTERRUPTED");
        NAMES.put(ABORT_REQUESTED, "ABORT_REQ");
        NAMES.put(ABORT_SQ_DELETED, "ABORT_QUEUE");
        NAMES.put(ABORT_FAILED_FUSED, "FUSED_FAIL");
        NAMES.put(ABORT_MISSING_FUSED, "FUSED_MISSING");
        NAMES.put(INVALID_NAMESPACE, "INVALID_NS");
        NAMES.put(COMMAND_SEQUENCE_ERROR, "CMD_SEQ_ERROR");
        NAMES.put(SGL_INVALID_LAST, "SGL_INVALID_LAST");
        NAMES.put(SGL_INVALID_COUNT, "SGL_INVALID_COUNT");
        NAMES.put(SGL_INVALID_DATA_LENGTH, "SGL_INVALID_DATA");
        NAMES.put(SGL_INVALID_METADATA_LENGTH, "SGL_INVALID_METADATA");
        NAMES.put(SGL_INVALID_TYPE, "SGL_INVALID_TYPE");
        NAMES.put(SGL_INVALID_OFFSET, "SGL_INVALID_OFFSET");
        NAMES.put(HOST_ID_INCONSISTENT, "HOST_ID_INCONSIST");
        NAMES.put(KEEP_ALIVE_EXPIRED, "KA_TIMEOUT_EXPIRED");
        NAMES.put(KEEP_ALIVE_INVALID, "KA_TIMEOUT_INVALID");
        NAMES.put(TRANSIENT_TRANSPORT_ERROR, "TRANSIENT_TRANSPORT_ERROR");
        NAMES.put(LBA_RANGE, "LBA_RANGE");
        NAMES.put(CAPACITY_EXCEEDED, "CAP_EXCEEDED");
        NAMES.put(NAMESPACE_NOT_READY, "NS_NOT_READY");
        NAMES.put(RESERVATION_CONFLICT, "RESERVATION_CONFLICT");
        NAMES.put(INVALID_CQ, "CQ_INVALID");
        NAMES.put(INVALID_QID, "QID_INVALID");
        NAMES.put(INVALID_QUEUE_SIZE, "QUEUE_SIZE");
        NAMES.put(ABORT_LIMIT, "ABORT_LIMIT");
        NAMES.put(ASYNC_LIMIT, "ASYNC_LIMIT");
        NAMES.put(INVALID_LOG_PAGE, "INVALID_LOG_PAGE");
        NAMES.put(FEATURE_NOT_SAVEABLE, "FEATURE_NOT_SAVEABLE");
        NAMES.put(FEATURE_NOT_CHANGEABLE, "FEATURE_NOT_CHANGEABLE");
        NAMES.put(FEATURE_NOT_PER_NAMESPACE, "FEATURE_NOT_PER_NS");
        CONNECT_NAMES.put(CONNECT_INCOMPATIBLE_FORMAT, "CONNECT_FORMAT");
        CONNECT_NAMES.put(CONNECT_CONTROLLER_BUSY, "CONNECT_CTRL_BUSY");
        CONNECT_NAMES.put(CONNECT_INVALID_PARAMETERS, "CONNECT_INVALID_PARAM");
        CONNECT_NAMES.put(CONNECT_RESTART_DISCOVERY, "CONNECT_RESTART_DISC");
        CONNECT_NAMES.put(CONNECT_INVALID_HOST, "CONNECT_INVALID_HOST");
        IO_NAMES.put(IO_CONFLICTING_ATTRIBUTES, "CONFLICTING_ATTRS");
        IO_NAMES.put(IO_INVALID_PROTECTION_INFO, "INVALID_PI");
        IO_NAMES.put(IO_WRITE_TO_READ_ONLY, "READ_ONLY");
        IO_NAMES.put(IO_ONCS_NOT_SUPPORTED, "ONCS_NOT_SUPPORTED");
        NAMES.put(AUTH_REQUIRED, "AUTH_REQUIRED");
        NAMES.put(WRITE_FAULT, "WRITE_FAULT");
        NAMES.put(UNRECOVERED_READ_ERROR, "READ_ERROR");
        NAMES.put(COMPARE_FAILED, "COMPARE_FAILED");
        NAMES.put(ACCESS_DENIED, "ACCESS_DENIED");
        NAMES.put(INTERNAL_PATH_ERROR, "INTERNAL_PATH_ERROR");
        NAMES.put(ANA_PERSISTENT_LOSS, "ANA_PERSISTENT_LOSS");
        NAMES.put(ANA_INACCESSIBLE, "ANA_INACCESSIBLE");
        NAMES.put(ANA_TRANSITION, "ANA_TRANSITION");
    }

    public static int sct(int status) {
        return (status >> 8) & 0x7;
    }

    public static int sc(int status) {
        return status & 0xFF;
    }

    public static boolean dnr(int status) {
        return (status & DNR) != 0;
    }

    public static boolean more(int status) {
        return (status & MORE) != 0;
    }

    /** The status with the flags stripped: what to compare against the constants. */
    public static int code(int status) {
        return status & 0x7FF;
    }

    public static boolean isSuccess(int status) {
        return code(status) == SUCCESS;
    }

    public static int of(int sct, int sc) {
        return (sct & 0x7) << 8 | (sc & 0xFF);
    }

    /**
     * Spec name as nvme-cli prints it, e.g. {@code CONNECT_INVALID_HOST (0x184)}. Status codes that differ by command
     * set share a value; the name given is the fabrics/admin one.
     */
    public static String name(int status) {
        return name(status, SET_CONNECT);
    }

    /** As {@link #name(int)}, reading command-specific codes (SCT 1, SC 80h and up) for the given command set. */
    public static String name(int status, int commandSet) {
        int code = code(status);
        String name = NAMES.get(code);
        if (name == null && sct(code) == SCT_COMMAND_SPECIFIC && sc(code) >= 0x80) {
            name = (commandSet == SET_IO ? IO_NAMES : commandSet == SET_CONNECT ? CONNECT_NAMES : NAMES).get(code);
        }
        if (name == null) {
            name = "SCT " + sct(code) + " SC 0x" + Integer.toHexString(sc(code));
        }
        return name + String.format(" (0x%03x%s)", code, dnr(status) ? ", DNR" : "");
    }
}

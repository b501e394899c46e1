package io.nvmeof.initiator;

import io.nvmeof.protocol.Status;

/** The controller completed a command with a non-zero NVMe status. */
public class NvmeStatusException extends NvmeofException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final int commandSet;

    /** @param command what was executed, e.g. {@code "Identify Controller"}; the message reads "command failed: NAME". */
    public NvmeStatusException(String command, int status) {
        this(command, status, Status.SET_CONNECT);
    }

    /** @param commandSet {@link Status#SET_ADMIN}, {@link Status#SET_IO} or {@link Status#SET_CONNECT}: names the status. */
    public NvmeStatusException(String command, int status, int commandSet) {
        super(command + " failed: " + Status.name(status, commandSet) + hint(status, commandSet),
                Status.dnr(status) ? ErrorKind.NVME_STATUS_DO_NOT_RETRY : ErrorKind.NVME_STATUS);
        this.status = status;
        this.commandSet = commandSet;
    }

    /**
     * What to try, for the statuses a newcomer meets first (a Connect refused); every program on the initiator (the
     * CLI, the fio engine, the loader) shows it. Connect's codes are command specific, so only for Connect.
     */
    static String hint(int status, int commandSet) {
        if (commandSet != Status.SET_CONNECT) {
            return "";
        }
        switch (Status.code(status)) {
            case Status.CONNECT_INVALID_PARAMETERS:
                return "; the target has no subsystem by that NQN, or refused a queue's size: check the subsystem"
                        + " NQN ('nvmeof discover' or 'nvme discover' lists the target's)";
            case Status.CONNECT_INVALID_HOST:
                return "; this host NQN (or its Host ID) is not allowed on the subsystem: connect as a host the"
                        + " subsystem allows, or have the admin allow this one";
            case Status.CONNECT_CONTROLLER_BUSY:
                return "; the target is at its limit of controllers, queues or memory: retry later";
            default:
                return "";
        }
    }

    /** The status as {@link Status} represents it: SCT << 8 | SC, plus the DNR/MORE flags. */
    public int status() {
        return status;
    }

    /** Status with DNR/MORE stripped, comparable to the {@link Status} constants. */
    public int statusCode() {
        return Status.code(status);
    }

    public String statusName() {
        return Status.name(status, commandSet);
    }

    /** True when the controller says retrying the same command will fail again. */
    public boolean doNotRetry() {
        return Status.dnr(status);
    }
}

package io.nvmeof.initiator;

/** A command or connection step did not finish in time. */
public class NvmeofTimeoutException extends NvmeofException {
    private static final long serialVersionUID = 1L;

    public NvmeofTimeoutException(String message) {
        super(message, ErrorKind.TIMED_OUT);
    }
}

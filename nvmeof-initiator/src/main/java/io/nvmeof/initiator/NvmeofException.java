package io.nvmeof.initiator;

/** A connection or transport failure, a timeout, or (as {@link NvmeStatusException}) an NVMe error status. */
public class NvmeofException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NvmeofException(String message) {
        super(message);
    }

    public NvmeofException(String message, Throwable cause) {
        super(message, cause);
    }
}

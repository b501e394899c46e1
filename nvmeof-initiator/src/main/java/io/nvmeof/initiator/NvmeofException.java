package io.nvmeof.initiator;

/**
 * A connection or transport failure, a timeout, or (as {@link NvmeStatusException}) an NVMe error status;
 * {@link #kind()} says which.
 */
public class NvmeofException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorKind kind;

    public NvmeofException(String message) {
        this(message, ErrorKind.OTHER);
    }

    public NvmeofException(String message, Throwable cause) {
        super(message, cause);
        this.kind = ErrorKind.OTHER;
    }

    public NvmeofException(String message, ErrorKind kind) {
        super(message);
        this.kind = kind;
    }

    /** What kind of failure this is, for a program to switch on. */
    public ErrorKind kind() {
        return kind;
    }
}

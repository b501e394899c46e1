package io.nvmeof.rdma;

import java.io.IOException;

/** A failed rdma-core operation: the operation's name, the errno and strerror's text. */
public class RdmaException extends IOException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public RdmaException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** The positive errno value (0 when the failure has none). */
    public int errno() {
        return errno;
    }

    static RdmaException fromErrno(String operation, int errno) {
        String text;
        try {
            text = RdmaLibrary.helperRegistered ? NvrNative.nvr_strerror(errno) : "errno " + errno;
        } catch (Throwable t) {
            text = "errno " + errno;
        }
        return new RdmaException(operation + " failed: " + text + " (errno " + errno + ")", errno);
    }
}

package io.nvmeof.rdma;

/**
 * A batch post failed. Descriptors before {@link #badIndex()} were posted and will complete; the rest were not.
 * The batch is left as it was, so the caller can see which requests to fail or retry.
 */
public final class PostException extends RdmaException {
    private static final long serialVersionUID = 1L;
    private final int badIndex;

    PostException(String operation, int errno, int badIndex) {
        super(fromErrno(operation, errno).getMessage() + " at descriptor " + badIndex, errno);
        this.badIndex = badIndex;
    }

    public int badIndex() {
        return badIndex;
    }
}

package io.nvmeof.uring;

import java.io.IOException;

/** A failed io_uring or file call, with the errno the kernel gave and its text. */
public final class UringException extends IOException {
    private final int errno;

    UringException(String what, int errno) {
        super(what + ": " + UringLibrary.describeErrno(errno));
        this.errno = errno;
    }

    /** The positive errno (EBUSY 16, EINVAL 22, ENOSPC 28, EOPNOTSUPP 95, ...). */
    public int errno() {
        return errno;
    }
}

package io.nvmeof.tgt.backend;

import java.io.IOException;

/**
 * A read that found the end of the file or device before the namespace's end: the storage shrank underneath the
 * target (a file cut with {@code truncate}, a loop device re-read with {@code losetup -c}). Never read as zeroes: the
 * blocks that were there are gone, and a host must be told so, not handed zeroes with success.
 */
public final class PastEndOfStorageException extends IOException {
    public PastEndOfStorageException(String message) {
        super(message);
    }
}

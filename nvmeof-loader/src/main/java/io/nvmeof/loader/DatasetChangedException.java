package io.nvmeof.loader;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A namespace of an open dataset no longer holds it: after a reconnect the namespace was replaced or removed (the
 * initiator retired its handle), or it no longer holds the label read at open (a RAM namespace that came back empty,
 * another dataset imported there). Thrown instead of handing out anything read from it since; the message names the
 * dataset, the part, the namespace, what changed and what to do. Unchecked, as the iterators throw it; it is an
 * {@link UncheckedIOException}, as other read failures of the loader are.
 */
public final class DatasetChangedException extends UncheckedIOException {
    public DatasetChangedException(String message) {
        super(message, new IOException(message));
    }
}

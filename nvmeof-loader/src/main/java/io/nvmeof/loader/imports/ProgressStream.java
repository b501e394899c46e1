package io.nvmeof.loader.imports;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/** Reports the bytes read through it to an {@link ImportProgress}. */
final class ProgressStream extends FilterInputStream {
    private final String name;
    private final ImportProgress progress;

    ProgressStream(InputStream in, String name, ImportProgress progress) {
        super(in);
        this.name = name;
        this.progress = progress;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = super.read(b, off, len);
        if (n > 0) {
            progress.advanced(n, name);
        }
        return n;
    }
}

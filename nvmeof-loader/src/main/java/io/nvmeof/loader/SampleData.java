package io.nvmeof.loader;

import java.nio.ByteBuffer;

/** A sample read on its own ({@link NvmeofDataset#read}) into a buffer of its own: valid for as long as it is kept. */
public final class SampleData extends SampleView {
    SampleData(NvmeofDataset ds, int sample, ByteBuffer buffer, int offset) {
        super(ds, sample, buffer.asReadOnlyBuffer(), offset);
    }

    @Override
    void checkLive() {
    }
}

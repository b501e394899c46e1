package io.nvmeof.loader;

/** What the loader does with a sample that fails its checks (a bad tar header or CRC, a TFRecord CRC mismatch). */
public enum CorruptPolicy {
    /** Throw {@link io.nvmeof.loader.format.CorruptRecordException} naming the shard, the offset and what was wrong. */
    FAIL,
    /** Leave the sample out, count it ({@link LoaderStatistics#corruptSkipped()}) and log it once, and go on. */
    SKIP
}

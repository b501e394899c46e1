package io.nvmeof.loader.imports;

/** What a long dataset job reports while it runs (the CLI draws a progress bar from it). */
public interface ImportProgress {
    /** A phase begins ({@code indexing}, {@code writing}, ...) that will move {@code totalBytes}. */
    void phase(String name, long totalBytes);

    /** {@code bytes} more of the phase are done; {@code detail} says where (a shard's name). */
    void advanced(long bytes, String detail);

    /** A line worth telling (a resumed import, a skipped record). */
    void note(String line);

    ImportProgress SILENT = new ImportProgress() {
        @Override
        public void phase(String name, long totalBytes) {
        }

        @Override
        public void advanced(long bytes, String detail) {
        }

        @Override
        public void note(String line) {
        }
    };
}

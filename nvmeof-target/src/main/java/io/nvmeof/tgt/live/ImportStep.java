package io.nvmeof.tgt.live;

/**
 * A unit of change of a {@link ConfigurationImport}: prepare may fail and is undone; commit may not fail. Every step
 * of an import is prepared, then the document the import leaves is saved, then every step is committed.
 */
interface ImportStep {
    String describe();

    default void prepare() throws Exception {
    }

    default void undo() {
    }

    void commit();

    /** A step that only commits: nothing to prepare or undo. */
    static ImportStep commitOnly(String what, Runnable commit) {
        return new ImportStep() {
            @Override
            public String describe() {
                return what;
            }

            @Override
            public void commit() {
                commit.run();
            }
        };
    }
}

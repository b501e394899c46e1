package io.nvmeof.loader.plan;

/** How an epoch's samples are ordered. */
public enum ShuffleMode {
    /** Storage order: shards as imported, samples as in their shard. Reads are large and sequential. */
    NONE,
    /**
     * Shards in a shuffled order, and samples shuffled within windows of consecutive samples (WebDataset's shard
     * shuffle plus shuffle buffer, or a block shuffle). Reads stay large and sequential; the window sets how far a
     * sample can move, and how much buffer it takes.
     */
    WINDOW,
    /** A permutation of every sample: each sample read on its own, at random places. */
    FULL
}

package io.nvmeof.loader.plan;

/** What an epoch's plan needs to know of a dataset: its samples, shards, where each sample lies. */
public interface SampleSpace {
    int sampleCount();

    int shardCount();

    /** First sample of a shard; a shard's samples are consecutive. */
    int shardFirst(int shard);

    int shardSamples(int shard);

    /** The namespace (part) a sample is on. */
    int part(int sample);

    /** Byte offset of the sample's range on its namespace. */
    long start(int sample);

    int length(int sample);

    int blockSize(int part);
}

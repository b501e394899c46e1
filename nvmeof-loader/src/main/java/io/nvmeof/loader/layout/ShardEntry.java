package io.nvmeof.loader.layout;

import io.nvmeof.loader.format.ShardFormat;

/**
 * One shard as a namespace's manifest records it.
 *
 * @param name        the source file's name (relative to the imported directory)
 * @param format      how it is cut into samples
 * @param offset      byte offset of the shard's first byte on the namespace
 * @param length      bytes of the shard on the namespace
 * @param crc32c      CRC32C of those bytes
 * @param firstSample index of its first sample in the namespace's sample table
 * @param sampleCount how many samples it has
 * @param recordSize  the record size of a {@link ShardFormat#FIXED} shard, else 0
 * @param samplesLeftOut samples the index left out as corrupt (when told to skip them)
 */
public record ShardEntry(String name, ShardFormat format, long offset, long length, int crc32c, int firstSample,
                         int sampleCount, int recordSize, int samplesLeftOut) {
}

package io.nvmeof.loader.format;

import java.util.List;

/**
 * What indexing one shard found.
 *
 * @param length   bytes of the shard that belong to it (a tar indexed in place ends after its end-of-archive blocks)
 * @param crc32c   CRC32C of those bytes
 * @param samples  samples indexed
 * @param skipped  corrupt records found and left out (only when told to skip them): damaged headers, members,
 *                 TFRecords
 * @param samplesLeftOut samples left out for them: in a tar, the sample a damaged header was in and the one found again
 *                 after it may both be, or one sample may hold several damaged records
 * @param ignored  members that belong to no sample (a tar member whose name has no extension, a directory)
 * @param problems one line per corrupt record left out, naming its offset and what was wrong
 */
public record IndexResult(long length, int crc32c, int samples, int skipped, int samplesLeftOut, int ignored, List<String> problems) {
}

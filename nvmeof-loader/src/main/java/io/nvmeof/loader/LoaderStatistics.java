package io.nvmeof.loader;

/**
 * What a loader has done since it was built (all iterations).
 *
 * @param samples        samples handed out
 * @param sampleBytes    bytes of those samples (their ranges)
 * @param reads          reads issued to the namespaces
 * @param readBytes      bytes those reads moved (whole blocks, a tar's headers and padding included)
 * @param corruptSkipped samples left out as corrupt ({@link CorruptPolicy#SKIP})
 * @param waitNanos      time the consuming thread waited for data: the loader was the bottleneck
 * @param waits          times the consuming thread found its next sample not yet read
 * @param parks          times it then slept (the rest it spun briefly)
 * @param prefetchBytes  the buffer the loader reads into
 */
public record LoaderStatistics(long samples, long sampleBytes, long reads, long readBytes, long corruptSkipped,
                               long waitNanos, long waits, long parks, long prefetchBytes) {
}

package io.nvmeof.loader.plan;

/** What happens to the samples left over when an epoch's samples do not divide evenly among the ranks. */
public enum Remainder {
    /** Every rank gets {@code floor(n / world)}; the last {@code n mod world} of the epoch's sequence are not read. */
    DROP,
    /**
     * Every rank gets {@code ceil(n / world)}; the shortfall is made up with the first samples of the epoch's sequence
     * again, as PyTorch's {@code DistributedSampler} does, so every sample is read at least once.
     */
    PAD,
    /** Ranks get {@code floor} or {@code ceil(n / world)}: every sample exactly once, the lower ranks one more. */
    UNEVEN
}

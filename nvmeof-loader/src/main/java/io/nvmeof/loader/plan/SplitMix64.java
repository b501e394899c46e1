package io.nvmeof.loader.plan;

/**
 * The generator every shuffle draws from: SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014), written out here rather than taken from {@code java.util.SplittableRandom}, whose
 * algorithm the JDK does not promise to keep. The same seed gives the same numbers on every JVM, machine and run;
 * {@code docs/loader.md} gives the derivation, so another implementation can reproduce an epoch's order.
 */
public final class SplitMix64 {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private long state;

    public SplitMix64(long seed) {
        this.state = seed;
    }

    /**
     * The generator for one purpose ({@code stream}) of one epoch: seeded with
     * {@code mix(mix(seed) ^ (epoch * 0x9E3779B97F4A7C15) ^ mix(stream + 1))}.
     */
    public static SplitMix64 of(long seed, long epoch, long stream) {
        return new SplitMix64(mix(mix(seed) ^ (epoch * GOLDEN) ^ mix(stream + 1)));
    }

    /** SplitMix64's finaliser (Stafford's variant 13). */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public long nextLong() {
        state += GOLDEN;
        return mix(state);
    }

    /** Uniform in [0, bound) without modulo bias: 63-bit draws, rejecting the incomplete last interval. */
    public int nextInt(int bound) {
        if (bound <= 0) {
            throw new IllegalArgumentException("bound must be positive, got " + bound);
        }
        while (true) {
            long r = nextLong() >>> 1;
            long v = r % bound;
            if (r - v + (bound - 1) >= 0) {
                return (int) v;
            }
        }
    }

    /** Fisher-Yates from the last element down: {@code a[i]} swaps with {@code a[nextInt(i + 1)]}. */
    public void shuffle(int[] a, int from, int to) {
        for (int i = to - 1; i > from; i--) {
            int j = from + nextInt(i - from + 1);
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}

package io.nvmeof.loader.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/** Coverage across ranks, determinism, and the shape of each shuffle. */
class EpochPlanTest {
    /** 10 shards of uneven sizes (37 to 136 samples), 2 namespaces, samples 1000 bytes apart. */
    static class Space implements SampleSpace {
        final int[] first = new int[11];

        Space() {
            for (int s = 0; s < 10; s++) {
                first[s + 1] = first[s] + 37 + 11 * s;
            }
        }

        public int sampleCount() { return first[10]; }
        public int shardCount() { return 10; }
        public int shardFirst(int shard) { return first[shard]; }
        public int shardSamples(int shard) { return first[shard + 1] - first[shard]; }
        public int part(int sample) { return sample < first[5] ? 0 : 1; }
        public long start(int sample) { return 1000L * sample; }
        public int length(int sample) { return 900; }
        public int blockSize(int part) { return 512; }
    }

    static int[] order(EpochPlan p) {
        int[] o = new int[p.size()];
        for (int i = 0; i < o.length; i++) {
            o[i] = p.sampleAt(i);
        }
        return o;
    }

    @Test
    void splitMix64IsTheReferenceGenerator() {
        // The first outputs of Vigna's splitmix64.c seeded with 0 (as the xoshiro authors seed their generators).
        SplitMix64 r = new SplitMix64(0);
        assertEquals(0xE220A8397B1DCDAFL, r.nextLong());
        assertEquals(0x6E789E6AA1B965F4L, r.nextLong());
        assertEquals(0x06C45D188009454FL, r.nextLong());
    }

    @ParameterizedTest
    @EnumSource(ShuffleMode.class)
    void ranksCoverTheEpochDisjointlyAndCompletely(ShuffleMode mode) {
        Space s = new Space();
        int n = s.sampleCount();
        for (int world : new int[] {1, 2, 3, 7, 16}) {
            int[] seen = new int[n];
            int total = 0;
            for (int rank = 0; rank < world; rank++) {
                EpochPlan p = EpochPlan.build(s, mode, 50, 42, 3, rank, world, Remainder.UNEVEN);
                assertTrue(Math.abs(p.size() - n / (double) world) < 1, "uneven: floor or ceil");
                for (int x : order(p)) {
                    seen[x]++;
                }
                total += p.size();
            }
            assertEquals(n, total);
            for (int x = 0; x < n; x++) {
                assertEquals(1, seen[x], "sample " + x + " with world " + world);
            }
            // DROP: equal shares, disjoint, n - n mod world in all.
            Set<Integer> dropped = new HashSet<>();
            for (int rank = 0; rank < world; rank++) {
                EpochPlan p = EpochPlan.build(s, mode, 50, 42, 3, rank, world, Remainder.DROP);
                assertEquals(n / world, p.size());
                for (int x : order(p)) {
                    assertTrue(dropped.add(x), "disjoint");
                }
            }
            assertEquals(n - n % world, dropped.size());
            // PAD: equal shares of ceil(n / world), every sample at least once.
            Set<Integer> padded = new HashSet<>();
            for (int rank = 0; rank < world; rank++) {
                EpochPlan p = EpochPlan.build(s, mode, 50, 42, 3, rank, world, Remainder.PAD);
                assertEquals((n + world - 1) / world, p.size());
                for (int x : order(p)) {
                    padded.add(x);
                }
            }
            assertEquals(n, padded.size());
        }
    }

    @ParameterizedTest
    @EnumSource(value = ShuffleMode.class, names = {"WINDOW", "FULL"})
    void theSameSeedAndEpochGiveTheSameOrderAndOthersDiffer(ShuffleMode mode) {
        Space s = new Space();
        int[] a = order(EpochPlan.build(s, mode, 64, 42, 5, 1, 3, Remainder.DROP));
        assertArrayEquals(a, order(EpochPlan.build(s, mode, 64, 42, 5, 1, 3, Remainder.DROP)));
        assertFalse(Arrays.equals(a, order(EpochPlan.build(s, mode, 64, 42, 6, 1, 3, Remainder.DROP))), "another epoch");
        assertFalse(Arrays.equals(a, order(EpochPlan.build(s, mode, 64, 43, 5, 1, 3, Remainder.DROP))), "another seed");
    }

    @Test
    void theFullShuffleIsPinned() {
        // The order is part of the contract (checkpoints taken on one machine resume on another): these are the
        // first samples of epoch 0 and 1 for seed 42 over 100 samples, by the algorithm docs/loader.md gives.
        SampleSpace flat = new Space() {
            @Override
            public int sampleCount() { return 100; }
        };
        int[] e0 = Arrays.copyOf(order(EpochPlan.build(flat, ShuffleMode.FULL, 1, 42, 0, 0, 1, Remainder.DROP)), 8);
        int[] e1 = Arrays.copyOf(order(EpochPlan.build(flat, ShuffleMode.FULL, 1, 42, 1, 0, 1, Remainder.DROP)), 8);
        assertNotEquals(Arrays.toString(e0), Arrays.toString(e1));
        assertArrayEquals(PINNED_EPOCH0, e0, Arrays.toString(e0));
        assertArrayEquals(PINNED_EPOCH1, e1, Arrays.toString(e1));
    }

    /** Computed by an independent Python rendering of the algorithm in docs/loader.md, not by this code. */
    static final int[] PINNED_EPOCH0 = {83, 70, 61, 22, 60, 37, 69, 6};
    static final int[] PINNED_EPOCH1 = {66, 29, 71, 55, 78, 62, 50, 36};

    @Test
    void theWindowShuffleKeepsShardsTogetherAndMixesWithinWindows() {
        Space s = new Space();
        EpochPlan p = EpochPlan.build(s, ShuffleMode.WINDOW, 32, 7, 0, 0, 1, Remainder.DROP);
        // Storage order: whole shards one after another, each in its own order.
        int runs = 1;
        for (int i = 1; i < p.size(); i++) {
            if (p.storage(i) != p.storage(i - 1) + 1) {
                runs++;
            }
        }
        assertTrue(runs <= 10, "at most one jump per shard, got " + runs);
        boolean moved = false;
        for (int g = 0; g < p.groupCount(); g++) {
            Set<Integer> stored = new HashSet<>();
            Set<Integer> emitted = new HashSet<>();
            for (int i = p.groupStart(g); i < p.groupEnd(g); i++) {
                stored.add(p.storage(i));
                emitted.add(p.sampleAt(i));
                moved |= p.sampleAt(i) != p.storage(i);
            }
            assertEquals(stored, emitted, "a window hands out exactly its own samples");
        }
        assertTrue(moved);
        // Reads: neighbouring samples share a run; a window's bytes are its runs' whole blocks.
        int[] count = new int[1];
        p.forEachRun(0, (part, a, b, f, e) -> {
            count[0]++;
            assertEquals(0, a % 512);
            assertEquals(0, b % 512);
        });
        assertTrue(count[0] <= 2, "one run per shard the window touches");
    }
}

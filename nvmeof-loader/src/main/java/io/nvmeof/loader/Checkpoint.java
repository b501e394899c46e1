package io.nvmeof.loader;

import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * Where a rank is in an epoch: enough to resume exactly there, on this machine or another. The epoch's order is a
 * function of the seed, the epoch and the loader's settings, so a checkpoint records every setting that fixes it, and
 * a loader refuses one taken with other settings ({@link #differences}) rather than resume another order.
 * {@code position} counts the samples handed out (skipped corrupt ones included).
 *
 * <p>Written as {@code version=2,epoch=3,position=1200,seed=42,shuffle=window,window=1024,rank=1,worldSize=2,
 * remainder=pad,dataset=UUID} ({@link #toString}, {@link #parse}). The first format ({@code epoch=3,position=1200,
 * seed=42}) recorded none of the settings: {@link #parse} refuses it, saying how to resume it with a loader known to
 * have its settings ({@link DatasetLoader#checkpointAt}).
 *
 * @param window  samples per group; it fixes the order only with {@link ShuffleMode#WINDOW}
 * @param dataset the dataset's UUID (a new import of the same files is another dataset)
 */
public record Checkpoint(long epoch, long position, long seed, ShuffleMode shuffle, int window, int rank,
                         int worldSize, Remainder remainder, UUID dataset) {
    /** The format {@link #toString} writes. */
    public static final int VERSION = 2;

    public Checkpoint {
        if (epoch < 0 || position < 0) {
            throw new IllegalArgumentException("epoch and position must not be negative: epoch " + epoch + ", position "
                    + position);
        }
        Objects.requireNonNull(shuffle, "shuffle");
        Objects.requireNonNull(remainder, "remainder");
        Objects.requireNonNull(dataset, "dataset");
        if (window < 1 || worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("window and worldSize must be at least 1, rank 0 to worldSize - 1: window "
                    + window + ", rank " + rank + ", worldSize " + worldSize);
        }
    }

    /**
     * The settings of {@code this} that differ from {@code loader}'s (a checkpoint of the loader that would resume it),
     * each as {@code "worldSize 2 (this loader: 4)"}; empty when it may resume there.
     */
    public List<String> differences(Checkpoint loader) {
        List<String> out = new ArrayList<>();
        differ(out, "dataset", dataset, loader.dataset);
        differ(out, "seed", seed, loader.seed);
        differ(out, "shuffle", shuffle, loader.shuffle);
        if (shuffle == ShuffleMode.WINDOW && loader.shuffle == ShuffleMode.WINDOW) {
            differ(out, "window", window, loader.window);
        }
        differ(out, "worldSize", worldSize, loader.worldSize);
        differ(out, "rank", rank, loader.rank);
        differ(out, "remainder", remainder, loader.remainder);
        return out;
    }

    private static void differ(List<String> out, String name, Object taken, Object now) {
        if (!taken.equals(now)) {
            out.add(name + " " + taken + " (this loader: " + now + ")");
        }
    }

    public static Checkpoint parse(String s) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (String part : s.trim().split("[,\\s]+")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("checkpoint '" + s + "': '" + part + "' is not key=value");
            }
            kv.put(part.substring(0, eq), part.substring(eq + 1));
        }
        if (!kv.containsKey("version")) {
            String at = kv.containsKey("epoch") && kv.containsKey("position")
                    ? "loader.checkpointAt(" + kv.get("epoch") + ", " + kv.get("position") + ")" : "loader.checkpointAt(EPOCH, POSITION)";
            throw new IllegalArgumentException("checkpoint '" + s + "' is of the first format, which does not record the"
                    + " settings that fix the order (shuffle, window, rank, worldSize, remainder, dataset), so resuming it"
                    + " cannot be checked. If the loader has the settings it was taken with, resume it with " + at
                    + "; otherwise start the epoch again");
        }
        long version = number(s, kv, "version");
        if (version != VERSION) {
            throw new IllegalArgumentException("checkpoint '" + s + "' is of format " + version + "; this loader reads "
                    + VERSION);
        }
        List<String> known = List.of("version", "epoch", "position", "seed", "shuffle", "window", "rank", "worldSize",
                "remainder", "dataset");
        for (String k : kv.keySet()) {
            if (!known.contains(k)) {
                throw new IllegalArgumentException("checkpoint '" + s + "': unknown key " + k + " " + known);
            }
        }
        try {
            return new Checkpoint(number(s, kv, "epoch"), number(s, kv, "position"), number(s, kv, "seed"),
                    ShuffleMode.valueOf(text(s, kv, "shuffle").toUpperCase(Locale.ROOT)), (int) number(s, kv, "window"),
                    (int) number(s, kv, "rank"), (int) number(s, kv, "worldSize"),
                    Remainder.valueOf(text(s, kv, "remainder").toUpperCase(Locale.ROOT)),
                    UUID.fromString(text(s, kv, "dataset")));
        } catch (IllegalArgumentException e) {
            if (e.getMessage().startsWith("checkpoint '")) {
                throw e;
            }
            throw new IllegalArgumentException("checkpoint '" + s + "': " + e.getMessage(), e);
        }
    }

    private static String text(String s, Map<String, String> kv, String key) {
        String v = kv.get(key);
        if (v == null) {
            throw new IllegalArgumentException("checkpoint '" + s + "' has no " + key + "=");
        }
        return v;
    }

    private static long number(String s, Map<String, String> kv, String key) {
        try {
            return Long.parseLong(text(s, kv, key));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("checkpoint '" + s + "': " + key + " is not a number");
        }
    }

    @Override
    public String toString() {
        return "version=" + VERSION + ",epoch=" + epoch + ",position=" + position + ",seed=" + seed + ",shuffle="
                + shuffle.name().toLowerCase(Locale.ROOT) + ",window=" + window + ",rank=" + rank + ",worldSize="
                + worldSize + ",remainder=" + remainder.name().toLowerCase(Locale.ROOT) + ",dataset=" + dataset;
    }
}

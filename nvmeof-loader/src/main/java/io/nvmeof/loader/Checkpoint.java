package io.nvmeof.loader;

/**
 * Where a rank is in an epoch: enough to resume exactly there, on this machine or another, since the epoch's order is
 * a function of the seed, the epoch and the loader's settings. {@code position} counts the samples handed out
 * (skipped corrupt ones included). Written as {@code epoch=3,position=1200,seed=42} ({@link #toString},
 * {@link #parse}).
 */
public record Checkpoint(long epoch, long position, long seed) {
    public Checkpoint {
        if (epoch < 0 || position < 0) {
            throw new IllegalArgumentException("epoch and position must not be negative: epoch " + epoch + ", position "
                    + position);
        }
    }

    public static Checkpoint parse(String s) {
        Long epoch = null;
        Long position = null;
        Long seed = null;
        for (String part : s.trim().split("[,\\s]+")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("checkpoint '" + s + "': '" + part + "' is not key=value");
            }
            String k = part.substring(0, eq);
            long v;
            try {
                v = Long.parseLong(part.substring(eq + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("checkpoint '" + s + "': " + k + " is not a number");
            }
            switch (k) {
                case "epoch" -> epoch = v;
                case "position" -> position = v;
                case "seed" -> seed = v;
                default -> throw new IllegalArgumentException("checkpoint '" + s + "': unknown key " + k
                        + " (epoch, position, seed)");
            }
        }
        if (epoch == null || position == null || seed == null) {
            throw new IllegalArgumentException("checkpoint '" + s + "' needs epoch=, position= and seed=");
        }
        return new Checkpoint(epoch, position, seed);
    }

    @Override
    public String toString() {
        return "epoch=" + epoch + ",position=" + position + ",seed=" + seed;
    }
}

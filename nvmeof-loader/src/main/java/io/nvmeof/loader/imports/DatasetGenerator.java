package io.nvmeof.loader.imports;

import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.format.TarWriter;
import io.nvmeof.loader.format.TfRecord;
import io.nvmeof.loader.plan.SplitMix64;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Makes a synthetic dataset of local shard files (for {@code ./nvmeof loader-bench} and tests): sample {@code i} has a
 * payload of a size drawn from {@code [minSize, maxSize]} whose bytes are a function of the seed and {@code i}, so a
 * reader can check any sample it gets without the source files. WebDataset tars carry {@code KEY.bin} (the payload)
 * and {@code KEY.cls} (the label {@code i mod 10} as text); TFRecord and fixed-size files carry the payload alone.
 */
public final class DatasetGenerator {
    /**
     * @param recordSize for {@link ShardFormat#FIXED}: every payload this size (min and max are ignored)
     */
    public record Spec(ShardFormat format, int shards, int samplesPerShard, int minSize, int maxSize, long seed,
                       int recordSize) {
        public Spec {
            if (shards < 1 || samplesPerShard < 1) {
                throw new IllegalArgumentException("shards and samples per shard must be at least 1");
            }
            if (format != ShardFormat.FIXED && (minSize < 0 || maxSize < minSize)) {
                throw new IllegalArgumentException("sample sizes must satisfy 0 <= min <= max, got " + minSize + ".." + maxSize);
            }
            if (format == ShardFormat.FIXED && recordSize < 1) {
                throw new IllegalArgumentException("fixed-size records need a record size");
            }
        }

        public long samples() {
            return (long) shards * samplesPerShard;
        }
    }

    private DatasetGenerator() {
    }

    /** The WebDataset key of sample {@code i}. */
    public static String key(long i) {
        return String.format("sample%08d", i);
    }

    /** Size of sample {@code i}'s payload. */
    public static int size(Spec spec, long i) {
        if (spec.format() == ShardFormat.FIXED) {
            return spec.recordSize();
        }
        if (spec.maxSize() == spec.minSize()) {
            return spec.minSize();
        }
        SplitMix64 r = new SplitMix64(SplitMix64.mix(spec.seed() ^ (i * 0x9E3779B97F4A7C15L)));
        return spec.minSize() + r.nextInt(spec.maxSize() - spec.minSize() + 1);
    }

    /** Sample {@code i}'s payload. */
    public static byte[] payload(Spec spec, long i) {
        byte[] b = new byte[size(spec, i)];
        fill(b, spec.seed(), i);
        return b;
    }

    static void fill(byte[] b, long seed, long i) {
        SplitMix64 r = new SplitMix64(SplitMix64.mix(seed + 0x5851F42D4C957F2DL * (i + 1)));
        ByteBuffer w = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        int k = 0;
        for (; k + 8 <= b.length; k += 8) {
            w.putLong(k, r.nextLong());
        }
        long last = r.nextLong();
        for (; k < b.length; k++) {
            b[k] = (byte) last;
            last >>>= 8;
        }
    }

    /** Whether {@code data} is exactly sample {@code i}'s payload. */
    public static boolean matches(Spec spec, long i, ByteBuffer data) {
        byte[] want = payload(spec, i);
        if (data.remaining() != want.length) {
            return false;
        }
        return data.duplicate().equals(ByteBuffer.wrap(want));
    }

    /** Writes the shards into {@code dir} (created if missing); returns their paths in order. */
    public static List<Path> generate(Path dir, Spec spec) throws IOException {
        Files.createDirectories(dir);
        List<Path> out = new ArrayList<>();
        String ext = switch (spec.format()) {
            case TAR -> ".tar";
            case TFRECORD -> ".tfrecord";
            case FIXED -> ".bin";
        };
        for (int s = 0; s < spec.shards(); s++) {
            Path file = dir.resolve(String.format("shard-%05d%s", s, ext));
            try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
                TarWriter tar = spec.format() == ShardFormat.TAR ? new TarWriter(os) : null;
                for (int k = 0; k < spec.samplesPerShard(); k++) {
                    long i = (long) s * spec.samplesPerShard() + k;
                    byte[] p = payload(spec, i);
                    switch (spec.format()) {
                        case TAR -> {
                            tar.add(key(i) + ".bin", p);
                            tar.add(key(i) + ".cls", String.valueOf(i % 10).getBytes(StandardCharsets.US_ASCII));
                        }
                        case TFRECORD -> os.write(TfRecord.frame(p));
                        case FIXED -> os.write(p);
                    }
                }
                if (tar != null) {
                    tar.finish();
                }
            }
            out.add(file);
        }
        return out;
    }
}

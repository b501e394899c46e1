package io.nvmeof.loader.format;

import java.util.Locale;

/** How a shard's bytes are cut into samples. The code is what the manifest stores. */
public enum ShardFormat {
    /** A WebDataset tar: consecutive members with the same key (path up to the first dot of the file name) form a sample. */
    TAR(1, "tar"),
    /** TFRecord: length (u64 LE), masked CRC32C of the length, data, masked CRC32C of the data; one record a sample. */
    TFRECORD(2, "tfrecord"),
    /** Records of one fixed size, back to back; one record a sample. */
    FIXED(3, "fixed");

    private final int code;
    private final String label;

    ShardFormat(int code, String label) {
        this.code = code;
        this.label = label;
    }

    public int code() { return code; }

    public String label() { return label; }

    public static ShardFormat ofCode(int code) {
        for (ShardFormat f : values()) {
            if (f.code == code) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown shard format code " + code);
    }

    /** {@code tar}, {@code tfrecord} or {@code fixed} (case-insensitive). */
    public static ShardFormat parse(String s) {
        for (ShardFormat f : values()) {
            if (f.label.equals(s.toLowerCase(Locale.ROOT))) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown format '" + s + "': use tar, tfrecord or fixed");
    }

    /** The format a file name suggests ({@code .tar}, {@code .tfrecord}/{@code .tfrecords}), or null. */
    public static ShardFormat ofFileName(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        if (n.endsWith(".tar")) {
            return TAR;
        }
        if (n.endsWith(".tfrecord") || n.endsWith(".tfrecords") || n.contains(".tfrecord-")) {
            return TFRECORD;
        }
        return null;
    }
}

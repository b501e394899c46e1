package io.nvmeof.loader.format;

/**
 * A record that is not what its format or the manifest says: a bad CRC, a truncated member, a bad tar header. The
 * message names the shard, the byte offset within it, and what was wrong.
 */
public class CorruptRecordException extends RuntimeException {
    private final String shard;
    private final long offset;
    private final String reason;

    public CorruptRecordException(String shard, long offset, String reason) {
        super("shard " + shard + ", offset " + offset + ": " + reason);
        this.shard = shard;
        this.offset = offset;
        this.reason = reason;
    }

    /** The shard's name as the manifest records it. */
    public String shard() { return shard; }

    /** Byte offset of the bad record (or header) within its shard. */
    public long offset() { return offset; }

    /** What was wrong, without the shard and offset. */
    public String reason() { return reason; }
}

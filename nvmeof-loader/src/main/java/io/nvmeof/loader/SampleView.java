package io.nvmeof.loader;

import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import java.nio.ByteBuffer;

/**
 * One sample's members, in place in the buffer they were read into. {@link #member(int)} gives a read-only
 * {@link ByteBuffer} slice of a member (a small view object); {@link #buffer()} with {@link #offset(int)} and
 * {@link #memberLength(int)} reads it without creating anything.
 */
public abstract sealed class SampleView permits Sample, SampleData, Batch.View {
    final NvmeofDataset ds;
    final SampleTable table;
    final int sample;
    final int local;
    final ByteBuffer buffer;
    final int offset;

    SampleView(NvmeofDataset ds, int sample, ByteBuffer buffer, int offset) {
        this.ds = ds;
        this.table = ds.table(sample);
        this.sample = sample;
        this.local = ds.local(sample);
        this.buffer = buffer;
        this.offset = offset;
    }

    /** Throws if the sample may no longer be read. */
    abstract void checkLive();

    /** Its number in the dataset, 0 to {@code sampleCount - 1}. */
    public long index() {
        return sample;
    }

    /** The WebDataset key ({@code dir/000017}), or {@code shard/record} for TFRecord and fixed-size records. */
    public String key() {
        checkLive();
        return table.key(local);
    }

    /** The shard it came from. */
    public ShardEntry shard() {
        return table.shards().get(table.shardOf(local));
    }

    public int memberCount() {
        return table.memberCount(local);
    }

    /** A member's name: the WebDataset extension ({@code jpg}, {@code cls}), or {@code data}. */
    public String memberName(int m) {
        return table.memberName(local, checkMember(m));
    }

    /** The index of the member called {@code name}, or -1. */
    public int memberIndex(String name) {
        for (int m = 0; m < memberCount(); m++) {
            if (table.memberName(local, m).equals(name)) {
                return m;
            }
        }
        return -1;
    }

    public int memberLength(int m) {
        return table.memberLength(local, checkMember(m));
    }

    /** Where member {@code m}'s bytes start in {@link #buffer()}. */
    public int offset(int m) {
        checkLive();
        return offset + table.memberOffset(local, checkMember(m));
    }

    /**
     * The buffer the sample lies in (read-only, shared with other samples): read member {@code m} at absolute
     * indexes {@code offset(m)} to {@code offset(m) + memberLength(m) - 1}.
     */
    public ByteBuffer buffer() {
        checkLive();
        return buffer;
    }

    /** A read-only slice holding member {@code m} (position 0, limit its length). */
    public ByteBuffer member(int m) {
        int at = offset(m);
        return buffer.slice(at, table.memberLength(local, m));
    }

    /** The member called {@code name}. */
    public ByteBuffer member(String name) {
        int m = memberIndex(name);
        if (m < 0) {
            throw new IllegalArgumentException("sample " + table.key(local) + " has no member '" + name + "'; it has "
                    + memberNames());
        }
        return member(m);
    }

    /** A copy of member {@code m}'s bytes. */
    public byte[] memberBytes(int m) {
        byte[] b = new byte[memberLength(m)];
        buffer.get(offset(m), b);
        return b;
    }

    public java.util.List<String> memberNames() {
        java.util.List<String> names = new java.util.ArrayList<>();
        for (int m = 0; m < memberCount(); m++) {
            names.add(table.memberName(local, m));
        }
        return names;
    }

    private int checkMember(int m) {
        if (m < 0 || m >= table.memberCount(local)) {
            throw new IndexOutOfBoundsException("member " + m + " of sample " + table.key(local) + ", which has "
                    + table.memberCount(local));
        }
        return m;
    }

    @Override
    public String toString() {
        return "sample " + sample + " (" + table.key(local) + ", " + memberNames() + ")";
    }
}

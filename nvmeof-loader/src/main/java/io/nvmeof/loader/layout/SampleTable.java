package io.nvmeof.loader.layout;

import io.nvmeof.loader.format.ShardFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The shards and samples of one namespace: what its manifest holds, kept in primitive arrays (a few dozen bytes a
 * sample, no object per sample) so that tens of millions of samples fit.
 *
 * <p>A sample is one byte range on the namespace ({@link #start}, {@link #length}) that holds all its members, so it
 * is read with one read; each member is a sub-range ({@link #memberOffset} from the sample's start). Member names are
 * interned in a small table (WebDataset extensions: {@code jpg}, {@code cls}, ...).
 *
 * <h2>Encoding (version 1, little-endian)</h2>
 * <pre>
 *   magic "NVDSMANI" (8) | version u32 | shard count u32 | sample count u32 | member count u32 | name count u32
 *   names:   name count x (u16 length, UTF-8)
 *   shards:  shard count x (u16 length, UTF-8 name, u8 format, u64 offset, u64 length, u32 crc32c,
 *                           u32 first sample, u32 sample count, u32 record size, u32 samples left out as corrupt)
 *   samples: sample count x (u64 start, u32 length, u32 crc32c, u16 member count, u16 key length, UTF-8 key,
 *                            member count x (u16 name, u32 offset, u32 length))
 * </pre>
 * The manifest's CRC32C is in the namespace's label ({@link DatasetLabel}).
 */
public final class SampleTable {
    static final byte[] MAGIC = "NVDSMANI".getBytes(StandardCharsets.US_ASCII);
    static final int VERSION = 1;
    /** A sample (its byte range) is at most this long: one read buffer must hold it. */
    public static final int MAX_SAMPLE_BYTES = Integer.MAX_VALUE - 4096;

    private final List<ShardEntry> shards;
    private final List<String> names;
    private final long[] start;
    private final int[] length;
    private final int[] crc;
    private final int[] shardOf;
    private final int[] keyStart; // sampleCount + 1 entries
    private final byte[] keys;
    private final int[] memberFirst; // sampleCount + 1 entries
    private final short[] memberName;
    private final int[] memberOffset;
    private final int[] memberLength;

    private SampleTable(List<ShardEntry> shards, List<String> names, long[] start, int[] length, int[] crc,
                        int[] shardOf, int[] keyStart, byte[] keys, int[] memberFirst, short[] memberName,
                        int[] memberOffset, int[] memberLength) {
        this.shards = List.copyOf(shards);
        this.names = List.copyOf(names);
        this.start = start;
        this.length = length;
        this.crc = crc;
        this.shardOf = shardOf;
        this.keyStart = keyStart;
        this.keys = keys;
        this.memberFirst = memberFirst;
        this.memberName = memberName;
        this.memberOffset = memberOffset;
        this.memberLength = memberLength;
    }

    public List<ShardEntry> shards() { return shards; }

    public int sampleCount() { return start.length; }

    /** Byte offset of sample {@code i}'s range on the namespace. */
    public long start(int i) { return start[i]; }

    /** Bytes in sample {@code i}'s range (from its first member's header, if any, to its last member's end). */
    public int length(int i) { return length[i]; }

    /** CRC32C of the sample's members' data, in member order. */
    public int crc32c(int i) { return crc[i]; }

    public int shardOf(int i) { return shardOf[i]; }

    public String key(int i) {
        return new String(keys, keyStart[i], keyStart[i + 1] - keyStart[i], StandardCharsets.UTF_8);
    }

    public int memberCount(int i) { return memberFirst[i + 1] - memberFirst[i]; }

    /** Name of member {@code m} of sample {@code i} (e.g. {@code jpg}). */
    public String memberName(int i, int m) { return names.get(memberName[memberFirst[i] + m]); }

    /** Id of that name in {@link #memberNames()}. */
    public int memberNameId(int i, int m) { return memberName[memberFirst[i] + m]; }

    /** Offset of member {@code m}'s data from the sample's start. */
    public int memberOffset(int i, int m) { return memberOffset[memberFirst[i] + m]; }

    public int memberLength(int i, int m) { return memberLength[memberFirst[i] + m]; }

    /** Every member name that occurs, by id. */
    public List<String> memberNames() { return names; }

    /** The largest member count of any sample. */
    public int maxMembers() {
        int max = 0;
        for (int i = 0; i < sampleCount(); i++) {
            max = Math.max(max, memberCount(i));
        }
        return max;
    }

    /** Sum of every shard's length. */
    public long dataBytes() {
        long n = 0;
        for (ShardEntry s : shards) {
            n += s.length();
        }
        return n;
    }

    // ---------------------------------------------------------------------------------------------- encoding

    public byte[] encode() {
        int size = 28;
        List<byte[]> nameBytes = new ArrayList<>();
        for (String n : names) {
            byte[] b = n.getBytes(StandardCharsets.UTF_8);
            nameBytes.add(b);
            size += 2 + b.length;
        }
        List<byte[]> shardNames = new ArrayList<>();
        for (ShardEntry s : shards) {
            byte[] b = s.name().getBytes(StandardCharsets.UTF_8);
            shardNames.add(b);
            size += 2 + b.length + 1 + 8 + 8 + 4 + 4 + 4 + 4 + 4;
        }
        size += sampleCount() * (8 + 4 + 4 + 2 + 2) + keys.length + memberName.length * 10;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).putInt(VERSION).putInt(shards.size()).putInt(sampleCount()).putInt(memberName.length)
                .putInt(names.size());
        for (byte[] n : nameBytes) {
            b.putShort((short) n.length).put(n);
        }
        for (int s = 0; s < shards.size(); s++) {
            ShardEntry e = shards.get(s);
            b.putShort((short) shardNames.get(s).length).put(shardNames.get(s)).put((byte) e.format().code())
                    .putLong(e.offset()).putLong(e.length()).putInt(e.crc32c()).putInt(e.firstSample())
                    .putInt(e.sampleCount()).putInt(e.recordSize()).putInt(e.samplesLeftOut());
        }
        for (int i = 0; i < sampleCount(); i++) {
            int kl = keyStart[i + 1] - keyStart[i];
            b.putLong(start[i]).putInt(length[i]).putInt(crc[i]).putShort((short) memberCount(i)).putShort((short) kl)
                    .put(keys, keyStart[i], kl);
            for (int m = memberFirst[i]; m < memberFirst[i + 1]; m++) {
                b.putShort(memberName[m]).putInt(memberOffset[m]).putInt(memberLength[m]);
            }
        }
        if (b.hasRemaining()) {
            throw new IllegalStateException("manifest size computed wrong: " + b.remaining() + " bytes left");
        }
        return b.array();
    }

    /**
     * Decodes a manifest, checking every count and offset against the bytes there are (a damaged manifest is refused
     * with what is wrong, never read past its end).
     */
    public static SampleTable decode(ByteBuffer src) {
        ByteBuffer b = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        try {
            byte[] magic = new byte[8];
            b.get(magic);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new IllegalArgumentException("not a dataset manifest (magic " + printable(magic) + ")");
            }
            int version = b.getInt();
            if (version != VERSION) {
                throw new IllegalArgumentException("manifest version " + version + " is not supported (this reader knows "
                        + VERSION + "); use a newer nvmeof");
            }
            int shardCount = nonNegative(b.getInt(), "shard count");
            int sampleCount = nonNegative(b.getInt(), "sample count");
            int memberCount = nonNegative(b.getInt(), "member count");
            int nameCount = nonNegative(b.getInt(), "name count");
            if ((long) sampleCount * 20 > b.remaining() || (long) memberCount * 10 > b.remaining()
                    || (long) shardCount * 39 > b.remaining() || (long) nameCount * 2 > b.remaining()) {
                throw new IllegalArgumentException("counts (" + shardCount + " shards, " + sampleCount + " samples, "
                        + memberCount + " members) exceed the manifest's " + b.remaining() + " bytes");
            }
            List<String> names = new ArrayList<>(nameCount);
            for (int i = 0; i < nameCount; i++) {
                names.add(string(b));
            }
            List<ShardEntry> shards = new ArrayList<>(shardCount);
            for (int s = 0; s < shardCount; s++) {
                String name = string(b);
                ShardFormat format = ShardFormat.ofCode(b.get() & 0xFF);
                ShardEntry e = new ShardEntry(name, format, b.getLong(), b.getLong(), b.getInt(), b.getInt(),
                        b.getInt(), b.getInt(), b.getInt());
                if (e.offset() < 0 || e.length() < 0 || e.firstSample() < 0 || e.sampleCount() < 0
                        || (long) e.firstSample() + e.sampleCount() > sampleCount) {
                    throw new IllegalArgumentException("shard " + name + " has impossible offsets or counts");
                }
                shards.add(e);
            }
            Builder t = new Builder(sampleCount, memberCount);
            t.names.addAll(names);
            for (int i = 0; i < names.size(); i++) {
                t.nameIds.put(names.get(i), i);
            }
            int shard = 0;
            for (int i = 0; i < sampleCount; i++) {
                while (shard < shardCount && i >= shards.get(shard).firstSample() + shards.get(shard).sampleCount()) {
                    shard++;
                }
                long st = b.getLong();
                int len = b.getInt();
                int c = b.getInt();
                int members = b.getShort() & 0xFFFF;
                int kl = b.getShort() & 0xFFFF;
                byte[] key = new byte[kl];
                b.get(key);
                if (st < 0 || len < 0) {
                    throw new IllegalArgumentException("sample " + i + " has a negative offset or length");
                }
                int[] ids = new int[members];
                int[] offs = new int[members];
                int[] lens = new int[members];
                for (int m = 0; m < members; m++) {
                    ids[m] = b.getShort() & 0xFFFF;
                    offs[m] = b.getInt();
                    lens[m] = b.getInt();
                    if (ids[m] >= nameCount || offs[m] < 0 || lens[m] < 0 || (long) offs[m] + lens[m] > len) {
                        throw new IllegalArgumentException("sample " + i + " member " + m + " lies outside the sample");
                    }
                }
                t.add(shard, st, len, c, key, ids, offs, lens);
            }
            if (shard < shardCount - 1) {
                // Trailing shards with no samples are fine; check the rest point at the end.
                for (int s = shard + 1; s < shardCount; s++) {
                    if (shards.get(s).sampleCount() != 0) {
                        throw new IllegalArgumentException("shard " + shards.get(s).name() + " claims samples past the table");
                    }
                }
            }
            return t.build(shards);
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("manifest ends early (" + src.remaining() + " bytes)");
        }
    }

    private static int nonNegative(int v, String what) {
        if (v < 0) {
            throw new IllegalArgumentException(what + " " + (v & 0xFFFF_FFFFL) + " is too large");
        }
        return v;
    }

    private static String string(ByteBuffer b) {
        int n = b.getShort() & 0xFFFF;
        byte[] s = new byte[n];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static String printable(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(x >= 0x20 && x < 0x7F ? (char) x : '.');
        }
        return "'" + s + "'";
    }

    /** CRC32C of an encoded manifest, as the label records it. */
    public static int crc32c(byte[] encoded) {
        CRC32C c = new CRC32C();
        c.update(encoded);
        return (int) c.getValue();
    }

    // ---------------------------------------------------------------------------------------------- building

    /** Collects samples shard by shard (indexers call {@link #add}); {@link #build} makes the table. */
    public static final class Builder {
        private long[] start;
        private int[] length;
        private int[] crc;
        private int[] shardOf;
        private int[] keyStart;
        private byte[] keys = new byte[4096];
        private int keysLen;
        private int[] memberFirst;
        private short[] memberName;
        private int[] memberOffset;
        private int[] memberLength;
        private int samples;
        private int members;
        final List<String> names = new ArrayList<>();
        final Map<String, Integer> nameIds = new HashMap<>();

        public Builder() {
            this(1024, 1024);
        }

        Builder(int sampleCapacity, int memberCapacity) {
            int s = Math.max(16, sampleCapacity);
            int m = Math.max(16, memberCapacity);
            start = new long[s];
            length = new int[s];
            crc = new int[s];
            shardOf = new int[s];
            keyStart = new int[s + 1];
            memberFirst = new int[s + 1];
            memberName = new short[m];
            memberOffset = new int[m];
            memberLength = new int[m];
        }

        public int sampleCount() { return samples; }

        /** The id of a member name, added on first use (at most 65536 distinct names). */
        public int nameId(String name) {
            Integer id = nameIds.get(name);
            if (id == null) {
                if (names.size() >= 65536) {
                    throw new IllegalArgumentException("more than 65536 distinct member names");
                }
                id = names.size();
                names.add(name);
                nameIds.put(name, id);
            }
            return id;
        }

        /**
         * Adds a sample.
         *
         * @param start   its range's byte offset on the namespace
         * @param offsets members' offsets from {@code start}
         */
        public void add(int shard, long start, int length, int crc32c, byte[] key, int[] nameIds, int[] offsets,
                        int[] lengths) {
            add(shard, start, length, crc32c, key, key.length, nameIds, offsets, lengths, nameIds.length);
        }

        public void add(int shard, long start, int length, int crc32c, byte[] key, int keyLength, int[] nameIds,
                        int[] offsets, int[] lengths, int memberCount) {
            if (keyLength > 65535) {
                throw new IllegalArgumentException("a sample key of " + keyLength + " bytes; keys are at most 65535");
            }
            if (memberCount > 65535) {
                throw new IllegalArgumentException("a sample with " + memberCount + " members; at most 65535");
            }
            if (samples == this.start.length) {
                int n = samples * 2;
                this.start = Arrays.copyOf(this.start, n);
                this.length = Arrays.copyOf(this.length, n);
                this.crc = Arrays.copyOf(this.crc, n);
                this.shardOf = Arrays.copyOf(this.shardOf, n);
                this.keyStart = Arrays.copyOf(this.keyStart, n + 1);
                this.memberFirst = Arrays.copyOf(this.memberFirst, n + 1);
            }
            while (members + memberCount > memberName.length) {
                int n = memberName.length * 2;
                memberName = Arrays.copyOf(memberName, n);
                memberOffset = Arrays.copyOf(memberOffset, n);
                memberLength = Arrays.copyOf(memberLength, n);
            }
            while (keysLen + keyLength > keys.length) {
                keys = Arrays.copyOf(keys, keys.length * 2);
            }
            this.start[samples] = start;
            this.length[samples] = length;
            this.crc[samples] = crc32c;
            this.shardOf[samples] = shard;
            System.arraycopy(key, 0, keys, keysLen, keyLength);
            keysLen += keyLength;
            for (int m = 0; m < memberCount; m++) {
                memberName[members] = (short) nameIds[m];
                memberOffset[members] = offsets[m];
                memberLength[members] = lengths[m];
                members++;
            }
            samples++;
            keyStart[samples] = keysLen;
            memberFirst[samples] = members;
        }

        public SampleTable build(List<ShardEntry> shards) {
            return new SampleTable(shards, names, Arrays.copyOf(start, samples), Arrays.copyOf(length, samples),
                    Arrays.copyOf(crc, samples), Arrays.copyOf(shardOf, samples), Arrays.copyOf(keyStart, samples + 1),
                    Arrays.copyOf(keys, keysLen), Arrays.copyOf(memberFirst, samples + 1),
                    Arrays.copyOf(memberName, members), Arrays.copyOf(memberOffset, members),
                    Arrays.copyOf(memberLength, members));
        }
    }
}

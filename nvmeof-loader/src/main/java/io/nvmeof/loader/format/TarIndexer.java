package io.nvmeof.loader.format;

import io.nvmeof.loader.layout.SampleTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Indexes a WebDataset tar in one forward pass: members grouped into samples as WebDataset groups them (the key is
 * the path up to the first dot of the file name, the rest is the member's name: {@code dir/000017.seg.png} is member
 * {@code seg.png} of sample {@code dir/000017}; consecutive members with the same key form one sample). PAX
 * ({@code path}, {@code size}) and GNU long names are honoured; directories, links and names without an extension
 * belong to no sample. Each sample is recorded as one byte range, from the first header of its first member (a PAX or
 * GNU long-name header included) to the end of its last member's data, so the loader reads it with one read and can
 * check every member's header again.
 */
public final class TarIndexer {
    /** PAX and GNU long-name headers larger than this are refused (they hold a name or a few attributes). */
    static final int MAX_EXTENDED_HEADER = 1 << 20;

    private final String shard;
    private final ShardInput in;
    private final long base;
    private final int shardIndex;
    private final SampleTable.Builder out;
    private final boolean skipCorrupt;
    private final boolean stopAtEnd;

    private final byte[] header = new byte[TarHeader.BLOCK];
    private final CRC32C sampleCrc = new CRC32C();
    private final List<String> problems = new ArrayList<>();
    private int samples;
    private int skipped;
    private int samplesLeftOut;
    /** The key of the sample left out last: the members found again after damage inside it are counted with it. */
    private String lastLeftOut;
    private int ignored;

    // The sample being assembled.
    private String key;
    private long sampleStart;
    private long sampleEnd;
    private final List<String> memberNames = new ArrayList<>();
    private int[] nameIds = new int[8];
    private int[] offsets = new int[8];
    private int[] lengths = new int[8];
    private int members;

    /** The next sample follows a damaged header (found by {@link #resync}). */
    private boolean tainted;
    /** A header {@link #resync} found, already read, to be handled next. */
    private boolean haveHeader;
    private long headerAt;

    private TarIndexer(String shard, ShardInput in, long base, int shardIndex, SampleTable.Builder out,
                       boolean skipCorrupt, boolean stopAtEnd) {
        this.shard = shard;
        this.in = in;
        this.base = base;
        this.shardIndex = shardIndex;
        this.out = out;
        this.skipCorrupt = skipCorrupt;
        this.stopAtEnd = stopAtEnd;
    }

    /**
     * @param base        byte offset of the shard on the namespace (samples are recorded at {@code base + offset})
     * @param skipCorrupt leave corrupt records out (counted, listed in {@link IndexResult#problems}) instead of failing
     * @param stopAtEnd   the shard ends with its end-of-archive blocks (a tar indexed in place on a larger
     *                    namespace); otherwise everything after them is read too (padding), and belongs to the shard
     * @throws CorruptRecordException for a corrupt record when not skipping
     */
    public static IndexResult index(String shard, ShardInput in, long base, int shardIndex, SampleTable.Builder out,
                                    boolean skipCorrupt, boolean stopAtEnd) throws IOException {
        return new TarIndexer(shard, in, base, shardIndex, out, skipCorrupt, stopAtEnd).run();
    }

    private IndexResult run() throws IOException {
        while (haveHeader || in.remaining() > 0) {
            long at;
            if (haveHeader) {
                at = headerAt;
                haveHeader = false;
            } else {
                at = in.position();
                if (in.remaining() < TarHeader.BLOCK) {
                    dropSample(at, "truncated tar header: " + in.remaining() + " bytes where a 512-byte header belongs");
                    in.skipToEnd();
                    break;
                }
                in.readFully(header, 0, TarHeader.BLOCK, null);
            }
            if (TarHeader.isZeroBlock(header, 0)) {
                // End of archive: two zero blocks (one is accepted, as GNU tar does).
                if (in.remaining() >= TarHeader.BLOCK) {
                    in.skip(TarHeader.BLOCK, null);
                }
                break;
            }
            String bad = TarHeader.checksumProblem(header, 0);
            long size = TarHeader.size(header, 0);
            if (bad == null && size < 0) {
                bad = "tar header size field is not a number (" + TarHeader.field(header, 124, 12) + ")";
            }
            if (bad != null) {
                dropSample(at, bad);
                forgetExtended();
                if (!resync()) {
                    break;
                }
                continue;
            }
            byte type = TarHeader.type(header, 0);
            boolean file = type == TarHeader.TYPE_FILE || type == TarHeader.TYPE_FILE_OLD || type == TarHeader.TYPE_CONTIGUOUS;
            if (file && paxSize >= 0) {
                size = paxSize;
            }
            long dataStart = in.position();
            if (size > in.remaining()) {
                String name = file ? memberName(paxPath, longName) : TarHeader.name(header, 0);
                if (key != null && !key.equals(keyOf(name))) {
                    finishSample(); // the header is sound: the sample before it is whole
                }
                if (key == null && file) {
                    key = keyOf(name); // the sample this member begins is the one lost
                }
                dropSample(at, "member " + name + " needs " + size + " bytes from offset " + dataStart
                        + " but the shard ends at " + in.size() + " (truncated member)");
                in.skipToEnd();
                break;
            }
            long padding = TarHeader.padded(size) - size;
            if (type == TarHeader.TYPE_PAX || type == TarHeader.TYPE_GNU_LONGNAME) {
                if (size > MAX_EXTENDED_HEADER) {
                    dropSample(at, (type == TarHeader.TYPE_PAX ? "PAX" : "GNU long-name") + " header of " + size
                            + " bytes (at most " + MAX_EXTENDED_HEADER + ")");
                    in.skip(Math.min(size + padding, in.remaining()), null);
                    continue;
                }
                byte[] data = new byte[(int) size];
                in.readFully(data, 0, data.length, null);
                in.skip(Math.min(padding, in.remaining()), null);
                if (extendedStart < 0) {
                    extendedStart = at;
                }
                if (type == TarHeader.TYPE_GNU_LONGNAME) {
                    longName = TarHeader.cString(data, 0, data.length);
                } else {
                    String[] pathAndSize = new String[2];
                    String why = parsePax(data, pathAndSize);
                    if (why != null) {
                        dropSample(at, why);
                        forgetExtended();
                        continue;
                    }
                    if (pathAndSize[0] != null) {
                        paxPath = pathAndSize[0];
                    }
                    if (pathAndSize[1] != null) {
                        paxSize = Long.parseLong(pathAndSize[1]);
                    }
                }
                continue;
            }
            if (!file) {
                // Directories, links, global PAX headers, devices: no data a sample could use.
                if (type != TarHeader.TYPE_PAX_GLOBAL && type != TarHeader.TYPE_GNU_LONGLINK) {
                    ignored++;
                }
                in.skip(Math.min(size + padding, in.remaining()), null);
                if (type != TarHeader.TYPE_GNU_LONGLINK) {
                    forgetExtended();
                }
                continue;
            }
            String name = memberName(paxPath, longName);
            long memberStart = extendedStart >= 0 ? extendedStart : at;
            forgetExtended();
            if (member(name, memberStart, dataStart, size)) {
                in.skip(size, sampleCrc);
            } else {
                in.skip(size, null);
            }
            in.skip(Math.min(padding, in.remaining()), null);
        }
        finishSample();
        if (!stopAtEnd) {
            in.skipToEnd();
        }
        return new IndexResult(in.position(), in.shardCrc(), samples, skipped, samplesLeftOut, ignored,
                List.copyOf(problems));
    }

    /** What PAX and GNU long-name headers said of the member that follows them. */
    private String paxPath;
    private long paxSize = -1;
    private String longName;
    private long extendedStart = -1;

    private void forgetExtended() {
        paxPath = null;
        paxSize = -1;
        longName = null;
        extendedStart = -1;
    }

    private String memberName(String paxPath, String longName) {
        return paxPath != null ? paxPath : longName != null ? longName : TarHeader.name(header, 0);
    }

    /** The sample key of a member name, or null if it belongs to no sample. */
    static String keyOf(String name) {
        int slash = name.lastIndexOf('/');
        int dot = name.indexOf('.', slash + 1);
        return dot <= slash + 1 ? null : name.substring(0, dot);
    }

    /** Adds a member to the current sample or starts a new one; false if the member belongs to no sample. */
    private boolean member(String name, long memberStart, long dataStart, long size) {
        int slash = name.lastIndexOf('/');
        int dot = name.indexOf('.', slash + 1);
        if (dot <= slash + 1) {
            ignored++;
            return false;
        }
        String k = name.substring(0, dot);
        String ext = name.substring(dot + 1);
        if (key == null || !key.equals(k)) {
            finishSample();
            key = k;
            sampleStart = memberStart;
            sampleCrc.reset();
        } else if (memberNames.contains(ext)) {
            CorruptRecordException e = new CorruptRecordException(shard, memberStart, "member " + ext
                    + " appears twice in sample " + k);
            if (!skipCorrupt) {
                throw e;
            }
            // The sample is ambiguous: leave it out, and start the next one after this member.
            problems.add(e.getMessage());
            skipped++;
            leaveOut(k);
            key = null;
            members = 0;
            memberNames.clear();
            return false;
        }
        long end = dataStart + size;
        if (end - sampleStart > SampleTable.MAX_SAMPLE_BYTES) {
            throw new CorruptRecordException(shard, sampleStart, "sample " + k + " spans " + (end - sampleStart)
                    + " bytes; a sample is at most " + SampleTable.MAX_SAMPLE_BYTES);
        }
        if (members == nameIds.length) {
            nameIds = java.util.Arrays.copyOf(nameIds, members * 2);
            offsets = java.util.Arrays.copyOf(offsets, members * 2);
            lengths = java.util.Arrays.copyOf(lengths, members * 2);
        }
        memberNames.add(ext);
        nameIds[members] = out.nameId(ext);
        offsets[members] = (int) (dataStart - sampleStart);
        lengths[members] = (int) size;
        members++;
        sampleEnd = end;
        return true;
    }

    private void finishSample() {
        if (key != null && members > 0 && tainted) {
            // The first sample after a damaged header may have lost members that lay before it: left out too.
            problems.add(new CorruptRecordException(shard, sampleStart, "sample " + key + " follows a damaged header and"
                    + " may be missing members; left out").getMessage());
            leaveOut(key);
        } else if (key != null && members > 0) {
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            out.add(shardIndex, base + sampleStart, (int) (sampleEnd - sampleStart), (int) sampleCrc.getValue(), k,
                    k.length, nameIds, offsets, lengths, members);
            samples++;
        }
        if (key != null) {
            tainted = false;
        }
        key = null;
        members = 0;
        memberNames.clear();
    }

    /** A corrupt record: fail, or (skipping) drop the sample being assembled, which it may belong to. */
    private void dropSample(long at, String why) {
        CorruptRecordException e = new CorruptRecordException(shard, at, why);
        if (!skipCorrupt) {
            throw e;
        }
        problems.add(e.getMessage() + (key != null ? " (sample " + key + " left out)" : ""));
        skipped++;
        leaveOut(key);
        key = null;
        members = 0;
        memberNames.clear();
    }

    /** Counts sample {@code key} left out, once however many of its records were damaged. */
    private void leaveOut(String key) {
        if (key != null && !key.equals(lastLeftOut)) {
            samplesLeftOut++;
            lastLeftOut = key;
        }
    }

    /** After a bad header: finds the next block that is a valid header and leaves it in {@link #header}. */
    private boolean resync() throws IOException {
        while (in.remaining() >= TarHeader.BLOCK) {
            long at = in.position();
            in.readFully(header, 0, TarHeader.BLOCK, null);
            if (!TarHeader.isZeroBlock(header, 0) && TarHeader.checksumProblem(header, 0) == null) {
                haveHeader = true;
                headerAt = at;
                tainted = true;
                return true;
            }
        }
        in.skipToEnd();
        return false;
    }

    /** Reads PAX records ({@code "LEN key=value\n"}): path into [0], size into [1]; returns why they are malformed. */
    static String parsePax(byte[] data, String[] pathAndSize) {
        int i = 0;
        while (i < data.length) {
            if (data[i] == 0) {
                break; // some writers pad with NULs
            }
            int sp = i;
            long len = 0;
            while (sp < data.length && data[sp] >= '0' && data[sp] <= '9' && len < data.length) {
                len = len * 10 + (data[sp] - '0');
                sp++;
            }
            if (sp == i || sp >= data.length || data[sp] != ' ' || len <= sp - i + 1 || i + len > data.length
                    || data[(int) (i + len - 1)] != '\n') {
                return "malformed PAX record at byte " + i + " of its header";
            }
            String record = new String(data, sp + 1, (int) (i + len - 1 - sp - 1), StandardCharsets.UTF_8);
            int eq = record.indexOf('=');
            if (eq <= 0) {
                return "PAX record without '=' at byte " + i + " of its header";
            }
            String k = record.substring(0, eq);
            String v = record.substring(eq + 1);
            if (k.equals("path")) {
                pathAndSize[0] = v;
            } else if (k.equals("size")) {
                if (v.isEmpty() || v.length() > 18 || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
                    return "PAX size '" + v + "' is not a byte count";
                }
                pathAndSize[1] = v;
            }
            i += (int) len;
        }
        return null;
    }
}

package io.nvmeof.loader;

import io.nvmeof.loader.format.CorruptRecordException;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.format.TarHeader;
import io.nvmeof.loader.format.TfRecord;
import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The checks every sample read passes before it is handed out: each tar member's header (checksum, size) and each
 * TFRecord's two CRCs; with {@code verify}, the CRC32C of the members' data the manifest recorded at import. One
 * instance checks samples in one buffer, from one thread, with scratch space of its own: nothing is allocated per
 * sample.
 */
final class SampleChecks {
    private final NvmeofDataset ds;
    private final ByteBuffer view;
    private final byte[] header = new byte[TarHeader.BLOCK];
    private final CRC32C crc = new CRC32C();
    private final boolean verify;

    SampleChecks(NvmeofDataset ds, ByteBuffer buffer, boolean verify) {
        this.ds = ds;
        this.view = buffer.duplicate().clear().order(ByteOrder.LITTLE_ENDIAN);
        this.verify = verify;
    }

    /** Why the sample held at {@code off} of the buffer is corrupt, or null. Reads nothing outside the sample. */
    String problem(int sample, int off) {
        SampleTable t = ds.table(sample);
        int i = ds.local(sample);
        ShardFormat f = t.shards().get(t.shardOf(i)).format();
        int members = t.memberCount(i);
        if (f == ShardFormat.TAR) {
            for (int m = 0; m < members; m++) {
                int at = t.memberOffset(i, m) - TarHeader.BLOCK;
                if (at < 0) {
                    return "member " + t.memberName(i, m) + " has no room for its tar header";
                }
                view.get(off + at, header);
                String bad = TarHeader.checksumProblem(header, 0);
                if (bad != null) {
                    return "member " + t.memberName(i, m) + ": " + bad;
                }
                long size = TarHeader.size(header, 0);
                if (size != t.memberLength(i, m)) {
                    return "member " + t.memberName(i, m) + ": its tar header says " + size + " bytes, the manifest "
                            + t.memberLength(i, m);
                }
            }
        } else if (f == ShardFormat.TFRECORD) {
            String bad = TfRecord.check(view, off, t.length(i), crc);
            if (bad != null) {
                return bad;
            }
        }
        if (verify) {
            crc.reset();
            for (int m = 0; m < members; m++) {
                int from = off + t.memberOffset(i, m);
                view.limit(view.capacity()).position(from).limit(from + t.memberLength(i, m));
                crc.update(view);
            }
            view.limit(view.capacity());
            if ((int) crc.getValue() != t.crc32c(i)) {
                return "CRC32C of its data is " + Integer.toHexString((int) crc.getValue()) + ", the manifest recorded "
                        + Integer.toHexString(t.crc32c(i));
            }
        }
        return null;
    }

    static CorruptRecordException corrupt(NvmeofDataset ds, int sample, String why) {
        SampleTable t = ds.table(sample);
        int i = ds.local(sample);
        ShardEntry shard = t.shards().get(t.shardOf(i));
        return new CorruptRecordException(shard.name(), t.start(i) - shard.offset(), "sample " + t.key(i) + ": " + why);
    }
}

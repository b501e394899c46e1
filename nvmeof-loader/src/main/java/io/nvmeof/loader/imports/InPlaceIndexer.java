package io.nvmeof.loader.imports;

import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.loader.format.IndexResult;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.format.ShardInput;
import io.nvmeof.loader.format.TarIndexer;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetLabel;
import io.nvmeof.loader.layout.DatasetPart;
import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.UUID;

/**
 * Makes a dataset of a namespace that already holds a tar (a file-backed namespace whose backing file is a shard),
 * without copying it: the tar is indexed where it lies, and the manifest and label go after its end-of-archive blocks,
 * where tar readers do not look, so the file stays a valid tar.
 */
public final class InPlaceIndexer {
    private InPlaceIndexer() {
    }

    public static DatasetLabel index(NamespaceHandle ns, String shardName, String datasetName, boolean skipCorrupt,
                                     boolean force, ImportProgress progress) throws IOException {
        NamespaceIo io = new NamespaceIo(ns, 8);
        long labelAt = DatasetLabel.offsetFor(ns.sizeBytes());
        DatasetLabel old = DatasetPart.readLabel(io);
        if (old != null && old.complete() && !force) {
            throw new IOException(DatasetPart.describe(ns) + " holds dataset " + old.name() + " already; give --force to"
                    + " index it again");
        }
        SampleTable.Builder table = new SampleTable.Builder();
        // The whole namespace: the tar may reach into the last 4 KiB (then the namespace must grow).
        progress.phase("indexing", ns.sizeBytes());
        ShardInput in = new ShardInput(new ProgressStream(io.stream(0, ns.sizeBytes()), shardName, progress),
                ns.sizeBytes());
        IndexResult r = TarIndexer.index(shardName, in, 0, 0, table, skipCorrupt, true);
        for (String p : r.problems()) {
            progress.note("left out: " + p);
        }
        if (r.samples() == 0) {
            throw new IOException(DatasetPart.describe(ns) + " holds no tar samples from byte 0 (is it a tar shard?)");
        }
        long length = r.length();
        ShardEntry shard = new ShardEntry(shardName, ShardFormat.TAR, 0, length, r.crc32c(), 0, r.samples(), 0, r.samplesLeftOut());
        byte[] manifest = table.build(List.of(shard)).encode();
        long manifestAt = DatasetImporter.align(length);
        if (manifestAt + manifest.length > labelAt) {
            long need = manifestAt + manifest.length + DatasetLabel.SIZE;
            long grow = (need + ns.blockSize() - 1) / ns.blockSize() * ns.blockSize();
            throw new IOException("the tar on " + DatasetPart.describe(ns) + " ends at byte " + length + "; its "
                    + manifest.length + "-byte manifest and label need the namespace to be at least " + grow + " bytes ("
                    + ns.sizeBytes() + " now): grow it, e.g. ./nvmeof admin ns-resize "
                    + ns.controller().transportId().subnqn() + " " + ns.nsid() + " " + roundedUp(grow)
                    + ", and index again (tar readers stop at the end-of-archive blocks, so the file stays a valid tar)");
        }
        io.write(manifestAt, ByteBuffer.wrap(manifest));
        io.flush();
        DatasetLabel label = new DatasetLabel(DatasetLabel.COMPLETE, UUID.randomUUID(), 0, 1, manifestAt, manifest.length,
                SampleTable.crc32c(manifest), 1, 0, System.currentTimeMillis(), length, datasetName);
        io.write(labelAt, ByteBuffer.wrap(label.encode()));
        io.flush();
        return label;
    }

    /** A size the admin can type: whole MiB when that is more, else bytes. */
    private static String roundedUp(long bytes) {
        long mib = (bytes + (1 << 20) - 1) >> 20;
        return mib + "MiB";
    }
}

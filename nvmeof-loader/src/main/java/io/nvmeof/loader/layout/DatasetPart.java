package io.nvmeof.loader.layout;

import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.loader.io.NamespaceIo;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One namespace of a dataset: its label and its manifest, read and checked.
 *
 * @param namespace where it is
 * @param label     its label
 * @param table     its shards and samples
 */
public record DatasetPart(NamespaceHandle namespace, DatasetLabel label, SampleTable table) {

    /** Where a namespace is, for messages: {@code nsid 1 of tcp://127.0.0.1:4420/nqn...}. */
    public static String describe(NamespaceHandle ns) {
        return "nsid " + ns.nsid() + " of " + ns.controller().transportId();
    }

    /** Reads the label at the namespace's end; null if there is none. */
    public static DatasetLabel readLabel(NamespaceIo io) throws IOException {
        NamespaceHandle ns = io.namespace();
        if (ns.sizeBytes() < DatasetLabel.SIZE * 2L) {
            return null;
        }
        ByteBuffer b = ByteBuffer.allocate(DatasetLabel.SIZE);
        io.read(DatasetLabel.offsetFor(ns.sizeBytes()), b);
        b.flip();
        try {
            return DatasetLabel.decode(b);
        } catch (IllegalArgumentException e) {
            throw new IOException(describe(ns) + ": " + e.getMessage(), e);
        }
    }

    /**
     * Opens a complete dataset part.
     *
     * @throws IOException naming the namespace and what to do when there is no dataset, an unfinished import, or a
     *                     damaged manifest
     */
    public static DatasetPart open(NamespaceHandle ns) throws IOException {
        NamespaceIo io = new NamespaceIo(ns, 4);
        DatasetLabel label = readLabel(io);
        if (label == null) {
            throw new IOException(describe(ns) + " holds no dataset (no label in its last " + DatasetLabel.SIZE
                    + " bytes); import one with ./nvmeof dataset import, or index a tar in place with ./nvmeof dataset index");
        }
        if (!label.complete()) {
            throw new IOException(describe(ns) + " holds an unfinished import of dataset " + label.name() + " ("
                    + label.shardsWritten() + " shards written); run the same ./nvmeof dataset import again to finish it");
        }
        long end = label.manifestOffset() + label.manifestLength();
        if (end > DatasetLabel.offsetFor(ns.sizeBytes())) {
            throw new IOException(describe(ns) + ": the label puts the manifest at bytes " + label.manifestOffset() + "-"
                    + end + ", past the namespace's data area (was the namespace shrunk or replaced?)");
        }
        ByteBuffer m = ByteBuffer.allocate((int) label.manifestLength());
        io.read(label.manifestOffset(), m);
        m.flip();
        byte[] bytes = new byte[m.remaining()];
        m.get(bytes);
        if (SampleTable.crc32c(bytes) != label.manifestCrc()) {
            throw new IOException(describe(ns) + ": the manifest's CRC32C does not match its label (damaged);"
                    + " import the dataset again");
        }
        SampleTable table;
        try {
            table = SampleTable.decode(ByteBuffer.wrap(bytes));
        } catch (IllegalArgumentException e) {
            throw new IOException(describe(ns) + ": damaged manifest: " + e.getMessage(), e);
        }
        for (int i = 0; i < table.sampleCount(); i++) {
            if (table.start(i) + table.length(i) > label.dataEnd()) {
                throw new IOException(describe(ns) + ": sample " + table.key(i) + " lies past the data area ("
                        + label.dataEnd() + " bytes)");
            }
        }
        return new DatasetPart(ns, label, table);
    }
}

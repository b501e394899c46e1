package io.nvmeof.loader.imports;

import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.format.CorruptRecordException;
import io.nvmeof.loader.io.NamespaceIo;
import io.nvmeof.loader.layout.DatasetPart;
import io.nvmeof.loader.layout.SampleTable;
import io.nvmeof.loader.layout.ShardEntry;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Checks a dataset where it lies: every shard's bytes against the CRC32C its manifest recorded, and for a shard that
 * differs, every sample in it (format checks and data CRC) so the damage is named sample by sample.
 */
public final class DatasetVerifier {
    /** What a verify found: one line per bad shard and per bad sample in it. */
    public record Report(int shards, int badShards, long samplesChecked, List<String> problems) {
        public boolean ok() {
            return badShards == 0;
        }
    }

    private DatasetVerifier() {
    }

    public static Report verify(NvmeofDataset ds, ImportProgress progress) throws IOException {
        progress.phase("verifying", ds.dataBytes());
        List<String> problems = new ArrayList<>();
        int bad = 0;
        int shards = 0;
        long checked = 0;
        long first = 0;
        for (DatasetPart part : ds.parts()) {
            NamespaceIo io = new NamespaceIo(part.namespace(), 8);
            SampleTable t = part.table();
            for (ShardEntry s : t.shards()) {
                shards++;
                int crc = DatasetImporter.crcOf(io, s.offset(), s.length(), s.name(), progress);
                if (crc == s.crc32c()) {
                    continue;
                }
                bad++;
                problems.add("shard " + s.name() + " on " + DatasetPart.describe(part.namespace()) + ": CRC32C "
                        + DatasetImporter.hex(crc) + ", the manifest recorded " + DatasetImporter.hex(s.crc32c()));
                for (int i = s.firstSample(); i < s.firstSample() + s.sampleCount(); i++) {
                    checked++;
                    try {
                        ds.read(first + i, true);
                    } catch (CorruptRecordException e) {
                        problems.add("  " + e.getMessage());
                    }
                }
            }
            first += t.sampleCount();
        }
        return new Report(shards, bad, checked, List.copyOf(problems));
    }
}

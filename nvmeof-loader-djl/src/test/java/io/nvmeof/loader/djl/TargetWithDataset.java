package io.nvmeof.loader.djl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Record;
import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.DatasetLocation;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.SampleView;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;

/**
 * Our target on 127.0.0.1 (an 8 MiB RAM namespace) holding a dataset imported from fixed-size records, connected.
 */
final class TargetWithDataset implements AutoCloseable {
    /** A record: 4 float features and a float label, little-endian. */
    static final int RECORD = 5 * Float.BYTES;

    final NvmeTarget target;
    final NvmeofDataset ds;

    private TargetWithDataset(NvmeTarget target, NvmeofDataset ds) {
        this.target = target;
        this.ds = ds;
    }

    /** Imports the record files under {@code dir} as dataset {@code name}. */
    static TargetWithDataset start(Path dir, String name) throws Exception {
        NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("127.0.0.1", 0, "8MiB", 512, null));
        try {
            DatasetLocation loc = DatasetLocation.parse("tcp://127.0.0.1:" + target.tcpPort(0) + "/"
                    + TargetConfig.DEFAULT_NQN);
            try (NvmeofController c = NvmeofController.connect(loc.transportId(), ConnectOptions.defaults())) {
                DatasetImporter.run(DatasetImporter.scan(List.of(dir), ShardFormat.FIXED), List.of(c.namespace(1)),
                        new DatasetImporter.Options(name, RECORD, true, false, false, false), ImportProgress.SILENT);
            }
            return new TargetWithDataset(target, NvmeofDataset.connect(List.of(loc), ConnectOptions.defaults()));
        } catch (Exception | Error e) {
            target.close();
            throw e;
        }
    }

    /** Features and label of one record; the arrays are created from heap copies, so none keeps the sample. */
    static Record decode(NDManager m, SampleView s) {
        ByteBuffer data = s.member(0).order(ByteOrder.LITTLE_ENDIAN);
        float[] x = new float[4];
        for (int i = 0; i < 4; i++) {
            x[i] = data.getFloat(i * 4);
        }
        return new Record(new NDList(m.create(x)), new NDList(m.create(new float[] {data.getFloat(16)})));
    }

    @Override
    public void close() {
        try {
            ds.close();
        } finally {
            target.close();
        }
    }
}

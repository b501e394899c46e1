package io.nvmeof.conformance.interop;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.loader.Batch;
import io.nvmeof.loader.BatchIterator;
import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.DatasetLocation;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.format.ShardFormat;
import io.nvmeof.loader.imports.DatasetGenerator;
import io.nvmeof.loader.imports.DatasetImporter;
import io.nvmeof.loader.imports.DatasetVerifier;
import io.nvmeof.loader.imports.ImportProgress;
import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.rdma.RdmaTransport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.agrona.BufferUtil;

/**
 * The loader over real RDMA (Soft-RoCE in the conformance guest) against our target: datasets imported over NVMe/RDMA,
 * read by two ranks with a full shuffle, every sample exactly once and byte-identical, and zero copy proven: the
 * target's RDMA WRITEs land inside the loader's buffer and nothing is bounced. Usage: {@code LoaderRdmaInterop ADDRESS}.
 */
public final class LoaderRdmaInterop extends InteropChecks {
    private static final String NQN = "nqn.2026-12.io.nvmeof:loader";

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: LoaderRdmaInterop ADDRESS");
            System.exit(2);
        }
        LoaderRdmaInterop t = new LoaderRdmaInterop();
        t.run(args[0]);
        t.exit();
    }

    void run(String addr) throws Exception {
        NvmeTarget target = NvmeTarget.start(TargetConfig.parse("{\"listeners\":[{\"transport\":\"rdma\",\"address\":\""
                + addr + "\",\"port\":4420}],\"subsystems\":[{\"nqn\":\"" + NQN + "\",\"namespaces\":["
                + "{\"nsid\":1,\"backend\":\"ram\",\"size\":\"64MiB\",\"blockSize\":512},"
                + "{\"nsid\":2,\"backend\":\"ram\",\"size\":\"64MiB\",\"blockSize\":4096},"
                + "{\"nsid\":3,\"backend\":\"ram\",\"size\":\"32MiB\",\"blockSize\":512}]}]}"));
        Path work = Files.createTempDirectory("loader-rdma");
        try {
            RdmaTransport listener = target.rdmaListeners().get(0);
            OurRdmaInterop.Recorder rec = new OurRdmaInterop.Recorder();
            listener.observer(rec);
            String base = "rdma://" + addr + ":" + target.rdmaPort(0) + "/" + NQN + "/";
            List<DatasetLocation> tarParts = List.of(DatasetLocation.parse(base + "1"), DatasetLocation.parse(base + "2"));
            DatasetLocation tfPart = DatasetLocation.parse(base + "3");
            ConnectOptions opts = ConnectOptions.builder().ioQueues(2).queueDepth(32).commandTimeout(Duration.ofSeconds(60))
                    .connectTimeout(Duration.ofSeconds(30)).build();
            DatasetGenerator.Spec tar = new DatasetGenerator.Spec(ShardFormat.TAR, 6, 40, 1000, 200_000, 7, 0);
            DatasetGenerator.Spec tf = new DatasetGenerator.Spec(ShardFormat.TFRECORD, 3, 60, 10, 50_000, 8, 0);

            check("import a WebDataset tar dataset into two namespaces over NVMe/RDMA (verified)", () -> {
                DatasetGenerator.generate(work.resolve("tar"), tar);
                try (NvmeofController c = NvmeofController.connect(tarParts.get(0).transportId(), opts)) {
                    DatasetImporter.Result r = DatasetImporter.run(DatasetImporter.scan(List.of(work.resolve("tar")), null),
                            List.of(c.namespace(1), c.namespace(2)),
                            new DatasetImporter.Options("rdma-tar", 0, true, false, false, false), ImportProgress.SILENT);
                    require(r.samples() == 240, "240 samples, got " + r.samples());
                }
            });
            check("import a TFRecord dataset over NVMe/RDMA", () -> {
                DatasetGenerator.generate(work.resolve("tf"), tf);
                try (NvmeofController c = NvmeofController.connect(tfPart.transportId(), opts)) {
                    DatasetImporter.run(DatasetImporter.scan(List.of(work.resolve("tf")), null), List.of(c.namespace(3)),
                            new DatasetImporter.Options("rdma-tf", 0, true, false, false, false), ImportProgress.SILENT);
                }
            });
            check("two ranks read the tar dataset with a full shuffle: every sample once, byte-identical, zero copy", () -> {
                try (NvmeofDataset ds = NvmeofDataset.connect(tarParts, opts)) {
                    int[] seen = new int[ds.sampleCount()];
                    for (int rank = 0; rank < 2; rank++) {
                        long bouncedBefore = OurRdmaInterop.bounced(ds.controllers().get(0));
                        rec.clear();
                        long lo = Long.MAX_VALUE;
                        long hi = 0;
                        try (DatasetLoader l = ds.loader().shuffle(ShuffleMode.FULL).seed(3).rank(rank).worldSize(2)
                                .remainder(Remainder.UNEVEN).prefetchBytes(8 << 20).build();
                             BatchIterator it = l.batches(0, 8)) {
                            for (Batch b : it) {
                                long address = BufferUtil.address(b.buffer());
                                lo = address;
                                hi = address + b.buffer().capacity();
                                for (int i = 0; i < b.size(); i++) {
                                    seen[(int) b.index(i)]++;
                                    long gi = Long.parseLong(b.key(i).substring(6));
                                    int bin = b.memberIndex(i, "bin");
                                    require(DatasetGenerator.matches(tar, gi, b.member(i, bin)), "sample " + b.key(i) + " differs");
                                }
                            }
                        }
                        require(OurRdmaInterop.bounced(ds.controllers().get(0)) == bouncedBefore, "reads were bounced: "
                                + ds.controllers().get(0).transportStatistics());
                        List<long[]> writes = new ArrayList<>(rec.writes);
                        require(!writes.isEmpty(), "the target posted no RDMA WRITE");
                        for (long[] w : writes) {
                            require(w[0] >= lo && w[0] + w[1] <= hi, String.format("an RDMA WRITE at 0x%x+%d landed outside"
                                    + " the loader's buffer [0x%x, 0x%x)", w[0], w[1], lo, hi));
                        }
                    }
                    for (int i = 0; i < seen.length; i++) {
                        require(seen[i] == 1, "sample " + i + " read " + seen[i] + " times");
                    }
                }
            });
            check("the TFRecord dataset in windows of 16, CRCs checked, every record once", () -> {
                try (NvmeofDataset ds = NvmeofDataset.connect(List.of(tfPart), opts);
                     DatasetLoader l = ds.loader().shuffle(ShuffleMode.WINDOW).window(16).seed(5).verify(true).build();
                     BatchIterator it = l.batches(1, 10)) {
                    int n = 0;
                    for (Batch b : it) {
                        for (int i = 0; i < b.size(); i++) {
                            String key = b.key(i);
                            long gi = Long.parseLong(key.substring(6, 11)) * tf.samplesPerShard()
                                    + Long.parseLong(key.substring(key.indexOf('/') + 1));
                            require(DatasetGenerator.matches(tf, gi, b.member(i, 0)), "record " + key + " differs");
                            n++;
                        }
                    }
                    require(n == 180, "180 records, got " + n);
                    require(DatasetVerifier.verify(ds, ImportProgress.SILENT).ok(), "verify found damage");
                }
            });
        } finally {
            target.close();
            try (var s = Files.walk(work)) {
                s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}

package io.nvmeof.loader.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Record;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import io.nvmeof.loader.plan.ShuffleMode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A DJL training loop (PyTorch engine, CPU, offline) on a dataset read from our target over NVMe/TCP: a linear model
 * learns y = w.x + b from fixed-size records of 4 features and a label, and its loss goes down.
 */
@Timeout(300)
class DjlTrainingTest {
    static final float[] W = {2f, -3f, 0.5f, 1.5f};
    static final float B = 0.25f;
    static final int RECORD = TargetWithDataset.RECORD;

    @TempDir
    Path dir;

    /** 4 shards of 256 records: x uniform in [-1, 1), y = w.x + b, little-endian floats. */
    private void generate() throws Exception {
        Random r = new Random(1);
        for (int s = 0; s < 4; s++) {
            ByteBuffer b = ByteBuffer.allocate(256 * RECORD).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < 256; i++) {
                float y = B;
                for (float w : W) {
                    float x = r.nextFloat() * 2 - 1;
                    b.putFloat(x);
                    y += w * x;
                }
                b.putFloat(y);
            }
            Files.write(dir.resolve("part-" + s + ".bin"), b.array());
        }
    }

    @Test
    void aDjlTrainerLearnsFromADatasetOnTheTarget() throws Exception {
        generate();
        try (TargetWithDataset t = TargetWithDataset.start(dir, "linear");
             NvmeofDjlDataset train = NvmeofDjlDataset.builder(t.ds).decoder(TargetWithDataset::decode)
                     .loader(l -> l.shuffle(ShuffleMode.FULL).seed(7)).setSampling(32, true).build();
             Model model = Model.newInstance("linear")) {
            assertEquals(1024, train.size());
            try (NDManager m = NDManager.newBaseManager()) {
                Record r = train.get(m, 300);
                assertEquals(new Shape(4), r.getData().head().getShape());
            }
            model.setBlock(Linear.builder().setUnits(1).build());
            // Batches are made on the trainer's executor (the common pool), two ahead, as for DJL's own datasets.
            DefaultTrainingConfig cfg = new DefaultTrainingConfig(Loss.l2Loss())
                    .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build())
                    .optExecutorService();
            List<Float> losses = new ArrayList<>();
            try (Trainer trainer = model.newTrainer(cfg)) {
                trainer.initialize(new Shape(32, 4));
                for (int epoch = 0; epoch < 4; epoch++) {
                    Set<Long> seen = new HashSet<>();
                    for (Batch batch : trainer.iterateDataset(train)) {
                        try (GradientCollector gc = trainer.newGradientCollector()) {
                            NDList preds = trainer.forward(batch.getData());
                            NDArray loss = trainer.getLoss().evaluate(batch.getLabels(), preds);
                            gc.backward(loss);
                            losses.add(loss.getFloat());
                        }
                        trainer.step();
                        for (Object i : batch.getIndices()) {
                            assertTrue(seen.add((Long) i), "sample " + i + " twice in epoch " + epoch);
                        }
                        batch.close();
                    }
                    assertEquals(1024, seen.size(), "every sample once in epoch " + epoch);
                    List<Float> epochLosses = losses.subList(losses.size() - 32, losses.size());
                    System.out.printf("epoch %d: mean L2 loss %.5f over %d batches%n", epoch,
                            epochLosses.stream().mapToDouble(Float::doubleValue).average().orElse(Double.NaN),
                            epochLosses.size());
                }
            }
            float first = (losses.get(0) + losses.get(1) + losses.get(2)) / 3;
            float last = (losses.get(losses.size() - 1) + losses.get(losses.size() - 2) + losses.get(losses.size() - 3)) / 3;
            assertEquals(128, losses.size(), "4 epochs of 32 batches");
            assertTrue(last < first / 20, "the loss goes down: first batches " + first + ", last " + last);
        }
    }
}

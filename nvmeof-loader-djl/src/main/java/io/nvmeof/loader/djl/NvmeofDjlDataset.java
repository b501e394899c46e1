package io.nvmeof.loader.djl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.util.Progress;
import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.SampleView;
import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.function.UnaryOperator;

/**
 * A DJL {@link RandomAccessDataset} over a dataset on NVMe-oF namespaces.
 *
 * <p>{@link #get(NDManager, long)} reads one sample on its own (random access, as DJL's samplers call it). A training
 * loop ({@code trainer.iterateDataset(dataset)}, {@code EasyTrain.fit}) gets {@link #getData} instead, which reads
 * through a {@link DatasetLoader}: the shuffle, the rank's share, read ahead into one registered buffer, each call of
 * {@code getData} the next epoch. A {@link Decoder} turns a sample's members into NDArrays; DJL's batchifier stacks
 * them (that copy is where the sample leaves the loader's buffer, which is released then).
 *
 * <p>DJL's options act as on DJL's own datasets: {@code optPipeline} on each sample's data, {@code optTargetPipeline}
 * on the stacked labels, {@code optDevice}, {@code optLimit} ({@code size()}, and the samples of each epoch), the
 * {@code ExecutorService} of {@code getData} with {@code optPrefetchNumber} batches ahead. {@code size()} is this
 * rank's share of an epoch.
 *
 * <pre>{@code
 * NvmeofDjlDataset train = NvmeofDjlDataset.builder(ds)
 *         .decoder((m, s) -> new Record(new NDList(m.create(floats(s.member("x")))), new NDList(m.create(label(s)))))
 *         .loader(l -> l.shuffle(ShuffleMode.FULL).seed(42))
 *         .setSampling(64, true).build();
 * EasyTrain.fit(trainer, 10, train, null);
 * }</pre>
 */
public final class NvmeofDjlDataset extends RandomAccessDataset implements AutoCloseable {
    /**
     * Makes a DJL record of one sample. NDArrays must be created on {@code manager}, and must not keep the sample. With
     * an executor, decoders run on its threads, several at once.
     */
    @FunctionalInterface
    public interface Decoder {
        Record decode(NDManager manager, SampleView sample) throws IOException;
    }

    private final NvmeofDataset ds;
    private final Decoder decoder;
    private final DatasetLoader loader;
    private final int batchSize;
    private final boolean dropLast;
    private long nextEpoch;

    private NvmeofDjlDataset(Builder b) {
        super(b);
        this.ds = b.ds;
        this.decoder = b.decoder;
        this.batchSize = b.batchSize;
        this.dropLast = b.dropLast;
        DatasetLoader.Builder l = ds.loader();
        if (b.shuffle) {
            l.shuffle(ShuffleMode.FULL);
        }
        // The adapter releases each loader batch once stacked (on the executor, batches ahead), and cuts the epoch
        // at size() and drops a short last batch itself.
        this.loader = b.configure.apply(l).releaseOnNext(false).dropLast(false).build();
        this.nextEpoch = b.firstEpoch;
    }

    public static Builder builder(NvmeofDataset ds) {
        return new Builder(ds);
    }

    /** Configures the adapter; {@code setSampling(batchSize, shuffle)} as for any DJL dataset. */
    public static final class Builder extends BaseBuilder<Builder> {
        private final NvmeofDataset ds;
        private Decoder decoder;
        private UnaryOperator<DatasetLoader.Builder> configure = UnaryOperator.identity();
        private int batchSize = -1;
        private boolean shuffle;
        private boolean dropLast;
        private long firstEpoch;

        Builder(NvmeofDataset ds) {
            this.ds = ds;
        }

        @Override
        protected Builder self() {
            return this;
        }

        /** How a sample becomes a record (required). */
        public Builder decoder(Decoder decoder) {
            this.decoder = decoder;
            return this;
        }

        /** Settings of the loader {@link #getData} reads through: shuffle mode, seed, rank, world size, buffer. */
        public Builder loader(UnaryOperator<DatasetLoader.Builder> configure) {
            this.configure = configure;
            return this;
        }

        /** The epoch the first {@code getData} reads (to resume training); later calls count on from it. */
        public Builder firstEpoch(long epoch) {
            this.firstEpoch = epoch;
            return this;
        }

        /** {@code shuffle}: a full shuffle unless {@link #loader} sets another. */
        @Override
        public Builder setSampling(int batchSize, boolean shuffle) {
            return setSampling(batchSize, shuffle, false);
        }

        @Override
        public Builder setSampling(int batchSize, boolean shuffle, boolean dropLast) {
            super.setSampling(batchSize, shuffle, dropLast);
            this.batchSize = batchSize;
            this.shuffle = shuffle;
            this.dropLast = dropLast;
            return this;
        }

        public NvmeofDjlDataset build() {
            if (decoder == null) {
                throw new IllegalArgumentException("a decoder is required: decoder((manager, sample) -> new Record(...))");
            }
            if (batchSize < 1) {
                throw new IllegalArgumentException("setSampling(batchSize, shuffle) is required");
            }
            return new NvmeofDjlDataset(this);
        }
    }

    /**
     * The dataset's sample {@code index}, read on its own. The index is the dataset's, as in
     * {@code Batch.getIndices()}: with one rank, DJL's index into this dataset.
     */
    @Override
    public Record get(NDManager manager, long index) throws IOException {
        return decoder.decode(manager, ds.read(index));
    }

    /** The samples this rank reads in an epoch ({@code size()} is this, or DJL's limit when smaller). */
    @Override
    protected long availableSize() {
        return loader.epochSize();
    }

    @Override
    public void prepare(Progress progress) {
        // Opened already: the manifests were read when the NvmeofDataset was.
    }

    /** The loader behind {@link #getData}. */
    public DatasetLoader loader() {
        return loader;
    }

    /** The next epoch, through the loader, each batch made on the caller's thread. */
    @Override
    public Iterable<Batch> getData(NDManager manager) {
        return getData(manager, (ExecutorService) null);
    }

    /**
     * The next epoch, through the loader (DJL's sampler is not used: the loader shuffles and shards): this rank's
     * first {@code size()} samples of it, each batch made on {@code executorService} (the trainer's, with
     * {@code trainer.iterateDataset}), {@code optPrefetchNumber} batches ahead, or on the caller's thread when null.
     */
    @Override
    public Iterable<Batch> getData(NDManager manager, ExecutorService executorService) {
        long epoch = nextEpoch++;
        return () -> new LoaderEpoch(this, manager, loader.batches(epoch, batchSize), executorService);
    }

    @Override
    public void close() {
        loader.close();
    }

    int batchSize() {
        return batchSize;
    }

    boolean dropLast() {
        return dropLast;
    }

    int prefetchNumber() {
        return prefetchNumber;
    }

    /**
     * The DJL batch of the first {@code count} samples of a loader batch, made as DJL's {@code DataIterable} makes one:
     * each sample decoded and put through the pipeline, stacked, the labels put through the target pipeline, moved
     * to the device. Stacking copies the samples out of the loader's buffer, so the loader batch is released then.
     */
    Batch toDjlBatch(NDManager manager, io.nvmeof.loader.Batch source, int count, long progress) throws IOException {
        NDManager batchManager = manager.newSubManager();
        try (source) {
            List<Long> indices = new ArrayList<>(source.indexes().subList(0, count));
            NDList[] data = new NDList[count];
            NDList[] labels = new NDList[count];
            for (int i = 0; i < count; i++) {
                Record r = decoder.decode(batchManager, source.sample(i));
                data[i] = pipeline == null ? r.getData() : pipeline.transform(r.getData());
                labels[i] = r.getLabels();
            }
            NDList batchData = dataBatchifier.batchify(data);
            NDList batchLabels = labelBatchifier.batchify(labels);
            for (int i = 0; i < count; i++) {
                data[i].close();
                labels[i].close();
            }
            if (targetPipeline != null) {
                batchLabels = targetPipeline.transform(batchLabels);
            }
            if (device != null) {
                batchData = batchData.toDevice(device, false);
                batchLabels = batchLabels.toDevice(device, false);
            }
            return new Batch(batchManager, batchData, batchLabels, count, dataBatchifier, labelBatchifier, progress,
                    size(), indices);
        } catch (IOException | RuntimeException | Error e) {
            batchManager.close();
            throw e;
        }
    }

    /** For a rank's share: this rank of {@code worldSize}, uneven remainders allowed. */
    public static UnaryOperator<DatasetLoader.Builder> rank(int rank, int worldSize) {
        return l -> l.rank(rank).worldSize(worldSize).remainder(Remainder.UNEVEN);
    }
}

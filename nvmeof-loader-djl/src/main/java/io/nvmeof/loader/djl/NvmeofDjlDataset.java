package io.nvmeof.loader.djl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Record;
import ai.djl.util.Progress;
import io.nvmeof.loader.BatchIterator;
import io.nvmeof.loader.DatasetLoader;
import io.nvmeof.loader.NvmeofDataset;
import io.nvmeof.loader.SampleView;
import io.nvmeof.loader.plan.Remainder;
import io.nvmeof.loader.plan.ShuffleMode;
import java.io.IOException;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.ExecutorService;
import java.util.function.UnaryOperator;

/**
 * A DJL {@link RandomAccessDataset} over a dataset on NVMe-oF namespaces.
 *
 * <p>{@link #get(NDManager, long)} reads one sample on its own (random access, as DJL's samplers call it). A training
 * loop ({@code trainer.iterateDataset(dataset)}, {@code EasyTrain.fit}) gets {@link #getData} instead, which reads
 * through a {@link DatasetLoader}: the shuffle, the rank's share, read ahead into one registered buffer, each call of
 * {@code getData} the next epoch. A {@link Decoder} turns a sample's members into NDArrays; DJL's batchifier stacks
 * them (that copy is where the sample leaves the loader's buffer), and the loader's batch is released when the DJL
 * batch is closed.
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
    /** Makes a DJL record of one sample. NDArrays must be created on {@code manager}, and must not keep the sample. */
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
        DatasetLoader.Builder l = ds.loader().dropLast(b.dropLast);
        if (b.shuffle) {
            l.shuffle(ShuffleMode.FULL);
        }
        this.loader = b.configure.apply(l).build();
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

    /** The dataset's sample {@code index}, read on its own. */
    @Override
    public Record get(NDManager manager, long index) throws IOException {
        return decoder.decode(manager, ds.read(index));
    }

    @Override
    protected long availableSize() {
        return ds.sampleCount();
    }

    @Override
    public void prepare(Progress progress) {
        // Opened already: the manifests were read when the NvmeofDataset was.
    }

    /** The loader behind {@link #getData}. */
    public DatasetLoader loader() {
        return loader;
    }

    /** The next epoch, through the loader (DJL's sampler is not used: the loader shuffles and shards). */
    @Override
    public Iterable<Batch> getData(NDManager manager) {
        long epoch = nextEpoch++;
        return () -> new Batches(manager, loader.batches(epoch, batchSize));
    }

    @Override
    public Iterable<Batch> getData(NDManager manager, ExecutorService executorService) {
        return getData(manager);
    }

    @Override
    public void close() {
        loader.close();
    }

    /** DJL batches made from the loader's, each released when the DJL batch is closed. */
    private final class Batches implements Iterator<Batch> {
        private final NDManager manager;
        private final BatchIterator it;
        private long progress;
        private final long total;

        Batches(NDManager manager, BatchIterator it) {
            this.manager = manager;
            this.it = it;
            long n = loader.epochSize();
            this.total = dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
        }

        @Override
        public boolean hasNext() {
            boolean more = it.hasNext();
            if (!more) {
                it.close();
            }
            return more;
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            io.nvmeof.loader.Batch b = it.next();
            NDManager batchManager = manager.newSubManager();
            NDList[] data = new NDList[b.size()];
            NDList[] labels = new NDList[b.size()];
            try {
                for (int i = 0; i < b.size(); i++) {
                    Record r = decoder.decode(batchManager, b.sample(i));
                    data[i] = r.getData();
                    labels[i] = r.getLabels();
                }
                NDList stackedData = dataBatchifier.batchify(data);
                NDList stackedLabels = labelBatchifier.batchify(labels);
                for (int i = 0; i < data.length; i++) {
                    data[i].close();
                    labels[i].close();
                }
                progress++;
                return new LoaderBatch(batchManager, stackedData, stackedLabels, b.size(), progress, total, b);
            } catch (IOException e) {
                batchManager.close();
                b.close();
                throw new java.io.UncheckedIOException(e);
            } catch (RuntimeException e) {
                batchManager.close();
                b.close();
                throw e;
            }
        }
    }

    /** A DJL batch that gives its samples' buffer space back to the loader when it is closed. */
    private final class LoaderBatch extends Batch {
        private final io.nvmeof.loader.Batch source;

        LoaderBatch(NDManager manager, NDList data, NDList labels, int size, long progress, long total,
                    io.nvmeof.loader.Batch source) {
            super(manager, data, labels, size, dataBatchifier, labelBatchifier, progress, total, source.indexes());
            this.source = source;
        }

        @Override
        public void close() {
            super.close();
            source.close();
        }
    }

    /** For a rank's share: this rank of {@code worldSize}, uneven remainders allowed. */
    public static UnaryOperator<DatasetLoader.Builder> rank(int rank, int worldSize) {
        return l -> l.rank(rank).worldSize(worldSize).remainder(Remainder.UNEVEN);
    }
}

package io.nvmeof.cli;

import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Reads logical blocks to a file or standard output. */
@Command(name = "read", mixinStandardHelpOptions = true, description = "Read blocks from a namespace to a file or stdout (through several paths with --path repeated).")
final class ReadCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions conn;

    @Option(names = {"-n", "--nqn"}, required = true, description = "Subsystem NQN")
    String nqn;

    @Option(names = {"-N", "--namespace-id"}, defaultValue = "1", description = "Namespace ID. Default: ${DEFAULT-VALUE}")
    long nsid;

    @Option(names = {"-l", "--lba", "--start-block"}, defaultValue = "0", description = "First LBA. Default: ${DEFAULT-VALUE}")
    long lba;

    @Option(names = "--count", description = "Number of blocks (1-based: --count 8 reads 8 blocks)")
    Long count;

    @Option(names = "--block-count", description = "Number of blocks, 0-based as nvme-cli's -c/--block-count"
            + " (--block-count 7 reads 8 blocks)")
    Long blockCount;

    /**
     * nvme-cli's {@code -c} is 0-based and this command's was 1-based: a silent off-by-one for one camp whichever it
     * follows, so {@code -c} is refused, naming both spellings.
     */
    @Option(names = "-c", hidden = true)
    String ambiguousCount;

    @Option(names = {"-o", "--output"}, defaultValue = "-", description = "Output file, or - for stdout. Default: ${DEFAULT-VALUE}")
    String output;

    @Override
    public Integer call() throws Exception {
        if (ambiguousCount != null) {
            throw new IllegalArgumentException("-c " + ambiguousCount + " is ambiguous: nvme-cli's -c/--block-count is"
                    + " 0-based (-c 7 reads 8 blocks); write --count N for N blocks, or --block-count N-1 as nvme-cli");
        }
        if ((count == null) == (blockCount == null)) {
            throw new IllegalArgumentException("give the number of blocks as --count N (1-based) or --block-count N-1"
                    + " (0-based, as nvme-cli), one of them");
        }
        long blocks = count != null ? count : blockCount + 1;
        if (blocks <= 0) {
            throw new IllegalArgumentException("--count must be at least 1 block (--block-count at least 0)");
        }
        try (ConnectedNamespace ns = conn.connectNamespace(nqn, nsid, conn.builder().ioQueues(1).queueDepth(4).build())) {
            if (lba < 0 || lba + blocks > ns.blockCount()) {
                throw new IllegalArgumentException("LBAs " + lba + ".." + (lba + blocks - 1) + " are outside namespace " + nsid
                        + " (" + ns.blockCount() + " blocks)");
            }
            int perIo = ns.chunkBlocks();
            ByteBuffer buf = ns.allocateBuffer(perIo * ns.blockSize());
            OutputStream os = "-".equals(output) ? System.out : Files.newOutputStream(Path.of(output));
            try (WritableByteChannel ch = Channels.newChannel(os)) {
                long done = 0;
                while (done < blocks) {
                    int n = (int) Math.min(perIo, blocks - done);
                    buf.clear();
                    ns.read(lba + done, n, buf).get(conn.timeoutSeconds, TimeUnit.SECONDS);
                    buf.limit(n * ns.blockSize());
                    while (buf.hasRemaining()) {
                        ch.write(buf);
                    }
                    done += n;
                }
            }
            if (!"-".equals(output)) {
                System.err.printf("read %d blocks (%d bytes) from LBA %d of namespace %d to %s%n", blocks,
                        blocks * ns.blockSize(), lba, nsid, output);
            }
            return 0;
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
    }
}

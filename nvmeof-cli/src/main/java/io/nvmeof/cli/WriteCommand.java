package io.nvmeof.cli;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Writes a file's (or stdin's) bytes to consecutive blocks, padding the last block with zeroes, then flushes. */
@Command(name = "write", mixinStandardHelpOptions = true,
        description = "Write a file or stdin to a namespace starting at an LBA (the last block is zero-padded), then flush"
                + " (through several paths with --path repeated).")
final class WriteCommand implements Callable<Integer> {
    @Mixin
    ConnectionOptions conn;

    @Option(names = {"-n", "--nqn"}, required = true, description = "Subsystem NQN")
    String nqn;

    @Option(names = {"-N", "--namespace-id"}, defaultValue = "1", description = "Namespace ID. Default: ${DEFAULT-VALUE}")
    long nsid;

    @Option(names = {"-l", "--lba", "--start-block"}, defaultValue = "0", description = "First LBA. Default: ${DEFAULT-VALUE}")
    long lba;

    @Option(names = {"-i", "--input"}, defaultValue = "-", description = "Input file, or - for stdin. Default: ${DEFAULT-VALUE}")
    String input;

    @Override
    public Integer call() throws Exception {
        try (ConnectedNamespace ns = conn.connectNamespace(nqn, nsid, conn.builder().ioQueues(1).queueDepth(4).build());
                InputStream in = "-".equals(input) ? System.in : Files.newInputStream(Path.of(input))) {
            int bs = ns.blockSize();
            int perIo = ns.chunkBlocks();
            ByteBuffer buf = ns.allocateBuffer(perIo * bs);
            byte[] chunk = new byte[perIo * bs];
            long next = lba;
            long bytes = 0;
            while (true) {
                int filled = in.readNBytes(chunk, 0, chunk.length);
                if (filled == 0) {
                    break;
                }
                int blocks = (filled + bs - 1) / bs;
                if (next + blocks > ns.blockCount()) {
                    throw new IllegalArgumentException("the input does not fit: namespace " + nsid + " ends at LBA "
                            + (ns.blockCount() - 1) + " (wrote " + bytes + " bytes before that)");
                }
                buf.clear();
                buf.put(chunk, 0, filled);
                while (buf.position() < blocks * bs) {
                    buf.put((byte) 0);
                }
                buf.flip();
                ns.write(next, blocks, buf).get(conn.timeoutSeconds, TimeUnit.SECONDS);
                next += blocks;
                bytes += filled;
                if (filled < chunk.length) {
                    break;
                }
            }
            ns.flush().get(conn.timeoutSeconds, TimeUnit.SECONDS);
            System.err.printf("wrote %d bytes as %d blocks at LBA %d of namespace %d%s%n", bytes, next - lba, lba, nsid,
                    bytes % bs != 0 ? " (last block zero-padded)" : "");
            return 0;
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
    }
}

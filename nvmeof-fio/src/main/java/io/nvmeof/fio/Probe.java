package io.nvmeof.fio;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import java.time.Duration;

/**
 * What the fio engine's {@code setup} asks before fio forks its jobs: the namespace's size, block size and largest
 * transfer. It runs as a separate process, so fio's parent never starts a JVM (a JVM does not survive {@code fork},
 * and fio's {@code process} mode forks after setup). Prints {@code size=B block=B maxio=B} and exits 0, or prints one
 * line on stderr saying what is wrong and exits 1.
 *
 * <p>Arguments: {@code trtype traddr trsvcid subnqn nsid hostnqn|- hdgst(0|1) ddgst(0|1)}.
 */
public final class Probe {
    private Probe() {
    }

    public static void main(String[] args) {
        if (args.length != 8) {
            System.err.println("usage: Probe trtype traddr trsvcid subnqn nsid hostnqn|- hdgst ddgst");
            System.exit(2);
        }
        try {
            int port;
            long nsid;
            try {
                port = Integer.parseInt(args[2]);
                nsid = Long.parseLong(args[4]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("trsvcid and nsid must be numbers, got '" + args[2] + "' and '"
                        + args[4] + "'");
            }
            ConnectOptions.Builder b = ConnectOptions.builder().ioQueues(1).queueDepth(2)
                    .connectTimeout(Duration.ofSeconds(10)).commandTimeout(Duration.ofSeconds(10))
                    .ctrlLossTimeout(Duration.ZERO).headerDigest(args[6].equals("1")).dataDigest(args[7].equals("1"));
            if (!args[5].equals("-")) {
                b.hostNqn(args[5]);
            }
            try (NvmeofController c = NvmeofController.connect(new TransportId(args[0], args[1], port, args[3]), b.build())) {
                NamespaceHandle ns = c.namespace(nsid);
                System.out.println("size=" + ns.sizeBytes() + " block=" + ns.blockSize() + " maxio="
                        + (long) ns.maxBlocksPerIo() * ns.blockSize());
            }
            System.exit(0);
        } catch (Throwable t) {
            String m = t.getMessage() != null ? t.getMessage() : t.toString();
            System.err.println(m.replace('\n', ' '));
            System.exit(1);
        }
    }
}

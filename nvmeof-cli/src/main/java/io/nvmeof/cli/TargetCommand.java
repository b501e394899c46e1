package io.nvmeof.cli;

import io.nvmeof.target.NvmeTarget;
import io.nvmeof.target.config.TargetConfig;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Runs a target until Ctrl-C. */
@Command(name = "target", mixinStandardHelpOptions = true,
        description = "Run an NVMe-oF target. With no options: subsystem " + TargetConfig.DEFAULT_NQN
                + " with one 1 GiB RAM namespace on NVMe/TCP 127.0.0.1:4420 (discovery on the same listener).")
final class TargetCommand implements Callable<Integer> {
    @Option(names = {"-c", "--config"}, description = "JSON configuration file (subsystems, namespaces, listeners, hosts)")
    Path config;

    @Option(names = {"-t", "--transport"}, defaultValue = "tcp",
            description = "Transport: tcp, or rdma (needs an RDMA device and rdma-core). Default: ${DEFAULT-VALUE}")
    String transport;

    @Option(names = {"-a", "--address"}, defaultValue = "127.0.0.1", description = "Listen address. Default: ${DEFAULT-VALUE}")
    String address;

    @Option(names = {"-p", "--port"}, defaultValue = "4420", description = "Listen port. Default: ${DEFAULT-VALUE}")
    int port;

    @Option(names = "--size", defaultValue = "1GiB", description = "Namespace size. Default: ${DEFAULT-VALUE}")
    String size;

    @Option(names = "--block-size", defaultValue = "512", description = "Logical block size, 512 or 4096. Default: ${DEFAULT-VALUE}")
    int blockSize;

    @Option(names = "--file", description = "Back the namespace with this file (created sparse if missing) instead of RAM")
    String file;

    @Option(names = "--poll-groups", description = "Poll-group threads (default: one per core)")
    Integer pollGroups;

    @Option(names = "--print-config", description = "Print the effective configuration as JSON and exit")
    boolean printConfig;

    @Override
    public Integer call() throws Exception {
        TargetConfig cfg;
        if (config != null) {
            cfg = TargetConfig.load(config);
        } else {
            if (!"tcp".equals(transport) && !"rdma".equals(transport)) {
                throw new IllegalArgumentException("transport '" + transport + "' is unknown; use tcp or rdma");
            }
            cfg = TargetConfig.defaults(transport, address, port, size, blockSize, file);
        }
        if (pollGroups != null) {
            cfg = new TargetConfig(pollGroups, cfg.maxIoQueues(), cfg.maxQueueSize(), cfg.maxTransferSize(), cfg.listeners(),
                    cfg.subsystems());
        }
        if (printConfig) {
            System.out.println(cfg.toJson());
            return 0;
        }
        NvmeTarget target = NvmeTarget.start(cfg);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("shutting down");
            target.close();
            stopped.countDown();
        }, "nvmeof-shutdown"));
        System.err.println("target running; Ctrl-C stops it");
        stopped.await();
        return 0;
    }
}

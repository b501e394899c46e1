package io.nvmeof.conformance.interop;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.ControllerInfo;
import io.nvmeof.initiator.DiscoveryEntry;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.fabrics.Nqn;
import io.nvmeof.protocol.identify.IdentifyController;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * Our initiator against another implementation's target (the Linux kernel's nvmet-tcp or nvmet-rdma in the
 * conformance guest). Prints one {@code PASS name} or {@code FAIL name: why} line per check and exits non-zero when
 * any check failed. Over RDMA the buffers come from {@link NvmeofController#allocateBuffer} (zero copy), and heap
 * buffers (bounced) are checked as well.
 *
 * <p>Usage: {@code KernelTargetInterop [tcp|rdma] ADDRESS PORT SUBNQN}
 */
public final class KernelTargetInterop extends InteropChecks {
    private String trtype = "tcp";

    public static void main(String[] args) {
        if (args.length == 3) {
            args = new String[] {"tcp", args[0], args[1], args[2]};
        }
        if (args.length != 4) {
            System.err.println("usage: KernelTargetInterop [tcp|rdma] ADDRESS PORT SUBNQN");
            System.exit(2);
        }
        KernelTargetInterop t = new KernelTargetInterop();
        t.trtype = args[0];
        t.run(args[1], Integer.parseInt(args[2]), args[3]);
        t.exit();
    }

    void run(String addr, int port, String nqn) {
        ConnectOptions base = ConnectOptions.builder().commandTimeout(java.time.Duration.ofSeconds(60))
                .connectTimeout(java.time.Duration.ofSeconds(30)).build();
        check("discovery log of the kernel target lists " + nqn, () -> {
            try (NvmeofController d = NvmeofController.connect(new TransportId(trtype, addr, port, Nqn.DISCOVERY), base)) {
                require(d.info().controllerType() == IdentifyController.CNTRLTYPE_DISCOVERY, "discovery controller type");
                List<DiscoveryEntry> log = d.discoveryLog();
                DiscoveryEntry e = log.stream().filter(x -> x.subnqn().equals(nqn)).findFirst()
                        .orElseThrow(() -> new AssertionError("not in " + log));
                require(e.trtype() == ("rdma".equals(trtype) ? 1 : 3) && e.traddr().equals(addr) && e.trsvcid().equals(Integer.toString(port)), e.toString());
            }
        });
        // Digests are NVMe/TCP's; over RDMA the link's own integrity checks stand in for them.
        for (boolean digests : "rdma".equals(trtype) ? new boolean[] {false} : new boolean[] {false, true}) {
            String how = (digests ? " (header and data digests)" : "") + ("rdma".equals(trtype) ? " over RDMA" : "");
            ConnectOptions o = base.toBuilder().ioQueues(2).queueDepth(32).headerDigest(digests).dataDigest(digests).build();
            NvmeofController[] holder = new NvmeofController[1];
            check("connect and identify the kernel target" + how, () -> {
                holder[0] = NvmeofController.connect(new TransportId(trtype, addr, port, nqn), o);
                ControllerInfo i = holder[0].info();
                require(i.subnqn().equals(nqn), "subnqn " + i.subnqn());
                require(i.controllerType() == IdentifyController.CNTRLTYPE_IO, "I/O controller");
                require(i.model().startsWith("Linux"), "model '" + i.model() + "'");
                require(holder[0].ioQueueCount() == 2, "2 I/O queues, got " + holder[0].ioQueueCount());
                require(holder[0].namespaces().size() == 2, "2 namespaces, got " + holder[0].namespaces());
            });
            NvmeofController c = holder[0];
            if (c == null) {
                continue;
            }
            try {
                for (NamespaceHandle ns : c.namespaces()) {
                    exercise(ns, how);
                }
                if ("rdma".equals(trtype)) {
                    check("heap buffers (bounced through registered copies)" + how, () -> {
                        NamespaceHandle ns = c.namespaces().get(0);
                        byte[] pattern = new byte[65536];
                        new Random(5).nextBytes(pattern);
                        int blocks = pattern.length / ns.blockSize();
                        ns.write(256, blocks, ByteBuffer.wrap(pattern)).get(60, TimeUnit.SECONDS);
                        byte[] back = new byte[pattern.length];
                        ns.read(256, blocks, ByteBuffer.wrap(back)).get(60, TimeUnit.SECONDS);
                        require(Arrays.equals(pattern, back), "heap buffer read back differently");
                        System.out.println("NOTE " + c.transportStatistics());
                    });
                }
                check("orderly shutdown" + how, () -> {
                    c.close();
                    require(!c.isConnected(), "still connected");
                });
            } finally {
                c.close();
            }
        }
    }

    void exercise(NamespaceHandle ns, String how) {
        String name = "namespace " + ns.nsid() + " (" + ns.blockSize() + " B blocks)" + how;
        check("write then read back patterns, one block to 1 MiB, " + name, () -> {
            Random r = new Random(ns.nsid() * 7 + how.length());
            int bs = ns.blockSize();
            // 12 and 16 KiB: past our old in-capsule cap but within nvmet-tcp's 16 KiB inline size, where nvmet
            // sends no R2T and waits for the data in the capsule.
            for (int size : new int[] {bs, 4096, 8192, 12288, 16384, 65536, 131072, 262144 + bs, 1 << 20}) {
                if (size % bs != 0 || size / bs > ns.maxBlocksPerIo()) {
                    continue;
                }
                int blocks = size / bs;
                long lba = (long) (r.nextDouble() * (Math.min(ns.blockCount(), 1L << 30 >> 9) - blocks));
                byte[] pattern = new byte[size];
                r.nextBytes(pattern);
                ByteBuffer src = ns.controller().allocateBuffer(size).put(pattern).flip();
                ns.write(lba, blocks, src).get(60, TimeUnit.SECONDS);
                ByteBuffer dst = ns.controller().allocateBuffer(size);
                ns.read(lba, blocks, dst).get(60, TimeUnit.SECONDS);
                byte[] back = new byte[size];
                dst.get(back);
                require(Arrays.equals(pattern, back), size + " bytes at LBA " + lba + " read back differently");
            }
        });
        check("flush, " + name, () -> ns.flush().get(60, TimeUnit.SECONDS));
        check("write zeroes reads back zeroes, " + name, () -> {
            int blocks = Math.max(1, 8192 / ns.blockSize());
            ByteBuffer ones = ns.controller().allocateBuffer(blocks * ns.blockSize());
            while (ones.hasRemaining()) {
                ones.put((byte) 0x5A);
            }
            ones.flip();
            ns.write(64, blocks, ones).get(60, TimeUnit.SECONDS);
            try {
                ns.writeZeroes(64, blocks).get(60, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                // Linux nvmet on a tmpfs file: fallocate(ZERO_RANGE) is unsupported and the target says so with
                // ONCS_NOT_SUPPORTED. Decoding that status (and its name) is the interop check here.
                if (e.getCause() instanceof io.nvmeof.initiator.NvmeStatusException s
                        && s.statusCode() == io.nvmeof.protocol.Status.IO_ONCS_NOT_SUPPORTED
                        && s.getMessage().contains("ONCS_NOT_SUPPORTED")) {
                    System.out.println("NOTE namespace " + ns.nsid() + ": the kernel target answered Write Zeroes with "
                            + s.statusName() + " (its backing file system cannot zero a range)");
                    return;
                }
                throw e;
            }
            ByteBuffer dst = ns.controller().allocateBuffer(blocks * ns.blockSize());
            ns.read(64, blocks, dst).get(60, TimeUnit.SECONDS);
            while (dst.hasRemaining()) {
                require(dst.get() == 0, "non-zero byte after Write Zeroes");
            }
        });
    }
}

package io.nvmeof.conformance.interop;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.IoCallback;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.rdma.DataPathObserver;
import io.nvmeof.tgt.rdma.RdmaTransport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.BufferUtil;

/**
 * Our initiator against our target over real RDMA (Soft-RoCE in the conformance guest), both in this JVM: connect,
 * identify, data patterns from one block to 1 MiB, zero copy proven (the target's RDMA WRITE lands at the address of
 * the caller's buffer, and nothing is bounced), every kind of buffer, concurrent I/O on many queues, connect cycles
 * with nothing left behind, and a peer vanishing mid-transfer on either side. Prints PASS/FAIL lines; exits non-zero
 * on failure. Usage: {@code OurRdmaInterop ADDRESS}.
 */
public final class OurRdmaInterop extends InteropChecks {
    private static final String NQN = TargetConfig.DEFAULT_NQN;

    /** Records the target's one-sided operations while enabled. */
    static final class Recorder implements DataPathObserver {
        final ConcurrentLinkedQueue<long[]> writes = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<long[]> reads = new ConcurrentLinkedQueue<>();

        @Override
        public void rdmaWrite(long remoteAddress, int length, long rkey) {
            writes.add(new long[] {remoteAddress, length, rkey});
        }

        @Override
        public void rdmaRead(long remoteAddress, int length, long rkey) {
            reads.add(new long[] {remoteAddress, length, rkey});
        }

        void clear() {
            writes.clear();
            reads.clear();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: OurRdmaInterop ADDRESS");
            System.exit(2);
        }
        OurRdmaInterop t = new OurRdmaInterop();
        t.run(args[0]);
        t.exit();
    }

    void run(String addr) throws Exception {
        NvmeTarget target = NvmeTarget.start(TargetConfig.defaults("rdma", addr, 4420, "256M", 512, null));
        RdmaTransport listener = target.rdmaListeners().get(0);
        Recorder rec = new Recorder();
        listener.observer(rec);
        TransportId id = new TransportId("rdma", addr, target.rdmaPort(0), NQN);
        ConnectOptions opts = ConnectOptions.builder().ioQueues(4).queueDepth(32)
                .commandTimeout(Duration.ofSeconds(60)).connectTimeout(Duration.ofSeconds(30)).build();
        NvmeofController[] holder = new NvmeofController[1];
        check("connect over RDMA and identify our target (4 I/O queues of depth 32)", () -> {
            holder[0] = NvmeofController.connect(id, opts);
            require(holder[0].ioQueueCount() == 4, "4 I/O queues, got " + holder[0].ioQueueCount());
            require(holder[0].namespaces().size() == 1, "1 namespace, got " + holder[0].namespaces());
            require(holder[0].info().subnqn().equals(NQN), "subnqn " + holder[0].info().subnqn());
        });
        NvmeofController c = holder[0];
        if (c == null) {
            target.close();
            return;
        }
        NamespaceHandle ns = c.namespaces().get(0);
        int bs = ns.blockSize();
        Random random = new Random(42);

        check("write then read back patterns, one block to 1 MiB, in registered buffers", () -> {
            for (int size : new int[] {bs, 4096, 8192, 8192 + bs, 65536, 131072, 262144 + bs, 1 << 20}) {
                int blocks = size / bs;
                long lba = (long) (random.nextDouble() * (ns.blockCount() - blocks));
                byte[] pattern = new byte[size];
                random.nextBytes(pattern);
                ByteBuffer src = c.allocateBuffer(size + 512).position(512);
                src.put(pattern).position(512);
                ns.write(lba, blocks, src).get(60, TimeUnit.SECONDS);
                ByteBuffer dst = c.allocateBuffer(size + 1024).position(1024);
                ns.read(lba, blocks, dst).get(60, TimeUnit.SECONDS);
                byte[] back = new byte[size];
                dst.get(back);
                require(Arrays.equals(pattern, back), size + " bytes at LBA " + lba + " read back differently");
            }
        });

        check("zero copy: a read lands by RDMA WRITE at the caller buffer's own address, and nothing is bounced", () -> {
            ByteBuffer buf = c.allocateBuffer(256 << 10);
            int offset = 12288;
            buf.position(offset);
            byte[] pattern = new byte[128 << 10];
            random.nextBytes(pattern);
            ByteBuffer src = c.allocateBuffer(pattern.length).put(pattern).flip();
            ns.write(1000, pattern.length / bs, src).get(60, TimeUnit.SECONDS);
            long before = bounced(c);
            rec.clear();
            ns.read(1000, pattern.length / bs, buf).get(60, TimeUnit.SECONDS);
            long want = BufferUtil.address(buf) + offset;
            List<long[]> writes = List.copyOf(rec.writes);
            require(!writes.isEmpty(), "the target posted no RDMA WRITE for the read");
            long covered = 0;
            for (long[] w : writes) {
                require(w[0] >= want && w[0] + w[1] <= want + pattern.length, String.format(
                        "RDMA WRITE to 0x%x (+%d) outside the caller's buffer at 0x%x (+%d)", w[0], w[1], want, pattern.length));
                covered += w[1];
            }
            require(writes.get(0)[0] == want, String.format("first RDMA WRITE at 0x%x, caller buffer at 0x%x",
                    writes.get(0)[0], want));
            require(covered == pattern.length, "RDMA WRITEs covered " + covered + " bytes of " + pattern.length);
            byte[] back = new byte[pattern.length];
            buf.get(back);
            require(Arrays.equals(pattern, back), "data differ");
            require(bounced(c) == before, "bytes were bounced: " + c.transportStatistics());
            System.out.println(String.format("NOTE RDMA WRITE target 0x%x = caller buffer address 0x%x + position %d",
                    writes.get(0)[0], BufferUtil.address(buf), offset));
        });

        check("a write's data is fetched by RDMA READ from the caller's buffer", () -> {
            byte[] pattern = new byte[64 << 10];
            random.nextBytes(pattern);
            ByteBuffer src = c.allocateBuffer(pattern.length).put(pattern).flip();
            rec.clear();
            ns.write(3000, pattern.length / bs, src).get(60, TimeUnit.SECONDS);
            List<long[]> reads = List.copyOf(rec.reads);
            require(reads.size() >= 1 && reads.get(0)[0] == BufferUtil.address(src), "RDMA READs " + describe(reads)
                    + ", caller buffer at 0x" + Long.toHexString(BufferUtil.address(src)));
        });

        check("a small write travels in the command capsule (no RDMA READ)", () -> {
            byte[] pattern = new byte[bs];
            random.nextBytes(pattern);
            ByteBuffer src = c.allocateBuffer(bs).put(pattern).flip();
            rec.clear();
            ns.write(5000, 1, src).get(60, TimeUnit.SECONDS);
            require(rec.reads.isEmpty(), "the target RDMA READ an in-capsule write: " + describe(List.copyOf(rec.reads)));
            ByteBuffer dst = c.allocateBuffer(bs);
            ns.read(5000, 1, dst).get(60, TimeUnit.SECONDS);
            byte[] back = new byte[bs];
            dst.get(back);
            require(Arrays.equals(pattern, back), "data differ");
        });

        check("caller-registered, unregistered direct and heap buffers all move the right bytes", () -> {
            ByteBuffer own = ByteBuffer.allocateDirect(1 << 20);
            c.registerBuffer(own);
            ByteBuffer slice = own.slice(65536, 131072);
            ByteBuffer plain = ByteBuffer.allocateDirect(131072);
            ByteBuffer heap = ByteBuffer.allocate(131072);
            long bouncedBefore = bounced(c);
            int k = 0;
            for (ByteBuffer b : new ByteBuffer[] {slice, plain, heap}) {
                byte[] pattern = new byte[131072];
                random.nextBytes(pattern);
                b.clear();
                b.put(pattern).clear();
                long lba = 20000 + 1000L * k++;
                ns.write(lba, pattern.length / bs, b).get(60, TimeUnit.SECONDS);
                ByteBuffer back = ByteBuffer.allocate(pattern.length);
                ns.read(lba, pattern.length / bs, back).get(60, TimeUnit.SECONDS);
                require(Arrays.equals(pattern, back.array()), "data differ for buffer " + k);
            }
            // The heap buffer (and the heap read-back buffers) went through bounce copies; the direct ones did not.
            require(bounced(c) - bouncedBefore == 4L * 131072, "bounced bytes: " + c.transportStatistics());
            c.deregisterBuffer(own);
        });

        check("concurrent random 4 KiB writes then verified reads on 4 queues at depth 32 (4000 I/Os)", () -> {
            int ios = 4000;
            int inflight = 4 * 32;
            long span = Math.min(ns.blockCount() / 8, 16384); // 4 KiB units
            long[] stamp = new long[(int) span];
            for (String phase : new String[] {"write", "read"}) {
                ByteBuffer[] bufs = new ByteBuffer[inflight];
                for (int i = 0; i < inflight; i++) {
                    bufs[i] = c.allocateBuffer(4096);
                }
                AtomicInteger next = new AtomicInteger();
                AtomicInteger done = new AtomicInteger();
                AtomicReference<String> error = new AtomicReference<>();
                CountDownLatch finished = new CountDownLatch(1);
                long[] unitOf = new long[inflight];
                boolean write = phase.equals("write");
                IoCallback[] cb = new IoCallback[1];
                cb[0] = (ctx, status) -> {
                    int slot = (int) ctx;
                    if (status != 0) {
                        error.compareAndSet(null, phase + " failed: " + IoCallback.describe(status));
                    } else if (!write) {
                        ByteBuffer b = bufs[slot];
                        long u = unitOf[slot];
                        for (int off = 0; off < 4096; off += 8) {
                            if (b.getLong(off) != stamp[(int) u] + off) {
                                error.compareAndSet(null, "unit " + u + " read back a wrong stamp at " + off);
                                break;
                            }
                        }
                    }
                    if (done.incrementAndGet() == ios) {
                        finished.countDown();
                    } else {
                        issue(ns, bufs, unitOf, stamp, slot, next, ios, span, write, cb[0]);
                    }
                };
                for (int i = 0; i < inflight; i++) {
                    issue(ns, bufs, unitOf, stamp, i, next, ios, span, write, cb[0]);
                }
                require(finished.await(300, TimeUnit.SECONDS), phase + ": only " + done.get() + " of " + ios + " completed");
                require(error.get() == null, error.get());
            }
            System.out.println("NOTE " + c.transportStatistics());
        });

        check("orderly shutdown", () -> {
            c.close();
            require(!c.isConnected(), "still connected");
        });

        check("20 connect/disconnect cycles, then no queue pairs left on the target", () -> {
            ConnectOptions o = opts.toBuilder().ioQueues(2).queueDepth(16).build();
            for (int i = 0; i < 20; i++) {
                try (NvmeofController cc = NvmeofController.connect(id, o)) {
                    ByteBuffer b = cc.allocateBuffer(4096);
                    cc.namespaces().get(0).read(i * 8L, 4096 / bs, b).get(60, TimeUnit.SECONDS);
                }
            }
            waitFor(() -> listener.connections() == 0, 10_000);
            require(listener.connections() == 0, listener.connections() + " queue pairs left");
        });

        check("the host vanishing with reads in flight leaves the target serving new hosts", () -> {
            NvmeofController cc = NvmeofController.connect(id, opts.toBuilder().ioQueues(2).queueDepth(32).build());
            NamespaceHandle n = cc.namespaces().get(0);
            CompletableFuture<?>[] fs = new CompletableFuture<?>[32];
            for (int i = 0; i < fs.length; i++) {
                fs[i] = n.read(i * 2048L, (1 << 20) / bs, cc.allocateBuffer(1 << 20));
            }
            cc.close(); // no wait: the queue pairs go while the target is writing into them
            for (CompletableFuture<?> f : fs) {
                try {
                    f.get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException expected) {
                    // completed with ERR_CLOSED, or finished before the close: both fine
                }
            }
            waitFor(() -> listener.connections() == 0, 10_000);
            require(listener.connections() == 0, listener.connections() + " queue pairs left after the host vanished");
            try (NvmeofController again = NvmeofController.connect(id, opts)) {
                ByteBuffer b = again.allocateBuffer(65536);
                again.namespaces().get(0).read(0, 65536 / bs, b).get(60, TimeUnit.SECONDS);
            }
        });

        check("a command naming an rkey the host never registered ends that queue pair only", () -> {
            try (NvmeofController good = NvmeofController.connect(id, opts.toBuilder().ioQueues(1).build())) {
                int before = listener.connections();
                String outcome = badRkeyQueue(new java.net.InetSocketAddress(addr, target.rdmaPort(0)));
                waitFor(() -> listener.connections() == before, 15_000);
                require(listener.connections() == before, "the bad queue pair was not torn down: "
                        + listener.connections() + " queue pairs, " + before + " before");
                NamespaceHandle n = good.namespaces().get(0);
                byte[] pattern = new byte[65536];
                random.nextBytes(pattern);
                ByteBuffer b = good.allocateBuffer(pattern.length).put(pattern).flip();
                n.write(7000, pattern.length / bs, b).get(60, TimeUnit.SECONDS);
                ByteBuffer back = good.allocateBuffer(pattern.length);
                n.read(7000, pattern.length / bs, back).get(60, TimeUnit.SECONDS);
                byte[] got = new byte[pattern.length];
                back.get(got);
                require(Arrays.equals(pattern, got), "the other controller's data differ");
                System.out.println("NOTE bad rkey: " + outcome);
            }
        });

        check("an Error thrown by a completion callback on the poller fails its queue; the controller reconnects", () -> {
            ConnectOptions o = opts.toBuilder().ioQueues(1).queueDepth(16).reconnectDelay(Duration.ofMillis(200)).build();
            try (NvmeofController cc = NvmeofController.connect(id, o)) {
                NamespaceHandle n = cc.namespaces().get(0);
                ByteBuffer b = cc.allocateBuffer(4096);
                CompletableFuture<Void> other = n.read(64, 4096 / bs, cc.allocateBuffer(4096));
                n.read(0, 4096 / bs, b, (ctx, st) -> {
                    throw new OutOfMemoryError("thrown by the test's callback");
                }, 0);
                waitFor(() -> !cc.isConnected(), 10_000);
                require(cc.lastFailure() != null && cc.lastFailure().contains("OutOfMemoryError"), "failure: " + cc.lastFailure());
                waitFor(cc::isConnected, 30_000);
                require(cc.isConnected(), "not reconnected: " + cc.lastFailure());
                other.get(30, TimeUnit.SECONDS); // finished before, or sent again after the reconnect
                n.read(0, 4096 / bs, b).get(30, TimeUnit.SECONDS);
            }
        });
        check("close() while a callback blocks the poller past its join timeout returns, leaking instead of freeing", () -> {
            NvmeofController cc = NvmeofController.connect(id, opts.toBuilder().ioQueues(1).queueDepth(16).build());
            java.util.concurrent.CountDownLatch inCallback = new java.util.concurrent.CountDownLatch(1);
            cc.namespaces().get(0).read(0, 1, cc.allocateBuffer(bs), (ctx, st) -> {
                inCallback.countDown();
                try {
                    Thread.sleep(12_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, 0);
            require(inCallback.await(10, TimeUnit.SECONDS), "callback not called");
            long t0 = System.nanoTime();
            cc.close();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            require(ms < 20_000, "close took " + ms + " ms");
            Thread.sleep(3000); // the callback returns; the poller must not touch freed memory (this JVM lives on)
            System.out.println("NOTE close returned after " + ms + " ms with the poller blocked");
        });
        check("our target restarted twice under a verified write/read job: the job completes with correct data", () -> {
            restartUnderVerifiedJob(addr);
        });
        check("the target vanishing with I/O in flight fails every request promptly (no hang, no reconnect)", () -> {
            NvmeofController cc = NvmeofController.connect(id, opts.toBuilder().ioQueues(2).queueDepth(32)
                    .keepAliveTimeoutMs(2000).ctrlLossTimeout(Duration.ZERO).build());
            NamespaceHandle n = cc.namespaces().get(0);
            CompletableFuture<?>[] fs = new CompletableFuture<?>[48];
            for (int i = 0; i < fs.length; i++) {
                fs[i] = i % 2 == 0 ? n.read(i * 2048L, (1 << 20) / bs, cc.allocateBuffer(1 << 20))
                        : n.write(i * 2048L, (1 << 20) / bs, cc.allocateBuffer(1 << 20));
            }
            target.close();
            long gone = System.nanoTime();
            int ok = 0;
            int failedIo = 0;
            for (CompletableFuture<?> f : fs) {
                try {
                    f.get(90, TimeUnit.SECONDS);
                    ok++;
                } catch (java.util.concurrent.ExecutionException e) {
                    failedIo++;
                }
            }
            long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - gone);
            // Well below the 60 s command timeout: the loss is noticed from the connection, not by timing out.
            require(waitedMs < 20_000, "the last request completed " + waitedMs + " ms after the target went");
            // New I/O after the loss fails at once rather than waiting for a timeout.
            waitFor(() -> !cc.isConnected(), 30_000);
            require(!cc.isConnected(), "the controller still reports itself connected");
            System.out.println("NOTE " + ok + " I/Os finished before the target went, " + failedIo + " failed after;"
                    + " all done " + waitedMs + " ms after it went");
            cc.close();
        });
    }

    /**
     * A second target with a file-backed namespace (so its data outlives it) on port 4421: stopped and started again
     * twice under a write-then-verify job; the initiator reconnects over RDMA, sends the interrupted I/O again, and the
     * job sees no error and no wrong block.
     */
    static void restartUnderVerifiedJob(String addr) throws Exception {
        String file = "/tmp/nvmeof-restart-" + ProcessHandle.current().pid() + ".img";
        TargetConfig cfg = TargetConfig.defaults("rdma", addr, 4421, "16M", 512, file);
        java.util.concurrent.atomic.AtomicReference<NvmeTarget> t = new java.util.concurrent.atomic.AtomicReference<>(
                NvmeTarget.start(cfg));
        java.util.List<String> states = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        ConnectOptions o = ConnectOptions.builder().ioQueues(2).queueDepth(32).commandTimeout(Duration.ofSeconds(30))
                .connectTimeout(Duration.ofSeconds(5)).reconnectDelay(Duration.ofMillis(300))
                .ctrlLossTimeout(Duration.ofSeconds(60)).stateListener((c, st, why) -> states.add(st + " (" + why + ")"))
                .build();
        try (NvmeofController c = NvmeofController.connect(new TransportId("rdma", addr, 4421, NQN), o)) {
            java.util.List<String> problems = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            Thread chaos = new Thread(() -> {
                try {
                    for (int i = 0; i < 2; i++) {
                        // Each restart finds the controller connected again (a second loss during the reconnect
                        // would not count as a reconnect), then lets I/O run a while.
                        waitFor(c::isConnected, 120_000);
                        if (!c.isConnected()) {
                            problems.add("not reconnected within 120 s before restart " + (i + 1));
                            return;
                        }
                        Thread.sleep(1500);
                        t.get().close();
                        Thread.sleep(1000);
                        t.set(NvmeTarget.start(cfg));
                    }
                } catch (Exception e) {
                    problems.add("restart: " + e);
                }
            });
            chaos.start();
            io.nvmeof.conformance.VerifiedJob job = new io.nvmeof.conformance.VerifiedJob(c, c.namespaces().get(0), 8L << 20);
            job.run(chaos::isAlive, 240_000);
            chaos.join();
            require(problems.isEmpty(), problems.toString());
            require(job.problems.isEmpty(), job.problems.size() + " problems: " + job.firstProblems());
            waitFor(c::isConnected, 30_000);
            require(c.isConnected(), "not reconnected at the end: " + c.lastFailure());
            long reconnects = states.stream().filter(x -> x.startsWith("CONNECTED")).count();
            require(reconnects >= 2, "reconnected " + reconnects + " times: " + states);
            System.out.println("NOTE " + job.passes + " verified passes over 8 MiB; " + states);
        } finally {
            t.get().close();
            new java.io.File(file).delete();
        }
    }

    /**
     * A raw NVMe/RDMA admin queue (native API, no initiator library): Connect properly, then Identify with a keyed SGL
     * whose rkey was never registered. The target's RDMA WRITE must fail at our NIC, which ends this queue pair: our
     * receive is flushed or the connection drops, and no successful Identify completion ever arrives.
     */
    static String badRkeyQueue(java.net.InetSocketAddress target) throws Exception {
        try (io.nvmeof.rdma.CmEventChannel ch = io.nvmeof.rdma.CmEventChannel.create()) {
            io.nvmeof.rdma.CmId cmId = ch.createId();
            cmId.resolve(target, 5000);
            io.nvmeof.rdma.ProtectionDomain pd = cmId.device().allocateProtectionDomain();
            io.nvmeof.rdma.CompletionQueue cq = cmId.device().createCompletionQueue(64, null, 0);
            io.nvmeof.rdma.MemoryRegion mr = pd.allocateRegistered(16384, io.nvmeof.rdma.Access.LOCAL_AND_REMOTE, false);
            try {
                io.nvmeof.rdma.QueuePair qp = cmId.createQueuePair(pd, io.nvmeof.rdma.QueuePairConfig.of(cq, 16, 16));
                long base = mr.address();
                org.agrona.concurrent.UnsafeBuffer mem = new org.agrona.concurrent.UnsafeBuffer(base, 16384);
                io.nvmeof.rdma.RecvBatch recv = new io.nvmeof.rdma.RecvBatch(4);
                // Responses land in posting order: Connect in 1, Property Set in 2, Identify in 3.
                recv.add(1, base + 64, 16, mr.lkey()).add(2, base + 80, 16, mr.lkey()).add(3, base + 96, 16, mr.lkey());
                qp.postRecv(recv);
                byte[] pdata = new byte[32];
                new io.nvmeof.protocol.rdma.RdmaCmRequest().<io.nvmeof.protocol.rdma.RdmaCmRequest>wrap(
                        new org.agrona.concurrent.UnsafeBuffer(pdata), 0).recfmt(0).qid(0).hrqsize(32).hsqsize(31);
                cmId.connect(io.nvmeof.rdma.ConnectionParameters.forConnect(pdata, 16, 0));
                ch.expect(io.nvmeof.rdma.CmEventType.ESTABLISHED, cmId, 15000);

                // Fabrics Connect, its data fetched by the target from [base + 1024, +1024) under our real rkey.
                new io.nvmeof.protocol.fabrics.ConnectData().<io.nvmeof.protocol.fabrics.ConnectData>wrap(mem, 1024)
                        .hostId(new byte[16]).cntlid(0xFFFF).subnqn(NQN)
                        .hostnqn("nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000bb");
                io.nvmeof.protocol.fabrics.FabricsCommand fc = new io.nvmeof.protocol.fabrics.FabricsCommand().wrap(mem, 0);
                fc.opcode(io.nvmeof.protocol.Opcodes.FABRICS);
                fc.fctype(io.nvmeof.protocol.Opcodes.FCTYPE_CONNECT).qid(0).sqsize(31).kato(0);
                fc.cid(1).psdt(io.nvmeof.protocol.Command.PSDT_SGL);
                new io.nvmeof.protocol.SglDescriptor().<io.nvmeof.protocol.SglDescriptor>wrap(mem,
                        io.nvmeof.protocol.Command.DPTR).keyed(base + 1024, 1024, mr.rkey() & 0xFFFF_FFFFL, false);
                io.nvmeof.rdma.SendBatch send = new io.nvmeof.rdma.SendBatch(4);
                send.send(10, base, 64, mr.lkey(), io.nvmeof.rdma.SendBatch.SIGNALED);
                qp.postSend(send);
                io.nvmeof.rdma.CompletionBatch wc = new io.nvmeof.rdma.CompletionBatch(16);
                long deadline = System.currentTimeMillis() + 15000;
                boolean connected = false;
                while (!connected && System.currentTimeMillis() < deadline) {
                    int n = cq.poll(wc);
                    for (int i = 0; i < n; i++) {
                        require(wc.isSuccess(i), "work completion " + io.nvmeof.rdma.CompletionBatch.statusName(wc.status(i)));
                        if (wc.wrId(i) == 1) {
                            int status = (mem.getShort(64 + 14) & 0xFFFF) >>> 1;
                            require(status == 0, "Connect failed with status 0x" + Integer.toHexString(status));
                            connected = true;
                        }
                    }
                }
                require(connected, "no Connect response");

                // CC.EN = 1 (Property Set, no data): admin commands are refused before the controller is enabled.
                mem.setMemory(0, 64, (byte) 0);
                fc.opcode(io.nvmeof.protocol.Opcodes.FABRICS);
                fc.fctype(io.nvmeof.protocol.Opcodes.FCTYPE_PROPERTY_SET).propertySize(4)
                        .propertyOffset(io.nvmeof.protocol.regs.ControllerRegisters.CC)
                        .propertyValue(io.nvmeof.protocol.regs.ControllerRegisters.CC_ENABLE_DEFAULT);
                fc.cid(3).psdt(io.nvmeof.protocol.Command.PSDT_SGL);
                new io.nvmeof.protocol.SglDescriptor().<io.nvmeof.protocol.SglDescriptor>wrap(mem,
                        io.nvmeof.protocol.Command.DPTR).keyed(0, 0, 0, false);
                send.clear();
                send.send(12, base, 64, mr.lkey(), io.nvmeof.rdma.SendBatch.SIGNALED);
                qp.postSend(send);
                boolean enabled = false;
                deadline = System.currentTimeMillis() + 15000;
                while (!enabled && System.currentTimeMillis() < deadline) {
                    int n = cq.poll(wc);
                    for (int i = 0; i < n; i++) {
                        require(wc.isSuccess(i), "work completion " + io.nvmeof.rdma.CompletionBatch.statusName(wc.status(i)));
                        if (wc.wrId(i) == 2) {
                            int status = (mem.getShort(80 + 14) & 0xFFFF) >>> 1;
                            require(status == 0, "Property Set CC failed with status 0x" + Integer.toHexString(status));
                            enabled = true;
                        }
                    }
                }
                require(enabled, "no Property Set response");
                Thread.sleep(200); // CSTS.RDY follows CC.EN at once on our target; no need to poll it here

                // Identify into [base + 4096, +4096) under an rkey nobody registered.
                mem.setMemory(0, 64, (byte) 0);
                io.nvmeof.protocol.Command id = new io.nvmeof.protocol.Command().wrap(mem, 0);
                id.opcode(io.nvmeof.protocol.Opcodes.ADMIN_IDENTIFY).cid(2).psdt(io.nvmeof.protocol.Command.PSDT_SGL)
                        .cdw10(io.nvmeof.protocol.Opcodes.CNS_CONTROLLER);
                long bogus = (mr.rkey() ^ 0x00A5_5A00) & 0xFFFF_FFFFL;
                new io.nvmeof.protocol.SglDescriptor().<io.nvmeof.protocol.SglDescriptor>wrap(mem,
                        io.nvmeof.protocol.Command.DPTR).keyed(base + 4096, 4096, bogus, false);
                send.clear();
                send.send(11, base, 64, mr.lkey(), io.nvmeof.rdma.SendBatch.SIGNALED);
                qp.postSend(send);
                deadline = System.currentTimeMillis() + 20000;
                while (System.currentTimeMillis() < deadline) {
                    int n = cq.poll(wc);
                    for (int i = 0; i < n; i++) {
                        if (!wc.isSuccess(i)) {
                            return "our queue pair saw " + io.nvmeof.rdma.CompletionBatch.statusName(wc.status(i))
                                    + " on work request " + wc.wrId(i);
                        }
                        if (wc.wrId(i) == 3) {
                            int status = (mem.getShort(96 + 14) & 0xFFFF) >>> 1;
                            throw new AssertionError("Identify with an unregistered rkey was answered (status 0x"
                                    + Integer.toHexString(status) + "): the target cannot have written its data");
                        }
                    }
                    io.nvmeof.rdma.CmEvent ev = ch.poll(10);
                    if (ev != null && ev.type() == io.nvmeof.rdma.CmEventType.DISCONNECTED) {
                        cmId.disconnect();
                        return "the target disconnected the queue pair";
                    }
                }
                throw new AssertionError("neither an error completion nor a disconnect within 20 s");
            } finally {
                cmId.close();
                cq.close();
                mr.close();
                pd.close();
            }
        }
    }

    static void issue(NamespaceHandle ns, ByteBuffer[] bufs, long[] unitOf, long[] stamp, int slot, AtomicInteger next,
                      int ios, long span, boolean write, IoCallback cb) {
        int n = next.getAndIncrement();
        if (n >= ios) {
            return;
        }
        long unit = write ? n % span : (n * 7919L) % Math.min(span, ios);
        unitOf[slot] = unit;
        int blocks = 4096 / ns.blockSize();
        ByteBuffer b = bufs[slot];
        if (write) {
            stamp[(int) unit] = unit << 20 | n;
            for (int off = 0; off < 4096; off += 8) {
                b.putLong(off, stamp[(int) unit] + off);
            }
            ns.write(unit * blocks, blocks, b, cb, slot);
        } else {
            ns.read(unit * blocks, blocks, b, cb, slot);
        }
    }

    static long bounced(NvmeofController c) {
        String s = c.transportStatistics();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+) bounced").matcher(s);
        require(m.find(), "no bounced figure in '" + s + "'");
        return Long.parseLong(m.group(1));
    }

    static String describe(List<long[]> ops) {
        StringBuilder b = new StringBuilder("[");
        for (long[] o : ops) {
            b.append(String.format(" 0x%x+%d", o[0], o[1]));
        }
        return b.append(" ]").toString();
    }

    static void waitFor(java.util.function.BooleanSupplier cond, long ms) throws InterruptedException {
        long end = System.currentTimeMillis() + ms;
        while (!cond.getAsBoolean() && System.currentTimeMillis() < end) {
            Thread.sleep(50);
        }
    }
}

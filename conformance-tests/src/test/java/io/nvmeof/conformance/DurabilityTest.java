package io.nvmeof.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.nvmeof.initiator.ConnectOptions;
import io.nvmeof.initiator.NamespaceHandle;
import io.nvmeof.initiator.NvmeofController;
import io.nvmeof.initiator.TransportId;
import io.nvmeof.protocol.Opcodes;
import io.nvmeof.protocol.identify.IdentifyController;
import io.nvmeof.tgt.NvmeTarget;
import io.nvmeof.tgt.backend.BlockBackend;
import io.nvmeof.tgt.backend.RamBackend;
import io.nvmeof.tgt.config.TargetConfig;
import io.nvmeof.tgt.config.TargetConfig.ListenerConfig;
import io.nvmeof.tgt.config.TargetConfig.NamespaceConfig;
import io.nvmeof.tgt.config.TargetConfig.SubsystemConfig;
import io.nvmeof.tgt.core.Namespace;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the target promises about durability: a write with FUA completes only after the backend's flush (fdatasync for
 * files) has returned, and so does every write while the host has turned the volatile write cache off; Identify says
 * there is such a cache, and Get Features says whether it is on.
 */
class DurabilityTest {
    private static final String NQN = "nqn.2026-12.io.nvmeof:durability";
    private static final long NSID = 2;

    /** A backend that may block (as files do) whose flushes can be held at a gate; records what reached it, in order. */
    static final class RecordingBackend implements BlockBackend {
        final RamBackend ram = new RamBackend(16 << 20);
        final List<String> events = new CopyOnWriteArrayList<>();
        volatile CountDownLatch flushGate;
        final CountDownLatch flushEntered = new CountDownLatch(1);

        @Override public long sizeBytes() { return ram.sizeBytes(); }
        @Override public void read(long offset, ByteBuffer dst) throws IOException { ram.read(offset, dst); }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            int n = src.remaining();
            ram.write(offset, src);
            events.add("write " + n);
        }

        @Override
        public void flush() throws IOException {
            flushEntered.countDown();
            CountDownLatch gate = flushGate;
            try {
                if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                    throw new IOException("flush gate never opened");
                }
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            events.add("flush");
        }

        @Override public void writeZeroes(long offset, long length) { ram.writeZeroes(offset, length); }
        @Override public void deallocate(long offset, long length) { ram.deallocate(offset, length); }
        @Override public boolean mayBlock(long bytes) { return true; }
        @Override public String describe() { return "recording"; }
        @Override public void close() { ram.close(); }

        /** Bytes that reached the backend after its last flush: what a power loss could still take. */
        long bytesWrittenSinceLastFlush() {
            long n = 0;
            for (String e : events) {
                n = e.equals("flush") ? 0 : n + Long.parseLong(e.substring("write ".length()));
            }
            return n;
        }
    }

    private NvmeTarget target;
    private RecordingBackend backend;
    private NvmeofController host;
    private NamespaceHandle ns;

    @BeforeEach
    void start() throws Exception {
        // One poll group serves both I/O queues: a read that completes while a flush waits shows the flush is not on it.
        target = NvmeTarget.start(new TargetConfig(1, 2, 128, 1 << 20,
                List.of(new ListenerConfig(1, "tcp", "127.0.0.1", 0, 8192, 32 * 1024, null)),
                List.of(new SubsystemConfig(NQN, null, null, 16, true, null,
                        List.of(new NamespaceConfig(1L, "ram", "1MiB", 512, null, null))))));
        backend = new RecordingBackend();
        target.core().subsystem(NQN).addNamespace(new Namespace(NSID, backend, 512, UUID.randomUUID()));
        host = NvmeofController.connect(new TransportId("tcp", "127.0.0.1", target.tcpPort(0), NQN),
                ConnectOptions.builder().ioQueues(2).build());
        ns = host.namespace(NSID);
    }

    @AfterEach
    void stop() {
        CountDownLatch gate = backend.flushGate;
        if (gate != null) {
            gate.countDown();
        }
        host.close();
        target.close();
    }

    private static ByteBuffer pattern(int bytes, int seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes);
        for (int i = 0; i < bytes; i++) {
            b.put(i, (byte) (i * 31 + seed));
        }
        return b;
    }

    /** 4 KiB comes in the capsule; 128 KiB by R2T, in four H2CData PDUs stored into the namespace as they arrive. */
    @ParameterizedTest
    @ValueSource(ints = {4096, 128 * 1024})
    void aFuaWriteCompletesOnlyAfterItsFlush(int bytes) throws Exception {
        backend.flushGate = new CountDownLatch(1);
        CompletableFuture<Void> fua = ns.writeFua(64, bytes / 512, pattern(bytes, 7));
        assertTrue(backend.flushEntered.await(10, TimeUnit.SECONDS), "the FUA write flushes");
        // The poll group goes on serving while the flush waits.
        ByteBuffer got = ByteBuffer.allocateDirect(bytes);
        ns.read(64, bytes / 512, got).get(10, TimeUnit.SECONDS);
        assertEquals(pattern(bytes, 7), got, "the data was stored before the flush began");
        Thread.sleep(200);
        assertFalse(fua.isDone(), "a FUA write completes only once its data is durable");
        backend.flushGate.countDown();
        fua.get(10, TimeUnit.SECONDS);
        assertEquals("flush", backend.events.get(backend.events.size() - 1));
        assertEquals(0, backend.bytesWrittenSinceLastFlush());

        ns.write(1024, bytes / 512, pattern(bytes, 9)).get(10, TimeUnit.SECONDS);
        assertEquals(bytes, backend.bytesWrittenSinceLastFlush(), "a plain write does not flush");
        ns.flush().get(10, TimeUnit.SECONDS);
        assertEquals(0, backend.bytesWrittenSinceLastFlush(), "Flush makes the earlier write durable");
    }

    @Test
    void withTheWriteCacheOffEveryWriteIsDurableWhenItCompletes() throws Exception {
        byte[] id = host.identify(1, 0);
        assertEquals(IdentifyController.VWC_PRESENT | IdentifyController.VWC_FLUSH_BROADCAST,
                id[IdentifyController.VWC] & 0xFF, "a volatile write cache, and Flush of NSID FFFFFFFFh");
        assertEquals(1, host.getFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE), "the cache starts on");

        ns.write(0, 8, pattern(4096, 1)).get(10, TimeUnit.SECONDS);
        assertEquals(4096, backend.bytesWrittenSinceLastFlush());

        host.setFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE, 0);
        assertEquals(0, host.getFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE));
        backend.flushGate = new CountDownLatch(1);
        CompletableFuture<Void> w = ns.write(8, 256, pattern(128 * 1024, 2));
        assertTrue(backend.flushEntered.await(10, TimeUnit.SECONDS), "with the cache off a plain write flushes");
        Thread.sleep(200);
        assertFalse(w.isDone(), "and completes only after the flush");
        backend.flushGate.countDown();
        w.get(10, TimeUnit.SECONDS);
        assertEquals(0, backend.bytesWrittenSinceLastFlush());

        host.setFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE, 1);
        assertEquals(1, host.getFeature(Opcodes.FEAT_VOLATILE_WRITE_CACHE));
        ns.write(0, 8, pattern(4096, 3)).get(10, TimeUnit.SECONDS);
        assertEquals(4096, backend.bytesWrittenSinceLastFlush(), "turned back on, writes are cached again");
    }
}

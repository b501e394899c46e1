package io.nvmeof.conformance;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Counts Netty buffers that were garbage collected without being released, in the target and in the initiator.
 * Installed before any test class loads (a JUnit launcher session listener), so every buffer of the run is tracked at
 * the paranoid level the build sets.
 */
public final class LeakTracker implements LauncherSessionListener {
    static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            @SuppressWarnings("deprecation")
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval, long maxActive) {
                return new ResourceLeakDetector<T>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.add(resourceType + " leaked:" + records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.add(resourceType + " leaked");
                    }
                };
            }
        });
    }

    /** Collects garbage and lets the detector report; returns what leaked so far. */
    static List<String> collect() throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
            // Leaks are reported when buffers are allocated; allocate a few to drain the detector's queue.
            for (int k = 0; k < 64; k++) {
                ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(64);
                b.release();
            }
        }
        return List.copyOf(LEAKS);
    }
}

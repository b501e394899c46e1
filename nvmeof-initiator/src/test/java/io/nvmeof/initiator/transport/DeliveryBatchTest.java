package io.nvmeof.initiator.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.nvmeof.initiator.BatchedIoCallback;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeliveryBatchTest {
    /** Records the order of what it is told. */
    static final class Recorder implements BatchedIoCallback {
        final List<String> log;
        final String name;

        Recorder(List<String> log, String name) {
            this.log = log;
            this.name = name;
        }

        @Override
        public void onComplete(long context, int status) {
            log.add(name + ":" + context);
        }

        @Override
        public void onBatchEnd() {
            log.add(name + ":end");
        }
    }

    private static void deliver(DeliveryBatch batch, Recorder cb, long context) {
        cb.onComplete(context, 0);
        batch.delivered(cb);
    }

    @Test
    void insideABatchEachCallbackIsToldOnceAtItsEnd() {
        List<String> log = new ArrayList<>();
        Recorder a = new Recorder(log, "a");
        Recorder b = new Recorder(log, "b");
        DeliveryBatch batch = new DeliveryBatch();
        batch.begin();
        deliver(batch, a, 1);
        deliver(batch, b, 2);
        deliver(batch, a, 3);
        assertEquals(List.of("a:1", "b:2", "a:3"), log, "nobody is told before the batch ends");
        batch.end();
        assertEquals(List.of("a:1", "b:2", "a:3", "a:end", "b:end"), log);
        batch.end();
        assertEquals(5, log.size(), "a second end tells nobody again");
    }

    @Test
    void outsideABatchTheCallbackIsToldAtOnce() {
        List<String> log = new ArrayList<>();
        Recorder a = new Recorder(log, "a");
        DeliveryBatch batch = new DeliveryBatch();
        deliver(batch, a, 1);
        assertEquals(List.of("a:1", "a:end"), log);
        batch.begin();
        batch.end();
        deliver(batch, a, 2);
        assertEquals(List.of("a:1", "a:end", "a:2", "a:end"), log, "after end() delivery is at once again");
    }

    @Test
    void aDeliveryOnAnotherThreadDuringABatchIsToldAtOnce() throws Exception {
        List<String> log = java.util.Collections.synchronizedList(new ArrayList<>());
        Recorder a = new Recorder(log, "a");
        DeliveryBatch batch = new DeliveryBatch();
        batch.begin();
        Thread late = new Thread(() -> deliver(batch, a, 7));
        late.start();
        late.join();
        assertEquals(List.of("a:7", "a:end"), log);
        batch.end();
        assertEquals(2, log.size());
    }

    @Test
    void callbacksBeyondTheCapacityAreToldAfterEachCompletion() {
        List<String> log = new ArrayList<>();
        Recorder[] cbs = new Recorder[DeliveryBatch.CAPACITY + 1];
        for (int i = 0; i < cbs.length; i++) {
            cbs[i] = new Recorder(log, "c" + i);
        }
        DeliveryBatch batch = new DeliveryBatch();
        batch.begin();
        for (int i = 0; i < cbs.length; i++) {
            deliver(batch, cbs[i], i);
        }
        Recorder extra = cbs[DeliveryBatch.CAPACITY];
        deliver(batch, extra, 99);
        String x = extra.name;
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < DeliveryBatch.CAPACITY; i++) {
            expected.add("c" + i + ":" + i);
        }
        expected.addAll(List.of(x + ":" + DeliveryBatch.CAPACITY, x + ":end", x + ":99", x + ":end"));
        assertEquals(expected, log);
        batch.end();
        for (int i = 0; i < DeliveryBatch.CAPACITY; i++) {
            expected.add("c" + i + ":end");
        }
        assertEquals(expected, log);
    }

    @Test
    void aThrowingOnBatchEndDoesNotKeepTheOthersFromBeingTold() {
        List<String> log = new ArrayList<>();
        Recorder a = new Recorder(log, "a");
        BatchedIoCallback bad = new BatchedIoCallback() {
            @Override
            public void onComplete(long context, int status) {
            }

            @Override
            public void onBatchEnd() {
                throw new IllegalStateException("test: a callback that throws");
            }
        };
        DeliveryBatch batch = new DeliveryBatch();
        batch.begin();
        batch.delivered(bad);
        deliver(batch, a, 1);
        batch.end();
        assertEquals(List.of("a:1", "a:end"), log);
    }
}

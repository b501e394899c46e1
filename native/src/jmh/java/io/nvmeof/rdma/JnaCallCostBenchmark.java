package io.nvmeof.rdma;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What one JNA direct-mapped call costs, against a plain (not inlined) Java call, and what filling a batch of
 * descriptors costs in Java. This is the fixed price the data path pays once per batch (post or poll), which is why
 * it posts and polls in batches. No device needed: nvr_noop and nvr_add are trivial helper functions.
 *
 * <pre>./mvnw -o -q -pl native -Pjmh package -DskipTests
 * java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -jar native/target/benchmarks.jar -f 1 -wi 3 -i 5</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED")
public class JnaCallCostBenchmark {
    private final SendBatch batch = new SendBatch(16);
    private long a = 5_000_000_000L;
    private long b = 7;

    @Setup(Level.Trial)
    public void loadHelper() throws RdmaException {
        RdmaLibrary.requireHelper();
    }

    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static int javaNoop() {
        return 0;
    }

    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static long javaAdd(long x, long y) {
        return x + y;
    }

    /** A plain Java static call the JIT may not inline: the baseline. */
    @Benchmark
    public int javaCallNoArgs() {
        return javaNoop();
    }

    @Benchmark
    public long javaCallTwoLongs() {
        return javaAdd(a, b);
    }

    /** One JNA direct-mapped call to {@code int nvr_noop(void)}. */
    @Benchmark
    public int jnaDirectCallNoArgs() {
        return NvrNative.nvr_noop();
    }

    /** One JNA direct-mapped call with two 64-bit arguments (the shape of nvr_post_send / nvr_poll_cq). */
    @Benchmark
    public long jnaDirectCallTwoLongs() {
        return NvrNative.nvr_add(a, b);
    }

    /** Java side of a post: writing 16 send descriptors into the batch's direct buffer (no native call). */
    @Benchmark
    public int fillSendBatchOf16() {
        SendBatch s = batch;
        s.clear();
        for (int i = 0; i < 16; i++) {
            s.rdmaWrite(i, 0x10000L + i * 4096L, 4096, 0x11, 0x7f0000000000L + i * 4096L, 0x22,
                    i == 15 ? SendBatch.SIGNALED : 0);
        }
        return s.size();
    }
}

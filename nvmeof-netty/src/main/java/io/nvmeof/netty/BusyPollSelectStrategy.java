package io.nvmeof.netty;

import io.netty.channel.SelectStrategy;
import io.netty.util.IntSupplier;
import org.agrona.concurrent.IdleStrategy;

/**
 * A select strategy for Netty's NIO loop that busy-polls, as SPDK's poll groups do: while the loop has had work
 * (ready sockets or tasks) within the last {@code spinNanos}, it asks the selector without blocking ({@code selectNow},
 * one {@code epoll_wait} with timeout 0) and idles between tries with an Agrona {@link IdleStrategy}. Once it has been
 * idle that long it blocks in {@code select()} as Netty's default strategy does, so an idle process does not burn a
 * core, and the first event after that pays one wake-up again.
 *
 * <p>Why: at queue depth 1 a blocking loop sleeps between every command and its answer, and the wake-up (scheduler,
 * interrupt, cache refill) costs more than the protocol work. Spinning keeps the thread on its core and hot.
 *
 * <p>Used only by its event loop's thread (one instance per loop), so its state is plain fields.
 */
final class BusyPollSelectStrategy implements SelectStrategy {
    private final long spinNanos;
    private final IdleStrategy idle;
    private long lastWork = System.nanoTime();
    /** The last call handed the loop work: it is handling it until the next call, which is when the wait starts. */
    private boolean handling;

    BusyPollSelectStrategy(long spinNanos, IdleStrategy idle) {
        if (spinNanos <= 0) {
            throw new IllegalArgumentException("busy-poll time must be positive, not " + spinNanos + " ns");
        }
        this.spinNanos = spinNanos;
        this.idle = idle;
    }

    @Override
    public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
        long now = System.nanoTime();
        if (handling) {
            // Counted from the end of the work, not its start: a loop that spent most of the busy-poll time on a
            // batch (a target answering 32 commands) must still wait the whole time for the next one.
            lastWork = now;
        }
        int ready = selectNow.get();
        handling = ready > 0 || hasTasks;
        if (handling) {
            idle.reset();
            return ready; // the loop handles the ready keys, runs its tasks and comes back here
        }
        if (now - lastWork < spinNanos) {
            idle.idle();
            return ready; // 0: nothing to handle; the loop runs any task due and asks again
        }
        return SELECT;
    }
}

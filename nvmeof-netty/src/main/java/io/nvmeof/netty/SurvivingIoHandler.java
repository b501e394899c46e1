package io.nvmeof.netty;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.util.internal.logging.InternalLogger;
import io.netty.util.internal.logging.InternalLoggerFactory;

/**
 * An event loop's I/O handling that a Throwable does not end. Netty's NIO loop rethrows an Error out of its I/O
 * handling, which ends the loop's thread for good: every channel registered with it goes unserved while the process
 * runs on (an OutOfMemoryError while another thread exhausted the heap was enough). Here the Error is logged and the
 * loop goes on with its next iteration; keys it had not handled are selected again. Tasks need no such guard: Netty
 * runs each one inside its own catch.
 */
final class SurvivingIoHandler implements IoHandler {
    private static final InternalLogger LOG = InternalLoggerFactory.getInstance(SurvivingIoHandler.class);
    /** Errors this close together are counted, not each logged, and the loop pauses before retrying. */
    private static final long REPEAT_NANOS = 1_000_000_000L;
    private static final long PAUSE_MILLIS = 100;

    private final IoHandler delegate;
    private long lastError = System.nanoTime() - 2 * REPEAT_NANOS;
    private long unreported;

    private SurvivingIoHandler(IoHandler delegate) {
        this.delegate = delegate;
    }

    static IoHandlerFactory factory(IoHandlerFactory of) {
        return new IoHandlerFactory() {
            @Override
            public IoHandler newHandler(io.netty.util.concurrent.ThreadAwareExecutor executor) {
                return new SurvivingIoHandler(of.newHandler(executor));
            }

            @Override
            public boolean isChangingThreadSupported() {
                return of.isChangingThreadSupported();
            }
        };
    }

    @Override
    public int run(IoHandlerContext context) {
        try {
            return delegate.run(context);
        } catch (Throwable t) {
            survive(t);
            return 0;
        }
    }

    private void survive(Throwable t) {
        long now = System.nanoTime();
        boolean repeated = now - lastError < REPEAT_NANOS;
        lastError = now;
        try {
            if (repeated) {
                unreported++;
                // Over and over (memory still short): give the cause a moment rather than spin on it.
                Thread.sleep(PAUSE_MILLIS);
            } else {
                LOG.error("event loop {}: its I/O handling failed ({} more since the last report); the loop goes on",
                        Thread.currentThread().getName(), unreported, t);
                unreported = 0;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable ignored) {
            // Logging itself failed (no memory for the message): the loop going on matters more.
        }
    }

    @Override
    public void initialize() {
        delegate.initialize();
    }

    @Override
    public void prepareToDestroy() {
        delegate.prepareToDestroy();
    }

    @Override
    public void destroy() {
        delegate.destroy();
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception {
        return delegate.register(handle);
    }

    @Override
    public void wakeup() {
        delegate.wakeup();
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return delegate.isCompatible(handleType);
    }
}

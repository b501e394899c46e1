package io.nvmeof.initiator.transport;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The thread that completes requests when their queue's own I/O thread is gone (the controller was closed and its
 * event loops stopped) or must not be borrowed: a submission refused at once is never completed on the submitting
 * thread, so a callback that submits again cannot recurse into itself. One daemon thread for the process, started on
 * first use and ended after a minute idle.
 */
public final class LateCompletions {
    private static final ExecutorService EXECUTOR;

    static {
        ThreadPoolExecutor e = new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "nvmeof-late-completions");
            t.setDaemon(true);
            return t;
        });
        e.allowCoreThreadTimeOut(true);
        EXECUTOR = e;
    }

    private LateCompletions() {
    }

    public static void execute(Runnable task) {
        EXECUTOR.execute(task);
    }
}

package io.taishan.kv.client;

import io.grpc.Context;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Runs calls of this client on the caller's thread under a deadline shorter than their own: every
 * call started inside ends, with a {@link KvException} for DEADLINE_EXCEEDED, once {@code timeout}
 * has passed, whatever the client's request timeout and retries allow.
 *
 * <p>Why: a caller that must not wait for a hung server for long, but cannot interrupt the call
 * either (the Flink backend repeats a read an interrupt cancelled, and gives the repeat only this
 * bound). Cost: one gRPC {@link Context} and one scheduled task per use, so it is for the rare
 * path, not for every call.
 */
public final class CallDeadline {
    private CallDeadline() {}

    public static <T> T within(Duration timeout, Supplier<T> calls) {
        Context.CancellableContext context =
                Context.current()
                        .withDeadlineAfter(
                                timeout.toNanos(), TimeUnit.NANOSECONDS, Timer.INSTANCE.executor);
        Context previous = context.attach();
        try {
            return calls.get();
        } finally {
            context.detach(previous);
            context.cancel(null);
        }
    }

    /** One daemon thread that cancels expired contexts, created on first use. */
    private enum Timer {
        INSTANCE;

        final ScheduledExecutorService executor;

        Timer() {
            ScheduledThreadPoolExecutor timer =
                    new ScheduledThreadPoolExecutor(
                            1, ClientThreads.daemon("taishan-kv-call-deadline"));
            // Contexts that end before their deadline cancel their task: drop it at once.
            timer.setRemoveOnCancelPolicy(true);
            executor = timer;
        }
    }
}

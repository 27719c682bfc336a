package io.taishan.backend.remote;

import io.taishan.kv.client.CallDeadline;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvException;
import java.time.Duration;
import java.util.function.Supplier;
import org.apache.flink.util.ExceptionUtils;

/**
 * Remote reads that an interrupt does not break, as RocksDB's JNI reads are not broken by one:
 * Flink's code (and its test suite) interrupts threads that read state, and expects the read to
 * finish. The call is repeated if an interrupt cancelled it, and the interrupt flag is restored
 * afterwards.
 *
 * <p>The repeat must end within {@link #REPEAT_BOUND}: a live server answers in well under a
 * millisecond, so no read from a healthy server is ever broken, while a hung server cannot hold a
 * task that Flink cancels (it interrupts the task thread once, then only every 30 s) for longer
 * than that bound. Without it, the repeated read waited for the client's deadline and retries, and
 * each later interrupt started them again: minutes.
 */
public final class Uninterruptibly {
    static final Duration REPEAT_BOUND = Duration.ofSeconds(1);

    private Uninterruptibly() {}

    public static <T> T call(Supplier<T> remoteCall) {
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try {
                    return interrupted
                            ? CallDeadline.within(REPEAT_BOUND, remoteCall)
                            : remoteCall.get();
                } catch (KvException e) {
                    boolean cancelledByInterrupt =
                            Thread.interrupted()
                                    || ExceptionUtils.findThrowable(e, InterruptedException.class)
                                            .isPresent();
                    if (!cancelledByInterrupt) {
                        throw e;
                    }
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A scan whose page fetches (in {@code hasNext}) are uninterruptible too. */
    public static <T> CloseableIterator<T> iterate(Supplier<CloseableIterator<T>> openScan) {
        CloseableIterator<T> scan = call(openScan);
        return new CloseableIterator<>() {
            @Override
            public boolean hasNext() {
                return call(scan::hasNext);
            }

            @Override
            public T next() {
                return call(scan::next);
            }

            @Override
            public void close() {
                scan.close();
            }
        };
    }
}

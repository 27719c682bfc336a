package io.taishan.backend.remote;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvException;
import java.util.function.Supplier;
import org.apache.flink.util.ExceptionUtils;

/**
 * Remote reads that an interrupt does not break, as RocksDB's JNI reads are not broken by one:
 * Flink's code (and its test suite) interrupts threads that read state, and expects the read to
 * finish. The call is repeated if an interrupt cancelled it, and the interrupt flag is restored
 * afterwards. Each call is still bounded by the client's deadline.
 */
public final class Uninterruptibly {
    private Uninterruptibly() {}

    public static <T> T call(Supplier<T> remoteCall) {
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try {
                    return remoteCall.get();
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

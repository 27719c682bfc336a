package io.taishan.backend.write;

import java.io.Serializable;
import java.time.Duration;

/**
 * When a subtask's {@link WriteBatchQueue} sends a batch, and how much memory it may hold.
 *
 * @param flushBytes a batch is sent once its pending ops reach this estimated size
 * @param flushCount a batch is sent once it holds this many ops
 * @param flushInterval pending ops are sent at least this often
 * @param maxBytes pending plus in-flight ops never hold more; the writer waits instead
 */
public record WriteQueueConfig(
        long flushBytes, int flushCount, Duration flushInterval, long maxBytes)
        implements Serializable {
    public WriteQueueConfig {
        if (flushBytes <= 0 || flushCount <= 0) {
            throw new IllegalArgumentException(
                    "write queue flush thresholds must be > 0: " + flushBytes + ", " + flushCount);
        }
        if (flushInterval.isNegative() || flushInterval.isZero()) {
            throw new IllegalArgumentException(
                    "write queue flush interval must be > 0: " + flushInterval);
        }
        if (maxBytes < 2 * flushBytes) {
            throw new IllegalArgumentException(
                    "taishan.write-queue.max-bytes ("
                            + maxBytes
                            + ") must be at least twice taishan.write-queue.flush-bytes ("
                            + flushBytes
                            + ")");
        }
    }
}

package io.taishan.dist.job;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.api.common.functions.MapFunction;

/**
 * Holds each record for {@code 1 / recordsPerSecond} until the release file exists, then lets the
 * rest through at full speed. Chained to the source, it paces the source: a test has all the time
 * it needs to kill processes mid-job, then ends the job quickly. Timing only, never content.
 */
final class Pacer implements MapFunction<Long, Long> {
    private static final long serialVersionUID = 1L;

    private static final long RELEASE_CHECK_NANOS = 200_000_000;

    private final long pauseMillis;
    private final String releaseFile;
    private transient boolean released;
    private transient long releaseCheckedAt;

    Pacer(double recordsPerSecond, String releaseFile) {
        this.pauseMillis = Math.max(1, (long) (1000 / recordsPerSecond));
        this.releaseFile = releaseFile;
    }

    @Override
    public Long map(Long index) throws InterruptedException {
        if (!released) {
            long now = System.nanoTime();
            if (now - releaseCheckedAt > RELEASE_CHECK_NANOS) {
                releaseCheckedAt = now;
                released = Files.exists(Path.of(releaseFile));
            }
            if (!released) {
                Thread.sleep(pauseMillis);
            }
        }
        return index;
    }
}

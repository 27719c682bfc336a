package io.taishan.it.sql;

import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.types.Row;

/**
 * Emits {@link IdleKeysSchedule}'s rounds at their wall-clock times (processing-time TTL is wall
 * time), from when the test releases it ({@link SqlResults#release}), then ends. Not checkpointed:
 * the scenario has no failover.
 */
@SuppressWarnings("deprecation")
final class ScheduledRowsSource implements SourceFunction<Row> {
    private static final long serialVersionUID = 1L;

    private volatile boolean running = true;

    @Override
    public void run(SourceContext<Row> ctx) throws Exception {
        // Processing-time TTL starts when an operator handles a row: rows sent before every
        // operator is up would wait in buffers and get later timestamps on a slower start.
        while (!SqlResults.released() && running) {
            Thread.sleep(10);
        }
        long start = System.currentTimeMillis();
        for (int round = 0; round < IdleKeysSchedule.ROUNDS && running; round++) {
            long due = start + round * IdleKeysSchedule.ROUND_MILLIS;
            long wait = due - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait);
            }
            synchronized (ctx.getCheckpointLock()) {
                for (Row row : IdleKeysSchedule.round(round)) {
                    ctx.collect(row);
                }
            }
            SqlResults.roundEmitted(round);
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}

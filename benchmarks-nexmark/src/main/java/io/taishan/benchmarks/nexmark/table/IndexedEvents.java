package io.taishan.benchmarks.nexmark.table;

import io.taishan.benchmarks.nexmark.NexmarkAccumulators;
import io.taishan.benchmarks.nexmark.generator.NexmarkGenerator;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMinimum;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;

/**
 * Slot {@code n} of the sequence to the event at index {@code (n % stride) * parallelism + n /
 * stride}, or to nothing past the last event (see {@link NexmarkTableSource}). Counts the events
 * made and notes when the first one was, for the run's throughput.
 */
final class IndexedEvents extends RichFlatMapFunction<Long, RowData> {
    private static final long serialVersionUID = 1L;

    private final NexmarkGenerator generator;
    private final long stride;
    private final int parallelism;
    private final boolean startGate;
    private transient LongCounter events;
    private transient LongMinimum firstEventMillis;
    private transient boolean started;

    IndexedEvents(NexmarkGenerator generator, long stride, int parallelism, boolean startGate) {
        this.generator = generator;
        this.stride = stride;
        this.parallelism = parallelism;
        this.startGate = startGate;
    }

    @Override
    public void open(OpenContext openContext) {
        events = new LongCounter();
        firstEventMillis = new LongMinimum();
        getRuntimeContext().addAccumulator(NexmarkAccumulators.EVENTS, events);
        getRuntimeContext()
                .addAccumulator(NexmarkAccumulators.FIRST_EVENT_MILLIS, firstEventMillis);
    }

    @Override
    public void flatMap(Long slot, Collector<RowData> out) throws InterruptedException {
        long index = (slot % stride) * parallelism + slot / stride;
        if (index >= generator.config().maxEvents) {
            return;
        }
        if (!started) {
            started = true;
            if (startGate) {
                StartGate.await();
            }
            firstEventMillis.add(System.currentTimeMillis());
        }
        out.collect(EventRows.toRow(generator.event(index)));
        events.add(1L);
        HalfwayMark.eventMade();
    }
}

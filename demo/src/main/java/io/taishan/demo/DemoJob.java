package io.taishan.demo;

import javax.annotation.Nullable;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The demo's pipeline: readings from a bounded generator, keyed by sensor into {@link SensorStats},
 * reports into {@link TotalsSink}. Stable uids, so every run restores any other run's checkpoint
 * whatever its parallelism or pace.
 */
final class DemoJob {
    static final String STATS_OPERATOR = "sensor-stats";

    /**
     * The source's parallelism, fixed: the generator splits its input by the parallelism of its
     * first run, so a fixed one keeps every split busy whatever the keyed operator's parallelism.
     */
    static final int SOURCE_PARALLELISM = 4;

    private DemoJob() {}

    /**
     * @param recordsPerSecond the source's total pace, or {@code <= 0} for as fast as it goes
     * @param restorePath a retained checkpoint to start from, or {@code null} for a fresh start
     */
    static JobGraph jobGraph(
            Configuration config,
            String runName,
            SensorInput input,
            int parallelism,
            double recordsPerSecond,
            @Nullable String restorePath) {
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(config);
        env.setParallelism(parallelism);
        GeneratorFunction<Long, Reading> readings = input::reading;
        DataGeneratorSource<Reading> source =
                new DataGeneratorSource<>(
                        readings,
                        input.totalReadings(),
                        recordsPerSecond > 0
                                ? RateLimiterStrategy.perSecond(recordsPerSecond)
                                : RateLimiterStrategy.noOp(),
                        TypeInformation.of(Reading.class));
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "readings")
                .setParallelism(SOURCE_PARALLELISM)
                .uid("readings")
                .keyBy(reading -> reading.sensor, Types.LONG)
                .process(new SensorStats(runName), TypeInformation.of(SensorTotals.class))
                .uid(STATS_OPERATOR)
                .name(STATS_OPERATOR)
                .sinkTo(new TotalsSink(runName))
                .uid("reports")
                .name("reports");
        JobGraph graph = env.getStreamGraph().getJobGraph();
        graph.setSavepointRestoreSettings(
                restorePath == null
                        ? SavepointRestoreSettings.none()
                        : SavepointRestoreSettings.forPath(restorePath, false));
        return graph;
    }
}

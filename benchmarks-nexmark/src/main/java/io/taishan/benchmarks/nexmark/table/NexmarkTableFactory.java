package io.taishan.benchmarks.nexmark.table;

import io.taishan.benchmarks.nexmark.generator.GeneratorConfig;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

/**
 * The {@code 'connector' = 'nexmark'} of Nexmark's {@code ddl_gen.sql}, with the options that file
 * sets ({@code events.num}, {@code first-event.rate}, {@code next-event.rate} and the three
 * proportions) and three of ours: {@code seed}, {@code base-time} (ms since the epoch of the first
 * event) and {@code start-gate} (hold the first event until {@link StartGate#open}). The rate is
 * events per second of event time; the source emits unthrottled, as nexmark's does by default.
 */
public final class NexmarkTableFactory implements DynamicTableSourceFactory {
    public static final String IDENTIFIER = "nexmark";

    static final ConfigOption<Long> EVENTS =
            ConfigOptions.key("events.num").longType().noDefaultValue();
    static final ConfigOption<Double> FIRST_EVENT_RATE =
            ConfigOptions.key("first-event.rate").doubleType().defaultValue(10_000.0);
    static final ConfigOption<Double> NEXT_EVENT_RATE =
            ConfigOptions.key("next-event.rate").doubleType().defaultValue(10_000.0);
    static final ConfigOption<Integer> PERSON_PROPORTION =
            ConfigOptions.key("person.proportion").intType().defaultValue(1);
    static final ConfigOption<Integer> AUCTION_PROPORTION =
            ConfigOptions.key("auction.proportion").intType().defaultValue(3);
    static final ConfigOption<Integer> BID_PROPORTION =
            ConfigOptions.key("bid.proportion").intType().defaultValue(46);
    static final ConfigOption<Long> SEED = ConfigOptions.key("seed").longType().defaultValue(0L);
    static final ConfigOption<Long> BASE_TIME =
            ConfigOptions.key("base-time").longType().defaultValue(0L);
    static final ConfigOption<Boolean> START_GATE =
            ConfigOptions.key("start-gate").booleanType().defaultValue(false);

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(EVENTS);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(
                FIRST_EVENT_RATE,
                NEXT_EVENT_RATE,
                PERSON_PROPORTION,
                AUCTION_PROPORTION,
                BID_PROPORTION,
                SEED,
                BASE_TIME,
                START_GATE);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        ReadableConfig options = helper.getOptions();
        if (!options.get(FIRST_EVENT_RATE).equals(options.get(NEXT_EVENT_RATE))) {
            throw new ValidationException(
                    "only a constant rate: first-event.rate must equal next-event.rate");
        }
        LogicalType physical = context.getPhysicalRowDataType().getLogicalType();
        if (!physical.copy(true).equals(EventRows.ROW_TYPE)) {
            throw new ValidationException(
                    "the nexmark table must have Nexmark's schema "
                            + EventRows.ROW_TYPE
                            + ", not "
                            + physical);
        }
        GeneratorConfig config =
                new GeneratorConfig(
                        options.get(EVENTS),
                        options.get(FIRST_EVENT_RATE),
                        options.get(BASE_TIME),
                        options.get(SEED),
                        options.get(PERSON_PROPORTION),
                        options.get(AUCTION_PROPORTION),
                        options.get(BID_PROPORTION));
        int parallelism = context.getConfiguration().get(CoreOptions.DEFAULT_PARALLELISM);
        return new NexmarkTableSource(
                config, parallelism, (RowType) physical, options.get(START_GATE));
    }
}

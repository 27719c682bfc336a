package io.taishan.benchmarks.state;

import java.util.Locale;
import org.apache.flink.configuration.MemorySize;

/**
 * The JMH parameter {@code cache}: how large a backend's read cache is, as a fraction of the
 * benchmark's {@link StateSize} estimate. {@code none} is no cache; {@code all} is sized to hold
 * the whole loaded state with room to spare, because a cache splits its capacity into segments that
 * do not fill evenly; {@code 10pct} holds about a tenth of it; {@code 10pct-disk} is {@code 10pct}
 * in memory with a local disk tier ({@code taishan.cache.local-dir}) that holds the whole state,
 * for backends that have one.
 */
public record ReadCache(String setting, double fraction, long stateBytes, boolean localTier) {
    public static final String NONE = "none";
    public static final String ALL = "all";
    public static final String TEN_PERCENT = "10pct";
    public static final String TEN_PERCENT_DISK = "10pct-disk";

    /** The disk tier's size: four times the estimate (its entries carry a header and a space). */
    static final double LOCAL_TIER_FRACTION = 4.0;

    static final long MIN_LOCAL_TIER_BYTES = 64L << 20;

    /** Twice the estimate: segment imbalance must not evict anything when the cache is "all". */
    static final double ALL_FRACTION = 2.0;

    static final double TEN_PERCENT_FRACTION = 0.10;

    public static ReadCache of(String setting, long stateBytes) {
        double fraction =
                switch (setting.toLowerCase(Locale.ROOT)) {
                    case NONE -> 0;
                    case ALL -> ALL_FRACTION;
                    case TEN_PERCENT, TEN_PERCENT_DISK -> TEN_PERCENT_FRACTION;
                    default ->
                            throw new IllegalArgumentException(
                                    "cache must be none, all, 10pct or 10pct-disk, not " + setting);
                };
        return new ReadCache(
                setting,
                fraction,
                stateBytes,
                setting.toLowerCase(Locale.ROOT).equals(TEN_PERCENT_DISK));
    }

    /** The local disk tier's size, as a Flink {@code MemorySize} string. */
    public String localTierSize() {
        long bytes =
                Math.max(MIN_LOCAL_TIER_BYTES, (long) Math.ceil(stateBytes * LOCAL_TIER_FRACTION));
        return new MemorySize(bytes).toString();
    }

    public boolean enabled() {
        return fraction > 0;
    }

    public long bytes() {
        return (long) Math.ceil(stateBytes * fraction);
    }

    /** As a Flink {@code MemorySize} string, the form of {@code taishan.cache.size}. */
    public String memorySize() {
        return new MemorySize(bytes()).toString();
    }

    /** The computation, for the log and the report. */
    public String describe() {
        if (!enabled()) {
            return "cache=" + setting + ": no read cache";
        }
        return String.format(
                Locale.ROOT,
                "cache=%s: %.2f × %s (state estimate) = %s%s",
                setting,
                fraction,
                mebibytes(stateBytes),
                mebibytes(bytes()),
                localTier ? ", local disk tier of " + localTierSize() : "");
    }

    public static String mebibytes(long bytes) {
        return String.format(Locale.ROOT, "%.2f MiB", bytes / (1024.0 * 1024));
    }
}
